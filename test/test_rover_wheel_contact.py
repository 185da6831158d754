"""Wheel contact geometry (``wheel_contact: domed | disk``) against an independent computation written here.

The test rover (URDF below): a body with a steerable front-left wheel, a plain front-right wheel and two
cambered rear wheels. The contact point is computed by hand from the wheel centre, the axle and the normal
(domed C = G + R n; disk C = G + R unit(n − (n·a)a)), the point Jacobian by hand from the joint axes, M by
pinocchio's CRBA on a separately built model, and m_eff = 1/(uᵀ J M⁻¹ Jᵀ u), T_c = ½ m_eff (uᵀ J q̇)²."""
import numpy as np
import pinocchio as pin
import pytest

from contact_dynamics_common.params import validate_all
from rover_contact.impact.config import PARAMS as IMPACT_PARAMS
from rover_contact.impact.geometry import n_in_ros
from rover_contact.impact.indicator import evaluate
from rover_contact.impact.pipeline import ImpactPipeline
from rover_contact.models.rover3d import ModelError, RoverModel
from rover_contact.posture.evaluate import Candidate, Obstacle, PostureEvaluator

R = 0.15
CAMBER = np.deg2rad(10.0)


def _inertial(m, ixx, iyy, izz, z=0.0):
    return (f'<inertial><origin xyz="0 0 {z}"/><mass value="{m}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>')


def _joint(name, kind, parent, child, xyz, axis):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/><axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
            + ('<limit lower="-1" upper="1" effort="1" velocity="1"/>' if kind == 'revolute' else '') + '</joint>')


WHEEL_I = _inertial(2.0, 0.02, 0.03, 0.02)
URDF = ('<robot name="wheel_test">'
        f'<link name="base_link">{_inertial(20.0, 0.5, 0.8, 1.0, 0.05)}</link>'
        f'<link name="fl_steer_link">{_inertial(0.5, 1e-3, 1e-3, 1e-3)}</link>'
        f'<link name="rear_bogie_link">{_inertial(1.0, 0.02, 1e-3, 0.02)}</link>'
        + ''.join(f'<link name="{w}">{WHEEL_I}</link>' for w in ('fl_wheel', 'fr_wheel', 'rl_wheel', 'rr_wheel'))
        + _joint('fl_steer', 'revolute', 'base_link', 'fl_steer_link', (0.4, 0.25, 0.0), (0, 0, 1))
        + _joint('fl_wheel_joint', 'continuous', 'fl_steer_link', 'fl_wheel', (0, 0, -0.1), (0, 1, 0))
        + _joint('fr_wheel_joint', 'continuous', 'base_link', 'fr_wheel', (0.4, -0.25, -0.1), (0, 1, 0))
        + _joint('rear_bogie', 'revolute', 'base_link', 'rear_bogie_link', (-0.4, 0.0, 0.0), (1, 0, 0))
        + _joint('rl_wheel_joint', 'continuous', 'rear_bogie_link', 'rl_wheel', (0.0, 0.25, -0.1),
                 (0, np.cos(CAMBER), np.sin(CAMBER)))
        + _joint('rr_wheel_joint', 'continuous', 'rear_bogie_link', 'rr_wheel', (0.0, -0.25, -0.1),
                 (0, np.cos(CAMBER), -np.sin(CAMBER)))
        + '</robot>')
ROLES = {'model_name': 'wheel_test',
         'wheels': {'front_left': {'joint': 'fl_wheel_joint', 'radius': R},
                    'front_right': {'joint': 'fr_wheel_joint', 'radius': R},
                    'rear_left': {'joint': 'rl_wheel_joint', 'radius': R},
                    'rear_right': {'joint': 'rr_wheel_joint', 'radius': R}},
         'bogies': ['rear_bogie'],                 # passive: free at impact, solved by the ground contact
         'posture_joints': ['fl_steer']}


def _rot(axis, angle):
    return pin.AngleAxis(angle, np.asarray(axis, float)).toRotationMatrix()


def _hand_point(G, a, n, model):
    if model == 'domed':
        return G + R * n
    d = n - (n @ a) * a
    return G + R * d / np.linalg.norm(d)


