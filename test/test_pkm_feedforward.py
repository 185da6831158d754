"""pkm_feedforward (issue 18 item 2): the feed-forward of a desired strut trajectory equals the model's
inverse dynamics with theta-hat (the full-tensor ``dynamics.inverse_dynamics``, no regressor: an independent
computation), and the measured force of a simulated run lies within the sigma band built from theta's
covariance; unidentified parameters take their configured values and say so. Over DDS: the node's commands.
"""
from __future__ import annotations

import numpy as np
import pytest

from pkm_identification import dynamics as D
from pkm_identification import kinematics as K
from pkm_identification import records as RC
from pkm_identification.calibration import Plant, identify_plant
from pkm_identification.feedforward.model import TrajectorySampler, feedforward, parameters_for, pose_rates
from pkm_identification.geometry import INERTIA_NAMES_12, load_machine


def theta12_of(theta8) -> np.ndarray:
    """A 12-parameter inertia set whose base parameters are theta8 (strut inertias all in the lower body)."""
    t = dict.fromkeys(INERTIA_NAMES_12, 0.0)
    t.update(m_e=theta8[0], m_b=theta8[1], m_p=theta8[2], Ixxp=theta8[3], Iyyp=theta8[4], Izzp=theta8[5],
             Ixxb=theta8[6], Izzb=theta8[7])
    return np.array([t[n] for n in INERTIA_NAMES_12])


@pytest.fixture(scope='module')
def run():
    """A simulated 3 s multisine run (force noise 0.5 % rms) and pkm_identifier's pipeline on it from a prior
    30 % off the truth."""
    m = load_machine('uf_like')
    rec = RC.actuated(m, 'multisine', duration=3.0, rate=1000.0)
    rng = np.random.default_rng(4)
    noise = 0.005 * float(np.sqrt((rec.F ** 2).mean()))
    Fm = rec.F + rng.normal(0.0, noise, rec.F.shape)
    stamps = 1_000_000_000 + np.round(rec.t * 1e9).astype(np.int64)
    plant = Plant(m, m.theta12(), rec.truth, 'multisine', stamps, rec.L, rec.Ld, Fm, 0.0, {})
    est, _ = identify_plant(plant, rec.truth * 1.3)
    estimate = {'names': list(est.names), 'values': list(est.values),
                'covariance': list(np.ravel(est.covariance)), 'flags': list(est.flags), 'valid': est.valid}
    return m, rec, Fm, noise, estimate


def test_feedforward_equals_inverse_dynamics_with_theta_hat(run):
    m, rec, _, _, estimate = run
    assert estimate['valid']
    params = parameters_for(dict(zip(D.BASE_NAMES, rec.truth)), 0.5, estimate)
    # the desired trajectory: every 20 ms of the run as JointTrajectory points (positions, velocities,
    # accelerations)
    sm = K.strut_motion(K.pose(m, rec.q), rec.qd, rec.qdd)
    knots = slice(0, len(rec.t), 20)
    sampler = TrajectorySampler(rec.t[knots], rec.L[knots], sm.Ld[knots], sm.Ldd[knots])
    L, Ld, Ldd = sampler(rec.t[knots])
    q, qd, qdd, ok = pose_rates(m, L, Ld, Ldd)
    assert ok.all()
    F, sigma = feedforward(m, params, q, qd, qdd)
    want = D.inverse_dynamics(m, theta12_of(params.theta), rec.q[knots], rec.qd[knots], rec.qdd[knots])
    assert np.max(np.abs(F - want)) <= 1e-6 * np.max(np.abs(want)), np.max(np.abs(F - want))
    # between the points: the quintic interpolation of a 0.2-8 Hz motion at 50 points/s
    inside = rec.t <= sampler.duration
    L, Ld, Ldd = sampler(rec.t[inside])
    Fi, _ = feedforward(m, params, *pose_rates(m, L, Ld, Ldd)[:3])
    want_all = D.inverse_dynamics(m, theta12_of(params.theta), rec.q[inside], rec.qd[inside], rec.qdd[inside])
    rel = np.max(np.abs(Fi - want_all)) / np.max(np.abs(want_all))
    assert rel < 1e-3, rel
    print(f'feed-forward vs inverse dynamics: {np.max(np.abs(F - want)):.2e} N at the points, '
          f'{rel:.2e} relative between them')


