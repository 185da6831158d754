"""rover_contact: spec tests T1-T8, T11-T13 (macmahon_rover.md §8) and the 3-D effective-mass checks."""
import numpy as np
import pinocchio as pin
import pytest

from rover_contact.impact.activity import ground_activity
from rover_contact.impact.energy import (EnergyError, impact, kinetic_energy, project_admissible, projector_328,
                                         projector_329, t_c)
from rover_contact.impact.geometry import (beta_from_step, contact_height, gmdl_to_ros, n_in_ros, ros_to_gmdl,
                                           rolling_spin)
from rover_contact.models.parametric import RCP_WHEELS, parametric_coms
from rover_contact.models.planar import (TwoBodyParams, model_pr, remove_coordinate, two_body_jc,
                                         two_body_mass_matrix, two_body_meff_closed, two_body_tree,
                                         two_body_velocity)
from rover_contact.models.rover3d import ModelError, RoverModel

BETAS = np.arange(10, 91, 10)
T1_MEFF = [32.8626, 38.6380, 47.5265, 60.6338, 78.2196, 96.4848, 105.0000, 96.4848, 78.2196]
T1_TC = [2.42777, 11.07347, 29.10996, 61.37845, 112.45785, 177.29076, 227.15747, 229.25972, 191.63810]
T5_FREE = [3.0284, 16.3181, 50.4567, 115.3293, 182.3804, 192.1210, 158.8618, 121.5052, 91.8950]
T5_LOCK = [4.4820, 21.9046, 59.4594, 119.5055, 184.0184, 218.5559, 212.4626, 183.8537, 150.2955]
V = 0.07
TB = TwoBodyParams()
FRONT, MIDDLE, REAR = 2, 3, 4


def _rel(a, b):
    return abs(a - b) / abs(b)


def test_t1_two_body_closed_form():
    M = two_body_mass_matrix(TB)
    assert np.abs(M - two_body_tree(TB).mass_matrix()).max() < 1e-12
    qd = two_body_velocity(TB, V)
    assert kinetic_energy(M, qd) * 1e3 == pytest.approx(263.650, abs=5e-4)
    for b, meff_ref, tc_ref in zip(BETAS, T1_MEFF, T1_TC):
        beta = np.deg2rad(b)
        J = two_body_jc(TB, beta)
        meff = 1.0 / (J @ np.linalg.solve(M, J))
        closed = two_body_meff_closed(TB, beta)
        assert _rel(meff, closed) <= 1e-10
        tc = t_c(M, J[None], qd)
        assert _rel(tc, 0.5 * closed * (V * np.sin(beta)) ** 2) <= 1e-10
        assert meff == pytest.approx(meff_ref, abs=1e-4)
        assert tc * 1e3 == pytest.approx(tc_ref, abs=1e-5)
    assert two_body_meff_closed(TB, np.deg2rad(70.0)) == pytest.approx(105.0, rel=1e-12)
    grid = np.deg2rad(np.arange(10, 90.001, 0.1))
    tcs = 0.5 * two_body_meff_closed(TB, grid) * (V * np.sin(grid)) ** 2
    assert np.rad2deg(grid[np.argmax(tcs)]) == pytest.approx(75.3, abs=0.05)
    assert tcs.max() * 1e3 == pytest.approx(234.821, abs=1e-3)


def test_t2_projector_identities():
    M = two_body_mass_matrix(TB)
    J = two_body_jc(TB, np.deg2rad(60))[None]
    qd = two_body_velocity(TB, V)
    P8, P9 = projector_328(M, J), projector_329(M, J)
    assert np.abs(P8 - P9).max() <= 1e-12
    assert np.abs(P9 @ P9 - P9).max() <= 1e-12
    MP = M @ P9
    assert np.abs(MP - MP.T).max() <= 1e-10 * np.linalg.norm(M)
    T = kinetic_energy(M, qd)
    Tc = 0.5 * (P9 @ qd) @ M @ (P9 @ qd)
    Ta = 0.5 * ((np.eye(4) - P9) @ qd) @ M @ ((np.eye(4) - P9) @ qd)
    assert _rel(Tc + Ta, T) <= 1e-12
    assert _rel(Tc, t_c(M, J, qd)) <= 1e-12


