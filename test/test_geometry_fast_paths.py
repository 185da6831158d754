"""Issue 19 (one-pose speed): the one-pose paths of the two geometry functions give the numbers of their general
paths, exactly.

- ``peg_hole.detect`` for one pose (Python floats: ``_detect_one``, ``_rim_one`` with its point form and the
  remembered cos / sin of the refinement samples, ``_manifold_one``'s dedup before any array) against the
  array path of a batch with every rim search on arrays (``_SCALAR_MAX`` = 0), on random poses — identity and
  random hole poses, pegs narrower and wider than the hole, rim search levels 0-6 — and on edge cases: an
  endpoint exactly on the rim circle, a cap exactly on the top plane, a peg on the hole axis (every rim sample
  ties), no contact, one pose with cap, rim and top-face contacts at once. Features, order, points, normals,
  depths and s bit for bit (``assert_array_equal``), the sample memo cold, warm and evicted.
- ``ContactKinematics.compute``: one pose alone equals its rows of a batch, and both equal the code with
  numpy's own ``einsum`` / ``linalg.norm`` wrappers (the C einsum and the norm's reduction called directly are
  the same computation), on random poses around the recorded drops (many contacts, none, moving and at rest).
No timing here (bench/bench_multipoint.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

FIELDS = ('pair', 'feature', 'point', 'normal', 'depth', 's')


def _hole():
    from contact_estimation.geometry.peg_hole import HoleGeometry
    return HoleGeometry(0.0175, 0.050)


def _edge_poses():
    """(p0, p1, r_p) in the hole frame: r = 0.0175, opening plane z1 = top face c = 0.0675, box 0.1 x 0.1."""
    r, z1 = 0.0175, 0.0675
    return [
        ((r, 0.0, z1), (r, 0.0, z1 + 0.05), 0.017),               # endpoint exactly on the rim circle (d = 0)
        ((0.0, r, z1), (0.01, r, z1 + 0.03), 0.017),
        ((r, 0.0, z1 - 1e-9), (r, 0.02, z1 + 0.05), 0.017),       # on the wall at the rim: wall = top-face point,
        ((0.0, r, z1 - 5e-7), (0.02, r, z1 + 0.05), 0.017),       # dropped as a duplicate (within 1e-6 m) ...
        ((r, 0.0, z1 - 2e-6), (r, 0.02, z1 + 0.05), 0.017),       # ... or kept (2e-6 m apart)
        ((0.03, 0.0, z1 + 0.017), (0.03, 0.0, z1 + 0.08), 0.017),  # cap exactly on the top plane (z - r_p = c)
        ((0.03, 0.0, z1 + 0.0169), (0.03, 0.01, z1 + 0.08), 0.017),
        ((0.0, 0.0, 0.03), (0.0, 0.0, 0.12), 0.017),               # on the axis across the opening: ties
        ((0.0, 0.0, 0.03), (0.0, 0.0, 0.06), 0.010),               # no contact
        ((0.0, 0.0, 0.2), (0.0, 0.0, 0.3), 0.017),                 # far above: no contact
        ((0.002, 0.0, 0.01), (0.06, 0.0, 0.08), 0.017),            # cap, rim and top face at once
        ((0.0, 0.0, 0.0175), (0.0, 0.0, 0.05), 0.0175),            # as wide as the hole, on the axis (0/0 left out)
        ((0.0, 0.0, 0.05), (0.0, 0.0, 0.12), 0.02),                # wider than the hole: on the rim all around
        ((0.005, 0.0, 0.0675), (0.005, 0.0, 0.0675), 0.017),       # a point peg on the opening plane
        ((-0.049, 0.049, 0.07), (-0.03, 0.03, 0.12), 0.005),       # over the box corner
    ]


def _draws(rng, n):
    """n random (p0, p1, r_p) in the hole frame around the opening, pegs narrower and wider than the hole."""
    p0 = np.c_[rng.uniform(-0.03, 0.03, (n, 2)), rng.uniform(-0.005, 0.11, n)]
    d = rng.normal(size=(n, 3))
    d[:, 2] = np.abs(d[:, 2]) * rng.choice([-1.0, 1.0, 1.0, 1.0], n)
    d /= np.linalg.norm(d, axis=1)[:, None]
    p1 = p0 + d * rng.uniform(0.0, 0.12, (n, 1))
    rp = rng.uniform(0.012, 0.019, n)
    return p0, p1, rp


def _poses(rng, n):
    e0, e1, er = map(np.array, zip(*_edge_poses()))
    p0, p1, rp = _draws(rng, n)
    return np.r_[e0, p0], np.r_[e1, p1], np.r_[er, rp]


def _assert_one_equals_batch(one, batch, k):
    sel = batch.pair == k
    assert len(one) == int(sel.sum()), k
    np.testing.assert_array_equal(one.pair, np.zeros(len(one), int))
    np.testing.assert_array_equal(one.feature, batch.feature[sel], err_msg=f'pose {k}')
    for f in ('point', 'normal', 'depth', 's'):
        np.testing.assert_array_equal(getattr(one, f), getattr(batch, f)[sel], err_msg=f'pose {k} {f}')


@pytest.mark.parametrize('levels', [0, 1, 2, 6])
@pytest.mark.parametrize('posed', [False, True])
def test_peg_hole_one_pose_equals_the_array_path(monkeypatch, levels, posed):
    import contact_estimation.geometry.peg_hole as ph
    hole = _hole()
    rng = np.random.default_rng(100 + levels + 10 * posed)
    p0, p1, rp = _poses(rng, 400)
    n = len(p0)
    kw, w0, w1 = {}, p0, p1
    if posed:
        R = Rotation.random(n, random_state=levels).as_matrix()
        pos = rng.normal(0, 0.05, (n, 3))
        kw = dict(hole_rotation=R, hole_position=pos)
        w0, w1 = np.einsum('nij,nj->ni', R, p0) + pos, np.einsum('nij,nj->ni', R, p1) + pos
    with monkeypatch.context() as m:
        m.setattr(ph, '_SCALAR_MAX', 0)                         # every rim search of the batch on arrays
        batch = ph.detect(w0, w1, rp, hole, levels=levels, **kw)
    assert len(batch) > n // 2
    assert set(batch.feature.tolist()) == set(range(6))        # every feature occurs
    assert np.bincount(batch.pair, minlength=n).max() >= 3 and (np.bincount(batch.pair, minlength=n) == 0).any()
    ph._TRIG.clear()
    for sweep in range(2):                                      # the sample memo cold, then warm
        for k in range(n):
            one_kw = {} if not posed else {'hole_rotation': kw['hole_rotation'][k],
                                           'hole_position': kw['hole_position'][k]}
            one = ph.detect(w0[k], w1[k], rp[k], hole, levels=levels, **one_kw)
            _assert_one_equals_batch(one, batch, k)
            if not posed and k % 7 == 0:                        # the other forms a controller passes
                _assert_one_equals_batch(ph.detect(w0[k].tolist(), tuple(w1[k].tolist()), float(rp[k]), hole,
                                                   levels=levels), batch, k)
                _assert_one_equals_batch(ph.detect(w0[k][None], w1[k][None], rp[k:k + 1], hole, levels=levels),
                                         batch, k)
    monkeypatch.setattr(ph, '_TRIG_MAX', 3)                     # evicted all the time
    for k in range(0, n, 5):
        one_kw = {} if not posed else {'hole_rotation': kw['hole_rotation'][k], 'hole_position': kw['hole_position'][k]}
        _assert_one_equals_batch(ph.detect(w0[k], w1[k], rp[k], hole, levels=levels, **one_kw), batch, k)


def test_rim_one_equals_the_array_search_points_and_segments():
    from contact_estimation.geometry.peg_hole import _TRIG, _rim_one, _rim_search, _rim_search_points
    rng = np.random.default_rng(7)
    for levels in (0, 3, 6):
        w0 = rng.normal(0, 0.03, (400, 3))
        A = rng.normal(0, 0.05, (400, 3))
        A[::4] = 0.0                                            # points: the point form of the search
        A[1::8, :2] = 0.0                                       # a segment along the axis (A ≠ 0, A_xy = 0)
        w0[2::16, :2] = 0.0                                     # on the axis: ties
        phi, d, s = _rim_search(w0, A, 0.0175, levels)
        _TRIG.clear()
        for sweep in range(2):
            got = np.array([_rim_one(a, b, 0.0175, levels) for a, b in zip(w0.tolist(), A.tolist())])
            np.testing.assert_array_equal(got[:, 0], phi)
            np.testing.assert_array_equal(got[:, 1], d)
            np.testing.assert_array_equal(got[:, 2], s)
        pp, pd = _rim_search_points(w0[::4], 0.0175, levels)
        np.testing.assert_array_equal(pp, phi[::4])
        np.testing.assert_array_equal(pd, d[::4])


def _contact_poses(rng, every=7):
    """Random poses around the recorded M2/M3 drops: the recorded pose turned by up to ~3° and moved by up to
    ~5 mm, every 6th lifted 0.5 m clear, random twists (and some at rest); (R, p, v, w) stacked."""
    from contact_estimation.geometry.rotations import quat_to_matrix
    drops = np.load(Path(__file__).parent / 'fixtures' / 'speed' / 'contact_kinematics_drops.npz')
    Rs, ps = [], []
    for model in ('M2', 'M3'):
        R = quat_to_matrix(drops[f'{model}_q'])[::every]
        p = drops[f'{model}_p'][::every]
        dR = Rotation.from_rotvec(rng.normal(0, 0.03, (len(R), 3))).as_matrix()
        Rs.append(np.einsum('nij,njk->nik', dR, R))
        ps.append(p + rng.normal(0, 0.003, p.shape))
    R, p = np.concatenate(Rs), np.concatenate(ps)
    p[3::6, 2] += 0.5                                           # lifted clear: no contact
    v, w = rng.normal(0, 0.1, p.shape), rng.normal(0, 0.5, p.shape)
    v[::5] = 0.0
    w[::5] = 0.0
    return R, p, v, w


def _kinematics():
    from contact_estimation.geometry.body import load_geometry
    from contact_estimation.geometry.contacts import ContactKinematics
    P, E = load_geometry(Path(__file__).parents[1] / 'config' / 'multipoint_acu_geometry.yaml')
    return ContactKinematics(P.parts, E.world_parts())


CK_FIELDS = ('k', 'pair', 'r', 'n', 't', 'delta', 'delta_dot', 'sliding', 'lever', 'count', 'v_t')


def test_contact_kinematics_one_pose_equals_batch_and_numpy_wrappers(monkeypatch):
    import contact_estimation.geometry.contacts as cm
    kin = _kinematics()
    R, p, v, w = _contact_poses(np.random.default_rng(21))
    batch = kin.compute(R, p, v, w)
    with monkeypatch.context() as m:                            # numpy's own wrappers, as before issue 19's change
        m.setattr(cm, '_einsum', np.einsum)
        m.setattr(cm, '_norm', lambda x, axis, keepdims=False: np.linalg.norm(x, axis=axis, keepdims=keepdims))
        ref = kin.compute(R, p, v, w)
        ref_one = [kin.compute(R[k], p[k], v[k], w[k]) for k in range(0, len(R), 3)]
    for f in CK_FIELDS:
        np.testing.assert_array_equal(getattr(batch, f), getattr(ref, f), err_msg=f)
    counts = np.bincount(batch.k, minlength=len(R))
    assert len(batch) > 500 and counts.max() >= 8 and (counts == 0).any()
    for i, k in enumerate(range(0, len(R), 3)):
        one = kin.compute(R[k], p[k], v[k], w[k])
        sel = batch.k == k
        for f in CK_FIELDS:
            want = np.array([sel.sum()]) if f == 'count' else getattr(batch, f)[sel] - (k if f == 'k' else 0)
            np.testing.assert_array_equal(getattr(one, f), want, err_msg=f'pose {k} {f}')
            np.testing.assert_array_equal(getattr(one, f), getattr(ref_one[i], f), err_msg=f'pose {k} {f}')
    rest = kin.compute(R[0], p[0])                              # v, w omitted: at rest
    moved = kin.compute(R[0], p[0], np.zeros(3), np.zeros(3))
    for f in CK_FIELDS:
        np.testing.assert_array_equal(getattr(rest, f), getattr(moved, f), err_msg=f)
