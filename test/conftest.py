"""Test session setup: every ROS process of the suite runs on loopback in its own DDS domain."""
import pytest

from contact_dynamics_common.ros.env import apply_isolated_ros_env

# before any test module imports rclpy: the network rule (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a
# private ROS_DOMAIN_ID) holds for this process and every node it starts
ROS_ENV = apply_isolated_ros_env()


@pytest.fixture
def ros_context():
    """rclpy initialised for the test (publishers, service clients in the test process), shut down after."""
    import rclpy
    rclpy.init()
    yield
    if rclpy.ok():
        rclpy.shutdown()
