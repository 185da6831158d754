#!/usr/bin/env python3
"""impedance_profiler under a 4 kHz stream over DDS on loopback (spec S5).

Starts the node in its own process, plays a simulated S2 bag of the Colton test plant to it with
`contact-dynamics play` (another process; force as the joint effort, or --force-source wrench for
JointState + WrenchStamped at 4 kHz each), listens to /diagnostics and the profile from this process and
prints: messages received vs published and the accepted rate, the update cost p50/p99 (per timer update,
and per sample), the node's CPU share, and the final profile against the truth.

  .venv/bin/python bench/bench_impedance_node.py [--duration 20] [--rate 4000] [--force-source effort]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contact_dynamics_common.ros_env import apply_isolated_ros_env  # noqa: E402

ENV = apply_isolated_ros_env()

import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.node import Node  # noqa: E402

from contact_dynamics.msg import ImpedanceProfile  # noqa: E402
from contact_estimation.impedance import scenarios as sc  # noqa: E402
from contact_estimation.impedance.simulate import write_bag  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--duration', type=float, default=20.0)
    ap.add_argument('--rate', type=float, default=4000.0)
    ap.add_argument('--force-source', choices=('effort', 'wrench'), default='effort')
    ap.add_argument('--publish-rate', type=float, default=5.0)
    ap.add_argument('--imu', action='store_true', help='acceleration from a 4 kHz sensor_msgs/Imu stream too')
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='bench_impedance_'))
    rec = sc.simulate('S2', duration=args.duration, rate=args.rate, seed=1)
    bag = write_bag(rec, tmp / 'bag', wrench=args.force_source == 'wrench', imu=args.imu)
    node = subprocess.Popen([sys.executable, '-m', 'contact_estimation.impedance.node', '--ros-args',
                             '--params-file', str(ROOT / 'config' / 'impedance_profiler.yaml'),
                             '-p', f'force_source:={args.force_source}',
                             '-p', f"acceleration_source:={'imu' if args.imu else 'differentiate'}",
                             '-p', f'publish_rate:={args.publish_rate}'], env=ENV)
    rclpy.init()
    listener = Node('bench_listener')
    diags, profiles = [], []
    listener.create_subscription(DiagnosticArray, '/diagnostics', diags.append, 10)
    listener.create_subscription(ImpedanceProfile, '/impedance_profiler/profile', profiles.append, 10)
    try:
        deadline = time.monotonic() + 15
        while not diags and time.monotonic() < deadline:
            rclpy.spin_once(listener, timeout_sec=0.1)
        player = subprocess.Popen([sys.executable, '-m', 'contact_dynamics_common.play', str(bag),
                                   '--wait-for-subscribers', '10', '--clock-hz', '0', '--no-progress'],
                                  env=ENV)
        cpu0, wall0 = cpu_seconds(node.pid), time.monotonic()
        while player.poll() is None:
            rclpy.spin_once(listener, timeout_sec=0.05)
        cpu1, wall1 = cpu_seconds(node.pid), time.monotonic()
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            rclpy.spin_once(listener, timeout_sec=0.05)
    finally:
        node.send_signal(2)
        node.wait(timeout=10)
    values = {}
    for arr in diags:
        for st in arr.status:
            values[st.name] = {kv.key: kv.value for kv in st.values}
    j = values.get('impedance_profiler: input joint_states', {})
    w = values.get('impedance_profiler: input wrench', {})
    imu = values.get('impedance_profiler: input imu', {})
    p = values.get('impedance_profiler: pipeline', {})
    n = len(rec.t)
    print(f'load: {args.rate:g} Hz JointState' + (f' + {args.rate:g} Hz WrenchStamped' if w else '')
          + f' for {args.duration:g} s (force from {args.force_source}); profile at {args.publish_rate:g} Hz')
    accepted = float(j.get('joint.accepted', 0))
    print(f"received {j.get('received')} / {n} joint states"
          + (f", {w.get('received')} / {n} wrenches" if w else '')
          + (f", {imu.get('received')} / {n} IMU samples" if imu else '')
          + f"; accepted {j.get('joint.accepted')} = {accepted / args.duration:.0f} per s of stream "
          f"(node's windowed input rate at the end {float(j.get('rate_hz', 0)):.0f} Hz)")
    print(f"update cost: p50 {float(p.get('update_ms_p50', 0)):.3f} ms, "
          f"p99 {float(p.get('update_ms_p99', 0)):.3f} ms "
          f"per timer update ({p.get('updates')} updates); per sample p50 "
          f"{float(p.get('update_us_per_sample_p50', 0)):.2f} us, "
          f"p99 {float(p.get('update_us_per_sample_p99', 0)):.2f} us")
    print(f'node CPU share while playing: {(cpu1 - cpu0) / (wall1 - wall0):.1%} of one core')
    if profiles:
        last = profiles[-1]
        k = np.array([last.stiffness_pos, last.stiffness_neg])
        kt = rec.oracle.value('stiffness')
        free = [i for i in range(8) if i != sc.KINK_SEGMENT]
        print(f'final profile: {sum(last.valid_pos) + sum(last.valid_neg)} of 16 bins valid; k+ = '
              + ' '.join(f'{v:.0f}' for v in last.stiffness_pos)
              + ' N/m; max |k/k_true - 1| outside the kink '
              + f'{np.nanmax(np.abs(k[:, free] / kt[:, free] - 1)):.2%}')
    listener.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
