"""Test session setup: every ROS process of the suite runs on loopback in its own DDS domain."""
import os
import sys

import pytest

from contact_dynamics_common.ros.env import apply_isolated_ros_env


def _worker_domain() -> int | None:
    """Under pytest-xdist (``make test`` runs two workers) each worker gets a domain of its own, derived from
    the run's ROS_DOMAIN_ID, so two workers' nodes (same node and topic names) never see each other."""
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    if not worker.startswith('gw'):
        return None
    base = int(os.environ.get('ROS_DOMAIN_ID') or 1)
    return (base - 1 + 50 * int(worker[2:])) % 100 + 1


# before any test module imports rclpy: the network rule (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a
# private ROS_DOMAIN_ID) holds for this process and every node it starts
ROS_ENV = apply_isolated_ros_env(_worker_domain())


def pytest_collection_modifyitems(config, items):
    """A test that starts ROS nodes (marker ``ros``) is retried once when it fails: its timing is DDS
    discovery and scheduling on a 2-core machine shared by two workers. A retry shows as 'rerun' in the summary;
    a test that fails twice fails the run."""
    if not config.pluginmanager.hasplugin('rerunfailures'):
        return
    for item in items:
        if item.get_closest_marker('ros') is not None and item.get_closest_marker('flaky') is None:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=2))


_RERUNS: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    """Keep why a retried test failed the first time (pytest-rerunfailures reports it as 'rerun'; its own summary
    names the test only): a flake that passes on retry in CI still leaves its reason in the log."""
    if report.outcome == 'rerun':
        text = getattr(report, 'longreprtext', '') or str(report.longrepr or '')
        _RERUNS.append((report.nodeid, text))


def pytest_terminal_summary(terminalreporter):
    if not _RERUNS:
        return
    terminalreporter.section('why the retried tests failed the first time')
    for nodeid, text in _RERUNS:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith('E ')]
        terminalreporter.write_line(f'{nodeid}:')
        for ln in (errors[:12] or lines[-12:]):
            terminalreporter.write_line(f'    {ln[:300]}')


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
