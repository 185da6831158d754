"""Peg-in-hole rim-contact sequence (wahl_colton.md A10 W4) with the closed-form detector: onset and lift-off
times, self-centring into the bore when the peg slides (W4a), no lateral creep and the static normal force when
it sticks (W4b); the bag of `contact-dynamics simulate peg-hole`."""
from __future__ import annotations

import numpy as np
import pytest

from contact_dynamics_common.bag import BagReader
from contact_estimation.multipoint.pegsim import PegScenario, contact_windows, simulate, write_bag


def test_w4a_slides_over_the_rim_into_the_bore(tmp_path):
    sc = PegScenario(peg_radius=0.0170, mu=0.5)            # clearance 0.5 mm; μ < tan θ = 1.02: slides
    assert sc.z_touch == pytest.approx(np.sqrt(17.0 ** 2 - 12.5 ** 2) * 1e-3)
    rec = simulate(sc, 20.0, 27.5)
    windows = contact_windows(rec)
    assert len(windows) == 1
    onset, lift = windows[0]
    assert abs(onset - 23.0) <= 0.2 and abs(lift - 26.0) <= 1.0, windows
    deepest = int(np.argmin(rec.x[:, 2]))
    z_open = sc.hole.radius + sc.hole.height
    assert rec.x[deepest, 2] < z_open                     # the tip went into the bore
    assert abs(rec.x[deepest, 0]) <= (sc.hole.radius - sc.peg_radius) + 1e-4
    feats = set(f for fs in rec.features for f in fs)
    assert 'RIM_CAP0' in feats and 'BODY' in feats
    # the second contact, on the opposite side after the lateral shift (29-32 s): touch at 36.0 s
    second = simulate(sc, 33.0, 40.5)
    (onset2, lift2), = contact_windows(second)
    assert abs(onset2 - 36.0) <= 0.2 and abs(lift2 - 39.0) <= 1.0
    deepest = int(np.argmin(second.x[:, 2]))
    assert second.x[deepest, 2] < z_open and abs(second.x[deepest, 0]) <= (sc.hole.radius - sc.peg_radius) + 1e-4
    bag = write_bag(sc, rec, tmp_path / 'w4a')
    r = BagReader(bag)
    assert r.message_counts['/peg/wrench'] == len(rec.t)
    assert r.custom_data['ground_truth']['contact_windows'][0][0] == pytest.approx(onset)


def test_w4b_sticks_on_the_rim_with_the_static_normal_force():
    sc = PegScenario(peg_radius=0.0175, mu=1.2, friction_law='stick_slip')     # μ > tan θ: sticks
    rec = simulate(sc, 20.0, 27.5)
    (onset, lift), = contact_windows(rec)
    assert abs(onset - 23.0) <= 0.2 and abs(lift - 26.0) <= 1.0
    on = rec.count > 0
    assert np.ptp(rec.x[on, 0]) <= 1e-4                     # lateral displacement during contact <= 0.1 mm
    deepest = int(np.argmin(rec.x[:, 2]))
    overtravel = rec.x[deepest, 2] - sc.setpoint(rec.t[deepest])[2]
    cos_theta = sc.z_touch / sc.peg_radius
    assert rec.normal_force[deepest] == pytest.approx(sc.k_ctrl * overtravel * cos_theta, rel=0.03)


def test_w5_flat_push_steady_state_matches_the_static_solution():
    from contact_estimation.multipoint.flatpush import FlatPush
    fp = FlatPush(mu=0.0)
    q_static, fn_static = fp.static_equilibrium()
    assert fn_static > 50.0                                   # the table really pushes back
    t, q, tau, fn = fp.simulate(duration=3.0)
    assert np.abs(q[-1] - q_static).max() <= 1e-3
    assert fn[-1] == pytest.approx(fn_static, rel=0.01)
    # the TCP slides along the table instead of stopping where it was commanded (paper, Exp. 1)
    assert fp.points(q[-1])[2][0] - fp.x_target > 0.01


def test_w5_sim_vs_real_metrics_are_robust_to_sensor_noise():
    from contact_estimation.multipoint.flatpush import FlatPush, metrics
    sim = FlatPush(mu=0.20)
    real = FlatPush(mu=0.25, k_c=2e5, k_joint=1050.0)
    _, q_sim, _, _ = sim.simulate(duration=2.0, dt=5e-4)
    _, q_real, _, _ = real.simulate(duration=2.0, dt=5e-4)
    clean = metrics(q_sim, [q_real] * 3)
    noisy = metrics(q_sim, [real.simulate(duration=2.0, dt=5e-4, seed=s, sigma_q=1e-4, sigma_tau=0.2)[1]
                            for s in (1, 2, 3)])
    assert abs(noisy['E_max'] - clean['E_max']) <= 1e-3
    assert abs(noisy['sigma_e'] - clean['sigma_e']) <= 1e-3
    assert clean['E_max'] > 0 and clean['pass'] == (clean['E_max'] <= 0.1 and clean['sigma_e'] <= 0.04)
