"""Issue 19 speed work: the fast paths give the numbers of the paths they replace.

- peg/hole detection: the outputs of ``detect`` before the single-pose work (commit ee6e9a7, recorded in
  fixtures/speed/peg_hole_detect_ee6e9a7.npz by ``python test/test_speed_equality.py --record`` run against
  that commit) on 160 seeded draws (1-10 pairs, identity and random hole poses, pegs on the axis, levels 2
  and 6); the Python-float rim search equals the array one; one pose equals the same pose inside a batch.
- posture ranking (ground mode ``both``): the batched rigid path (LCPs stepped together, stacked impact solves)
  against the per-candidate path on 1 000 random candidates of the OSR-like and PR-3D models: same rankings,
  T_c and shares equal to 1e-12.
- single indicator: ``indicator.evaluate`` equals its composition from ``impact`` / ``ground_activity`` with the
  model's ground rows; its reduced-coordinate path equals ``evaluate_reference`` (the full-coordinate
  composition) on random postures, velocities, angles and 1-3 contact wheels of the three models (same
  activity sets, ranks and deficiency flags; energies to 1e-12 of T, effective masses to 1e-11); the one-pass wheel rows, the mirrored CRBA matrix and the heading are the
  reference's bit for bit.
- convex-pair contacts: ``ContactKinematics.compute`` (separating axes in two stages, the edge crosses only for
  pairs no face normal separates) gives the outputs of the single-stage code (commit cd708cd, recorded in
  fixtures/speed/contact_kinematics_cd708cd.json — the sha256 of every output array — by ``python
  test/test_speed_equality.py --record-contacts`` run against that commit; the arrays themselves in
  contact_kinematics_cd708cd.npz) on the recorded M2 and M3 drops (contact_kinematics_drops.npz), batched and
  pose by pose: integers and flags exact, floats to 1e-15 (bit for bit on the recording OpenBLAS kernel; other
  kernels round the last bit differently). The contact point rule picks among tied support vertices, so only
  identical arithmetic keeps r (doc/benchmarks.md).
No timing here (bench/bench_multipoint.py, bench/bench_rover.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

FIXTURE = Path(__file__).parent / 'fixtures' / 'speed' / 'peg_hole_detect_ee6e9a7.npz'


def detect_draws():
    """DRAWS seeded detect inputs: (p0, p1, r, levels, kwargs)."""
    from contact_estimation.geometry.peg_hole import HoleGeometry
    hole = HoleGeometry(0.0175, 0.050)
    rng = np.random.default_rng(5)
    for trial in range(DRAWS):
        n = int(rng.choice([1, 2, 4, 10]))
        kind = trial % 4
        p0 = np.c_[rng.uniform(-8, 8, (n, 2)) * 1e-3, rng.uniform(-5, 110, n) * 1e-3]
        d = rng.normal(size=(n, 3))
        d[:, 2] = np.abs(d[:, 2]) + 0.3 * (kind != 3)
        d /= np.linalg.norm(d, axis=1)[:, None]
        p1 = p0 + d * rng.uniform(0.01, 0.12, (n, 1))
        if kind == 2:
            p0[:, :2] = 0.0                                  # on the axis: every rim sample ties
            p1[:, :2] = 0.0
        r = rng.uniform(0.0160, 0.0175, n)
        kw = {}
        if kind == 1:
            R = Rotation.random(n, random_state=trial).as_matrix()
            pos = rng.normal(0, 0.01, (n, 3))
            kw = dict(hole_rotation=R, hole_position=pos)
            p0 = np.einsum('nij,nj->ni', R, p0) + pos
            p1 = np.einsum('nij,nj->ni', R, p1) + pos
        yield hole, p0, p1, r, int(rng.choice([2, 6])), kw


DRAWS = 160
FIELDS = ('pair', 'feature', 'point', 'normal', 'depth', 's')


def _record():
    from contact_estimation.geometry.peg_hole import detect
    out = {}
    for i, (hole, p0, p1, r, levels, kw) in enumerate(detect_draws()):
        m = detect(p0, p1, r, hole, levels=levels, **kw)
        for f in FIELDS:
            out[f'{i}_{f}'] = getattr(m, f)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FIXTURE, **out)


def test_detect_equals_the_pre_speed_outputs():
    from contact_estimation.geometry.peg_hole import detect
    ref = np.load(FIXTURE)
    contacts = 0
    for i, (hole, p0, p1, r, levels, kw) in enumerate(detect_draws()):
        m = detect(p0, p1, r, hole, levels=levels, **kw)
        np.testing.assert_array_equal(m.pair, ref[f'{i}_pair'])
        np.testing.assert_array_equal(m.feature, ref[f'{i}_feature'])
        for f in ('point', 'normal', 'depth', 's'):
            np.testing.assert_allclose(getattr(m, f), ref[f'{i}_{f}'], rtol=0, atol=1e-12, err_msg=f'draw {i} {f}')
        contacts += len(m)
    assert contacts > 500                                   # the draws do make contacts of every feature
    assert set(np.concatenate([ref[f'{i}_feature'] for i in range(DRAWS)])) == set(range(6))


def test_rim_search_python_floats_equal_the_array_search():
    from contact_estimation.geometry.peg_hole import _rim_search, _rim_search_points, _rim_search_scalar
    rng = np.random.default_rng(3)
    for levels in (0, 1, 6, 9):
        w0 = rng.normal(0, 0.03, (300, 3))
        A = rng.normal(0, 0.05, (300, 3))
        A[::3] = 0.0                                         # points
        a = _rim_search(w0, A, 0.0175, levels)
        b = _rim_search_scalar(w0, A, 0.0175, levels)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        phi, d = _rim_search_points(w0[::3], 0.0175, levels)
        np.testing.assert_array_equal(phi, a[0][::3])
        np.testing.assert_array_equal(d, a[1][::3])


def test_one_pose_equals_the_same_pose_in_a_batch():
    from contact_estimation.geometry.peg_hole import HoleGeometry, detect
    hole = HoleGeometry(0.0175, 0.050)
    rng = np.random.default_rng(11)
    n = 300
    p0 = np.c_[rng.uniform(-5, 5, (n, 2)) * 1e-3, rng.uniform(10, 90, n) * 1e-3]
    p1 = p0 + np.c_[rng.uniform(-8, 8, (n, 2)) * 1e-3, np.full(n, 0.1)]
    r = rng.uniform(0.0165, 0.0175, n)
    batch = detect(p0, p1, r, hole)                        # array rim search (more than a few pairs)
    for k in range(n):
        # Python-float rim search, whatever form a controller passes one pose in
        forms = [(p0[k], p1[k], r[k]), (p0[k].tolist(), tuple(p1[k].tolist()), float(r[k])),
                 (p0[k][None], p1[k][None], np.array([r[k]]))]
        sel = batch.pair == k
        for a, b, rad in forms[:1] if k % 10 else forms:
            one = detect(a, b, rad, hole)
            np.testing.assert_array_equal(one.feature, batch.feature[sel])
            for f in ('point', 'normal', 'depth', 's'):
                np.testing.assert_array_equal(getattr(one, f), getattr(batch, f)[sel])


def test_blocked_rim_search_equals_one_block(monkeypatch):
    import contact_estimation.geometry.peg_hole as ph
    hole = ph.HoleGeometry(0.0175, 0.050)
    rng = np.random.default_rng(12)
    n = 2500
    p0 = np.c_[rng.uniform(-5, 5, (n, 2)) * 1e-3, rng.uniform(10, 90, n) * 1e-3]
    p1 = p0 + np.c_[rng.uniform(-8, 8, (n, 2)) * 1e-3, np.full(n, 0.1)]
    r = rng.uniform(0.0165, 0.0175, n)
    blocked = ph.detect(p0, p1, r, hole)
    monkeypatch.setattr(ph, '_BLOCK', 10 ** 9)
    whole = ph.detect(p0, p1, r, hole)
    assert len(whole) > 2000
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(blocked, f), getattr(whole, f))


def _random_candidates(model, n, rng):
    from rover_contact.posture.evaluate import Candidate
    joints = list(model.roles.posture_joints)
    lo = np.array([model.model.lowerPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    hi = np.array([model.model.upperPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    x = rng.uniform(lo, hi, size=(n, len(joints)))
    return [Candidate(dict(zip(joints, row)), float(rng.uniform(0.03, 0.2))) for row in x]


@pytest.mark.parametrize('roles', ['rover_osr_like_roles.yaml', 'rover_pr3d_roles.yaml'])
@pytest.mark.parametrize('rolling', [True, False])
def test_posture_both_batched_equals_per_candidate(roles, rolling):
    from rover_contact.inputs import load_model
    from rover_contact.posture.evaluate import Obstacle, PostureEvaluator
    model = load_model({'model_yaml': roles, 'urdf_path': ''})
    rng = np.random.default_rng(7)
    cands = _random_candidates(model, 1000, rng)
    for beta, wheels in ((np.deg2rad(70), ['front_left', 'front_right']), (np.deg2rad(35), ['front_left'])):
        obs = Obstacle(beta, wheels, k=2e5)
        ev = PostureEvaluator(model, ground_mode='both', rolling=rolling)
        fast = ev.evaluate({}, cands, obs)
        ev.reference_rigid = True
        ref = ev.evaluate({}, cands, obs)
        assert fast.feasible.sum() > 500
        np.testing.assert_array_equal(fast.order, ref.order)
        np.testing.assert_array_equal(fast.feasible, ref.feasible)
        for f in ('t_c_rigid', 'score', 'max_share', 'f_max_estimate', 'fraction'):
            a, b = getattr(fast, f), getattr(ref, f)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            ok = ~np.isnan(b)
            np.testing.assert_allclose(a[ok], b[ok], rtol=1e-12, atol=1e-15, err_msg=f)
        # the rigid mode is the score of a share of the candidates in both models (not a vacuous comparison)
        assert np.any(fast.t_c_rigid[fast.feasible] > ref.t_c_free[fast.feasible])


@pytest.mark.parametrize('roles', ['rover_osr_like_roles.yaml', 'rover_pr3d_roles.yaml'])
def test_indicator_equals_its_composition(roles):
    from rover_contact.impact.activity import ground_activity
    from rover_contact.impact.energy import impact, project_admissible
    from rover_contact.impact.geometry import n_in_ros
    from rover_contact.impact.indicator import evaluate
    from rover_contact.inputs import load_model
    model = load_model({'model_yaml': roles, 'urdf_path': ''})
    rng = np.random.default_rng(2)
    q = model.configuration()
    wheels = ['front_left', 'front_right']
    for _ in range(40):
        qd = model.rolling_velocity(q, 0.07) + rng.normal(0, 0.05, model.nv)
        beta = rng.uniform(0.3, 1.5)
        got = evaluate(model, q, qd, beta, wheels, 'both')
        M = model.mass_matrix(q)
        mech = model.mech_rows()
        v, _ = project_admissible(M, mech, qd)
        lam = model.contact_rows(q, wheels, n_in_ros(beta, model.heading(q)))
        active = ground_activity(M, mech, lam, model.ground_normal_rows(q), v)
        rows = model.ground_rows(q, [w for w, a in zip(model.wheel_names, active) if a])
        rigid = impact(M, np.vstack([mech, rows]), lam, v)
        free = impact(M, mech, lam, v)
        np.testing.assert_array_equal(got.ground_active, active)
        np.testing.assert_allclose([got.rigid.t_c, got.free.t_c], [rigid.t_c, free.t_c], rtol=1e-12, atol=0)
        np.testing.assert_allclose(got.rigid.t_c_per_contact, rigid.t_c_per_contact, rtol=1e-12, atol=1e-15)



def _draws(model, n, rng):
    """n random (q, q̇, β, contact wheels, rolling): postures within the joint limits, base anywhere within
    ±1 m and any yaw, the rolling velocity (±noise on every other draw), 1-2 front wheels or 1-3 of any."""
    joints = list(model.roles.posture_joints)
    lo = np.array([model.model.lowerPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    hi = np.array([model.model.upperPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    for k in range(n):
        q = model.configuration(dict(zip(joints, rng.uniform(lo, hi))), rng.normal(0, 1, 3),
                                [0, 0, np.sin(rng.uniform(-1, 1)), 1])
        qd = model.rolling_velocity(q, rng.uniform(0.02, 0.2)) + rng.normal(0, 0.05, model.nv) * (k % 2)
        pool = model.wheel_names[:2] if k % 3 else model.wheel_names
        wheels = list(rng.choice(pool, size=rng.integers(1, 3 if k % 3 else 4), replace=False))
        yield q, qd, rng.uniform(0.2, 1.57), wheels, bool(k % 4)


# |reduced − reference|: energies to 1e-12 T; M_eff and 1/m_apparent to _MASS_TOL of their largest entry
# (measured over 3 × 300 draws of each model: T_c ≤ 7e-13 T, M_eff ≤ 5e-12, the rigid mode's with several
# active wheels; the free mode ≤ 1e-12); shares against ½‖M_eff‖ v_c² (they may exceed T).
_MODELS = ['rover_pr3d_roles.yaml', 'rover_osr_like_roles.yaml', 'rover_rcp_like_roles.yaml']
_MASS_TOL = 1e-11


@pytest.mark.parametrize('roles', _MODELS)
def test_indicator_reduced_path_equals_the_reference(roles):
    from rover_contact.impact.indicator import _evaluate_reduced, evaluate, evaluate_reference
    from rover_contact.inputs import load_model
    model = load_model({'model_yaml': roles, 'urdf_path': ''})
    rng = np.random.default_rng(19)
    taken = rigid_sets = deficient = 0
    for q, qd, beta, wheels, rolling in _draws(model, 150, rng):
        ref = evaluate_reference(model, q, qd, beta, wheels, 'both', rolling)
        red = _evaluate_reduced(model, q, qd, beta, wheels, 'both', rolling, 1e-10, None)
        got = evaluate(model, q, qd, beta, wheels, 'both', rolling)
        if red is None:                                  # declined: evaluate is the reference itself
            assert got.rigid.t_c == ref.rigid.t_c and np.array_equal(got.rigid.m_eff, ref.rigid.m_eff)
            continue
        taken += 1
        rigid_sets += bool(red.ground_active.any())
        np.testing.assert_array_equal(red.ground_active, ref.ground_active)
        np.testing.assert_array_equal(got.ground_active, red.ground_active)
        assert got.rigid.t_c == red.rigid.t_c
        assert abs(red.residual_energy - ref.residual_energy) <= 1e-12 * ref.free.t_total
        for mode in ('free', 'rigid'):
            a, b = getattr(red, mode), getattr(ref, mode)
            assert (a.rank_jc, a.rank_deficient_contacts) == (b.rank_jc, b.rank_deficient_contacts), mode
            deficient += a.rank_deficient_contacts
            T = b.t_total
            for f in ('t_total', 't_c', 't_a'):
                assert abs(getattr(a, f) - getattr(b, f)) <= 1e-12 * T, (mode, f)
            np.testing.assert_allclose(a.v_c, b.v_c, rtol=0, atol=1e-12 * np.abs(b.v_c).max())
            np.testing.assert_allclose(a.m_eff, b.m_eff, rtol=0, atol=_MASS_TOL * np.abs(b.m_eff).max())
            np.testing.assert_allclose(1 / a.m_apparent, 1 / b.m_apparent, rtol=0,
                                       atol=_MASS_TOL * np.abs(1 / b.m_apparent).max())
            # shares ½ v_c,i (M_eff v_c)_i: M_eff's deviation times v_c², against T (they may exceed it)
            scale = max(T, 0.5 * np.abs(b.m_eff).max() * np.abs(b.v_c).max() ** 2)
            np.testing.assert_allclose(a.t_c_per_contact, b.t_c_per_contact, rtol=0, atol=_MASS_TOL * scale)
    assert taken >= 0.8 * 150 and rigid_sets >= 0.5 * taken        # the fast path is what is compared
    if roles != 'rover_pr3d_roles.yaml':
        assert deficient > 0                                      # pseudo-inverse branch exercised too


@pytest.mark.parametrize('roles', _MODELS)
@pytest.mark.parametrize('wheel_contact', ['domed', 'disk'])
def test_one_pass_rows_mass_matrix_and_heading_are_the_references(roles, wheel_contact):
    import pinocchio as pin

    from rover_contact.impact.geometry import n_in_ros
    from rover_contact.inputs import load_model
    model = load_model({'model_yaml': roles, 'urdf_path': ''})
    model.wheel_contact = wheel_contact
    rng = np.random.default_rng(4)
    for q, _, beta, wheels, _ in _draws(model, 30, rng):
        q[0:3] += rng.normal(0, 300, 3)                          # far from the origin as well
        n_in = n_in_ros(beta, model.heading(q))
        lam, Gp = model.impact_rows(q, wheels, n_in)
        np.testing.assert_array_equal(lam, model.contact_rows(q, wheels, n_in))
        np.testing.assert_array_equal(Gp[:, [2, 2, 0, 1]].reshape(-1, model.nv), model.ground_rows(q, model.wheel_names))
        M = pin.crba(model.model, model.data, q)
        np.testing.assert_array_equal(model.mass_matrix(q), np.triu(M) + np.triu(M, 1).T)
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix() @ model.root_T_base.rotation
        assert model.heading(q) == float(np.arctan2(R[1, 0], R[0, 0]))



CONTACTS_FIXTURE = Path(__file__).parent / 'fixtures' / 'speed' / 'contact_kinematics_cd708cd.json'
CONTACT_FIELDS = ('k', 'pair', 'r', 'n', 't', 'delta', 'delta_dot', 'sliding', 'lever', 'count', 'v_t')


#: the M2 and M3 drops (q, p, v, w) the digests were recorded on: a fixed input. The drop bounces and is chaotic,
#: so simulated afresh it differs with the OpenBLAS kernel (measured: OPENBLAS_CORETYPE=Haswell or Prescott give
#: 2141 contacts on M2 instead of 2147 and every digest fails, though ContactKinematics is not involved)
CONTACT_DROPS = Path(__file__).parent / 'fixtures' / 'speed' / 'contact_kinematics_drops.npz'


def _record_contact_drops():
    """Write CONTACT_DROPS from gravity_drop (run once, on the machine and kernel the digests were recorded on)."""
    from contact_estimation.multipoint.scenarios import gravity_drop
    out = {}
    for model in ('M2', 'M3'):
        tr = gravity_drop(model).trajectory
        out |= {f'{model}_{f}': getattr(tr, f) for f in ('q', 'p', 'v', 'w')}
    np.savez_compressed(CONTACT_DROPS, **out)


def _contact_cases():
    """(label, R, p, v, w): the recorded M2 and M3 drops batched, and every 10th pose of each alone."""
    from types import SimpleNamespace

    from contact_estimation.geometry.rotations import quat_to_matrix
    drops = np.load(CONTACT_DROPS)
    for model in ('M2', 'M3'):
        tr = SimpleNamespace(**{f: drops[f'{model}_{f}'] for f in ('q', 'p', 'v', 'w')})
        R = quat_to_matrix(tr.q)
        yield f'{model}_all', R, tr.p, tr.v, tr.w
        for k in range(0, len(R), 10):
            yield f'{model}_{k}', R[k], tr.p[k], tr.v[k], tr.w[k]


def _contact_kinematics():
    from contact_estimation.geometry.body import load_geometry
    from contact_estimation.geometry.contacts import ContactKinematics
    P, E = load_geometry(Path(__file__).parents[1] / 'config' / 'multipoint_acu_geometry.yaml')
    return ContactKinematics(P.parts, E.world_parts())


def _digest(a: np.ndarray) -> str:
    import hashlib
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f'{a.dtype.str}{a.shape}'.encode() + a.tobytes()).hexdigest()


def _record_contacts():
    import json
    kin = _contact_kinematics()
    out = {}
    for label, R, p, v, w in _contact_cases():
        c = kin.compute(R, p, v, w)
        out[label] = {f: _digest(getattr(c, f)) for f in CONTACT_FIELDS} | {'contacts': len(c)}
    CONTACTS_FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    CONTACTS_FIXTURE.write_text(json.dumps(out, indent=0, sort_keys=True))


#: cd708cd's batched outputs on the recorded drops as arrays (their sha256 are CONTACTS_FIXTURE's, checked below):
#: written by ``--record-contact-outputs`` only when the code gives those digests bit for bit
CONTACT_OUTPUTS = Path(__file__).parent / 'fixtures' / 'speed' / 'contact_kinematics_cd708cd.npz'
#: the compute on a fixed input still rounds differently in the last bit with the OpenBLAS kernel: measured over
#: OPENBLAS_CORETYPE Haswell, Zen, Cooperlake and SapphireRapids against SkylakeX (the recording one), up to 7
#: of 26 output arrays differ, by at most 2.2e-16 (one ulp of a unit normal); integers and flags are equal. The
#: SSE-only kernels (Prescott, Sandybridge) pick another tied support vertex for 12 of 6441 rows of M2's r
#: (7 mm): this test fails there, as the bit-for-bit digests did on every kernel but SkylakeX.
CONTACT_ATOL = 1e-15


def _record_contact_outputs():
    import json
    ref = json.loads(CONTACTS_FIXTURE.read_text())
    kin = _contact_kinematics()
    out = {}
    for label, R, p, v, w in _contact_cases():
        if label.endswith('_all'):
            c = kin.compute(R, p, v, w)
            for f in CONTACT_FIELDS:
                assert _digest(getattr(c, f)) == ref[label][f], f'{label} {f}: not the bytes of cd708cd'
                out[f'{label}_{f}'] = np.asarray(getattr(c, f))
    np.savez_compressed(CONTACT_OUTPUTS, **out)


def _assert_contacts_equal(c, ref: dict, label: str, rows=slice(None), k=None):
    for f in CONTACT_FIELDS:
        got, want = np.asarray(getattr(c, f)), ref[f][rows] if f != 'count' else ref[f]
        if f == 'count' and k is not None:
            got, want = got, want[k:k + 1]
        if f == 'k' and k is not None:
            want = want - k                                    # a pose alone is pose 0
        if want.dtype.kind == 'f':
            np.testing.assert_allclose(got, want, rtol=0, atol=CONTACT_ATOL, err_msg=f'{label} {f}')
        else:
            np.testing.assert_array_equal(got, want, err_msg=f'{label} {f}')


def test_contact_kinematics_equals_the_single_stage_outputs():
    """The stored arrays are cd708cd's outputs (their digests are the recorded ones, on any machine); the code
    gives them on the recorded drops batched, and each 10th pose alone gives its rows of the batch (integers
    and flags exact, floats to CONTACT_ATOL: bit for bit on the recording kernel)."""
    import json
    digests = json.loads(CONTACTS_FIXTURE.read_text())
    stored = np.load(CONTACT_OUTPUTS)
    ref = {m: {f: stored[f'{m}_all_{f}'] for f in CONTACT_FIELDS} for m in ('M2', 'M3')}
    for m in ref:
        for f in CONTACT_FIELDS:
            assert _digest(ref[m][f]) == digests[f'{m}_all'][f], f'{m} {f}: the stored array is not cd708cd\'s'
    kin = _contact_kinematics()
    contacts = 0
    for label, R, p, v, w in _contact_cases():
        c = kin.compute(R, p, v, w)
        model, pose = label.split('_')
        if pose == 'all':
            assert len(c) == digests[label]['contacts'], label
            _assert_contacts_equal(c, ref[model], label)
        else:
            k = int(pose)
            _assert_contacts_equal(c, ref[model], label, rows=ref[model]['k'] == k, k=k)
        contacts += len(c)
    assert contacts > 4500                                    # both drops make contacts (2 100+ each)


if __name__ == '__main__' and '--record' in sys.argv:       # run with the code to record on sys.path
    _record()
if __name__ == '__main__' and '--record-contact-drops' in sys.argv:
    _record_contact_drops()
if __name__ == '__main__' and '--record-contact-outputs' in sys.argv:
    _record_contact_outputs()
if __name__ == '__main__' and '--record-contacts' in sys.argv:
    _record_contacts()
