"""multipoint_contact_estimator as a real node in its own process over DDS: the ACU gravity drop (M2) is
published as Odometry + WrenchStamped; the final estimate must equal run-bag of the same bag (1e-9) and the
truth (1e-4); /diagnostics must report the inputs and the verdict; a wrong parameter stops the node."""
from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.node import Node  # noqa: E402

from contact_dynamics.msg import MultiPointContactEstimate  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402
from contact_estimation.geometry.rotations import quat_to_matrix  # noqa: E402
from contact_estimation.multipoint.scenarios import EPOCH_NS, TRUTH, gravity_drop, write_bag  # noqa: E402

from ros_harness import (ROOT, Listener, paced, run_to_exit, set_stamp, start_node, stop,  # noqa: E402
                         wait_matched)

pytestmark = pytest.mark.ros

CONFIG = str(ROOT / 'config' / 'multipoint_contact_estimator.yaml')
TOPIC = '/multipoint_contact_estimator/estimate'


def _publish(node: Node, rec) -> int:
    tr = rec.trajectory
    R = quat_to_matrix(tr.q)
    vb, wb = np.einsum('nji,nj->ni', R, tr.v), np.einsum('nji,nj->ni', R, tr.w)
    fb, mb = np.einsum('nji,nj->ni', R, tr.force), np.einsum('nji,nj->ni', R, tr.moment)
    stamps = EPOCH_NS + np.round(tr.t * 1e9).astype(np.int64)
    wpub = node.create_publisher(WrenchStamped, '/payload/wrench', 500)
    opub = node.create_publisher(Odometry, '/payload/odom', 500)
    wait_matched([wpub, opub])
    for i in paced(tr.t, speed=0.5):                               # half speed: gentle on a shared machine
        o = Odometry()
        set_stamp(o.header, stamps[i])
        o.header.frame_id = 'world'
        o.child_frame_id = 'payload'
        p, q = tr.p[i], tr.q[i]
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = map(float, p)
        (o.pose.pose.orientation.x, o.pose.pose.orientation.y, o.pose.pose.orientation.z,
         o.pose.pose.orientation.w) = map(float, q)
        o.twist.twist.linear.x, o.twist.twist.linear.y, o.twist.twist.linear.z = map(float, vb[i])
        o.twist.twist.angular.x, o.twist.twist.angular.y, o.twist.twist.angular.z = map(float, wb[i])
        opub.publish(o)
        w = WrenchStamped()
        w.header.stamp = o.header.stamp
        w.header.frame_id = 'payload'
        w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = map(float, fb[i])
        w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = map(float, mb[i])
        wpub.publish(w)
    return int(stamps[-1])


@pytest.mark.parametrize('significance', [None, 1e6])
def test_live_node_equals_run_bag_on_the_gravity_drop(tmp_path, ros_context, significance):
    """significance None: the shipped config (a valid estimate); 1e6 (in a params file both front ends read):
    the same data refused 'not identified' - the live node and run-bag must give the same verdict either
    way."""
    rec = gravity_drop('M2')
    bag = write_bag(rec, tmp_path / 'm2')
    n_contact = int((rec.trajectory.count > 0).sum())
    config = CONFIG
    if significance is not None:
        import yaml
        doc = yaml.safe_load(open(CONFIG, encoding='utf-8'))
        doc['multipoint_contact_estimator']['ros__parameters']['significance'] = significance
        config = str(tmp_path / 'mp.yaml')
        with open(config, 'w', encoding='utf-8') as f:
            yaml.safe_dump(doc, f)
    proc = start_node('contact_estimation.multipoint.node', '--params-file', config,
                      '-p', 'publish_rate:=20.0')
    listener = Listener({TOPIC: MultiPointContactEstimate, '/diagnostics': DiagnosticArray})
    pub = Node('mp_test_publisher')
    try:
        last_ns = _publish(pub, rec)

        def final():
            msgs = listener.get(TOPIC)
            return msgs and msgs[-1].samples_used == n_contact
        assert listener.wait_for(final, timeout=15.0), 'no estimate covering the whole record'
        assert listener.wait_for(lambda: int(listener.diag('multipoint_contact_estimator: input wrench')
                                             .get('received', 0)) >= len(rec.trajectory.t), timeout=5.0)
    finally:
        pub.destroy_node()
        log = stop(proc)
        listener.close()
    live = listener.get(TOPIC)[-1]
    assert live.header.stamp.sec * 10**9 + live.header.stamp.nanosec == last_ns, log
    result, _, _ = run_bag(str(bag), config, progress=False)
    off = result.outputs[TOPIC][-1][1]
    # one verdict: the live node and run-bag on the same data and config
    print(f'multipoint live vs run-bag (significance {significance}): live valid={live.valid} '
          f'status={live.status!r} identifiable={list(live.identifiable)}; run-bag valid={off["valid"]} '
          f'status={off["status"]!r} identifiable={off["identifiable"]}')
    assert (off['valid'], off['status'], list(off['identifiable'])) == \
        (live.valid, live.status, list(live.identifiable))
    if significance is not None:
        assert not live.valid and live.status.startswith('not identified'), live.status
        est = listener.diag('multipoint_contact_estimator: estimate')
        assert est['valid'] == 'False', est
        return
    assert live.valid, live.status
    np.testing.assert_allclose([live.stiffness, live.damping, live.friction],
                               [TRUTH['stiffness'], TRUTH['damping'], TRUTH['friction']], rtol=1e-4)
    assert live.contact_count == len(live.contact_points) >= 6 and live.header.frame_id == 'world'
    np.linalg.cholesky(np.array(live.covariance).reshape(3, 3))
    est = listener.diag('multipoint_contact_estimator: estimate')
    assert est['level'] == b'\x00' and est['valid'] == 'True', est
    pipe = listener.diag('multipoint_contact_estimator: pipeline')
    assert int(pipe['wrench_unpaired']) == 0, pipe

    assert (off['header']['stamp']['sec'], off['header']['stamp']['nanosec']) == \
        (live.header.stamp.sec, live.header.stamp.nanosec)
    for key in ('stiffness', 'damping', 'friction', 'residual_rms', 'condition_number'):
        assert off[key] == pytest.approx(getattr(live, key), rel=1e-9), key
    assert off['covariance'] == pytest.approx(list(live.covariance), rel=1e-6)
    assert off['samples_used'] == live.samples_used and off['contact_count'] == live.contact_count


