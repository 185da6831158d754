"""The posture command bridge of posture_evaluator (issue 18 item 3): the chosen posture as a
trajectory_msgs/JointTrajectory within the URDF velocity limits, only when enabled, only for a feasible
candidate, not re-sent while the same choice executes; the chosen candidate's v_max as a speed limit.

The trajectory is checked by an independent quintic (joint_trajectory_controller's own interpolation between
points with positions, velocities and accelerations), sampled densely."""
from __future__ import annotations

import time

import numpy as np
import pytest

from pkm_identification.feedforward.model import TrajectorySampler
from rover_contact.posture.command import PostureCommander, posture_trajectory, velocity_limits


def _dense_velocity(tr) -> np.ndarray:
    """|velocity| of the jtc-style quintic through the points, 2000 samples."""
    n = len(tr.joint_names)
    pad = lambda a: np.hstack([a, np.zeros((len(a), 6 - n))])             # noqa: E731 - 6-column sampler
    s = TrajectorySampler(tr.times, pad(tr.positions), pad(tr.velocities), pad(tr.accelerations))
    _, v, _ = s(np.linspace(0, tr.duration, 2000))
    return np.abs(v[:, :n])


@pytest.mark.parametrize('scale', [1.0, 0.3])
def test_trajectory_reaches_the_posture_within_the_velocity_limits(scale):
    limits = {'a': 0.8, 'b': 0.2, 'c': 2.0}
    current, target = {'a': 0.1, 'b': -0.3, 'c': 0.0}, {'a': -0.5, 'b': 0.4, 'c': 0.05}
    tr = posture_trajectory(current, target, limits, scale, 0.5, 12)
    assert list(tr.positions[-1]) == pytest.approx([-0.5, 0.4, 0.05], abs=1e-12)
    assert list(tr.positions[0]) == pytest.approx([0.1, -0.3, 0.0], abs=1e-12)
    assert np.allclose(tr.velocities[[0, -1]], 0.0) and np.allclose(tr.accelerations[[0, -1]], 0.0)
    vmax = _dense_velocity(tr).max(axis=0)
    lim = np.array([scale * limits[j] for j in tr.joint_names])
    assert np.all(vmax <= lim * (1 + 1e-6)), (vmax, lim)
    assert np.max(vmax / lim) > 0.99                # the slowest-allowed joint uses its limit: no idling


def test_velocity_limits_come_from_the_urdf():
    from contact_dynamics_common.paths import config_dir
    from contact_dynamics_common.ros.params import load_params_file, validate_all
    from rover_contact.inputs import load_model
    from rover_contact.posture.config import PARAMS
    raw = {k: v for k, v in load_params_file(str(config_dir() / 'posture_evaluator.yaml'),
                                             'posture_evaluator').items() if k != 'use_sim_time'}
    model = load_model(validate_all(PARAMS, raw))
    text = (config_dir() / 'rover_pr3d.urdf').read_text()
    lift = text.split('name="body_lift_joint"')[1][:400]
    assert 'velocity="10"' in lift
    assert velocity_limits(model, ['body_lift_joint']) == {'body_lift_joint': 10.0}
    with pytest.raises(ValueError):
        velocity_limits(model, ['nope'])


def test_commander_rules():
    c = PostureCommander()
    best = {'a': 0.2}
    assert not c.decide(best, {'a': 0.0}, 0.0) and c.last_reason == 'command disabled'
    c.enabled = True
    assert not c.decide(None, {'a': 0.0}, 0.0) and c.last_reason == 'no feasible candidate'
    assert c.decide(best, {'a': 0.0}, 0.0)
    c.sent(best, 'x', 0.0, 2.0)
    assert not c.decide(best, {'a': 0.1}, 1.0) and 'executing' in c.last_reason
    assert c.decide({'a': -0.2}, {'a': 0.1}, 1.0)         # a changed choice pre-empts
    assert not c.decide(best, {'a': 0.2}, 3.0) and 'reached' in c.last_reason
    assert c.decide(best, {'a': 0.0}, 3.0)                 # done but not there (pushed away): send again


