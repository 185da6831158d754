"""contact_estimator as a real node in its own process, fed over DDS from this test process.

Ground truth (acceptance of the Foundation issue): k = 4800 N/m, b = 200 N*s/m, multisine motion,
sigma_F = 0.5 N, sigma_x = 10 um. Stiffness must come out within 1 %, damping within 5 %, and the offline
run of the same data through run-bag must give the same final estimates.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from contact_dynamics.msg import ContactEstimate  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402

from ros_harness import (ROOT, Listener, call_service, paced, run_to_exit, set_stamp, start_node,  # noqa: E402
                         stop, wait_matched)

pytestmark = pytest.mark.ros

CONFIG = str(ROOT / 'config' / 'contact_estimator.yaml')
TOPICS = {'/contact_estimator/rls/estimate': ContactEstimate, '/contact_estimator/gls/estimate': ContactEstimate,
          '/contact_estimator/estimate': ContactEstimate, '/diagnostics': DiagnosticArray}


def _publish(node: Node, sim: KelvinVoigt1Dof, corrupt: bool = False) -> dict:
    """Publish the simulated measurements at recorded speed; with ``corrupt``, interleave bad messages."""
    m = sim.measurements()
    wrench_pub = node.create_publisher(WrenchStamped, '/wrench', 100)
    joint_pub = node.create_publisher(JointState, '/joint_states', 100)
    wait_matched([wrench_pub, joint_pub])
    bad = {'nan_wrench': 0, 'empty_joint_state': 0}
    for i in paced(m['t']):
        w = WrenchStamped()
        set_stamp(w.header, m['stamp_ns'][i])
        w.header.frame_id = sim.wrench_frame
        w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in m['force_meas'][i])
        wrench_pub.publish(w)
        j = JointState()
        j.header.stamp = w.header.stamp
        j.name, j.position = [sim.joint_name], [float(m['q'][i])]
        joint_pub.publish(j)
        if corrupt and i % 50 == 25:
            nan = WrenchStamped()
            set_stamp(nan.header, int(m['stamp_ns'][i]) + 500_000)
            nan.wrench.force.z = math.nan
            wrench_pub.publish(nan)
            empty = JointState()
            empty.header.stamp = nan.header.stamp
            joint_pub.publish(empty)
            bad['nan_wrench'] += 1
            bad['empty_joint_state'] += 1
    return bad


def test_live_estimates_match_truth_and_offline_replay(tmp_path, ros_context):
    sim = KelvinVoigt1Dof(duration=10.0, rate=500.0, seed=7)
    bag = write_bag(sim, tmp_path / 'bag')
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG, '-p', 'publish_rate:=20.0')
    listener = Listener(TOPICS)
    pub_node = Node('test_publisher')
    try:
        _publish(pub_node, sim)
        assert listener.wait_for(lambda: _final(listener, sim) is not None, timeout=10.0), \
            'no estimate covering the last samples arrived'
        n = len(sim.measurements()['t'])
        assert listener.wait_for(lambda: int(listener.diag('contact_estimator: input wrench')
                                             .get('received', 0)) >= n, timeout=5.0), 'messages lost on loopback'
    finally:
        pub_node.destroy_node()
        log = stop(proc)
        listener.close()
    final = _final(listener, sim)
    for topic in ('/contact_estimator/rls/estimate', '/contact_estimator/gls/estimate'):
        est = final[topic]
        assert est.valid, est.status
        assert abs(est.stiffness - sim.stiffness) / sim.stiffness < 0.01, (topic, est.stiffness)
        assert abs(est.damping - sim.damping) / sim.damping < 0.05, (topic, est.damping)
        cov = np.array(est.covariance).reshape(2, 2)
        np.linalg.cholesky(cov)                      # symmetric positive definite
        assert est.damping_identifiable and est.header.frame_id == 'ft_sensor'

    # diagnostics: input rates near 500 Hz, nothing rejected, estimator health published
    wrench = listener.diag('contact_estimator: input wrench')
    assert 300.0 < float(wrench['rate_hz']) < 700.0, wrench
    assert int(wrench['wrench.accepted']) == len(sim.measurements()['t']), (wrench, log)
    rls = listener.diag('contact_estimator: rls')
    assert rls['valid'] == 'True' and float(rls['covariance_trace']) > 0

    # the same data offline: identical final estimates
    result, _, _ = run_bag(str(bag), CONFIG, progress=False)
    for topic in ('/contact_estimator/rls/estimate', '/contact_estimator/gls/estimate'):
        offline = result.outputs[topic][-1][1]
        live = final[topic]
        assert (offline['header']['stamp']['sec'], offline['header']['stamp']['nanosec']) == \
            (live.header.stamp.sec, live.header.stamp.nanosec)
        assert offline['stiffness'] == pytest.approx(live.stiffness, rel=1e-9)
        assert offline['damping'] == pytest.approx(live.damping, rel=1e-9)
        assert offline['covariance'] == pytest.approx(list(live.covariance), rel=1e-6)
        # one verdict: validity, reason and damping identifiability as the live node published them
        assert (offline['valid'], offline['status'], offline['damping_identifiable']) == \
            (live.valid, live.status, live.damping_identifiable)

    # contact-compare on the same bag and config (its samples, the node's estimators and verdict function):
    # the verdicts of the live node again
    from contact_dynamics_common.bag import BagReader
    from contact_dynamics_common.params import load_params_file, validate_all
    from contact_estimation.single_point.compare import compare
    from contact_estimation.single_point.config import NODE_NAME, PARAMS
    from contact_estimation.single_point.offline import OfflineContactEstimator
    from contact_estimation.single_point.pipeline import estimator_options
    params = validate_all(PARAMS, {k: v for k, v in load_params_file(CONFIG, NODE_NAME).items()
                                   if k != 'use_sim_time'})
    node = OfflineContactEstimator(params)
    reader = BagReader(str(bag))
    samples = node.contact_samples({t: reader.columns(t) for t in node.inputs()})
    cmp = compare(samples, segmentation='whole', names=['rls', 'gls'], params=params,
                  options=estimator_options(params, node.pipeline.model))
    for name in ('rls', 'gls'):
        est, live = cmp.results[name][0], final[f'/contact_estimator/{name}/estimate']
        assert (est.valid, est.reason) == (live.valid, live.status), name
        assert est.stiffness == pytest.approx(live.stiffness, rel=1e-9), name
        assert est.is_identifiable('damping') == live.damping_identifiable, name


def _final(listener: Listener, sim: KelvinVoigt1Dof, within_s: float = 0.05) -> dict | None:
    """The latest estimate of each algorithm once it covers the end of the record to ``within_s``."""
    end_ns = int(sim.measurements()['stamp_ns'][-1])
    out = {}
    for topic in ('/contact_estimator/rls/estimate', '/contact_estimator/gls/estimate'):
        msgs = listener.get(topic)
        if not msgs:
            return None
        last = msgs[-1]
        stamp = last.header.stamp.sec * 10**9 + last.header.stamp.nanosec
        if end_ns - stamp > within_s * 1e9:
            return None
        out[topic] = last
    return out


def test_nan_and_empty_messages_are_counted_and_skipped(tmp_path, ros_context):
    sim = KelvinVoigt1Dof(duration=4.0, rate=500.0, seed=3)
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG)
    listener = Listener(TOPICS)
    pub_node = Node('test_publisher')
    try:
        bad = _publish(pub_node, sim, corrupt=True)
        assert listener.wait_for(lambda: int(listener.diag('contact_estimator: input wrench')
                                             .get('wrench.nonfinite', 0)) >= bad['nan_wrench'], timeout=5.0)
        assert listener.wait_for(lambda: int(listener.diag('contact_estimator: input displacement')
                                             .get('joint_state_empty', 0)) >= bad['empty_joint_state'], timeout=5.0)
    finally:
        pub_node.destroy_node()
        stop(proc)
        listener.close()
    estimates = listener.get('/contact_estimator/rls/estimate')
    assert estimates, 'no estimates published'
    assert all(math.isfinite(e.stiffness) and math.isfinite(e.damping) for e in estimates)
    assert all(all(math.isfinite(c) for c in e.covariance) for e in estimates)
    last = estimates[-1]
    assert last.valid and abs(last.stiffness - sim.stiffness) / sim.stiffness < 0.01
    # while data flowed, the wrench input was reported WARN with the rejections (afterwards it goes stale)
    statuses = [st for arr in listener.get('/diagnostics') for st in arr.status
                if st.name == 'contact_estimator: input wrench']
    assert any(st.level == b'\x01' and 'samples rejected' in st.message for st in statuses)


def test_unknown_joint_name_is_reported(ros_context):
    sim = KelvinVoigt1Dof(duration=1.5, rate=200.0)
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG, '-p', 'joint_name:=elbow')
    listener = Listener(TOPICS)
    pub_node = Node('test_publisher')
    try:
        _publish(pub_node, sim)
        assert listener.wait_for(lambda: listener.diag('contact_estimator: input displacement')
                                 .get('level') == b'\x02', timeout=5.0)
    finally:
        pub_node.destroy_node()
        log = stop(proc)
        listener.close()
    diag = listener.diag('contact_estimator: input displacement')
    assert "joint 'elbow' is not in the JointState names ['slider']" in diag['message']
    assert "joint 'elbow' is not in the JointState names" in log
    assert not listener.get('/contact_estimator/rls/estimate')


@pytest.mark.parametrize('override, reason', [
    ('rls.forgetting_factor:=-0.5', "parameter 'rls.forgetting_factor' = -0.5 is outside its range (0, 1]"),
    ('joint_name:=""', "parameter 'joint_name'"),
    ('algorithms:=[rls,magic]', "parameter 'algorithms' = 'magic' is not one of: rls, ils, ia, kalman, gls"),
    ('force_direction:=[0.0,0.0,2.0]', 'must be a unit vector'),
])
def test_wrong_parameter_stops_the_node_with_the_reason(override, reason):
    returncode, log = run_to_exit('contact_estimation.single_point.node', '--params-file', CONFIG,
                                  '-p', override)
    assert returncode == 2, log
    assert reason in log, log


def test_use_sim_time_with_a_played_bag(tmp_path, ros_context):
    """`contact-dynamics play` publishes the bag with /clock; the node runs its timer on that clock."""
    import subprocess
    import sys

    from contact_dynamics_common.ros_env import isolated_ros_env

    sim = KelvinVoigt1Dof(duration=4.0, rate=500.0, seed=9)
    bag = write_bag(sim, tmp_path / 'bag')
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG, '-p', 'use_sim_time:=true')
    listener = Listener(TOPICS)
    player = subprocess.Popen([sys.executable, '-m', 'contact_dynamics_common.play', str(bag), '--clock-hz', '100',
                               '--wait-for-subscribers', '15', '--no-progress'], env=isolated_ros_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = player.communicate(timeout=40)
        assert player.returncode == 0, out
        # the timer runs on /clock, which stops with the bag: the last update may be one period (50 ms)
        # plus the differentiator delay before the end of the data
        assert listener.wait_for(lambda: _final(listener, sim, 0.1) is not None, timeout=5.0), out
    finally:
        if player.poll() is None:
            player.kill()
        stop(proc)
        listener.close()
    est = _final(listener, sim, 0.1)['/contact_estimator/rls/estimate']
    assert est.valid and abs(est.stiffness / sim.stiffness - 1) < 0.01
    # estimates were published on the bag's clock: their count follows 20 Hz of bag time, not wall time
    n = len(listener.get('/contact_estimator/rls/estimate'))
    assert 40 <= n <= 100, n


def test_reset_service_restarts_the_estimators(ros_context):
    from std_srvs.srv import Trigger

    sim = KelvinVoigt1Dof(duration=3.0, rate=500.0, seed=11)
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG, '-p', 'rls.forgetting_factor:=1.0')
    listener = Listener(TOPICS)
    pub_node = Node('test_publisher')
    client = pub_node.create_client(Trigger, '/contact_estimator/reset')
    try:
        _publish(pub_node, sim)
        assert listener.wait_for(lambda: _final(listener, sim) is not None, timeout=5.0)
        before = listener.get('/contact_estimator/rls/estimate')[-1].samples_used
        assert client.wait_for_service(timeout_sec=10.0)
        response = call_service(pub_node, client, Trigger.Request())
        assert response is not None and response.success
        later = KelvinVoigt1Dof(duration=1.0, rate=500.0, seed=12, start_offset=4.0)
        _publish(pub_node, later)
        assert listener.wait_for(
            lambda: listener.get('/contact_estimator/rls/estimate')[-1].header.stamp.sec * 10**9
            + listener.get('/contact_estimator/rls/estimate')[-1].header.stamp.nanosec
            > int(later.measurements()['stamp_ns'][-1]) - 60_000_000, timeout=5.0)
    finally:
        pub_node.destroy_node()
        stop(proc)
        listener.close()
    after = listener.get('/contact_estimator/rls/estimate')[-1]
    assert before >= 1400 and after.samples_used < 520, (before, after.samples_used)
    assert after.valid and abs(after.stiffness / sim.stiffness - 1) < 0.01


def test_lifecycle_manager_drives_the_node(ros_context):
    """autostart:=false: nothing is estimated until configure + activate; deactivate freezes the output."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState

    sim = KelvinVoigt1Dof(duration=2.0, rate=500.0, seed=13)
    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG, '-p', 'autostart:=false')
    listener = Listener(TOPICS)
    pub_node = Node('test_lifecycle_manager')
    change = pub_node.create_client(ChangeState, '/contact_estimator/change_state')
    get = pub_node.create_client(GetState, '/contact_estimator/get_state')

    def call(client, request):
        return call_service(pub_node, client, request)

    def transition(tid):
        assert call(change, ChangeState.Request(transition=Transition(id=tid))).success, tid

    try:
        assert change.wait_for_service(timeout_sec=10.0) and get.wait_for_service(timeout_sec=10.0)
        assert call(get, GetState.Request()).current_state.label == 'unconfigured'
        transition(Transition.TRANSITION_CONFIGURE)
        assert call(get, GetState.Request()).current_state.label == 'inactive'
        _publish(pub_node, sim)                               # configured but inactive: ignored
        time.sleep(0.5)
        assert not listener.get('/contact_estimator/rls/estimate')
        transition(Transition.TRANSITION_ACTIVATE)
        assert call(get, GetState.Request()).current_state.label == 'active'
        _publish(pub_node, KelvinVoigt1Dof(duration=2.0, rate=500.0, seed=14, start_offset=3.0))
        assert listener.wait_for(lambda: len(listener.get('/contact_estimator/rls/estimate')) > 10, timeout=5.0)
        transition(Transition.TRANSITION_DEACTIVATE)
        time.sleep(0.3)
        frozen = len(listener.get('/contact_estimator/rls/estimate'))
        _publish(pub_node, KelvinVoigt1Dof(duration=1.0, rate=500.0, seed=15, start_offset=6.0))
        time.sleep(0.5)
        assert len(listener.get('/contact_estimator/rls/estimate')) == frozen
    finally:
        pub_node.destroy_node()
        stop(proc)
        listener.close()
    first = listener.get('/contact_estimator/rls/estimate')[0]
    assert first.header.stamp.sec >= sim.measurements()['stamp_ns'][-1] // 10**9 + 1   # no pre-activation data


