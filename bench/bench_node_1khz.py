#!/usr/bin/env python3
"""Online contact_estimator under a 1 kHz wrench + 1 kHz joint-state load, over DDS on loopback.

Starts the node (its own process) with the configured algorithms, plays a simulated 1 kHz bag to it with
`contact-dynamics play` (another process), listens to /diagnostics from this process, and prints:
achieved input rates, messages received vs published, update cost p50/p99/max, CPU share of the node
process (user+system time / wall time, from /proc) and the final estimates.

  .venv/bin/python bench/bench_node_1khz.py [--duration 20] [--algorithms rls ils kalman] [--publish-rate 50]
Every ROS process runs with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a private ROS_DOMAIN_ID.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _common import ROOT, play_to_node

from contact_dynamics.msg import ContactEstimate  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--duration', type=float, default=20.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--algorithms', nargs='+', default=['rls', 'gls'])
    ap.add_argument('--publish-rate', type=float, default=50.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='bench_node_'))
    bag = write_bag(KelvinVoigt1Dof(duration=args.duration, rate=args.rate), tmp / 'bag')
    algos = '[' + ','.join(args.algorithms) + ']'
    run = play_to_node('contact_estimation.single_point.node',
                       ['--params-file', str(ROOT / 'config' / 'contact_estimator.yaml'),
                        '-p', f'algorithms:={algos}', '-p', f'publish_rate:={args.publish_rate}'], bag,
                       {f'/contact_estimator/{a}/estimate': ContactEstimate for a in args.algorithms})
    estimates = {a: run.messages[f'/contact_estimator/{a}/estimate'][-1] for a in args.algorithms
                 if run.messages[f'/contact_estimator/{a}/estimate']}
    values = run.statuses
    w = values.get('contact_estimator: input wrench', {})
    d = values.get('contact_estimator: input displacement', {})
    p = values.get('contact_estimator: pipeline', {})
    n = int(args.duration * args.rate)
    print(f'load: {args.rate:g} Hz WrenchStamped + {args.rate:g} Hz JointState for {args.duration:g} s; '
          f'algorithms {", ".join(args.algorithms)}; publish rate {args.publish_rate:g} Hz')
    print(f"achieved input rate: wrench {float(w.get('rate_hz', 0)):.1f} Hz, joint states "
          f"{float(d.get('rate_hz', 0)):.1f} Hz; received {w.get('received')} / {n} wrench, "
          f"{d.get('received')} / {n} joint states")
    print(f"update cost: p50 {float(p.get('update_ms_p50', 0)):.3f} ms, p99 {float(p.get('update_ms_p99', 0)):.3f} ms, "
          f"max {float(p.get('update_ms_max', 0)):.3f} ms over {p.get('updates')} updates")
    print(f'node CPU share while playing: {run.cpu_share:.1%} of one core')
    for a, m in sorted(estimates.items()):
        print(f'final {a}: k = {m.stiffness:.2f} N/m, b = {m.damping:.3f} N*s/m, valid = {m.valid} ({m.status})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
