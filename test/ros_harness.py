"""Real ROS 2 nodes in separate processes, and a listener in the test process (no fake rclpy)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from contact_dynamics_common.messages.convert import ns_to_sec_nanosec
from contact_dynamics_common.ros.node import status_fields
from contact_dynamics_common.ros.env import isolated_ros_env

ROOT = Path(__file__).resolve().parents[1]


def start_node(module: str, *ros_args: str, name: str | None = None) -> subprocess.Popen:
    """``python -m module --ros-args ...`` in its own process with the isolated environment."""
    cmd = [sys.executable, '-m', module, '--ros-args', *ros_args]
    return subprocess.Popen(cmd, env=isolated_ros_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT)


def stop(proc: subprocess.Popen, timeout: float = 5.0) -> str:
    """SIGINT, then kill; return everything the process printed."""
    if proc.poll() is None:
        proc.send_signal(2)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stdout.read() if proc.stdout else ''


def run_to_exit(module: str, *ros_args: str, timeout: float = 20.0) -> tuple[int | None, str]:
    """Start a node expected to stop by itself (e.g. on a wrong parameter): its exit code and output."""
    proc = start_node(module, *ros_args)
    try:
        proc.wait(timeout=timeout)
    finally:
        log = stop(proc)
    return proc.returncode, log


def set_stamp(header, ns: int) -> None:
    """header.stamp = ``ns`` nanoseconds."""
    header.stamp.sec, header.stamp.nanosec = ns_to_sec_nanosec(ns)


def paced(times_s, speed: float = 1.0):
    """Yield the indices of ``times_s`` (s, from the start of the iteration), each at its wall-clock time
    (``speed`` < 1: slower than recorded)."""
    start = time.perf_counter()
    for i, t in enumerate(times_s):
        delay = start + t / speed - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        yield i


class Listener:
    """A node in the test process that records every message of the given topics (spun in a thread)."""

    def __init__(self, topics: dict[str, type], name: str = 'test_listener'):
        if not rclpy.ok():
            rclpy.init()
        self.node = Node(name)
        self.messages: dict[str, list] = defaultdict(list)
        self._lock = threading.Lock()
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        for topic, msg_type in topics.items():
            self.node.create_subscription(msg_type, topic, self._callback(topic), qos)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _callback(self, topic: str):
        def cb(msg):
            with self._lock:
                self.messages[topic].append(msg)
        return cb

    def get(self, topic: str) -> list:
        with self._lock:
            return list(self.messages[topic])

    def diag(self, name: str) -> dict:
        """The latest /diagnostics status called ``name``: {'level', 'message', key: value...}; {} if none."""
        for arr in reversed(self.get('/diagnostics')):
            for st in arr.status:
                if st.name == name:
                    return status_fields(st)
        return {}

    def wait_for(self, predicate, timeout: float, period: float = 0.05) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(period)
        return predicate()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


def wait_matched(publishers, timeout: float = 15.0, settle: float = 0.5) -> None:
    """Wait until every publisher has a subscriber, then a little longer (the reader may discover the writer
    after the writer matched it, ros_feasibility.md §1.2)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.get_subscription_count() > 0 for p in publishers):
            time.sleep(settle)
            return
        time.sleep(0.05)
    raise TimeoutError('no subscriber matched within %.0f s' % timeout)


def call_service(node: Node, client, request, timeout: float = 10.0):
    """Call a service from ``node`` (not spun elsewhere) and return the response, None on time-out."""
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result()


__all__ = ['start_node', 'stop', 'run_to_exit', 'set_stamp', 'paced', 'Listener', 'wait_matched',
           'call_service', 'ROOT', 'os']
