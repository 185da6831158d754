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
