"""The rigid-body penalty-contact simulator: each normal and friction law at a prescribed state, the
stick-slip cap, and the integrator against free fall."""
from __future__ import annotations

import numpy as np
import pytest

from contact_estimation.geometry import polytope as poly
from contact_estimation.geometry.body import CompoundBody
from contact_estimation.multipoint.simulate import ContactLaw, RigidBodySim

K, B, MU = 1e5, 40.0, 0.3
D, U, W = 2e-4, 0.05, 0.01          # penetration (m), sliding +x and sinking speeds (m/s)


def _sim(**law):
    payload = CompoundBody('block', [poly.box([0.1, 0.1, 0.1])], mass=2.0, inertia=np.eye(3) * 2.0 * 0.02 / 12)
    floor = CompoundBody('floor', [poly.box([1.0, 1.0, 0.1], center=(0, 0, -0.1))])
    return RigidBodySim(payload, floor, ContactLaw(K, B, MU, **law))


def _wrench(sim, v=(U, 0.0, -W), dt=1e-4):
    return sim.contact_wrench(np.eye(3), [0, 0, 0.0 - D], v, [0, 0, 0], dt)


@pytest.mark.parametrize('normal, expected_fn', [
    ('kv', K * D + B * W),
    ('kv_clipped', K * D + B * W),
    ('hunt_crossley', K * D ** 1.5 + B * D ** 1.5 * W),
])
def test_normal_laws(normal, expected_fn):
    F, M, n = _wrench(_sim(normal=normal, friction_law='sliding', exponent=1.5))
    assert n == 1
    assert F[2] == pytest.approx(expected_fn, rel=1e-9)


def test_kv_pulls_but_clipped_does_not():
    away = (0.0, 0.0, 2.0 * K * D / B)          # separating fast: k δ + b δ̇ < 0
    F_kv, _, _ = _wrench(_sim(normal='kv'), v=away)
    F_cl, _, _ = _wrench(_sim(normal='kv_clipped'), v=away)
    assert F_kv[2] == pytest.approx(-K * D, rel=1e-9) and F_cl[2] == 0.0


@pytest.mark.parametrize('law, expected_ft', [
    ('sliding', -MU * K * D),                                   # eq. 4.4: μ k δ against sliding
    ('coulomb', -MU * (K * D + B * W)),                         # μ F_n (CDT-like)
    ('regularised', -MU * (K * D + B * W) * U / np.sqrt(U ** 2 + 1e-3 ** 2)),
])
def test_friction_laws(law, expected_ft):
    F, M, _ = _wrench(_sim(normal='kv', friction_law=law))
    assert F[0] == pytest.approx(expected_ft, rel=1e-9)
    assert F[1] == pytest.approx(0.0, abs=1e-12)
    # moment about the payload origin: r × F with the contact at the bottom face (z = −0.05 − ...)
    assert M[1] == pytest.approx(np.cross([0, 0, -0.05], F)[1], rel=0.02)


def test_stick_slip_anchor_and_cap():
    sim = _sim(normal='kv', friction_law='stick_slip')
    fn = K * D
    # a tiny slip: spring force k_t s − d_t v below the cap: sticks
    F, _, _ = _wrench(sim, v=(1e-4, 0, 0), dt=1e-4)
    assert abs(F[0]) < MU * fn and F[0] == pytest.approx(-(K * 1e-8 + B * 1e-4), rel=1e-6)
    # a large slip: capped at μ F_n
    F, _, _ = _wrench(sim, v=(0.5, 0, 0), dt=1e-2)
    assert F[0] == pytest.approx(-MU * fn, rel=1e-9)


def test_free_fall_integrator():
    sim = _sim()
    tr = sim.run([0, 0, 0.5], [0, 0, 0, 1.0], v0=(0.1, 0, 0), duration=0.1, dt=1e-4, rate=100.0)
    assert (tr.count == 0).all()
    t = tr.t
    np.testing.assert_allclose(tr.p[:, 2], 0.5 - 9.81 * t ** 2 / 2, atol=9.81 * 1e-4 * 0.1)
    np.testing.assert_allclose(tr.p[:, 0], 0.1 * t, atol=1e-12)