def test_t3_dependent_coordinates_and_redundant_rows():
    tree = two_body_tree(TB)
    Mx = tree.mass_matrix_maximal()
    Gx = tree.gamma_maximal()
    assert Gx.shape == (2, 6)
    qdx = tree.jacobian_maximal() @ two_body_velocity(TB, V)
    assert np.abs(Gx @ qdx).max() < 1e-15
    for b, tc_ref in zip(BETAS, T1_TC):
        beta = np.deg2rad(b)
        lam = np.array([0, 0, 0, np.sin(beta), -np.cos(beta), 0.0])
        assert np.allclose(lam, tree.normal_row(1, beta, maximal=True))
        exact = t_c(two_body_mass_matrix(TB), two_body_jc(TB, beta)[None], two_body_velocity(TB, V))
        assert _rel(t_c(Mx, np.vstack([Gx, lam]), qdx), exact) <= 1e-9
        dup = np.vstack([Gx, Gx[:1], lam])                 # redundant row
        S = dup @ np.linalg.inv(Mx) @ dup.T
        assert np.linalg.cond(S) > 1e14                    # the naive inverse is singular
        assert _rel(t_c(Mx, dup, qdx), exact) <= 1e-9
        assert _rel(impact(Mx, np.vstack([Gx, Gx[:1]]), lam, qdx).t_c, exact) <= 1e-9


@pytest.mark.parametrize('b,ref', [(30, 59.4594), (60, 218.5559), (90, 150.2955)])
def test_t4_locked_joint_three_routes(b, ref):
    pr = model_pr()
    M, qd = pr.mass_matrix(), pr.translation_velocity(V)
    lam = pr.normal_row(FRONT, np.deg2rad(b))
    row_route = t_c(M, np.vstack([pr.lock_row_minimal(1), lam]), qd)
    Mr, lam_r, qd_r = remove_coordinate(M, lam, qd, 3)     # bogie coordinate
    removal_route = t_c(Mr, lam_r, qd_r)
    Mx, Gx, qdx = pr.mass_matrix_maximal(), pr.gamma_maximal(), pr.jacobian_maximal() @ qd
    maximal_route = t_c(Mx, np.vstack([Gx, pr.lock_row_maximal(1), pr.normal_row(FRONT, np.deg2rad(b), True)]), qdx)
    assert _rel(removal_route, row_route) <= 1e-9 and _rel(maximal_route, row_route) <= 1e-9
    assert row_route * 1e3 == pytest.approx(ref, abs=1e-4)


def test_t5_pr_free_ground_minimal_vs_maximal():
    pr = model_pr()
    M, qd = pr.mass_matrix(), pr.translation_velocity(V)
    assert kinetic_energy(M, qd) * 1e3 == pytest.approx(335.2, abs=1e-9)
    assert np.allclose(pr.com(), [0.00643, 0.61445], atol=1e-5)
    Mx, Gx, qdx = pr.mass_matrix_maximal(), pr.gamma_maximal(), pr.jacobian_maximal() @ qd
    for b, free_ref, lock_ref in zip(BETAS, T5_FREE, T5_LOCK):
        beta = np.deg2rad(b)
        tmin = t_c(M, pr.normal_row(FRONT, beta)[None], qd)
        tmax = t_c(Mx, np.vstack([Gx, pr.normal_row(FRONT, beta, True)]), qdx)
        assert _rel(tmax, tmin) <= 1e-9
        assert tmin * 1e3 == pytest.approx(free_ref, abs=1e-4)
        tl = t_c(M, np.vstack([pr.lock_row_minimal(1), pr.normal_row(FRONT, beta)]), qd)
        assert tl * 1e3 == pytest.approx(lock_ref, abs=1e-4)
    grid = np.deg2rad(np.arange(10, 90.001, 0.1))
    tcs = [t_c(M, pr.normal_row(FRONT, g)[None], qd) for g in grid]
    assert np.rad2deg(grid[int(np.argmax(tcs))]) == pytest.approx(56.3, abs=0.05)
    assert max(tcs) * 1e3 == pytest.approx(196.081, abs=1e-3)


