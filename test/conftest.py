"""Test session setup: every ROS process of the suite runs on loopback in its own DDS domain."""
import sys

import pytest

from contact_dynamics_common.ros.env import apply_isolated_ros_env

# before any test module imports rclpy: the network rule (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a
# private ROS_DOMAIN_ID) holds for this process and every node it starts
ROS_ENV = apply_isolated_ros_env()


def _shutdown_rclpy() -> None:
    rclpy = sys.modules.get('rclpy')
    if rclpy is not None and rclpy.ok():
        rclpy.shutdown()


@pytest.fixture
def ros_context():
    """rclpy initialised for the test (publishers, service clients in the test process), shut down after."""
    import rclpy
    if not rclpy.ok():
        rclpy.init()
    yield
    _shutdown_rclpy()


@pytest.fixture(autouse=True, scope='module')
def _rclpy_shut_down_after_each_module():
    """A module whose tests left rclpy initialised (a harness Listener, a failed test) must not make the next
    module's ``rclpy.init()`` fail with 'Context.init() must only be called once'."""
    yield
    _shutdown_rclpy()
