"""rover_contact posture evaluation: T7 ranking on the PR-3D model, batched math vs pinocchio, filters."""
import numpy as np
import pinocchio as pin
import pytest

from rover_contact.impact.indicator import evaluate
from rover_contact.models.batch import BatchTree, mass_matrix_crba
from rover_contact.models.rover3d import RoverModel
from rover_contact.posture.evaluate import Candidate, Obstacle, PostureEvaluator, grid_candidates

WHEELS = ['front_left', 'front_right']
YB = (0.55, 0.65, 0.75, 0.85, 0.95)
T7_40 = [98.814, 108.660, 115.329, 117.962, 117.013]
T7_60 = [183.226, 191.360, 192.121, 186.906, 178.307]
T7_90 = [95.255, 93.902, 91.895, 89.600, 87.297]


@pytest.fixture(scope='module')
def pr3d():
    return RoverModel.from_roles_file('config/rover_pr3d_roles.yaml')


@pytest.fixture(scope='module')
def osr():
    return RoverModel.from_roles_file('config/rover_osr_like_roles.yaml')


def t7_candidates():
    return [Candidate({'body_lift_joint': y - 0.75}, 0.07, f'y_b={y}') for y in YB]


def test_t7_ranking_free_ground(pr3d):
    ev = PostureEvaluator(pr3d, ground_mode='free')
    for beta, ref, best in ((40, T7_40, 0.55), (60, T7_60, 0.95), (90, T7_90, 0.95)):
        e = ev.evaluate({}, t7_candidates(), Obstacle(np.deg2rad(beta), WHEELS))
        assert e.t_c_free * 1e3 == pytest.approx(ref, abs=1e-3)
        assert e.feasible.all()
        assert YB[e.best] == best
        assert list(e.order) == list(np.argsort(ref))


def test_batched_mass_matrix_equals_crba(pr3d, osr):
    rng = np.random.default_rng(0)
    rcp = RoverModel.from_roles_file('config/rover_rcp_like_roles.yaml')      # 28 bodies
    assert sum(I.mass > 0 for I in rcp.model.inertias) == 28
    for m in (pr3d, osr, rcp):
        tree = BatchTree(m)
        for _ in range(3):
            q = pin.randomConfiguration(m.model, -np.ones(m.model.nq), np.ones(m.model.nq))
            assert tree.check_against_pinocchio(q) < 1e-10
            R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
            jp = m.joint_positions(q)
            oR, op, oa = tree.fk(R[None], q[None, :3], np.array([[jp[n] for n in tree.names]]))
            assert np.abs(mass_matrix_crba(tree, oR, op, oa)[0] - m.mass_matrix(q)).max() < 1e-10
            assert np.abs(m.mass_matrix_assembled(q) - m.mass_matrix(q)).max() < 1e-10
    _ = rng


def test_batched_tc_equals_pinocchio_indicator_and_wheels_on_ground(osr):
    ev = PostureEvaluator(osr, ground_mode='both')
    steer = osr.roles.steering
    cands = grid_candidates(steer[:2], [[-0.3, 0.0, 0.4], [-0.2, 0.3]], [0.05, 0.1])
    e = ev.evaluate({}, cands, Obstacle(np.deg2rad(65), WHEELS))
    assert e.feasible.all()
    for k in range(len(cands)):
        q = ev.configuration(e, k)
        c, a = osr.wheel_geometry(q)
        lowest = c[:, 2] - osr.wheel_radius * np.sqrt(1 - a[:, 2] ** 2)
        assert np.abs(lowest).max() < 1e-8                      # every wheel touches the ground
        jp = osr.joint_positions(q)
        assert abs(jp['left_rocker_joint'] + jp['right_rocker_joint']) < 1e-9   # differential
        v = osr.rolling_velocity(q, cands[k].speed)
        ind = evaluate(osr, q, v, np.deg2rad(65), WHEELS, 'both')
        assert e.t_c_free[k] == pytest.approx(ind.free.t_c, rel=1e-9)
        assert e.t_c_rigid[k] == pytest.approx(ind.rigid.t_c, rel=1e-9)
        assert e.score[k] == pytest.approx(max(ind.free.t_c, ind.rigid.t_c), rel=1e-12)


def test_speed_budget_and_force_estimate(pr3d):
    ev = PostureEvaluator(pr3d, ground_mode='free', energy_budget=0.05)
    cands = [Candidate({}, 0.07), Candidate({}, 0.14)]
    e = ev.evaluate({}, cands, Obstacle(np.deg2rad(90), WHEELS, k=1e9, p=1.5, e=0.9))
    assert e.t_c_free[1] == pytest.approx(4 * e.t_c_free[0], rel=1e-12)           # T_c ∝ v²
    assert e.v_max[0] == pytest.approx(0.07 * np.sqrt(0.05 / e.t_c_free[0]), rel=1e-12)
    assert e.v_max[0] == pytest.approx(e.v_max[1], rel=1e-12)
    assert e.f_max_estimate[0] == pytest.approx(0.9530 * 1e9 ** 0.4 * (2.5 * e.t_c_free[0] / 2) ** 0.6, rel=3e-3)
    assert e.best == 0


def test_bad_candidates_are_rejected_with_reasons(pr3d):
    ev = PostureEvaluator(pr3d, ground_mode='both', stability_margin=0.05)
    cands = [Candidate({'nope': 1.0}, 0.07), Candidate({'left_bogie_joint': 0.1}, 0.07),
             Candidate({'body_lift_joint': float('nan')}, 0.07), Candidate({}, -1.0),
             Candidate({'body_lift_joint': 0.5}, 0.07), Candidate({}, 0.07)]
    e = ev.evaluate({}, cands, Obstacle(np.deg2rad(60), WHEELS))
    assert 'unknown joint' in e.reject_reason[0]
    assert 'passive' in e.reject_reason[1]
    assert 'not finite' in e.reject_reason[2]
    assert 'speed' in e.reject_reason[3]
    assert 'joint limit' in e.reject_reason[4]
    assert e.feasible.tolist() == [False] * 5 + [True] and e.best == 5
    strict = PostureEvaluator(pr3d, ground_mode='free', stability_margin=2.0)
    e2 = strict.evaluate({}, [Candidate({}, 0.07)], Obstacle(np.deg2rad(60), WHEELS))
    assert 'stability margin' in e2.reject_reason[0] and e2.best == -1
    with pytest.raises(ValueError):
        ev.evaluate({}, cands, Obstacle(np.deg2rad(60), ['tail_wheel']))
    with pytest.raises(ValueError):
        ev.evaluate({}, cands, Obstacle(float('nan'), WHEELS))
