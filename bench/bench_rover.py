#!/usr/bin/env python3
"""rover_contact benchmark (issue 19): posture candidate evaluations per second on the 3-D models in ground mode
``free`` and ``both`` (goal >= 10 000/s in ``both``), the batched rigid path beside the per-candidate path it
replaced (``PostureEvaluator.reference_rigid``, same numbers), and the latency of one T_c / one indicator in
mode ``both`` (goal p99 < 0.5 ms). Best of ``--best`` runs; the load average is printed beside every figure
(the goals are for a quiet machine; this one may be shared).

  .venv/bin/python bench/bench_rover.py [--candidates 10000] [--repeats 2000] [--best 3] [--indicator-only]

The single indicator is timed for ``evaluate`` (the reduced-coordinate path) and ``evaluate_reference`` (the
full-coordinate composition it replaced) in the same run, in process CPU time per call, beside the figures
before (issue 19 notes: p50 0.42-0.62 ms, p99 0.8-1.1 ms of process CPU at load 5).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rover_contact.impact.energy import impact  # noqa: E402
from rover_contact.impact.geometry import n_in_ros  # noqa: E402
from rover_contact.impact.indicator import evaluate, evaluate_reference  # noqa: E402
from rover_contact.inputs import load_model  # noqa: E402
from rover_contact.posture.evaluate import Candidate, Obstacle, PostureEvaluator  # noqa: E402

WHEELS = ['front_left', 'front_right']
# the issue 19 table (quiet machine, before the batched rigid path): 'both' 2 400 candidates/s;
# single indicator in mode 'both' p50 0.97 ms, p99 1.9 ms
PREVIOUS_BOTH = 2400
PREVIOUS_INDICATOR = (0.97, 1.9)
PREVIOUS_INDICATOR_CPU = ('0.42-0.62', '0.8-1.1')         # p50, p99 ms of process CPU at load 5, before the reduced path


def load() -> str:
    return f'load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores'


def candidates(model, n: int, rng) -> list:
    joints = list(model.roles.posture_joints)
    lo = np.array([model.model.lowerPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    hi = np.array([model.model.upperPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    x = rng.uniform(lo, hi, size=(n, len(joints)))
    return [Candidate(dict(zip(joints, row)), float(rng.uniform(0.03, 0.2))) for row in x]


def rate(ev, cands, obs, best: int) -> tuple[float, object, float]:
    """Best-of-``best`` candidates/s of one evaluate call over ``cands`` (wall), its result, and the best
    candidates per process-CPU second (the wall time less the waits for a core on a shared machine)."""
    dt, cpu, res = float('inf'), float('inf'), None
    for _ in range(best):
        t0, c0 = time.perf_counter(), time.process_time()
        res = ev.evaluate({}, cands, obs)
        cpu = min(cpu, time.process_time() - c0)
        dt = min(dt, time.perf_counter() - t0)
    return len(cands) / dt, res, len(cands) / max(cpu, 1e-9)


def single_indicator(name: str, model, repeats: int) -> None:
    """Latency of one T_c (CRBA + Λ + impact) and of one indicator in mode ``both`` at the neutral posture
    rolling at 0.07 m/s into a 70° face with the two front wheels: wall time, and process CPU time for the
    reduced path and the reference composition (same run, same values: test_speed_equality)."""
    q = model.configuration()
    v = model.rolling_velocity(q, 0.07)
    n_in = n_in_ros(np.deg2rad(70))
    lat_free = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        M = model.mass_matrix(q)
        lam = model.contact_rows(q, WHEELS, n_in)
        impact(M, model.mech_rows(), lam, v)
        lat_free.append(time.perf_counter() - t0)
    cpu, wall = {}, {}
    for fn in (evaluate, evaluate_reference):
        for _ in range(50):                                  # warm-up
            fn(model, q, v, np.deg2rad(70), WHEELS, 'both')
        c, w = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            fn(model, q, v, np.deg2rad(70), WHEELS, 'both')
            c.append(time.process_time() - c0)
            w.append(time.perf_counter() - t0)
        cpu[fn.__name__], wall[fn.__name__] = c, w
    a = evaluate(model, q, v, np.deg2rad(70), WHEELS, 'both')
    b = evaluate_reference(model, q, v, np.deg2rad(70), WHEELS, 'both')
    same = np.array_equal(a.ground_active, b.ground_active)
    dev = max(abs(a.free.t_c - b.free.t_c), abs(a.rigid.t_c - b.rigid.t_c)) / b.free.t_total
    f = lambda x, p: np.percentile(np.array(x) * 1e3, p)
    lb = wall['evaluate']
    print(f'{name:9s} single T_c (CRBA + Λ + T_c, M_eff, shares): min {min(lat_free) * 1e3:.3f} ms, p50 '
          f'{f(lat_free, 50):.3f} ms, p90 {f(lat_free, 90):.3f} ms, p99 {f(lat_free, 99):.3f} ms')
    print(f'{name:9s} single indicator, mode both (+ projection, LCP), wall: min {min(lb) * 1e3:.3f} ms, p50 '
          f'{f(lb, 50):.3f} ms, p90 {f(lb, 90):.3f} ms, p99 {f(lb, 99):.3f} ms (issue table before: p50 '
          f'{PREVIOUS_INDICATOR[0]} ms, p99 {PREVIOUS_INDICATOR[1]} ms quiet) [{load()}]')
    for fn in ('evaluate', 'evaluate_reference'):
        c = cpu[fn]
        print(f'{name:9s} single indicator, mode both, process CPU time (the wall time less the waits for a core), '
              f'{fn:18s}: min {min(c) * 1e3:.3f} ms, p50 {f(c, 50):.3f} ms, p90 {f(c, 90):.3f} ms, p99 '
              f'{f(c, 99):.3f} ms')
    print(f'{name:9s} reduced path / reference: p50 {f(cpu["evaluate"], 50) / f(cpu["evaluate_reference"], 50):.2f}x '
          f'(before the reduced path: p50 {PREVIOUS_INDICATOR_CPU[0]} ms, p99 {PREVIOUS_INDICATOR_CPU[1]} ms CPU at '
          f'load 5); same ground-active set: {same}, max |dT_c|/T {dev:.1e} [{load()}]')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--candidates', type=int, default=10000)
    ap.add_argument('--repeats', type=int, default=2000)
    ap.add_argument('--best', type=int, default=3)
    ap.add_argument('--models', nargs='+', default=['pr3d', 'osr_like', 'rcp_like'])
    ap.add_argument('--indicator-only', action='store_true', help='skip the posture-ranking rates')
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f'shared machine: figures are noisy ({load()}); best of {a.best} runs')
    for name in a.models:
        model = load_model({'model_yaml': f'rover_{name}_roles.yaml', 'urdf_path': ''})
        obs = Obstacle(np.deg2rad(70), WHEELS)
        cands = candidates(model, a.candidates, rng)
        if a.indicator_only:
            single_indicator(name, model, a.repeats)
            continue
        ev = PostureEvaluator(model, ground_mode='free')
        ev.evaluate({}, cands[:100], obs)                    # warm-up
        r, res, _ = rate(ev, cands, obs, a.best)
        print(f'{name:9s} free  : {len(cands)} candidates: {r:9.0f} candidates/s ({res.feasible.mean() * 100:.0f} % '
              f'feasible; ground solve + CRBA + T_c, batched) [{load()}]')
        evb = PostureEvaluator(model, ground_mode='both')
        evb.evaluate({}, cands[:100], obs)
        nb = min(1000, len(cands))
        r_new, res_new, c_new = rate(evb, cands[:nb], obs, a.best)
        r_big, _, c_big = rate(evb, cands, obs, max(1, a.best - 1))
        evb.reference_rigid = True
        r_ref, res_ref, c_ref = rate(evb, cands[:nb], obs, 1)
        same = np.array_equal(res_new.order, res_ref.order)
        ok = ~np.isnan(res_ref.t_c_rigid)
        dev = np.max(np.abs(res_new.t_c_rigid[ok] - res_ref.t_c_rigid[ok]) / np.abs(res_ref.t_c_rigid[ok]), initial=0)
        print(f'{name:9s} both  : {nb} candidates {r_new:8.0f}/s, {len(cands)} candidates {r_big:8.0f}/s (batched LCPs + '
              f'stacked impact solves) vs per-candidate path {r_ref:6.0f}/s on the same machine ({r_new / r_ref:.1f}x; '
              f'issue table before: {PREVIOUS_BOTH}/s quiet); rankings equal: {same}, max |dT_c|/T_c {dev:.1e} '
              f'[{load()}]')
        print(f'{name:9s} both  , per process-CPU second: {nb} candidates {c_new:8.0f}/s, {len(cands)} candidates '
              f'{c_big:8.0f}/s, per-candidate path {c_ref:6.0f}/s')
        single_indicator(name, model, a.repeats)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
