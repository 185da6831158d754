"""Role map of a real-robot URDF: fixed rocker/bogie joints unfixed by the role map (the NASA-JPL Open Source Rover
publishes them as fixed joints), base_link below the URDF root, and every role key used or rejected.

The URDF is written here: an OSR-like rocker-bogie whose root is ``base_footprint`` with ``base_link`` fixed to it
(offset and yawed), rockers and bogies as ``fixed`` joints (the rockers without an axis, the bogies with an axis
and limits), six wheels of radius 0.07 m."""
import numpy as np
import pinocchio as pin
import pytest
import yaml

from contact_dynamics_common.params import ConfigError, validate_all
from rover_contact.impact.config import PARAMS as IMPACT_PARAMS
from rover_contact.impact.pipeline import ImpactPipeline
from rover_contact.models.rover3d import ModelError, Roles, RoverModel
from rover_contact.posture.evaluate import Candidate, Obstacle, PostureEvaluator

R = 0.07
BASE_XYZ, BASE_YAW = (0.05, 0.0, 0.1), 0.2          # base_link in base_footprint


def _inertial(m, i):
    return (f'<inertial><origin xyz="0 0 0"/><mass value="{m}"/>'
            f'<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>')


def _joint(name, kind, parent, child, xyz, axis=None, limit=None):
    s = (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
         f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="0 0 0"/>')
    if axis is not None:
        s += f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
    if limit is not None:
        s += f'<limit lower="{limit[0]}" upper="{limit[1]}" effort="5" velocity="1"/>'
    return s + '</joint>'


def fixed_rocker_urdf() -> str:
    s = '<robot name="osr_fixed"><link name="base_footprint"/>'
    s += f'<link name="base_link">{_inertial(6.0, 0.1)}</link>'
    s += ('<joint name="base_footprint_joint" type="fixed"><parent link="base_footprint"/><child link="base_link"/>'
          f'<origin xyz="{BASE_XYZ[0]} {BASE_XYZ[1]} {BASE_XYZ[2]}" rpy="0 0 {BASE_YAW}"/></joint>')
    for side, y in (('L', 0.22), ('R', -0.22)):
        s += f'<link name="rocker_{side}">{_inertial(0.8, 0.01)}</link><link name="bogie_{side}">{_inertial(0.5, 0.005)}</link>'
        s += _joint(f'rocker_bogie_joint_{side}_1', 'fixed', 'base_link', f'rocker_{side}', (0, y, 0))
        s += _joint(f'rocker_bogie_joint_{side}_2', 'fixed', f'rocker_{side}', f'bogie_{side}', (-0.10, 0, -0.06),
                    (0, 1, 0), (-0.6, 0.6))
        for w, parent, xyz in (('front', f'rocker_{side}', (0.28, 0, -0.13)), ('mid', f'bogie_{side}', (0.10, 0, -0.07)),
                               ('rear', f'bogie_{side}', (-0.16, 0, -0.07))):
            s += f'<link name="wheel_{side}_{w}">{_inertial(0.35, 8e-4)}</link>'
            s += _joint(f'wheel_joint_{side}_{w}', 'continuous', parent, f'wheel_{side}_{w}', xyz, (0, 1, 0))
    return s + '</robot>'


WHEELS = {f'{w}_{side}': {'joint': f'wheel_joint_{s_}_{w}', 'radius': R}
          for side, s_ in (('left', 'L'), ('right', 'R')) for w in ('front', 'mid', 'rear')}
ROCKERS = ['rocker_bogie_joint_L_1', 'rocker_bogie_joint_R_1']
BOGIES = ['rocker_bogie_joint_L_2', 'rocker_bogie_joint_R_2']


def roles(**over) -> dict:
    d = {'model_name': 'osr_fixed', 'base_link': 'base_link', 'wheels': WHEELS, 'rockers': ROCKERS, 'bogies': BOGIES,
         'differential': [{'joints': ROCKERS, 'coefficients': [1.0, 1.0]}],
         'contact_wheels_default': ['front_left', 'front_right'],
         'unfix': {ROCKERS[0]: {'axis': [0, 1, 0], 'lower': -0.5, 'upper': 0.5},
                   ROCKERS[1]: {'axis': [0, 1, 0], 'lower': -0.5, 'upper': 0.5},
                   BOGIES[0]: None, BOGIES[1]: None}}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}