class Hand:
    """The test rover's kinematics written out: base pose (p_b, R_b), steering δ, rear bogie angle γ."""

    def __init__(self, p_b, R_b, steer, bogie=0.0):
        self.p_b, self.R_b, self.steer, self.bogie = np.asarray(p_b, float), R_b, steer, bogie
        self.pm = pin.buildModelFromXML(URDF, pin.JointModelFreeFlyer())       # for M and the column indices
        self.q = pin.neutral(self.pm)
        self.q[0:3] = p_b
        quat = pin.Quaternion(R_b)
        self.q[3:7] = (quat.x, quat.y, quat.z, quat.w)
        self.q[self.pm.joints[self.pm.getJointId('fl_steer')].idx_q] = steer
        self.q[self.pm.joints[self.pm.getJointId('rear_bogie')].idx_q] = bogie
        data = self.pm.createData()
        M = pin.crba(self.pm, data, self.q)
        self.M = np.triu(M) + np.triu(M, 1).T

    def col(self, joint):
        return self.pm.joints[self.pm.getJointId(joint)].idx_v

    def wheel(self, name):
        """(centre G, unit axle a, [(joint, axis origin, axis direction)] of the chain above the wheel)."""
        Rb, pb = self.R_b, self.p_b
        if name == 'front_left':
            o_s = pb + Rb @ [0.4, 0.25, 0.0]
            R_s = Rb @ _rot([0, 0, 1], self.steer)
            G = o_s + R_s @ [0, 0, -0.1]
            a = R_s @ [0, 1, 0]
            return G, a, [('fl_steer', o_s, Rb @ [0, 0, 1]), ('fl_wheel_joint', G, a)]
        if name == 'front_right':
            G, a = pb + Rb @ [0.4, -0.25, -0.1], Rb @ [0.0, 1.0, 0.0]
            return G, a, [('fr_wheel_joint', G, a)]
        o_b = pb + Rb @ [-0.4, 0.0, 0.0]
        R_rb = Rb @ _rot([1, 0, 0], self.bogie)
        side = 1.0 if name == 'rear_left' else -1.0
        G = o_b + R_rb @ [0.0, side * 0.25, -0.1]
        a = R_rb @ [0.0, np.cos(CAMBER), side * np.sin(CAMBER)]
        return G, a, [('rear_bogie', o_b, Rb @ [1.0, 0.0, 0.0]), ({'rear_left': 'rl', 'rear_right': 'rr'}[name] + '_wheel_joint', G, a)]

    def point_jacobian(self, P, chain):
        """3×nv: v_P = R_b v + (R_b ω) × (P − p_b) + Σ θ̇_j z_j × (P − o_j) (base twist in the base frame)."""
        J = np.zeros((3, self.pm.nv))
        J[:, 0:3] = self.R_b
        for i in range(3):
            J[:, 3 + i] = np.cross(self.R_b[:, i], P - self.p_b)
        for joint, o, z in chain:
            J[:, self.col(joint)] = np.cross(z, P - o)
        return J

    def contact(self, wheel, n, model):
        G, a, chain = self.wheel(wheel)
        C = _hand_point(G, a, n, model)
        lam = n @ self.point_jacobian(C, chain)
        return C, lam

    def ground_rows(self, wheel, model):
        G, a, chain = self.wheel(wheel)
        P = _hand_point(G, a, np.array([0.0, 0.0, -1.0]), model)
        J = self.point_jacobian(P, chain)
        return P, np.array([J[2], J[2], J[0], J[1]])


def _model(wheel_contact):
    return RoverModel(URDF, ROLES, wheel_contact)


def _velocity(hand, rng):
    v = rng.normal(size=hand.pm.nv) * 0.1
    v[0] = 0.3                                                    # mostly forward
    return v


CASES = {'steered': ((0.0, 0.0, R + 0.1), np.eye(3), 0.5, 0.0),
         'rolled': ((0.1, -0.05, 0.3), _rot([1, 0, 0], np.deg2rad(12.0)), 0.0, -0.1),
         'steered_and_rolled': ((0.0, 0.0, 0.3), _rot([1, 0, 0], np.deg2rad(-8.0)) @ _rot([0, 1, 0], 0.1), -0.3,
                                0.2)}