def test_t6_monotone_under_added_constraints():
    rng = np.random.default_rng(6)
    for _ in range(200):
        pr = model_pr(y_body=rng.uniform(0.5, 1.0))
        M = pr.mass_matrix()
        qd = rng.normal(size=pr.n)
        beta = rng.uniform(0.1, np.pi / 2)
        lam = pr.normal_row(FRONT, beta)
        T = kinetic_energy(M, qd)
        base = t_c(M, lam[None], qd)
        extra = [pr.lock_row_minimal(1)[None], pr.ground_rows(MIDDLE), pr.ground_rows(REAR, rolling=False),
                 np.vstack([pr.lock_row_minimal(1), pr.ground_rows(FRONT)])]
        for rows in extra:
            assert t_c(M, np.vstack([rows, lam]), qd) >= base - 1e-12 * T


T7 = {0.55: (98.814, 183.226, 95.255, 58.7), 0.65: (108.660, 191.360, 93.902, 57.3),
      0.75: (115.329, 192.121, 91.895, 56.3), 0.85: (117.962, 186.906, 89.600, 55.6),
      0.95: (117.013, 178.307, 87.297, 55.3)}


def test_t7_posture_table_planar():
    grid = np.deg2rad(np.arange(10, 90.001, 0.1))
    for yb, (t40, t60, t90, amax) in T7.items():
        pr = model_pr(y_body=yb)
        M, qd = pr.mass_matrix(), pr.translation_velocity(V)
        got = [t_c(M, pr.normal_row(FRONT, np.deg2rad(b))[None], qd) * 1e3 for b in (40, 60, 90)]
        assert got == pytest.approx([t40, t60, t90], abs=1e-3)
        tcs = [t_c(M, pr.normal_row(FRONT, g)[None], qd) for g in grid]
        assert np.rad2deg(grid[int(np.argmax(tcs))]) == pytest.approx(amax, abs=0.05)


def _rigid(pr, beta, rolling=True):
    M, qd = pr.mass_matrix(), pr.translation_velocity(V)
    lam = pr.normal_row(FRONT, beta)
    wheels = [FRONT, MIDDLE, REAR]
    G = np.vstack([pr.ground_normal_row(w) for w in wheels])
    act = ground_activity(M, np.zeros((0, pr.n)), lam, G, qd)
    rows = [pr.ground_rows(w, rolling) for w, a in zip(wheels, act) if a]
    return act, t_c(M, np.vstack(rows + [lam[None]]), qd)


def test_t8_rigid_ground_activity_and_flat_region():
    pr = model_pr()
    expect = {10: ([0, 1, 0], 3.292), 20: ([0, 1, 0], 16.956), 30: ([0, 1, 0], 50.755),
              40: ([0, 0, 0], 115.329), 50: ([0, 0, 0], 182.380)}
    for b, (act_ref, tc_ref) in expect.items():
        act, tc = _rigid(pr, np.deg2rad(b))
        assert act.tolist() == [bool(a) for a in act_ref]
        assert tc * 1e3 == pytest.approx(tc_ref, abs=1e-3)
    assert _rigid(pr, np.deg2rad(56.2))[0].tolist() == [False, False, False]
    assert _rigid(pr, np.deg2rad(56.3))[0].tolist() == [True, False, False]
    flat = [_rigid(pr, np.deg2rad(b)) for b in np.arange(57, 90.001, 1.0)]
    assert all(a.tolist() == [True, False, False] for a, _ in flat)
    vals = np.array([t for _, t in flat])
    assert np.abs(vals / vals[0] - 1).max() <= 1e-9
    assert vals[0] * 1e3 == pytest.approx(203.281, abs=1e-3)
    # the same flat value with the front wheel's whole planar motion (centre translation and spin) constrained
    M, qd = pr.mass_matrix(), pr.translation_velocity(V)
    full = t_c(M, pr.body_jacobian(FRONT), qd)
    assert _rel(full, vals[0]) <= 1e-9
    # translation only (no spin row): the 2-D projection equals max_β of the free-ground T_c (196.081 mJ)
    assert t_c(M, pr.point_rows(FRONT), qd) * 1e3 == pytest.approx(196.081, abs=1e-3)


