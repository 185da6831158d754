"""Peg-in-hole contact geometry (wahl_colton.md Part A): the probe table P1-P6 (W1), fuzzing against closed
forms, CSH mass properties (W2), the Kelvin-Voigt force probe (W3), hole poses and batching."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from contact_estimation.geometry.peg_hole import (FEATURES, HoleGeometry, contact_wrench, csh_mass_properties,
                                                 detect, rim_point_closed_form)

MM = 1e-3
HOLE = HoleGeometry(17.5 * MM, 50 * MM)

# id: (r_peg, P0, P1) in mm, expected [(feature, C, delta, n)]
PROBES = {
    'P1': (17.0, (0, 0, 40), (0, 0, 140), []),
    'P2': (17.0, (0.8, 0, 40), (0.8, 0, 140), [('BODY', (17.5, 0, 40), 0.300, (-1, 0, 0)),
                                                ('RIM_BODY', (17.5, 0, 67.5), 0.300, (-1, 0, 0))]),
    'P3': (17.0, (0, 0.6, 17.2), (0, 0.6, 117.2), [('CAP', (0, 15.652, 9.674), 0.1708, (0, -0.8944, 0.4472)),
                                                    ('RIM_BODY', (0, 17.5, 67.5), 0.100, (0, -1, 0))]),
    'P4': (17.5, (10, 0, 79.5), (10, 0, 159.5), [('RIM_CAP0', (17.5, 0, 67.5), 3.349, (-0.530, 0, 0.848))]),
    'P5': (17.0, (0.4, 0, 37.5), (-4, 0, 137.5), [('RIM_BODY', (-17.5, 0, 67.5), 0.436, (0.999, 0, 0.044))]),
    'P6': (17.5, (60, 0, 100), (60, 0, 180), []),
}


def _batch(levels=8):
    names = list(PROBES)
    r = np.array([PROBES[n][0] for n in names]) * MM
    p0 = np.array([PROBES[n][1] for n in names], float) * MM
    p1 = np.array([PROBES[n][2] for n in names], float) * MM
    return names, detect(p0, p1, r, HOLE, levels=levels)


def test_w1_probe_table():
    names, m = _batch()
    for i, name in enumerate(names):
        got = [j for j in range(len(m)) if m.pair[j] == i]
        expected = PROBES[name][3]
        assert sorted(FEATURES[m.feature[j]] for j in got) == sorted(e[0] for e in expected), name
        for feat, C, delta, n in expected:
            j = next(j for j in got if FEATURES[m.feature[j]] == feat)
            pos_tol = 1e-5 if feat.startswith('RIM') else 1e-6
            # the table prints C to 3-4 decimals in mm and δ to 3-4 decimals: compare at that precision
            np.testing.assert_allclose(m.point[j], np.array(C) * MM, atol=max(pos_tol, 0.6e-6))
            assert m.depth[j] == pytest.approx(delta * MM, abs=max(1e-7, 0.6e-6 if len(str(delta)) <= 5 else 1e-7))
            np.testing.assert_allclose(m.normal[j], n, atol=1e-3)
            assert np.linalg.norm(m.normal[j]) == pytest.approx(1.0)


def test_w1_probe_depths_to_tolerance_against_closed_forms():
    """The table's rounded figures recomputed exactly: δ to 1e-7 m, normals to 1e-4."""
    names, m = _batch()
    by = {(names[m.pair[j]], FEATURES[m.feature[j]]): j for j in range(len(m))}
    # P2: δ = ρ + r_p − r_h = 0.8 + 17 − 17.5
    assert m.depth[by['P2', 'BODY']] == pytest.approx(0.3 * MM, abs=1e-7)
    # P3 CAP: |P − P0h| + r_p − r_h with P − P0h = (0, 0.6, −0.3)
    assert m.depth[by['P3', 'CAP']] == pytest.approx((np.hypot(0.6, 0.3) - 0.5) * MM, abs=1e-7)
    # P4 RIM_CAP0: r_p − |P − R*|, R* = (17.5, 0, 67.5)
    d = np.hypot(7.5, 12.0)
    assert m.depth[by['P4', 'RIM_CAP0']] == pytest.approx((17.5 - d) * MM, abs=1e-7)
    np.testing.assert_allclose(m.normal[by['P4', 'RIM_CAP0']], [-7.5 / d, 0, 12 / d], atol=1e-4)
    # P5 RIM_BODY: r_p − distance of R* = (−17.5, 0, 67.5) from the tilted axis
    a = np.array([-4.4, 0, 100.0])
    rel = np.array([-17.9, 0, 30.0])
    dist = np.linalg.norm(np.cross(rel, a / np.linalg.norm(a)))
    assert m.depth[by['P5', 'RIM_BODY']] == pytest.approx((17.0 - dist) * MM, abs=1e-7)