def test_fixed_joints_are_named_and_the_role_map_unfixes_them():
    urdf = fixed_rocker_urdf()
    with pytest.raises(ModelError) as err:                    # as published: fixed joints, the message says how
        RoverModel(urdf, roles(unfix=None))
    text = str(err.value)
    assert 'rocker_bogie_joint_L_1' in text and 'fixed' in text and 'unfix' in text and 'has no joint' not in text
    with pytest.raises(ModelError, match='has no <axis>'):    # rockers have no axis in the URDF: must be given
        RoverModel(urdf, roles(unfix=ROCKERS + BOGIES))
    with pytest.raises(ModelError, match="no joint 'nope'"):
        RoverModel(urdf, roles(unfix={**roles()['unfix'], 'nope': None}))
    with pytest.raises(ModelError, match='already continuous'):
        RoverModel(urdf, roles(unfix={**roles()['unfix'], 'wheel_joint_L_mid': None}))
    m = RoverModel(urdf, roles())
    assert m.nv == 6 + 4 + 6
    pm = m.model
    for j, lim in ((ROCKERS[0], 0.5), (BOGIES[1], 0.6)):        # limits: given (rocker) or the URDF's (bogie)
        jm = pm.joints[pm.getJointId(j)]
        assert pm.lowerPositionLimit[jm.idx_q] == pytest.approx(-lim) and pm.upperPositionLimit[jm.idx_q] == lim
        assert np.allclose(m.joint_axis(m.jid[j]), [0, 1, 0])
    assert set(m.roles.passive_joints) == set(ROCKERS + BOGIES)            # rockers and bogies are passive
    # the unfixed rocker really turns about y: rotating it moves the front wheel centre by r × axis
    q0, q1 = m.configuration(), m.configuration({ROCKERS[0]: 0.1})
    c0, c1 = m.wheel_geometry(q0)[0][0], m.wheel_geometry(q1)[0][0]
    off = np.array([0.28, 0, -0.13])                                       # front wheel from the rocker pivot
    Rb = pin.rpy.rpyToMatrix(0, 0, BASE_YAW)
    assert np.allclose(c1 - c0, Rb @ (pin.rpy.rpyToMatrix(0, 0.1, 0) @ off - off), atol=1e-12)


def test_posture_solve_on_the_unfixed_rocker_bogie():
    m = RoverModel(fixed_rocker_urdf(), roles())
    ev = PostureEvaluator(m, ground_mode='both', stability_margin=-1.0)
    e = ev.evaluate({}, [Candidate({}, 0.1)], Obstacle(np.deg2rad(70), ['front_left', 'front_right']))
    assert e.feasible.all(), e.reject_reason
    q = ev.configuration(e, 0)
    G, _ = m.wheel_geometry(q)
    assert np.abs(G[:, 2] - R).max() < 1e-8                               # domed: every centre at height R
    jp = m.joint_positions(q)
    assert abs(jp[ROCKERS[0]] + jp[ROCKERS[1]]) < 1e-9                     # the differential row holds
    assert e.t_c_free[0] > 0 and np.isfinite(e.t_c_rigid[0])


def test_base_link_pose_and_twist_are_applied_to_base_link_not_the_root():
    m = RoverModel(fixed_rocker_urdf(), roles())
    p = np.array([1.0, 2.0, 0.3])
    Rwb = pin.rpy.rpyToMatrix(0.02, 0.05, 0.3)
    quat = pin.Quaternion(Rwb)
    v, w = np.array([0.2, 0.01, -0.02]), np.array([0.01, 0.02, 0.3])
    q, qd = m.state_from_base({}, p, (quat.x, quat.y, quat.z, quat.w), v, w, {})
    G, _ = m.wheel_geometry(q)
    off = np.array([0.0, 0.22, 0.0]) + np.array([0.28, 0.0, -0.13])       # front-left centre in base_link
    assert np.allclose(G[0], p + Rwb @ off, atol=1e-12)
    m._kin(q)
    v_G = m.point_jacobian(m.wheel_jid[0], G[0]) @ qd
    assert np.allclose(v_G, Rwb @ (v + np.cross(w, off)), atol=1e-12)      # rigid-body velocity of that point
    assert m.heading(q) == pytest.approx(0.3, abs=1e-12)
    q_naive = m.configuration({}, p, (quat.x, quat.y, quat.z, quat.w))    # the pose put on the root instead
    assert np.linalg.norm(m.wheel_geometry(q_naive)[0][0] - G[0]) > 0.05
    # through the node's input path (RoverInputs.state)
    from rover_contact.inputs import RoverInputs
    inp = RoverInputs(m, 0.2)
    names = m.joint_names
    assert inp.push_joint_state(10**9, names, [0.0] * len(names), [0.0] * len(names))
    assert inp.push_odometry(10**9, p, (quat.x, quat.y, quat.z, quat.w), v, w)
    q2, qd2 = inp.state(10**9)
    assert np.allclose(q2, q) and np.allclose(qd2, qd)


