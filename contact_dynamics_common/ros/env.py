"""The environment every ROS process the project starts here runs with (tests, demo, benchmarks, CI).

Default DDS discovery multicasts off the machine, which is not allowed here: discovery is kept on
loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST; ROS_LOCALHOST_ONLY is ignored by Kilted) and each run
gets its own ROS_DOMAIN_ID so that concurrent runs do not see each other.
"""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

FASTDDS_PROFILE = Path(__file__).resolve().parents[1] / 'tools' / 'fastdds_fast_discovery.xml'


def isolated_ros_env(base: dict | None = None, domain_id: int | None = None) -> dict:
    """A copy of ``base`` (default os.environ) with discovery on loopback and a private domain id."""
    env = dict(os.environ if base is None else base)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env.pop('ROS_STATIC_PEERS', None)
    if domain_id is not None:
        env['ROS_DOMAIN_ID'] = str(domain_id)
    elif not env.get('ROS_DOMAIN_ID'):
        env['ROS_DOMAIN_ID'] = str(random.SystemRandom().randint(1, 100))
    if FASTDDS_PROFILE.is_file():
        env.setdefault('FASTDDS_DEFAULT_PROFILES_FILE', str(FASTDDS_PROFILE))
    env.setdefault('ROS_LOG_DIR', str(Path(tempfile.gettempdir()) / 'contact_dynamics_ros_log'))
    env.setdefault('PYTHONUNBUFFERED', '1')
    return env


def apply_isolated_ros_env(domain_id: int | None = None) -> dict:
    """Set the isolated environment on this process (before rclpy is imported); return it."""
    env = isolated_ros_env(domain_id=domain_id)
    os.environ.update(env)
    return env
