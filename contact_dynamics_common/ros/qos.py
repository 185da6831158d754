"""The QoS profiles of the project's nodes: sensor inputs, estimate outputs, latched topics."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

__all__ = ['latched_qos', 'output_qos', 'sensor_qos']


def sensor_qos(depth: int) -> QoSProfile:
    """Best-effort, volatile, keep-last(depth): accepts both reliable and best-effort publishers."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def output_qos(depth: int = 10) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def latched_qos() -> QoSProfile:
    """Reliable, transient local, depth 1: the latest message of a latched topic (e.g. robot_description)."""
    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