@pytest.mark.parametrize('wheel_contact', ['domed', 'disk'])
@pytest.mark.parametrize('case', list(CASES))
def test_contact_row_meff_and_tc_match_hand_computation(case, wheel_contact):
    p_b, R_b, steer, bogie = CASES[case]
    hand = Hand(p_b, R_b, steer, bogie)
    model = _model(wheel_contact)
    rng = np.random.default_rng(11)
    qd = _velocity(hand, rng)
    for beta in np.deg2rad([35.0, 60.0, 90.0]):
        n = n_in_ros(beta)
        C, lam_hand = hand.contact('front_left', n, wheel_contact)
        assert np.allclose(model.wheel_points(hand.q, ['front_left'], n)[0], C, atol=1e-12)
        lam = model.contact_rows(hand.q, ['front_left'], n)
        assert np.abs(lam[0] - lam_hand).max() < 1e-12
        m_eff = 1.0 / (lam_hand @ np.linalg.solve(hand.M, lam_hand))
        ind = evaluate(model, hand.q, qd, beta, ['front_left'], 'free', heading=0.0, project=False)
        assert ind.free.m_eff[0, 0] == pytest.approx(m_eff, rel=1e-9)
        assert ind.free.t_c == pytest.approx(0.5 * m_eff * (lam_hand @ qd) ** 2, rel=1e-9)


@pytest.mark.parametrize('wheel_contact', ['domed', 'disk'])
@pytest.mark.parametrize('case', list(CASES))
def test_ground_rows_match_hand_computation(case, wheel_contact):
    p_b, R_b, steer, bogie = CASES[case]
    hand = Hand(p_b, R_b, steer, bogie)
    model = _model(wheel_contact)
    wheels = ['front_left', 'front_right', 'rear_left', 'rear_right']
    rows = model.ground_rows(hand.q, wheels)
    for k, w in enumerate(wheels):
        P, hand_rows = hand.ground_rows(w, wheel_contact)
        assert np.abs(rows[4 * k:4 * k + 4] - hand_rows).max() < 1e-12
        if wheel_contact == 'domed':       # the ground rows are those of the wheel centre (normal) and of G − R e_z
            G, _, chain = hand.wheel(w)
            assert np.abs(rows[4 * k] - hand.point_jacobian(G, chain)[2]).max() < 1e-12


def test_models_differ_on_steered_and_rolled_wheels_and_agree_on_a_level_axle():
    domed, disk = _model('domed'), _model('disk')
    n = n_in_ros(np.deg2rad(60.0))
    rng = np.random.default_rng(5)
    for case, (p_b, R_b, steer, bogie) in CASES.items():
        hand = Hand(p_b, R_b, steer, bogie)
        qd = domed.rolling_velocity(hand.q, 0.2, heading=0.0)       # rolling forward (one q̇ for both)
        c1 = domed.wheel_points(hand.q, ['front_left'], n)[0]
        c2 = disk.wheel_points(hand.q, ['front_left'], n)[0]
        t1 = evaluate(domed, hand.q, qd, np.deg2rad(60), ['front_left'], 'free', heading=0.0, project=False).free.t_c
        t2 = evaluate(disk, hand.q, qd, np.deg2rad(60), ['front_left'], 'free', heading=0.0, project=False).free.t_c
        shift = np.linalg.norm(c1 - c2)
        print(f'{case}: contact point moves {shift * 1e3:.1f} mm, T_c domed/disk = {t1 / t2:.4f}')
        assert shift > 5e-3 and abs(t1 / t2 - 1) > 1e-3
    # level, unsteered axle (perpendicular to the normal in the x-z plane): identical rows and energies
    hand = Hand((0.0, 0.0, 0.3), np.eye(3), 0.0)
    qd = _velocity(hand, rng)
    for beta in np.deg2rad([20.0, 60.0, 90.0]):
        n = n_in_ros(beta)
        for w in ('front_left', 'front_right'):
            assert np.abs(domed.contact_rows(hand.q, [w], n) - disk.contact_rows(hand.q, [w], n)).max() < 1e-14
        t1 = evaluate(domed, hand.q, qd, beta, ['front_left', 'front_right'], 'both')
        t2 = evaluate(disk, hand.q, qd, beta, ['front_left', 'front_right'], 'both')
        assert t1.free.t_c == pytest.approx(t2.free.t_c, rel=1e-12)
    assert np.abs(domed.ground_rows(hand.q, ['front_left', 'front_right'])
                  - disk.ground_rows(hand.q, ['front_left', 'front_right'])).max() < 1e-14