def test_t11_geometry():
    assert np.rad2deg(beta_from_step(0.0875, 0.175)) == pytest.approx(60.0, abs=1e-9)
    assert np.rad2deg(beta_from_step(0.2, 0.175)) == pytest.approx(90.0)
    assert np.rad2deg(beta_from_step(0.175, 0.175)) == pytest.approx(90.0)
    d_col = {40: 0.041, 50: 0.062, 60: 0.086, 70: 0.115, 80: 0.144, 90: 0.175}
    for b, d in d_col.items():
        assert abs(contact_height(np.deg2rad(b), 0.175) - d) <= 2e-3
    rng = np.random.default_rng(11)
    for _ in range(10):
        v = rng.normal(size=3)
        assert np.allclose(ros_to_gmdl(gmdl_to_ros(v)), v) and np.allclose(gmdl_to_ros(ros_to_gmdl(v)), v)
    assert np.allclose(gmdl_to_ros([0, 0, -0.4]), [0, 0.4, 0])
    assert rolling_spin(0.07, 0.175) == pytest.approx(0.4)
    assert np.allclose(n_in_ros(np.deg2rad(90)), [1, 0, 0], atol=1e-15)
    with pytest.raises(ValueError):
        beta_from_step(float('nan'), 0.175)


def test_t12_parametric_rover():
    c = parametric_coms(theta=0.0, wb=1.0698, r=0.175, wt=1.0, w=1.0 - 2 * 0.4552)
    for k, ref in RCP_WHEELS.items():
        assert np.abs(c[k] - np.array(ref)).max() <= 5e-3
    th, l = np.deg2rad(20), 0.1
    c2 = parametric_coms(theta=th, wb=1.0698, l=l)
    assert c2['fw'][0] - c2['rw'][0] == pytest.approx(1.0698 + 2 * l * np.sin(th))
    assert c2['mw'][0] == pytest.approx(-l * np.sin(th))


@pytest.fixture(scope='module')
def pr3d():
    return RoverModel.from_roles_file('config/rover_pr3d_roles.yaml')


def test_3d_mass_matrix_crba_vs_assembly_and_pr_equivalence(pr3d):
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = pin.randomConfiguration(pr3d.model, -np.ones(pr3d.model.nq), np.ones(pr3d.model.nq))
        assert np.abs(pr3d.mass_matrix(q) - pr3d.mass_matrix_assembled(q)).max() < 1e-10
        J, Mb = pr3d.body_blocks(q)
        assert np.abs(J.T @ Mb @ J - pr3d.mass_matrix(q)).max() < 1e-10
    q = pr3d.configuration()
    M, v = pr3d.mass_matrix(q), pr3d.rolling_velocity(q, V)
    assert kinetic_energy(M, v) * 1e3 == pytest.approx(335.2, abs=1e-9)
    for b, ref in zip(BETAS, T5_FREE):          # symmetric two-wheel hit = planar PR (front pair lumped)
        lam = pr3d.contact_rows(q, ['front_left', 'front_right'], n_in_ros(np.deg2rad(b)))
        assert impact(M, pr3d.mech_rows(), lam, v).t_c * 1e3 == pytest.approx(ref, abs=1e-4)


