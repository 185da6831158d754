#!/usr/bin/env python3
"""contact-dynamics batch throughput: bags per minute on a local Dask cluster of 1 and 2 worker processes.

Simulates N 1-DOF contact bags (1 kHz wrench + 1 kHz joint states, different k and b), then runs
``batch`` (RLS + GLS, config/contact_estimator.yaml) over them on each worker count and prints wall time,
bags/min (cluster start included, as a user sees it) and bag time processed per wall second.

  .venv/bin/python bench/bench_batch.py [--bags 8] [--duration 30] [--workers 1 2]
The local cluster listens on 127.0.0.1 only, dashboard off.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT  # also puts the repository on sys.path

from contact_dynamics_common.cli.batch import run_batch  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bags', type=int, default=8)
    ap.add_argument('--duration', type=float, default=30.0, help='s of data per bag')
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='bench_batch_'))
    t0 = time.perf_counter()
    bags = [str(write_bag(KelvinVoigt1Dof(stiffness=3000.0 + 500 * i, damping=100.0 + 20 * i, duration=args.duration,
                                          rate=args.rate, seed=i + 1), tmp / f'trial{i:03d}'))
            for i in range(args.bags)]
    print(f'{args.bags} bags of {args.duration:g} s at {args.rate:g} Hz (wrench + joint states) simulated in '
          f'{time.perf_counter() - t0:.1f} s; RLS + GLS at 20 Hz')
    config = ROOT / 'config' / 'contact_estimator.yaml'
    base = None
    for n in args.workers:
        result = run_batch(bags, config, workers=n, progress=False)
        ok = sum(r['ok'] for r in result)
        task_s = sum(r['seconds'] for r in result)
        bag_s = sum(r['bag_duration_s'] for r in result)
        rate = 60 * len(result) / result.wall_s
        base = base or rate
        print(f'{n} worker(s): {ok}/{len(result)} ok in {result.wall_s:.1f} s wall (cluster start included) -> '
              f'{rate:.1f} bags/min ({rate / base:.2f}x of {args.workers[0]} worker), {bag_s / result.wall_s:.0f} s '
              f'of bag per wall second; mean task {task_s / len(result):.2f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
