"""Contact kinematics and the multi-point regressor: agar_contact.md §6.2 M1 (planar unit cases, signs, rank
detection), polytope construction and perturbations, cross-check of the interference against python-fcl."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contact_estimation.geometry import polytope as poly
from contact_estimation.geometry.contacts import ContactKinematics
from contact_estimation.multipoint.estimator import global_fit, local_fits, model_wrench, regressor

S2 = math.sqrt(2.0)
A, C, H = 0.02, 0.01, 0.05      # peg half-width of the flat bottom, chamfer, height (m)


def planar_peg_in_groove():
    """2-D peg with a flat bottom and 45° chamfers, in a trapezoidal groove: floor + two 45° walls (x-z plane,
    extruded along y). At p = 0 every face just touches."""
    peg = poly.prism([(-A, 0), (A, 0), (A + C, C), (A + C, H), (-A - C, H), (-A - C, C)], 0.1, 'peg')
    floor = poly.box([2 * A, 0.2, 0.02], 'floor', center=(0, 0, -0.01))
    left = poly.prism([(-A, 0), (-A - 0.04, 0.04), (-A - 0.04, -0.02), (-A, -0.02)], 0.2, 'left')
    right = poly.prism([(A, 0), (A, -0.02), (A + 0.04, -0.02), (A + 0.04, 0.04)], 0.2, 'right')
    return ContactKinematics([peg], [floor, left, right])


def test_m1_three_contacts_signs_and_regressor():
    kin = planar_peg_in_groove()
    d, u, w = 1e-4, 0.03, 0.01          # penetration into the floor (m), sliding +x and sinking speeds (m/s)
    cs = kin.compute(np.eye(3), [0, 0, -d], [u, 0, -w], [0, 0, 0])
    assert cs.count.tolist() == [3]
    by_env = {int(p): i for i, p in enumerate(cs.pair)}          # pair index = environment part index here
    floor, left, right = (by_env[j] for j in range(3))
    # floor: n into the payload (+z), penetration grows while sinking, t against the sliding velocity
    np.testing.assert_allclose(cs.n[floor], [0, 0, 1], atol=1e-12)
    assert cs.delta[floor] == pytest.approx(d, rel=1e-9)
    assert cs.delta_dot[floor] == pytest.approx(w, rel=1e-9)
    np.testing.assert_allclose(cs.t[floor], [-1, 0, 0], atol=1e-12)
    # left wall (normal (1,0,1)/√2): δ = d/√2, δ̇ = (w − u)/√2, sliding along (1,0,−1) -> t = (−1,0,1)/√2
    np.testing.assert_allclose(cs.n[left], [1 / S2, 0, 1 / S2], atol=1e-12)
    assert cs.delta[left] == pytest.approx(d / S2, rel=1e-9)
    assert cs.delta_dot[left] == pytest.approx((w - u) / S2, rel=1e-9)
    np.testing.assert_allclose(cs.t[left], [-1 / S2, 0, 1 / S2], atol=1e-12)
    # right wall (normal (−1,0,1)/√2): δ̇ = (u + w)/√2, v_t ∥ (1,0,1)(u − w)/2 -> t = −(1,0,1)/√2
    np.testing.assert_allclose(cs.n[right], [-1 / S2, 0, 1 / S2], atol=1e-12)
    assert cs.delta_dot[right] == pytest.approx((u + w) / S2, rel=1e-9)
    np.testing.assert_allclose(cs.t[right], [-1 / S2, 0, -1 / S2], atol=1e-12)
    assert cs.sliding.all()
    # regressor = Σ [δ n, δ̇ n, δ t], and A θ equals the model's resultant force
    blocks = regressor(cs, 1)
    manual = sum(np.stack([cs.delta[i] * cs.n[i], cs.delta_dot[i] * cs.n[i], cs.delta[i] * cs.t[i]], axis=1)
                 for i in range(3))
    np.testing.assert_allclose(blocks[0], manual, atol=1e-18)
    k, b, mu = 2e5, 50.0, 0.3
    F, M = model_wrench(cs, 1, k, b, mu)
    np.testing.assert_allclose(blocks[0] @ [k, b, mu * k], F[0], rtol=1e-12)
    fm = regressor(cs, 1, 'moment', moment_scale=1.0)
    np.testing.assert_allclose(fm[0] @ [k, b, mu * k], M[0], rtol=1e-9, atol=1e-12)
    # planar: the force rows alone have rank 2 (no y component); with the moment about y the instant's three
    # contacts (different δ̇/δ) identify k, b, μk
    assert local_fits(blocks, F, cs.count).rank[0] == 2
    fm = regressor(cs, 1, 'force_moment', moment_scale=0.05)
    fits = local_fits(fm, np.c_[F, M / 0.05], cs.count)
    assert fits.rank[0] == 3 and not fits.rank_deficient[0]
    np.testing.assert_allclose(fits.theta[0], [k, b, mu * k], rtol=1e-8)


def test_m1_one_contact_phase_is_rank_deficient():
    kin = planar_peg_in_groove()
    # raised 0.1 mm and shifted 0.3 mm toward the right wall: only the right chamfer touches
    cs = kin.compute(np.eye(3), [3e-4, 0, 1e-4], [0.02, 0, -0.01], [0, 0, 0])
    assert cs.count.tolist() == [1] and int(cs.pair[0]) == 2
    assert cs.delta[0] == pytest.approx(2e-4 / S2, rel=1e-9)
    blocks = regressor(cs, 1, 'force_moment', moment_scale=0.05)
    F, M = model_wrench(cs, 1, 1e5, 40.0, 0.2)
    fits = local_fits(blocks, np.c_[F, M / 0.05], cs.count)
    assert fits.rank[0] == 2 and fits.rank_deficient[0]          # δ n ∥ δ̇ n, also in the moment rows

    # a record made only of such instants with δ̇/δ constant cannot separate k from b: rank 2, refused
    T = 50
    s = np.linspace(2.1e-4, 3e-4, T)
    R = np.repeat(np.eye(3)[None], T, 0)
    p = np.c_[s, np.zeros(T), np.full(T, 1e-4)]
    cs = kin.compute(R, p, np.tile([0.02, 0, 0], (T, 1)), np.zeros((T, 3)))
    assert (cs.count == 1).all()
    cs.delta_dot = 5.0 * cs.delta                  # δ̇ = c δ exactly: no diversity of δ̇/δ
    blocks = regressor(cs, T)
    F, _ = model_wrench(cs, T, 1e5, 40.0, 0.2)
    est = global_fit(blocks.reshape(-1, 3), F.reshape(-1))
    assert est.rank == 2 and not est.valid and 'rank' in est.reason


def test_two_contacts_give_full_local_rank_when_rates_differ():
    kin = planar_peg_in_groove()
    # shifted toward the right wall and sinking: floor + right wall, δ̇/δ differ
    cs = kin.compute(np.eye(3), [1e-4, 0, -5e-5], [0.01, 0, -0.02], [0, 0, 0])
    assert cs.count[0] == 2 and sorted(cs.pair.tolist()) == [0, 2]
    blocks = regressor(cs, 1, 'force_moment', moment_scale=0.05)
    F, M = model_wrench(cs, 1, 1e5, 40.0, 0.2)
    fits = local_fits(blocks, np.c_[F, M / 0.05], cs.count)
    assert fits.rank[0] == 3
    np.testing.assert_allclose(fits.theta[0], [1e5, 40.0, 0.2e5], rtol=1e-8)


def test_rotation_moves_contacts_and_lever_arms():
    kin = planar_peg_in_groove()
    ang = math.radians(2.0)
    Ry = np.array([[math.cos(ang), 0, math.sin(ang)], [0, 1, 0], [-math.sin(ang), 0, math.cos(ang)]])
    cs = kin.compute(Ry, [0, 0, -1e-4], [0, 0, 0], [0, 0.5, 0])
    assert cs.count[0] >= 2
    np.testing.assert_allclose(cs.lever, cs.r - np.array([0, 0, -1e-4]), atol=1e-15)
    # with ω about y only and no translation, δ̇ = −(ω × l)·n
    np.testing.assert_allclose(cs.delta_dot, -np.einsum('ci,ci->c', np.cross([0, 0.5, 0], cs.lever), cs.n),
                               rtol=1e-12, atol=1e-15)


def test_polytope_constructors_and_perturbations():
    b = poly.box([0.3, 0.2, 0.1])
    assert len(b.vertices) == 8 and len(b.normals) == 6 and len(b.edge_dirs) == 3
    assert b.volume() == pytest.approx(0.006)
    t = poly.tent(0.06, 0.015, 90.0)
    assert len(t.vertices) == 6 and len(t.normals) == 5
    assert t.volume() == pytest.approx(0.06 * 0.015 * 0.015)          # triangle 0.03 x 0.015 / 2, times length
    big = t.enlarged(1e-3)
    assert np.all(big.offsets == pytest.approx(t.offsets + 1e-3))
    assert big.contains(t.vertices).all() and not t.contains(big.vertices).any()
    sh = t.shifted([1e-3, 0, 0])
    np.testing.assert_allclose(sh.vertices, t.vertices + [1e-3, 0, 0])
    h = poly.from_halfspaces(b.normals, b.offsets)
    assert h.volume() == pytest.approx(b.volume())
    with pytest.raises(ValueError):
        poly.from_halfspaces([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]],
                             [-1, -1, 1, 1, 1, 1])


def test_interference_matches_python_fcl_box_on_box():
    fcl = pytest.importorskip('fcl')
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(3)
    kin = ContactKinematics([poly.box([0.2, 0.2, 0.1])], [poly.box([1.0, 1.0, 0.2])])
    for _ in range(10):
        R = Rotation.from_euler('xyz', rng.uniform(-5, 5, 3), degrees=True).as_matrix()
        p = np.array([*rng.uniform(-0.1, 0.1, 2), 0.15 - rng.uniform(1e-4, 3e-3)])
        cs = kin.compute(R, p)
        o1 = fcl.CollisionObject(fcl.Box(0.2, 0.2, 0.1), fcl.Transform(R, p))
        o2 = fcl.CollisionObject(fcl.Box(1.0, 1.0, 0.2), fcl.Transform())
        res = fcl.CollisionResult()
        fcl.collide(o1, o2, fcl.CollisionRequest(num_max_contacts=8, enable_contact=True), res)
        depth = max(c.penetration_depth for c in res.contacts)
        assert cs.count[0] == 1
        assert cs.delta[0] == pytest.approx(depth, rel=1e-6)
        np.testing.assert_allclose(cs.n[0], [0, 0, 1], atol=1e-9)


def test_separated_bodies_have_no_contact():
    kin = planar_peg_in_groove()
    cs = kin.compute(np.repeat(np.eye(3)[None], 4, 0), [[0, 0, 1e-3], [0, 0, 0.1], [1.0, 0, 0], [0, 0, 5e-6]])
    assert cs.count.tolist() == [0, 0, 0, 0]


def test_capsule_against_a_polytope_through_fcl():
    pytest.importorskip('fcl')
    from contact_estimation.geometry.capsule import Capsule, capsule_polytope_contacts
    slab = poly.box([1.0, 1.0, 0.2])                          # top face z = 0.1
    lying = Capsule(np.array([0.0, -0.05, 0.109]), np.array([0.0, 0.05, 0.109]), 0.01)
    pts, nrm, dep = capsule_polytope_contacts(lying, slab)
    assert len(dep) >= 1
    assert dep.max() == pytest.approx(1e-3, abs=1e-6)
    np.testing.assert_allclose(nrm[np.argmax(dep)], [0, 0, 1], atol=1e-5)
    tilted = Capsule(np.array([0.0, 0.0, 0.1 + 0.01 - 2e-3]), np.array([0.03, 0.0, 0.2]), 0.01)
    _, nrm, dep = capsule_polytope_contacts(tilted, slab)
    assert dep.max() == pytest.approx(2e-3, abs=1e-6)
    clear = Capsule(np.array([0.0, 0.0, 0.2]), np.array([0.0, 0.0, 0.3]), 0.01)
    assert len(capsule_polytope_contacts(clear, slab)[2]) == 0