def test_measured_force_within_the_sigma_band(run):
    m, rec, Fm, noise, estimate = run
    params = parameters_for(dict(zip(D.BASE_NAMES, rec.truth * 1.3)), 0.5, estimate)
    sm = K.strut_motion(K.pose(m, rec.q), rec.qd, rec.qdd)
    L, Ld, Ldd = rec.L, sm.Ld, sm.Ldd
    F, sigma = feedforward(m, params, *pose_rates(m, L, Ld, Ldd)[:3])
    z = (Fm - F) / np.sqrt(sigma ** 2 + noise ** 2)
    inside2 = float(np.mean(np.abs(z) < 2.0))
    assert inside2 >= 0.9 and np.max(np.abs(z)) < 5.0, (inside2, np.max(np.abs(z)))
    # the band is the parameters' own: the model error it covers is real (truth vs estimate)
    F_true = D.inverse_dynamics(m, m.theta12(), rec.q, rec.qd, rec.qdd)
    z_model = (F_true - F) / np.maximum(sigma, 1e-12)
    print(f'sigma band: {100 * inside2:.1f} % of measured forces within 2 sigma '
          f'(max |z| {np.max(np.abs(z)):.2f}); '
          f'model error within {np.mean(np.abs(z_model) < 2) * 100:.1f} % at 2 sigma_theta; '
          f'sigma_theta median {np.median(sigma):.3g} N, noise {noise:.3g} N; '
          f'configured: {params.configured()}')
    assert np.mean(np.abs(z_model) < 3.0) >= 0.9


def test_unidentified_parameters_take_configured_values():
    conf = dict(zip(D.BASE_NAMES, [1.0, 2.0, 3.0, 0.1, 0.2, 0.3, 0.01, 0.02]))
    est = {'names': list(D.BASE_NAMES), 'values': [9.0] * 8, 'covariance': list(np.eye(8).ravel() * 0.01),
           'flags': ['identified', 'converging', 'not_excited', 'prior_only', 'identified',
                     'never_identifiable', 'identified', 'identified'], 'valid': True}
    p = parameters_for(conf, 0.5, est)
    assert list(p.theta) == [9.0, 9.0, 3.0, 0.1, 9.0, 0.3, 9.0, 9.0]
    assert p.configured() == ['m_p', 'Ixxp', 'Izzp']
    assert p.covariance[2, 2] == pytest.approx((0.5 * 3.0) ** 2) and p.covariance[0, 0] == pytest.approx(0.01)
    assert np.all(parameters_for(conf, 0.5, {**est, 'valid': False}).theta == list(conf.values()))
    with pytest.raises(ValueError):
        TrajectorySampler([0.0, 0.0], np.zeros((2, 6)))


