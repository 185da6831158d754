"""Publish a rosbag2 bag (MCAP or sqlite3) over DDS at recorded speed, like ``ros2 bag play --clock``.

Messages are published as the recorded CDR bytes (rclpy's ``Publisher.publish`` accepts ``bytes``),
scheduled by log time with ``time.perf_counter`` from one thread; ``/clock`` carries the bag time at
``clock_hz``. Each topic is offered with the reliability, durability and depth recorded in the bag.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..bag import BagError, BagReader
from ..messages.convert import ns_to_sec_nanosec

DEFAULT_DEPTH = 100
SETTLE_S = 0.5      # after matching: FastDDS can match the writer before the reader has matched it
ACK_TIMEOUT_S = 1.0  # at the end, wait this long in total at most for reliable readers to acknowledge
#: wall seconds the publishers stay after the last message for best-effort readers to take it
BEST_EFFORT_LINGER_S = 0.5


def message_class(type_name: str) -> type:
    """'sensor_msgs/msg/JointState' -> the rclpy message class."""
    pkg, kind, name = type_name.split('/')
    try:
        return getattr(importlib.import_module(f'{pkg}.{kind}'), name)
    except (ImportError, AttributeError) as e:
        raise LookupError(f'message type {type_name!r} is not installed for rclpy: {e}') from e


def qos_from_offered(profiles: Sequence[dict[str, Any]]) -> Any:
    """rclpy QoSProfile from a bag's offered QoS profiles (policy names, or numbers in bags before v9)."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    if not profiles:
        return QoSProfile(depth=DEFAULT_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
    p = profiles[0]
    best_effort = p.get('reliability') in ('best_effort', 2)
    transient = p.get('durability') in ('transient_local', 1)
    keep_all = p.get('history') in ('keep_all', 2)
    return QoSProfile(
        history=HistoryPolicy.KEEP_ALL if keep_all else HistoryPolicy.KEEP_LAST,
        depth=int(p.get('depth') or DEFAULT_DEPTH),
        reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE)


def _wait_for_subscribers(publishers: dict[str, Any], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while any(p.get_subscription_count() == 0 for p in publishers.values()):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    time.sleep(SETTLE_S)
    return True


def play(bag_path: str | Path, *, rate: float = 1.0, clock_hz: float = 100.0,
         topics: Sequence[str] | None = None, wait_for_subscribers: float = 0.0, loop: bool = False,
         progress: bool = True, node: Any = None) -> dict[str, Any]:
    """Publish the bag; returns {'messages': {topic: n}, 'published', 'clock_ticks', 'loops', 'bag_s',
    'wall_s', 'achieved_rate' (bag seconds per wall second), 'max_lag_s', 'subscribers_matched',
    'recovery' (the reader's BagRecovery: what of a damaged bag was played)}.

    ``loop`` replays until interrupted (Ctrl-C ends playback and returns the stats). With ``node=None`` a
    node is created in a private rclpy context and shut down at the end.
    """
    if rate <= 0:
        raise ValueError(f'rate must be > 0, got {rate}')
    reader = BagReader(bag_path)
    selected = list(reader.topics) if topics is None else list(topics)
    unknown = [t for t in selected if t not in reader.topics]
    if unknown:
        raise ValueError(f'topics not in {bag_path}: {unknown}; bag topics: {sorted(reader.topics)}')

    import rclpy
    context = None
    if node is None:
        context = rclpy.context.Context()
        rclpy.init(context=context)
        node = rclpy.create_node('contact_dynamics_player', context=context)
    try:
        stats = _play(node, reader, selected, rate, clock_hz, wait_for_subscribers, loop, progress)
        stats['recovery'] = reader.recovery
        return stats
    finally:
        if context is not None:
            node.destroy_node()
            context.try_shutdown()


def _play(node: Any, reader: BagReader, selected: list[str], rate: float, clock_hz: float,
          wait_for_subscribers: float, loop: bool, progress: bool) -> dict[str, Any]:
    from rclpy.qos import QoSProfile
    from rosgraph_msgs.msg import Clock

    publishers = {t: node.create_publisher(message_class(reader.topics[t]), t,
                                           qos_from_offered(reader.offered_qos(t))) for t in selected}
    clock_pub = node.create_publisher(Clock, '/clock', QoSProfile(depth=10)) if clock_hz > 0 else None
    try:
        return _publish(reader, selected, publishers, clock_pub, rate, clock_hz, wait_for_subscribers, loop,
                        progress)
    finally:
        for pub in [*publishers.values(), clock_pub]:
            if pub is not None:
                node.destroy_publisher(pub)


def _publish(reader: BagReader, selected: list[str], publishers: dict[str, Any], clock_pub: Any,
             rate: float, clock_hz: float, wait_for_subscribers: float, loop: bool, progress: bool
             ) -> dict[str, Any]:
    from builtin_interfaces.msg import Time
    from rclpy.duration import Duration
    from rosgraph_msgs.msg import Clock

    matched = _wait_for_subscribers(publishers, wait_for_subscribers) if wait_for_subscribers > 0 else None

    counts = reader.message_counts
    total = sum(counts[t] for t in selected)
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm
        bar = tqdm(total=total, unit='msg', desc='play', file=sys.stderr)

    sent = dict.fromkeys(selected, 0)
    clock_ticks, loops, max_lag = 0, 0, 0.0
    clock_msg, scale = Clock(clock=Time()), 1e-9 / rate
    clock_period = 1.0 / clock_hz if clock_hz > 0 else float('inf')
    clock_step_ns = round(1e9 * rate / clock_hz) if clock_hz > 0 else 0
    start_ns = reader.start_ns
    played_ns = 0                      # bag time published, summed over loops
    bag_ns = start_ns
    wall_start = time.perf_counter()

    def tick(bag_time_ns: int) -> None:
        nonlocal clock_ticks
        clock_msg.clock.sec, clock_msg.clock.nanosec = ns_to_sec_nanosec(bag_time_ns)
        clock_pub.publish(clock_msg)
        clock_ticks += 1

    try:
        while True:
            loop_start = time.perf_counter()
            k = 0                                                        # clock ticks of this loop
            for topic, _, log_ns, data in reader.raw_messages(selected):
                due = loop_start + (log_ns - start_ns) * scale
                while clock_pub is not None and loop_start + k * clock_period <= due:
                    _sleep_until(loop_start + k * clock_period)          # clock ticks before this message
                    tick(start_ns + k * clock_step_ns)
                    k += 1
                now = _sleep_until(due)
                max_lag = max(max_lag, now - due)
                publishers[topic].publish(data)
                sent[topic] += 1
                bag_ns = log_ns
                if bar is not None:
                    bar.update()
            if clock_pub is not None:
                tick(bag_ns)
            played_ns += bag_ns - start_ns
            bag_ns = start_ns
            loops += 1
            if not loop:
                break
    except KeyboardInterrupt:
        played_ns += bag_ns - start_ns
    finally:
        if bar is not None:
            bar.close()
    wall_s = time.perf_counter() - wall_start
    ended = time.monotonic()
    linger_until = ended + ACK_TIMEOUT_S  # let reliable readers acknowledge the last messages
    for pub in [p for p in (clock_pub, *publishers.values()) if p is not None]:
        pub.wait_for_all_acked(Duration(nanoseconds=max(0, int((linger_until - time.monotonic()) * 1e9))))
    # best-effort readers (sensor-data QoS, as the nodes subscribe) acknowledge nothing: a publisher destroyed
    # right after its last message can take that message with it before a busy reader has taken it (seen under
    # load: a played bag's very last odometry sample never reached the node, its final estimate one sample short)
    _sleep_until(time.perf_counter() + max(0.0, ended + BEST_EFFORT_LINGER_S - time.monotonic()))
    return {'messages': sent, 'published': sum(sent.values()), 'clock_ticks': clock_ticks, 'loops': loops,
            'bag_s': played_ns / 1e9, 'wall_s': wall_s,
            'achieved_rate': played_ns / 1e9 / wall_s if wall_s > 0 else 0.0,
            'max_lag_s': max_lag, 'subscribers_matched': matched}


def _sleep_until(t: float) -> float:
    now = time.perf_counter()
    if t > now:
        time.sleep(t - now)
        now = time.perf_counter()
    return now


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: contact-dynamics play BAG [--rate R] [--clock-hz H] [--topics T ...] [--loop]
    [--wait-for-subscribers S]. DDS discovery stays on this host unless ROS_AUTOMATIC_DISCOVERY_RANGE
    is set."""
    ap = argparse.ArgumentParser(prog='contact-dynamics play',
                                 description='Publish a bag (rosbag2 MCAP or sqlite3, or ROS 1) at '
                                             'recorded speed with /clock.')
    ap.add_argument('bag', help='bag directory, or a .mcap / .db3 / .bag file')
    ap.add_argument('--rate', type=float, default=1.0, help='playback speed factor (default 1.0)')
    ap.add_argument('--clock-hz', type=float, default=100.0,
                    help='rate of /clock in wall time; 0 disables /clock (default 100)')
    ap.add_argument('--topics', nargs='+', metavar='T', help='only these topics (default: all)')
    ap.add_argument('--loop', action='store_true', help='replay until interrupted')
    ap.add_argument('--wait-for-subscribers', type=float, default=0.0, metavar='S',
                    help='wait up to S seconds for a subscriber on every topic before playing')
    ap.add_argument('--no-progress', action='store_true', help='no progress bar')
    args = ap.parse_args(argv)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    try:
        stats = play(args.bag, rate=args.rate, clock_hz=args.clock_hz, topics=args.topics,
                     wait_for_subscribers=args.wait_for_subscribers, loop=args.loop,
                     progress=not args.no_progress)
    except (BagError, OSError, LookupError, ValueError) as e:
        print(f'contact-dynamics play: error: {e}', file=sys.stderr)
        return 2
    print(f"published {stats['published']} messages ({stats['clock_ticks']} clock ticks) in "
          f"{stats['wall_s']:.2f} s, {stats['achieved_rate']:.3f}x real time", file=sys.stderr)
    for line in stats['recovery'].lines():
        print(line, file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
