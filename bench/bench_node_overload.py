#!/usr/bin/env python3
"""contact_estimator under overload, next to a bare rclpy subscriber receiving the same stream.

One run: starts the node (its own process; RLS + GLS at 20 Hz, config/contact_estimator.yaml), a bare
subscriber in this process (two subscriptions, same sensor-data QoS and depth, callbacks that only count,
the same executor as the node: EventsExecutor driven by spin_once) and, per rate, a publisher process that
sends WrenchStamped + JointState of a simulated contact (k = 4800 N/m, b = 200 N*s/m) at R Hz per topic for
a few seconds (stamps from the wall clock, so phases follow one another in time; ~/reset before each). After
each phase it waits until the node has worked off its backlog and reads /diagnostics. Per rate it prints:
messages published, received by the bare subscriber, accepted by the node (through the stamp gate into the
estimators), the ratio node/bare, the node's drops by cause, update cost p99/max (wall clock, and the node
thread's CPU time: the work without the time other processes held the CPU) and the final GLS estimate.

  .venv/bin/python bench/bench_node_overload.py [--rates 1000 4000 8000 16000] [--seconds 3]
Every ROS process runs with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a private ROS_DOMAIN_ID.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, latest_statuses

from contact_dynamics_common.ros.env import apply_isolated_ros_env  # noqa: E402

ENV = apply_isolated_ros_env()

import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from std_srvs.srv import Trigger  # noqa: E402

from contact_dynamics.msg import ContactEstimate  # noqa: E402
from contact_dynamics_common.ros.node import make_executor, sensor_qos  # noqa: E402

PUBLISHER = r'''
import math, sys, time
import numpy as np
import rclpy
from rclpy.node import Node
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
rate, seconds, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rclpy.init()
node = Node('overload_publisher')
wp = node.create_publisher(WrenchStamped, '/wrench', 1000)
jp = node.create_publisher(JointState, '/joint_states', 1000)
deadline = time.monotonic() + 15
while (wp.get_subscription_count() < 2 or jp.get_subscription_count() < 2) and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)
n = int(rate * seconds)
t = np.arange(n) / rate
x = 0.010 + 0.002 * (np.sin(2 * np.pi * 0.5 * t) + np.sin(2 * np.pi * 2.0 * t) + np.sin(2 * np.pi * 5.0 * t)) / 3
xd = 0.002 * 2 * np.pi * (0.5 * np.cos(2 * np.pi * 0.5 * t) + 2.0 * np.cos(2 * np.pi * 2.0 * t)
                          + 5.0 * np.cos(2 * np.pi * 5.0 * t)) / 3
rng = np.random.default_rng(1)
force = (4800.0 * x + 200.0 * xd + rng.normal(0, 0.5, n)).tolist()
q = (x + rng.normal(0, 1e-5, n)).tolist()
w, j = WrenchStamped(), JointState()
w.header.frame_id, j.name = 'ft_sensor', ['slider']
j.position = [0.0]
start_ns = time.time_ns()
t0 = time.perf_counter()
period_ns = 1e9 / rate
burst = max(1, int(rate / 2000))
for i in range(n):
    if i % burst == 0:
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    sec, nsec = divmod(start_ns + int(i * period_ns), 1000000000)
    w.header.stamp.sec, w.header.stamp.nanosec = sec, nsec
    w.wrench.force.z = force[i]
    j.header.stamp.sec, j.header.stamp.nanosec = sec, nsec
    j.position = [q[i]]
    wp.publish(w)
    jp.publish(j)
elapsed = time.perf_counter() - t0
time.sleep(0.3)
open(out, 'w').write(f'{n} {elapsed}')
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rates', type=float, nargs='+', default=[1000.0, 4000.0, 8000.0, 16000.0])
    ap.add_argument('--seconds', type=float, default=3.0, help='length of each phase')
    ap.add_argument('--queue', type=int, default=1000, help='input_queue_size (node) = bare subscriber depth')
    args = ap.parse_args()
    node = subprocess.Popen([sys.executable, '-m', 'contact_estimation.single_point.node', '--ros-args',
                             '--params-file', str(ROOT / 'config' / 'contact_estimator.yaml'),
                             '-p', f'input_queue_size:={args.queue}'], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rclpy.init()
    bare = Node('bare_subscriber')
    counts = {'wrench': 0, 'joint': 0}

    def on_wrench(msg):
        counts['wrench'] += 1

    def on_joint(msg):
        counts['joint'] += 1

    bare.create_subscription(WrenchStamped, '/wrench', on_wrench, sensor_qos(args.queue))
    bare.create_subscription(JointState, '/joint_states', on_joint, sensor_qos(args.queue))
    diags, estimates = [], []
    bare.create_subscription(DiagnosticArray, '/diagnostics', diags.append, 10)
    bare.create_subscription(ContactEstimate, '/contact_estimator/gls/estimate', estimates.append, 10)
    reset = bare.create_client(Trigger, '/contact_estimator/reset')
    executor = make_executor()
    executor.add_node(bare)
    tmp = Path(tempfile.mkdtemp(prefix='bench_overload_'))
    rows = []
    try:
        deadline = time.monotonic() + 20
        while not diags and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        before = latest_statuses(diags)
        for rate in args.rates:
            out = tmp / f'pub_{int(rate)}.txt'
            # a fresh estimator per rate: the differentiator's half window (in samples) is fixed from the first
            # samples after a reset, so a stream that changes rate must be reset (the samples are still counted)
            future = reset.call_async(Trigger.Request())
            while not future.done():
                executor.spin_once(timeout_sec=0.05)
            b0 = dict(counts)
            pub = subprocess.Popen([sys.executable, '-c', PUBLISHER, str(rate), str(args.seconds), str(out)], env=ENV)
            while pub.poll() is None:
                executor.spin_once(timeout_sec=0.01)
            b1 = dict(counts)
            settle_until = time.monotonic() + 6.0
            n_diag = len(diags)
            while time.monotonic() < settle_until:                  # backlog worked off, a fresh report
                executor.spin_once(timeout_sec=0.05)
                v = latest_statuses(diags)
                w = v.get('contact_estimator: input wrench', {})
                if len(diags) > n_diag + 1 and w.get('pending') == '0':
                    break
            after = latest_statuses(diags)
            n, elapsed = open(out).read().split()
            rows.append(_row(rate, int(n), float(elapsed), b1['wrench'] - b0['wrench'], b1['joint'] - b0['joint'],
                             before, after, estimates[-1] if estimates else None))
            before = after
    finally:
        node.send_signal(2)
        try:
            node.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
        executor.shutdown()
        bare.destroy_node()
        rclpy.try_shutdown()
    kind = os.environ.get('CONTACT_DYNAMICS_EXECUTOR', 'events')
    print(f'contact_estimator (RLS + GLS, 20 Hz, max_samples_per_update from the config) vs a bare rclpy '
          f'subscriber (same QoS, depth {args.queue}, same executor: {type(executor).__name__}), {args.seconds:g} s '
          f'per rate; machine shared with other jobs: figures under load')
    info = os.environ.get('CONTACT_DYNAMICS_MESSAGE_INFO', '1') != '0'
    print(f'executor: {kind}; dropped.queue: ' + ('exact (publication sequence numbers, with either executor)' if info
                                                  else 'what Fast DDS reports as message lost (not keep-last '
                                                       'overwrites): CONTACT_DYNAMICS_MESSAGE_INFO=0'))
    head = (f"{'rate/topic':>10} {'published':>10} {'pub Hz':>8} {'bare rx':>8} {'bare Hz':>8} {'node rx':>8} "
            f"{'accepted':>8} {'node Hz':>8} {'node/bare':>9}  {'drops by cause (wrench)':28} {'upd wall p99/max':>16} {'cpu p99/max ms':>14}"
            f"  estimate")
    print(head)
    for r in rows:
        print(r)
    return 0


def _row(rate, n, elapsed, bare_w, bare_j, before, after, est) -> str:
    def delta(name, key):
        return int(after.get(name, {}).get(key, 0)) - int(before.get(name, {}).get(key, 0))

    w, d = 'contact_estimator: input wrench', 'contact_estimator: input displacement'
    rx = delta(w, 'received')
    acc = delta(w, 'accepted') + delta(d, 'accepted')
    causes = {k.split('.', 1)[1]: delta(w, k) for k in after.get(w, {}) if k.startswith('dropped.')}
    causes = ', '.join(f'{k} {v}' for k, v in causes.items() if v) or 'none'
    p = after.get('contact_estimator: pipeline', {})
    node_hz = acc / elapsed
    bare_hz = (bare_w + bare_j) / elapsed
    ratio = acc / max(bare_w + bare_j, 1)
    keeps_up = (bare_w + bare_j) >= 0.95 * 2 * n
    verdict = '' if not keeps_up else ('  >=90% ok' if ratio >= 0.9 else '  <90% of bare')
    est_text = (f'k {est.stiffness:.0f} b {est.damping:.1f} valid {est.valid} ({est.status})' if est is not None else 'none')
    return (f'{rate:10.0f} {2 * n:10d} {2 * n / elapsed:8.0f} {bare_w + bare_j:8d} {bare_hz:8.0f} '
            f'{rx + delta(d, "received"):8d} {acc:8d} {node_hz:8.0f} {ratio:9.1%}  {causes:28.28s} '
            f"{float(p.get('update_ms_p99', 0)):5.1f}/{float(p.get('update_ms_max', 0)):<6.1f} "
            f"{float(p.get('update_cpu_ms_p99', 0)):5.1f}/{float(p.get('update_cpu_ms_max', 0)):<6.1f} {est_text}"
            f"{verdict}{'' if keeps_up else '  (bare does not keep up)'}")


if __name__ == '__main__':
    sys.exit(main())