@pytest.mark.parametrize('override, reason', [
    ('formulation:=torque', "'formulation' = 'torque' is not one of"),
    ('geometry_file:=/nonexistent.yaml', "geometry_file '/nonexistent.yaml' not found"),
    ('moment_scale:=-1.0', "'moment_scale' = -1.0 is outside its range"),
])
def test_wrong_parameter_stops_the_node_with_the_reason(override, reason):
    returncode, out = run_to_exit('contact_estimation.multipoint.node', '--params-file', CONFIG,
                                  '-p', override)
    assert returncode != 0 and reason in out, out


def test_bad_input_is_counted_not_estimated(ros_context):
    """NaN wrenches, zero stamps and poses with a non-unit quaternion are dropped and counted in /diagnostics;
    without contact data no estimate is published (never a NaN one)."""
    proc = start_node('contact_estimation.multipoint.node', '--params-file', CONFIG, '-p', 'publish_rate:=20.0')
    listener = Listener({TOPIC: MultiPointContactEstimate, '/diagnostics': DiagnosticArray})
    pub = Node('mp_bad_publisher')
    try:
        wpub = pub.create_publisher(WrenchStamped, '/payload/wrench', 100)
        opub = pub.create_publisher(Odometry, '/payload/odom', 100)
        wait_matched([wpub, opub])
        for i in range(20):
            w = WrenchStamped()
            w.header.stamp.sec = 0 if i % 2 else 100               # odd: zero stamp
            w.header.stamp.nanosec = 0 if i % 2 else i * 1000
            w.wrench.force.x = float('nan') if i % 2 == 0 else 1.0
            wpub.publish(w)
            o = Odometry()
            o.header.stamp.sec, o.header.stamp.nanosec = 100, i * 1000
            o.pose.pose.orientation.w = 0.0                     # not a rotation
            opub.publish(o)
            time.sleep(0.01)

        def counted():
            d = listener.diag('multipoint_contact_estimator: input wrench')
            p = listener.diag('multipoint_contact_estimator: input pose')
            return (int(d.get('wrench.nonfinite', 0)) == 10 and int(d.get('wrench.zero_stamp', 0)) == 10
                    and int(p.get('dropped.bad_quaternion', 0)) == 20)   # the structural check's cause
        assert listener.wait_for(counted, timeout=10.0), (
            listener.diag('multipoint_contact_estimator: input wrench'),
            listener.diag('multipoint_contact_estimator: input pose'))
        assert listener.diag('multipoint_contact_estimator: input wrench')['level'] == b'\x01'
    finally:
        pub.destroy_node()
        stop(proc)
        listener.close()
    assert listener.get(TOPIC) == []