def test_w1_rim_search_converges_like_the_spec_table():
    """Cap-to-rim distance error against the closed form, 300 random probes (spec: L=2 -> 70 µm, L=6 -> 8 nm;
    our probes reach 0.11 mm at L=2)."""
    rng = np.random.default_rng(0)
    n = 300
    P = np.c_[rng.uniform(-15, 15, (n, 2)) * MM, rng.uniform(68, 80, n) * MM]
    ref = rim_point_closed_form(P, HOLE)
    d_ref = np.linalg.norm(P - ref, axis=1)
    for levels, tol in ((2, 2e-4), (6, 1e-7), (8, 1e-9)):
        m = detect(P, P + [0, 0, 0.1], 25 * MM, HOLE, levels=levels)       # big peg radius: every probe touches
        cap = m.feature == FEATURES.index('RIM_CAP0')
        assert cap.sum() == n
        err = np.abs((25 * MM - m.depth[cap]) - d_ref[m.pair[cap]])
        assert err.max() < tol, (levels, err.max())


def test_w1_fuzz_vertical_pegs_against_closed_form_no_false_or_duplicate_contacts():
    rng = np.random.default_rng(1)
    n = 400
    rp = rng.uniform(16.8, 17.5, n) * MM
    rho = rng.uniform(0, 1.5, n) * MM
    ang = rng.uniform(0, 2 * np.pi, n)
    z0 = rng.uniform(20, 60, n) * MM                    # tip centre between P0h and the opening
    p0 = np.c_[rho * np.cos(ang), rho * np.sin(ang), z0]
    m = detect(p0, p0 + [0, 0, 0.1], rp, HOLE, levels=6)
    for i in range(n):
        js = np.nonzero(m.pair == i)[0]
        expect = rho[i] + rp[i] - HOLE.radius          # wall penetration along the whole peg
        if expect <= 0:
            assert len(js) == 0, i
            continue
        feats = sorted(FEATURES[m.feature[j]] for j in js)
        assert feats == ['BODY', 'RIM_BODY'], (i, feats)
        np.testing.assert_allclose(m.depth[js], expect, atol=1e-8)
        for j in js:
            radial = m.point[j, :2]
            assert np.linalg.norm(radial) == pytest.approx(HOLE.radius, abs=1e-8)   # C on the wall/rim
            # rim features: the L=6 search's angular step (π/4)(2/7)^6 = 4.6e-4 rad bounds the direction error
            atol = 3e-4 if FEATURES[m.feature[j]] == 'RIM_BODY' else 1e-9
            np.testing.assert_allclose(m.normal[j, :2], -np.array([np.cos(ang[i]), np.sin(ang[i])]), atol=atol)
            np.testing.assert_allclose(radial, HOLE.radius * np.array([np.cos(ang[i]), np.sin(ang[i])]),
                                       atol=1e-5 if atol > 1e-9 else 1e-9)


def test_hole_pose_and_top_face():
    R = Rotation.from_euler('xyz', [20, -10, 35], degrees=True).as_matrix()
    t = np.array([0.3, -0.2, 0.5])
    names, m_ref = _batch(levels=6)
    r = np.array([PROBES[n][0] for n in names]) * MM
    p0 = np.array([PROBES[n][1] for n in names], float) * MM
    p1 = np.array([PROBES[n][2] for n in names], float) * MM
    m = detect(p0 @ R.T + t, p1 @ R.T + t, r, HOLE, R, t, levels=6)
    np.testing.assert_array_equal(m.feature, m_ref.feature)
    # the rim search may settle on the other sample of a tie after the rotation: rim tolerance 1e-5 m
    np.testing.assert_allclose(m.point, m_ref.point @ R.T + t, atol=1e-5)
    np.testing.assert_allclose(m.normal, m_ref.normal @ R.T, atol=1e-4)
    np.testing.assert_allclose(m.depth, m_ref.depth, atol=1e-9)
    # a peg resting on the top face beside the hole
    top = detect([[0.035, 0.0, HOLE.c + 17.5 * MM - 0.2 * MM]], [[0.035, 0.0, 0.2]], 17.5 * MM, HOLE)
    assert [FEATURES[f] for f in top.feature] == ['TOP_FACE']
    assert top.depth[0] == pytest.approx(0.2 * MM, abs=1e-12)
    np.testing.assert_allclose(top.normal[0], [0, 0, 1])


def test_w2_csh_mass_properties():
    hole = HoleGeometry(0.0175, 0.050, 0.100, 0.100)
    m, zc, inertia = csh_mass_properties(hole, 2700.0)
    assert m == pytest.approx(1.66231, rel=1e-5)
    assert zc == pytest.approx(0.033482, rel=1e-4)
    np.testing.assert_allclose(inertia, [2.14548e-3, 2.14548e-3, 3.01390e-3], rtol=1e-4)


