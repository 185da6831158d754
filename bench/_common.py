"""Pieces the node benchmarks share: the repository on sys.path, a process's CPU time from /proc, the latest
/diagnostics values, and a node process fed a bag by `contact-dynamics play` while this process listens.

Every ROS process started here runs with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a private ROS_DOMAIN_ID
(``apply_isolated_ros_env`` before rclpy.init, and the same environment for the child processes).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (s)."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def latest_statuses(diags: list) -> dict[str, dict]:
    """The latest report of each /diagnostics status: name -> {'level', 'message', key: value...}."""
    from contact_dynamics_common.ros.node import status_fields
    out: dict = {}
    for arr in diags:
        for st in arr.status:
            out[st.name] = status_fields(st)
    return out


@dataclass
class NodeRun:
    """What a played node reported: latest /diagnostics values per status, every message of the listened
    topics, and the node process's CPU share (of one core) while the bag played."""
    statuses: dict[str, dict] = field(default_factory=dict)
    messages: dict[str, list] = field(default_factory=dict)
    cpu_share: float = 0.0


def play_to_node(module: str, ros_args: list[str], bag, topics: dict | None = None,
                 listener_name: str = 'bench_listener', linger_s: float = 2.5) -> NodeRun:
    """Start ``python -m module --ros-args ros_args``, wait for its first /diagnostics, play ``bag`` to it at
    recorded speed (`contact-dynamics play`, its own process), keep listening ``linger_s`` more, stop it
    (SIGINT) and return what it reported. ``topics``: {topic: message type} recorded besides /diagnostics."""
    from contact_dynamics_common.ros.env import apply_isolated_ros_env
    env = apply_isolated_ros_env()
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node

    node = subprocess.Popen([sys.executable, '-m', module, '--ros-args', *ros_args], env=env)
    rclpy.init()
    listener = Node(listener_name)
    diags: list = []
    messages: dict[str, list] = {t: [] for t in topics or {}}
    listener.create_subscription(DiagnosticArray, '/diagnostics', diags.append, 10)
    for topic, msg_type in (topics or {}).items():
        listener.create_subscription(msg_type, topic, messages[topic].append, 10)
    try:
        deadline = time.monotonic() + 15
        while not diags and time.monotonic() < deadline:
            rclpy.spin_once(listener, timeout_sec=0.1)
        player = subprocess.Popen([sys.executable, '-m', 'contact_dynamics_common.ros.play', str(bag),
                                   '--wait-for-subscribers', '10', '--clock-hz', '0', '--no-progress'],
                                  env=env)
        cpu0, wall0 = cpu_seconds(node.pid), time.monotonic()
        while player.poll() is None:
            rclpy.spin_once(listener, timeout_sec=0.05)
        cpu1, wall1 = cpu_seconds(node.pid), time.monotonic()
        end = time.monotonic() + linger_s
        while time.monotonic() < end:
            rclpy.spin_once(listener, timeout_sec=0.05)
    finally:
        node.send_signal(2)
        node.wait(timeout=10)
    listener.destroy_node()
    rclpy.shutdown()
    return NodeRun(latest_statuses(diags), messages, (cpu1 - cpu0) / (wall1 - wall0))