@pytest.mark.parametrize('wheel_contact', ['domed', 'disk'])
def test_3d_meff_equals_independent_pinocchio(wheel_contact):
    """Unconstrained tree: m_eff = 1/(uᵀ J M⁻¹ Jᵀ u), J = pinocchio's frame Jacobian at the contact point (domed:
    C = G + R u; disk: the rim point furthest along u), for random configurations and directions."""
    rng = np.random.default_rng(4)
    urdf = open('config/rover_pr3d.urdf').read()
    ours = RoverModel(urdf, {'wheels': {'front_left': {'joint': 'front_left_wheel_joint', 'radius': 0.175}}},
                      wheel_contact=wheel_contact)
    for _ in range(5):
        model = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())     # independent model
        q = pin.randomConfiguration(model, -0.3 * np.ones(model.nq), 0.3 * np.ones(model.nq))
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        data = model.createData()
        pin.forwardKinematics(model, data, q)
        jid = model.getJointId('front_left_wheel_joint')
        centre, axle = data.oMi[jid].translation.copy(), data.oMi[jid].rotation[:, 1]
        d = u - (u @ axle) * axle if wheel_contact == 'disk' else u
        C = centre + 0.175 * d / np.linalg.norm(d)
        fid = model.addFrame(pin.Frame('probe', jid, data.oMi[jid].actInv(pin.SE3(np.eye(3), C)),
                                       pin.FrameType.OP_FRAME))
        data = model.createData()
        Jf = pin.computeFrameJacobian(model, data, q, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
        Mq = pin.crba(model, data, q)
        Mq = np.triu(Mq) + np.triu(Mq, 1).T
        ref = 1.0 / (u @ Jf @ np.linalg.solve(Mq, Jf.T) @ u)
        lam = ours.contact_rows(q, ['front_left'], u)
        res = impact(ours.mass_matrix(q), None, lam, ours.rolling_velocity(q, V))
        assert res.m_eff[0, 0] == pytest.approx(ref, rel=1e-9)


def test_3d_constrained_meff_matches_projector(pr3d):
    """Constrained case: T_c from M_eff (Schur/null space) equals the Cholesky projector route with [Γ; Λ]."""
    rng = np.random.default_rng(5)
    q = pr3d.configuration({'left_bogie_joint': 0.1, 'right_bogie_joint': -0.05})
    M = pr3d.mass_matrix(q)
    lam = pr3d.contact_rows(q, ['front_left', 'front_right'], n_in_ros(np.deg2rad(65)))
    G = np.vstack([pr3d.mech_rows(), pr3d.ground_rows(q, ['middle_left', 'rear_right'])])
    for _ in range(5):
        v, removed = project_admissible(M, G, rng.normal(size=pr3d.nv))
        assert np.abs(G @ v).max() < 1e-10 and removed > 0
        res = impact(M, G, lam, v)
        vc = lam @ v
        assert 0.5 * vc @ res.m_eff @ vc == pytest.approx(res.t_c, rel=1e-9)
        P = projector_329(M, np.vstack([G, lam]))
        assert 0.5 * (P @ v) @ M @ (P @ v) == pytest.approx(res.t_c, rel=1e-9)
        assert res.t_c_per_contact.sum() == pytest.approx(res.t_c, rel=1e-9)


def test_t13_symmetric_and_single_wheel(pr3d):
    q = pr3d.configuration()
    M, v = pr3d.mass_matrix(q), pr3d.rolling_velocity(q, V)
    lam = pr3d.contact_rows(q, ['front_left', 'front_right'], n_in_ros(np.deg2rad(90)))
    res = impact(M, pr3d.mech_rows(), lam, v)
    assert res.m_eff[0, 0] == pytest.approx(res.m_eff[1, 1], rel=1e-12)
    assert res.t_c_per_contact == pytest.approx([res.t_c / 2] * 2, rel=1e-12)
    from rover_contact.validation.contact_laws import peak_force_from_tc
    f2 = peak_force_from_tc(res.t_c_per_contact[0], 1e9, 1.5)
    assert f2 == pytest.approx(1e9 ** 0.4 * (2.5 * res.t_c / 2) ** 0.6, rel=1e-12)
    from rover_contact.validation.impact_sim import frozen
    run = frozen(M, lam, v, pr3d.mech_rows(), law='hertz', e=1.0, k=1e9, p=1.5)    # symmetric two-wheel impact
    assert run.f_max_each == pytest.approx([f2, f2], rel=2e-3)
    one = pr3d.contact_rows(q, ['front_left'], n_in_ros(np.deg2rad(90)))
    r1 = impact(M, pr3d.mech_rows(), one, v)
    assert r1.t_c == pytest.approx(t_c(M, np.vstack([pr3d.mech_rows(), one]), v), rel=1e-12)
    assert r1.m_eff.shape == (1, 1)
    assert r1.t_c == pytest.approx(0.5 * r1.m_eff[0, 0] * (one @ v)[0] ** 2, rel=1e-12)


def test_bad_inputs_models(pr3d):
    with pytest.raises(ModelError, match='no joint'):
        RoverModel(open('config/rover_pr3d.urdf').read(), {'wheels': {'front_left': {'joint': 'nope', 'radius': 0.1}}})
    with pytest.raises(ModelError, match='URDF'):
        RoverModel('<robot', {'wheels': {'a': {'joint': 'b'}}})
    with pytest.raises(ModelError):
        RoverModel(open('config/rover_pr3d.urdf').read(), {'wheels': {}})
    q = pr3d.configuration()
    M = pr3d.mass_matrix(q)
    with pytest.raises(EnergyError):
        impact(M, None, np.ones((1, pr3d.nv)), np.full(pr3d.nv, np.nan))
    with pytest.raises(EnergyError):
        t_c(-M, np.ones((1, pr3d.nv)), np.ones(pr3d.nv))