def test_base_link_missing_or_moving_is_rejected():
    urdf = fixed_rocker_urdf()
    with pytest.raises(ModelError, match="base_link 'chassis' is not a link"):
        RoverModel(urdf, roles(base_link='chassis'))
    with pytest.raises(ModelError, match="moves relative to the URDF root"):
        RoverModel(urdf, roles(base_link='rocker_L'))
    assert RoverModel(urdf, roles(base_link='base_footprint')).root_T_base.isIdentity()


def test_every_role_key_is_used_or_rejected():
    urdf = fixed_rocker_urdf()
    with pytest.raises(ModelError, match='unknown role key'):
        Roles.from_dict({**roles(), 'wheel_spin_free': True})
    with pytest.raises(ModelError, match='both in passive_joints and locked_joints'):
        Roles.from_dict(roles(passive_joints=[ROCKERS[0]], locked_joints=[ROCKERS[0]]))
    with pytest.raises(ModelError, match='two roles'):
        Roles.from_dict(roles(steering=[BOGIES[0]]))
    with pytest.raises(ModelError, match='wheel spin joint'):
        Roles.from_dict(roles(steering=['wheel_joint_L_front']))
    with pytest.raises(ModelError, match="unknown key"):
        Roles.from_dict(roles(wheels={**WHEELS, 'front_left': {'joint': 'wheel_joint_L_front', 'radius': R,
                                                               'width': 0.05}}))
    with pytest.raises(ModelError, match='coefficients'):
        Roles.from_dict(roles(differential=[{'joints': ROCKERS, 'coefficients': [1.0]}]))
    # bogies are passive unless locked: a locked bogie becomes a lock row and is held by the posture solve
    free = RoverModel(urdf, roles())
    held = RoverModel(urdf, roles(locked_joints=[BOGIES[0]]))
    assert BOGIES[0] in free.roles.passive_joints and BOGIES[0] not in held.roles.passive_joints
    assert held.mech_rows().shape[0] == free.mech_rows().shape[0] + 1
    # steering joints are locked unless passive (a lock row each)
    from rover_contact.models.urdf_gen import osr_like_urdf
    osr_roles = yaml.safe_load(open('config/rover_osr_like_roles.yaml'))
    steer = osr_roles['steering']
    no_locks = RoverModel(osr_like_urdf(), {**osr_roles, 'locked_joints': [], 'urdf': ''})
    assert set(no_locks.roles.locked_joints) == set(steer) and no_locks.mech_rows().shape[0] == len(steer) + 1
    castor = RoverModel(osr_like_urdf(), {**osr_roles, 'locked_joints': [], 'passive_joints': [steer[0]], 'urdf': ''})
    assert steer[0] not in castor.roles.locked_joints and steer[0] in castor.roles.passive_joints


def test_pipeline_loads_the_role_map_file(tmp_path):
    (tmp_path / 'osr_fixed.urdf').write_text(fixed_rocker_urdf())
    d = roles()
    d['unfix'] = {k: (None if v is None else {'axis': v['axis'], 'lower': v['lower'], 'upper': v['upper']})
                  for k, v in d['unfix'].items()}
    (tmp_path / 'roles.yaml').write_text(yaml.safe_dump({**d, 'urdf': 'osr_fixed.urdf'}))
    pl = ImpactPipeline(validate_all(IMPACT_PARAMS, {'model_yaml': str(tmp_path / 'roles.yaml')}))
    assert pl.model.nv == 16 and pl.model.roles.model_name == 'osr_fixed'
    (tmp_path / 'bad.yaml').write_text(yaml.safe_dump({**d, 'unfix': None, 'urdf': 'osr_fixed.urdf'}))
    with pytest.raises(ConfigError, match='unfix'):
        ImpactPipeline(validate_all(IMPACT_PARAMS, {'model_yaml': str(tmp_path / 'bad.yaml')}))