@pytest.mark.parametrize('wheel_contact', ['domed', 'disk'])
def test_posture_solve_and_batched_rows_use_the_same_geometry(wheel_contact):
    """The posture ground solve puts each wheel's contact point (domed: centre at height R; disk: lowest rim
    point) on z = 0 — the cambered rear wheels tell the two apart — and the batched rows equal the model's."""
    model = _model(wheel_contact)
    ev = PostureEvaluator(model, ground_mode='both', stability_margin=-1.0)
    cands = [Candidate({'fl_steer': s}, 0.2) for s in (-0.4, 0.0, 0.5)]
    beta = np.deg2rad(65.0)
    e = ev.evaluate({}, cands, Obstacle(beta, ['front_left']))
    assert e.feasible.all()
    for k, c in enumerate(cands):
        q = ev.configuration(e, k)
        G, a = model.wheel_geometry(q)
        lowest = G[:, 2] - (R if wheel_contact == 'domed' else R * np.sqrt(1 - a[:, 2] ** 2))
        assert np.abs(lowest).max() < 1e-8
        assert abs(a[2, 2]) > 0.1                                 # the cambered wheels are tilted
        v = model.rolling_velocity(q, c.speed)
        down = np.array([0.0, 0.0, -1.0])
        P = model.wheel_points(q, model.wheel_names, down)
        model._kin(q)
        for w, jid in enumerate(model.wheel_jid):               # every ground contact point at rest along x
            assert abs((model.point_jacobian(jid, P[w]) @ v)[0]) < 1e-12
        ind = evaluate(model, q, v, beta, ['front_left'], 'both')
        assert e.t_c_free[k] == pytest.approx(ind.free.t_c, rel=1e-9)
        assert e.t_c_rigid[k] == pytest.approx(ind.rigid.t_c, rel=1e-9)


def test_parameter_reaches_the_pipeline_and_is_validated(tmp_path):
    urdf = tmp_path / 'wheel_test.urdf'
    urdf.write_text(URDF)
    roles = tmp_path / 'roles.yaml'
    import yaml
    roles.write_text(yaml.safe_dump({**ROLES, 'urdf': 'wheel_test.urdf'}))
    hand = Hand((0.0, 0.0, 0.3), _rot([1, 0, 0], np.deg2rad(10.0)), 0.4)
    qd = _velocity(hand, np.random.default_rng(2))
    tcs = {}
    for wc in ('domed', 'disk'):
        pl = ImpactPipeline(validate_all(IMPACT_PARAMS, {'model_yaml': str(roles), 'wheel_contact': wc,
                                                         'ground_mode': 'free', 'contact_wheels_default': ['front_left']}))
        assert pl.model.wheel_contact == wc
        m = pl.model
        names = m.joint_names
        jp = m.joint_positions(hand.q)
        pl.inputs.push_joint_state(10**9, names, [jp[n] for n in names], [qd[m.idx_v[n]] for n in names])
        pl.inputs.push_odometry(10**9, hand.q[0:3], hand.q[3:7], qd[0:3], qd[3:6])
        pl.inputs.push_obstacle(10**9, 'odom', (0, 0, 0), np.deg2rad(60), 0.0, 1.0, [], False)
        tcs[wc] = pl.step(10**9)['t_c']
        assert tcs[wc] == pytest.approx(evaluate(_model(wc), hand.q, qd, np.deg2rad(60), ['front_left'],
                                                 'free').free.t_c, rel=1e-12)
    assert abs(tcs['domed'] / tcs['disk'] - 1) > 1e-3
    from contact_dynamics_common.params import ConfigError
    with pytest.raises(ConfigError, match='wheel_contact'):
        validate_all(IMPACT_PARAMS, {'wheel_contact': 'sphere'})
    with pytest.raises(ModelError, match='wheel_contact'):
        RoverModel(URDF, ROLES, 'sphere')