@pytest.mark.ros
def test_node_over_dds_publishes_the_commands(ros_context):
    import time

    from builtin_interfaces.msg import Duration
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from contact_dynamics.msg import ParameterEstimate
    from contact_dynamics_common.ros.qos import output_qos
    from ros_harness import Listener, start_node, stop, wait_matched

    m = load_machine('uf_like')
    theta = D.base_from_12(m.theta12()) * 1.1
    proc = start_node('pkm_identification.feedforward.node', '-p', 'publish_rate:=50.0')
    listener = Listener({'/effort_controller/commands': Float64MultiArray,
                         '/pkm_feedforward/force_sigma': Float64MultiArray, '/diagnostics': DiagnosticArray})
    node = Node('ff_test_publisher')
    traj_pub = node.create_publisher(JointTrajectory, '/pkm_feedforward/joint_trajectory', output_qos())
    est_pub = node.create_publisher(ParameterEstimate, '/pkm_identifier/parameters', output_qos())
    names = [f'strut_{i}' for i in range(1, 7)]
    try:
        wait_matched([traj_pub, est_pub])
        flags = ['identified'] * 6 + ['not_excited'] * 2
        est_pub.publish(ParameterEstimate(names=list(D.BASE_NAMES), values=[float(v) for v in theta],
                                          covariance=list((np.eye(8) * (0.01 * theta) ** 2).ravel()),
                                          flags=flags, valid=True))
        assert listener.wait_for(lambda: int(listener.diag('pkm_feedforward: feedforward')
                                             .get('estimates', 0)) >= 1, 10.0)
        # a 1 s move: x-translation multisine sampled every 50 ms
        rec = RC.actuated(m, 'x', duration=1.0, rate=1000.0)
        sm = K.strut_motion(K.pose(m, rec.q), rec.qd, rec.qdd)
        msg = JointTrajectory(joint_names=list(reversed(names)))          # another order: reordered by name
        for i in range(0, 1000, 50):
            msg.points.append(JointTrajectoryPoint(
                positions=[float(x) for x in rec.L[i][::-1]], velocities=[float(x) for x in sm.Ld[i][::-1]],
                accelerations=[float(x) for x in sm.Ldd[i][::-1]],
                time_from_start=Duration(sec=0, nanosec=int(rec.t[i] * 1e9))))
        traj_pub.publish(msg)
        time.sleep(2.0)
        bad = JointTrajectory(joint_names=names[:5], points=[JointTrajectoryPoint(positions=[0.5] * 5)])
        traj_pub.publish(bad)
        assert listener.wait_for(lambda: int(listener.diag('pkm_feedforward: feedforward')
                                             .get('refused', 0)) >= 1, 5.0)
    finally:
        node.destroy_node()
        log = stop(proc)
        listener.close()
    cmds = np.array([c.data for c in listener.get('/effort_controller/commands')])
    sig = np.array([c.data for c in listener.get('/pkm_feedforward/force_sigma')])
    assert len(cmds) >= 25, log
    # the not-excited strut inertias take their configured (CAD) values
    th12 = theta12_of(np.r_[theta[:6], D.base_from_12(m.theta12())[6:]])
    want = D.inverse_dynamics(m, th12, rec.q[:951], rec.qd[:951], rec.qdd[:951])
    # each command is the model at some time of the move: its distance to the nearest model sample is small
    dist = np.min(np.max(np.abs(cmds[:-1, None, :] - want[None, :, :]), axis=2), axis=1)
    assert np.max(dist) < 0.01 * np.max(np.abs(want)), np.max(dist)
    static = D.inverse_dynamics(m, th12, rec.q[950:951], np.zeros((1, 6)), np.zeros((1, 6)))[0]
    assert cmds[-1] == pytest.approx(static, rel=1e-6)        # the held last point: the static force
    assert np.all(sig > 0)
    diag = listener.diag('pkm_feedforward: feedforward')
    assert diag['configured'] == 'Ix_s,Iz_s' and 'six struts' in diag['last_refusal'], diag
    print(f'DDS: {len(cmds)} commands, max distance to the model {np.max(dist):.3g} N, final = static force, '
          f'configured: {diag["configured"]}')


def test_friction_parameters_enter_with_their_model():
    m = load_machine('uf_like')
    rec = RC.actuated(m, 'x', duration=0.5, rate=200.0)
    fr = np.array([300.0, 20.0] * 6)
    names = list(D.ALL_NAMES)
    values = list(D.base_from_12(m.theta12())) + list(fr)
    est = {'names': names, 'values': values, 'covariance': list(np.eye(20).ravel() * 1e-6),
           'flags': ['identified'] * 20, 'valid': True}
    conf = dict(zip(D.ALL_NAMES, values))
    p = parameters_for(conf, 0.5, est)
    sm = K.strut_motion(K.pose(m, rec.q), rec.qd, rec.qdd)
    for model in ('continuous', 'printed'):
        F, _ = feedforward(m, p, *pose_rates(m, rec.L, sm.Ld, sm.Ldd)[:3], friction_model=model)
        want = D.inverse_dynamics(m, m.theta12(), rec.q, rec.qd, rec.qdd, friction=fr, friction_model=model)
        assert np.max(np.abs(F - want)) <= 1e-6 * np.max(np.abs(want)), model