def test_tare_service_sets_the_bias_and_refuses_in_contact(ros_context):
    from std_srvs.srv import Trigger

    proc = start_node('contact_estimation.single_point.node', '--params-file', CONFIG)
    listener = Listener(TOPICS)
    node = Node('test_tare')
    wrench_pub = node.create_publisher(WrenchStamped, '/wrench', 100)
    tare = node.create_client(Trigger, '/contact_estimator/tare')

    def call():
        return call_service(node, tare, Trigger.Request())

    try:
        wait_matched([wrench_pub])
        assert tare.wait_for_service(timeout_sec=10.0)
        for i in range(300):                               # unloaded sensor with an offset of 3 N along z
            w = WrenchStamped()
            w.header.stamp.sec, w.header.stamp.nanosec = 1_700_000_000, i * 1_000_000
            w.wrench.force.x, w.wrench.force.z = 0.5, 3.0
            wrench_pub.publish(w)
            time.sleep(0.001)
        time.sleep(0.3)                                    # at least one update has ingested them
        first = call()
        assert first.success and '0.5, 0, 3' in first.message, first.message
        sim = KelvinVoigt1Dof(duration=1.0, rate=500.0)        # later stamps, pressing into the wall
        _publish(node, sim)
        time.sleep(0.3)
        second = call()
        assert not second.success and 'in contact' in second.message, second.message
    finally:
        node.destroy_node()
        stop(proc)
        listener.close()