def test_w2_csh_inertia_against_voxels():
    hole = HoleGeometry(0.0175, 0.050, 0.100, 0.100)
    m, zc, inertia = csh_mass_properties(hole, 2700.0)
    n = 200
    a, b, c, r = hole.a, hole.b, hole.c, hole.radius
    xs = (np.arange(n) + 0.5) / n - 0.5
    X, Y, Z = np.meshgrid(xs * a, xs * b, (xs + 0.5) * c, indexing='ij')
    rad2 = X ** 2 + Y ** 2
    cavity = ((Z >= r) & (rad2 <= r * r)) | (rad2 + (Z - r) ** 2 <= r * r)
    solid = ~cavity
    dv = a * b * c / n ** 3 * 2700.0
    mv = solid.sum() * dv
    zv = (Z[solid].sum() * dv) / mv
    Ix = ((Y[solid] ** 2 + (Z[solid] - zv) ** 2).sum()) * dv
    Iz = (rad2[solid].sum()) * dv
    assert mv == pytest.approx(m, rel=2e-3)
    assert zv == pytest.approx(zc, rel=2e-3)
    assert Ix == pytest.approx(inertia[0], rel=2e-3)
    assert Iz == pytest.approx(inertia[2], rel=2e-3)


def test_w3_kelvin_voigt_force_probe():
    names, m = _batch(levels=6)
    F, _ = contact_wrench(m, 1e5, len(names))
    np.testing.assert_allclose(F[names.index('P4')], [-177.5, 0.0, 284.0], rtol=1e-3, atol=0.2)
    np.testing.assert_allclose(F[names.index('P1')], 0.0)


def test_batched_detection_equals_one_by_one():
    rng = np.random.default_rng(4)
    n = 50
    p0 = np.c_[rng.uniform(-3, 3, (n, 2)) * MM, rng.uniform(10, 90, n) * MM]
    p1 = p0 + np.c_[rng.uniform(-10, 10, (n, 2)) * MM, np.full(n, 0.1)]
    m = detect(p0, p1, 17.2 * MM, HOLE)
    for i in range(0, n, 7):
        one = detect(p0[i:i + 1], p1[i:i + 1], 17.2 * MM, HOLE)
        js = m.pair == i
        np.testing.assert_array_equal(one.feature, m.feature[js])
        np.testing.assert_allclose(one.point, m.point[js], atol=1e-15)
        np.testing.assert_allclose(one.depth, m.depth[js], atol=1e-15)


def test_wrong_geometry_and_inputs_give_one_line_reasons_not_nan():
    """Non-positive or non-finite peg radius, non-finite or misshaped endpoints, a hole that does not fit its box:
    ValueError with a one-line reason. A peg as wide as the hole or wider with its axis on the hole axis inside
    the cavity gave NaN contacts (wall normal 0/0): now finite (that ring contact is not reported), alone and in a
    batch, and a narrow peg touching the bottom on the axis still gives its cap contact."""
    hole = HoleGeometry(radius=0.02, height=0.05)
    p0, p1 = np.array([[0.0, 0.0, 0.03]]), np.array([[0.0, 0.0, 0.12]])
    for radius in (0.0, -0.01, float('nan'), float('inf')):
        with pytest.raises(ValueError, match='peg radius') as err:
            detect(p0, p1, radius, hole)
        assert '\n' not in str(err.value)
    for radius in (0.02, 0.025):
        for m in (detect(p0, p1, radius, hole), detect(np.vstack([p0, p0 + [0.001, 0, 0]]), np.vstack([p1, p1]),
                                                       radius, hole)):
            assert np.isfinite(m.point).all() and np.isfinite(m.normal).all() and np.isfinite(m.depth).all()
    with pytest.raises(ValueError, match='finite'):
        detect(np.array([[0.0, np.nan, 0.03]]), p1, 0.01, hole)
    with pytest.raises(ValueError, match='finite'):
        detect(np.vstack([p0, p0]), np.array([[0.0, 0.0, 0.12], [np.inf, 0.0, 0.1]]), 0.01, hole)
    with pytest.raises(ValueError, match=r'\(N, 3\)'):
        detect(np.zeros((2, 2)), np.zeros((2, 2)), 0.01, hole)
    for bad in (dict(radius=0.0, height=0.05), dict(radius=0.02, height=-1.0), dict(radius=0.02, height=0.05, a=0.03),
                dict(radius='x', height=0.05)):
        with pytest.raises(ValueError, match='hole'):
            HoleGeometry(**bad)
    m = detect(np.array([[0.0, 0.0, 0.014]]), p1, 0.015, hole)       # 1 mm into the bottom, on the axis
    assert m.labels() == ["CAP"] and m.depth[0] == pytest.approx(0.001, abs=1e-12)
