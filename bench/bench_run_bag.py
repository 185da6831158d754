#!/usr/bin/env python3
"""Offline replay speed: how many times faster than real time `run-bag` processes a simulated bag.

Writes a 1-DOF Kelvin-Voigt bag (1 kHz wrench + 1 kHz joint states, --duration s) to a temp dir and
replays it through the contact estimator (config/contact_estimator.yaml: RLS + sliding-window GLS) at
several publish rates. Prints the wall time split into bag reading and estimation, and the ratio of bag
duration to wall time (the acceptance asks for >= 100x). ``--per-tick`` measures the per-tick protocol
instead of the nodes' chunked one-pass ``replay_chunk`` (the same outputs). No ROS process is started.

  .venv/bin/python bench/bench_run_bag.py [--duration 120] [--rates 10 20 50] [--per-tick] [--repeat 1]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

from _common import ROOT  # also puts the repository on sys.path

from contact_dynamics_common.bag import BagReader  # noqa: E402
from contact_dynamics_common.cli import load_offline_nodes  # noqa: E402
from contact_dynamics_common.offline.replay import replay  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--duration', type=float, default=120.0)
    ap.add_argument('--rate', type=float, default=1000.0, help='sensor rate of the simulated bag (Hz)')
    ap.add_argument('--rates', type=float, nargs='+', default=[10.0, 20.0, 50.0], help='publish rates (Hz)')
    ap.add_argument('--per-tick', action='store_true', help='step the nodes tick by tick (no replay_chunk)')
    ap.add_argument('--repeat', type=int, default=1, help='runs per rate; the fastest is reported')
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        bag_path = write_bag(KelvinVoigt1Dof(duration=args.duration, rate=args.rate), tmp / 'bag')
        print(f'simulated bag: {args.duration:g} s at {args.rate:g} Hz (2 topics) written in '
              f'{time.perf_counter() - t0:.1f} s')
        base = yaml.safe_load((ROOT / 'config' / 'contact_estimator.yaml').read_text())
        print(f"{'publish Hz':>10s} {'read s':>8s} {'estimate s':>10s} {'total s':>8s} {'msgs/s':>10s} "
              f"{'x real time':>12s}")
        for rate in args.rates:
            cfg = dict(base)
            cfg['contact_estimator']['ros__parameters']['publish_rate'] = rate
            cfg_path = tmp / f'cfg_{rate:g}.yaml'
            cfg_path.write_text(yaml.safe_dump(cfg))
            t_read = total = float('inf')
            for _ in range(args.repeat):
                nodes = load_offline_nodes(cfg_path)
                bag = BagReader(bag_path)
                t0 = time.perf_counter()
                for topic in nodes[0].inputs():
                    bag.columns(topic)
                t_read = min(t_read, time.perf_counter() - t0)
                bag = BagReader(bag_path)
                t0 = time.perf_counter()
                result = replay(bag, nodes, batched=not args.per_tick)
                total = min(total, time.perf_counter() - t0)
            print(f'{rate:10g} {t_read:8.3f} {total - t_read:10.3f} {total:8.3f} '
                  f'{result.input_messages / total:10.0f} {result.bag_duration_s / total:12.1f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
