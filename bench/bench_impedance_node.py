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
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import ROOT, play_to_node

from contact_dynamics.msg import ImpedanceProfile  # noqa: E402
from contact_estimation.impedance import scenarios as sc  # noqa: E402
from contact_estimation.impedance.simulate import write_bag  # noqa: E402


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
    run = play_to_node('contact_estimation.impedance.node',
                       ['--params-file', str(ROOT / 'config' / 'impedance_profiler.yaml'),
                        '-p', f'force_source:={args.force_source}',
                        '-p', f"acceleration_source:={'imu' if args.imu else 'differentiate'}",
                        '-p', f'publish_rate:={args.publish_rate}'], bag,
                       {'/impedance_profiler/profile': ImpedanceProfile})
    values, profiles = run.statuses, run.messages['/impedance_profiler/profile']
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
    print(f'node CPU share while playing: {run.cpu_share:.1%} of one core')
    if profiles:
        last = profiles[-1]
        k = np.array([last.stiffness_pos, last.stiffness_neg])
        kt = rec.oracle.value('stiffness')
        free = [i for i in range(8) if i != sc.KINK_SEGMENT]
        print(f'final profile: {sum(last.valid_pos) + sum(last.valid_neg)} of 16 bins valid; k+ = '
              + ' '.join(f'{v:.0f}' for v in last.stiffness_pos)
              + ' N/m; max |k/k_true - 1| outside the kink '
              + f'{np.nanmax(np.abs(k[:, free] / kt[:, free] - 1)):.2%}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