@pytest.mark.ros
def test_posture_evaluator_publishes_the_chosen_posture_over_dds(ros_context):
    import rclpy  # noqa: F401
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64
    from std_srvs.srv import SetBool
    from trajectory_msgs.msg import JointTrajectory

    from contact_dynamics.msg import ObstacleHypothesis, PostureCandidate
    from contact_dynamics.srv import EvaluatePostures
    from ros_harness import Listener, call_service, start_node, stop

    proc = start_node('rover_contact.posture.node', '-p', 'ground_mode:=free', '-p', 'energy_budget_j:=5.0',
                      '-p', 'command_speed_scale:=0.01', '-p', 'command_min_duration_s:=0.2')
    topics = {'/posture_controller/joint_trajectory': JointTrajectory, '/diagnostics': DiagnosticArray,
              '/posture_evaluator/approach_speed_limit': Float64}
    listener = Listener(topics, name='posture_cmd_listener')
    node = Node('posture_cmd_test')
    traj = '/posture_controller/joint_trajectory'

    def request(positions, joint='body_lift_joint'):
        req = EvaluatePostures.Request()
        req.obstacle = ObstacleHypothesis(beta_rad=float(np.deg2rad(40)), distance_m=0.5,
                                          contact_wheels=['front_left', 'front_right'])
        req.obstacle.header.frame_id = 'odom'
        for y in positions:
            req.candidates.append(PostureCandidate(joint_names=[joint], positions=[y], approach_speed=0.07,
                                                   label=f'{y:+.2f}'))
        resp = call_service(node, client, req, timeout=20)
        assert resp is not None and resp.success, getattr(resp, 'message', 'timeout')
        return resp.evaluation

    try:
        js = node.create_publisher(JointState, '/joint_states', 10)
        client = node.create_client(EvaluatePostures, '/posture_evaluator/evaluate_postures')
        enable = node.create_client(SetBool, '/posture_evaluator/enable_command')
        assert client.wait_for_service(timeout_sec=20) and enable.wait_for_service(timeout_sec=5)
        from contact_dynamics_common.paths import config_dir
        from contact_dynamics_common.ros.params import load_params_file, validate_all
        from rover_contact.inputs import load_model
        from rover_contact.posture.config import PARAMS
        raw = {k: v for k, v in load_params_file(str(config_dir() / 'posture_evaluator.yaml'),
                                                 'posture_evaluator').items() if k != 'use_sim_time'}
        names = list(load_model(validate_all(PARAMS, raw)).joint_names)
        for _ in range(5):                                   # all joints at 0 (the lift too)
            m = JointState(name=names, position=[0.0] * len(names), velocity=[0.0] * len(names))
            m.header.stamp = node.get_clock().now().to_msg()
            js.publish(m)
            time.sleep(0.05)
        ev = request([-0.2, 0.0, 0.2])                      # disabled (default): nothing
        time.sleep(0.5)
        assert ev.best_index == 0 and not listener.get(traj)
        assert call_service(node, enable, SetBool.Request(data=True)).success
        infeasible = request([0.0], joint='nope')           # enabled, nothing feasible: nothing
        assert infeasible.best_index == -1
        time.sleep(0.5)
        assert not listener.get(traj)
        ev = request([-0.2, 0.0, 0.2])                       # enabled and feasible: the best one
        chosen = ev.candidates[0].positions[0]
        assert listener.wait_for(lambda: len(listener.get(traj)) == 1, 5)
        request([-0.2, 0.0, 0.2])                            # same choice while executing: not re-sent
        time.sleep(0.5)
        assert len(listener.get(traj)) == 1
        speeds = listener.get('/posture_evaluator/approach_speed_limit')
        diag = listener.wait_for(
            lambda: 'command.executing' in listener.diag('posture_evaluator: evaluator'), 3)
    finally:
        node.destroy_node()
        log = stop(proc)
        listener.close()
    msg = listener.get(traj)[0]
    assert list(msg.joint_names) == ['body_lift_joint']
    t = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    q = np.array([p.positions[0] for p in msg.points])
    assert q[-1] == pytest.approx(chosen, abs=1e-12)
    assert q[0] == pytest.approx(0.0, abs=1e-12)           # from the measured position
    v = np.array([p.velocities[0] for p in msg.points])
    a = np.array([p.accelerations[0] for p in msg.points])
    pad = lambda x: np.hstack([x[:, None], np.zeros((len(x), 5))])          # noqa: E731
    dense = np.abs(TrajectorySampler(t, pad(q), pad(v), pad(a))(np.linspace(0, t[-1], 2000))[1][:, 0])
    assert dense.max() <= 0.01 * 10.0 * (1 + 1e-6), dense.max()            # 1 % of the URDF's 10 m/s
    assert speeds and np.isfinite(speeds[-1].data) and speeds[-1].data > 0
    assert diag and 'Traceback' not in log
    print(f'DDS: posture {chosen:+.2f} m in {t[-1]:.2f} s, peak {dense.max():.4f} m/s (limit 0.1), '
          f'approach speed limit {speeds[-1].data:.4g} m/s; nothing published disabled or infeasible')
