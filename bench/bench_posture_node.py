#!/usr/bin/env python3
"""posture_evaluator keeps its rate (issue 19): the OSR-like model with the 625-candidate grid (5 steps of each
of its 4 steer joints, the params file's default grid), a simulated approach bag played into the node over DDS
at recorded speed, and the node's own /diagnostics 'timing' status read back: period, the longest recent
update, overruns, updates. The issue's figure before: ~340 ms per update against a 50 ms period (the whole grid
every tick); the node now evaluates ``candidates_per_update`` candidates per tick and publishes the ranking when
the grid is complete. Each figure is printed beside the tick budget; no timed assertion (see the test
test_rover_nodes::test_ordering_counts_and_overrun_over_dds for the overrun report itself).

  .venv/bin/python bench/bench_posture_node.py [--duration 20] [--publish-rate 20] [--per-update 50]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _common import ROOT, play_to_node


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=20.0, help='bag seconds (played at recorded speed)')
    ap.add_argument('--publish-rate', type=float, default=20.0)
    ap.add_argument('--per-update', type=int, default=50, help='candidates_per_update')
    ap.add_argument('--model', default='osr_like', choices=('osr_like', 'pr3d', 'rcp_like'))
    args = ap.parse_args()
    from contact_dynamics_common.cli import main as cli
    from contact_dynamics.msg import PostureEvaluation
    tmp = Path(tempfile.mkdtemp(prefix='bench_posture_'))
    roles = f'rover_{args.model}_roles.yaml'
    bag = tmp / 'bag'
    with open(os.devnull, 'w') as null:
        out, sys.stdout = sys.stdout, null
        try:
            code = cli(['simulate', 'rover-approach', '--out', str(bag), '--model-yaml', roles,
                        '--duration', f'{args.duration:g}'])
        finally:
            sys.stdout = out
    if code not in (0, None):
        print(f'simulate rover-approach exited {code}')
        return 1
    run = play_to_node('rover_contact.posture.node',
                       ['--params-file', str(ROOT / 'config' / 'posture_evaluator.yaml'),
                        '-p', f'model_yaml:={roles}', '-p', f'publish_rate:={args.publish_rate}',
                        '-p', f'candidates_per_update:={args.per_update}'], bag,
                       {'/posture_evaluator/posture_evaluation': PostureEvaluation})
    timing = run.statuses.get('posture_evaluator: timing', {})
    if not timing:
        print('no timing status from posture_evaluator; statuses seen: ' + ', '.join(sorted(run.statuses)))
        return 1
    period = float(timing['period_ms'])
    rankings = run.messages['/posture_evaluator/posture_evaluation']
    sizes = sorted({len(m.candidates) for m in rankings})
    print(f'posture_evaluator, {args.model} model, {args.per_update} candidates per tick at '
          f'{args.publish_rate:g} Hz, {args.duration:g} s bag at recorded speed')
    print(f"  period {period:.1f} ms; update last {float(timing['update_ms_last']):.1f} ms, max of the recent "
          f"{float(timing['update_ms_max_recent']):.1f} ms ({float(timing['update_ms_max_recent']) / period:.0%} "
          f"of the period); overruns {timing['overruns_total']} of {timing['updates']} updates; status "
          f"'{timing.get('message')}'")
    print(f'  rankings published: {len(rankings)} (candidates per ranking: {sizes}); node CPU '
          f'{run.cpu_share:.0%} of one core while the bag played')
    print('  issue 19 before: ~340 ms per update against a 50 ms period (the whole 625-candidate grid per tick)')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
