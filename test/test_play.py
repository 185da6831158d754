"""contact_dynamics_common.ros.play in a separate process, received over DDS (loopback only) by this process."""
import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'     # mandatory: nothing leaves the machine
os.environ.setdefault('ROS_DOMAIN_ID', '57')
os.environ.setdefault('ROS_LOG_DIR', '/tmp/ros_log_bag')

import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from contact_dynamics_common.bag import BagReader, BagWriter  # noqa: E402
from contact_dynamics_common.messages.convert import stamp_to_ns, wrench_row  # noqa: E402

pytestmark = pytest.mark.ros

FAST_DISCOVERY = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com"><profiles>
  <participant profile_name="fast_discovery" is_default_profile="true"><rtps><builtin><discovery_config>
    <initialAnnouncements><count>30</count><period><sec>0</sec><nanosec>100000000</nanosec></period>
    </initialAnnouncements>
    <leaseAnnouncement><sec>0</sec><nanosec>250000000</nanosec></leaseAnnouncement>
  </discovery_config></builtin></rtps></participant>
</profiles></dds>
"""
T0 = 1_700_000_000_000_000_000
N, PERIOD = 300, 2_000_000          # 0.6 s of 500 Hz wrench


def _write_bag(path):
    rng = np.random.default_rng(3)
    forces = rng.normal(size=(N, 6))
    with BagWriter(path) as w:
        for i in range(N):
            t = T0 + i * PERIOD
            f = forces[i].tolist()
            w.write('/ft/wrench', 'geometry_msgs/msg/WrenchStamped',
                    {'header': {'stamp': {'sec': t // 10**9, 'nanosec': t % 10**9}, 'frame_id': 'ft'},
                     'wrench': {'force': dict(zip('xyz', f[:3])), 'torque': dict(zip('xyz', f[3:]))}}, t)


def test_play_publishes_bag_values_and_clock(tmp_path, monkeypatch):
    profile = tmp_path / 'fastdds.xml'
    profile.write_text(FAST_DISCOVERY)
    monkeypatch.setenv('FASTDDS_DEFAULT_PROFILES_FILE', str(profile))
    bag = tmp_path / 'play_bag'
    _write_bag(bag)
    expected = BagReader(bag).columns('/ft/wrench')

    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile
    from rosgraph_msgs.msg import Clock

    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('test_play_listener', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    wrenches, clocks = [], []
    node.create_subscription(WrenchStamped, '/ft/wrench', lambda m: wrenches.append(wrench_row(m)),
                             QoSProfile(depth=1000))
    node.create_subscription(Clock, '/clock', lambda m: clocks.append(stamp_to_ns(m.clock)),
                             QoSProfile(depth=1000))
    child = subprocess.Popen(
        [sys.executable, '-m', 'contact_dynamics_common.ros.play', str(bag), '--wait-for-subscribers', '8',
         '--clock-hz', '50', '--no-progress'],
        env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20.0
        while child.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        drain = time.monotonic() + 0.5
        while time.monotonic() < drain:
            executor.spin_once(timeout_sec=0.05)
        _, err = child.communicate(timeout=5) if child.poll() is not None else ('', 'timed out')
        assert child.returncode == 0, err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    assert len(wrenches) == N, f'received {len(wrenches)} of {N} wrenches; player: {err}'
    got = np.array([row[1:] for row in wrenches])
    np.testing.assert_array_equal(np.array([row[0] for row in wrenches]), expected['stamp_ns'])
    np.testing.assert_array_equal(got[:, :3], expected['force'])
    np.testing.assert_array_equal(got[:, 3:], expected['torque'])
    assert 'published 300 messages' in err
    # /clock carries bag time and advances over the whole bag
    clock = np.array(clocks)
    assert len(clock) >= 10
    assert np.all(np.diff(clock) >= 0)
    assert clock[0] >= T0 and clock[0] < T0 + 0.2e9
    assert clock[-1] == T0 + (N - 1) * PERIOD
