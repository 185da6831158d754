#!/usr/bin/env python3
"""rover_contact benchmark: posture candidate evaluations per second on the 3-D models (goal >= 10 000/s) and
the latency of one T_c evaluation (goal p99 < 1 ms). Prints figures; the machine may be shared (noisy).

  .venv/bin/python bench/bench_rover.py [--candidates 20000] [--repeats 2000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rover_contact.impact.energy import impact  # noqa: E402
from rover_contact.impact.geometry import n_in_ros  # noqa: E402
from rover_contact.impact.indicator import evaluate  # noqa: E402
from rover_contact.inputs import load_model  # noqa: E402
from rover_contact.posture.evaluate import Candidate, Obstacle, PostureEvaluator  # noqa: E402

WHEELS = ['front_left', 'front_right']


def candidates(model, n: int, rng) -> list:
    joints = list(model.roles.posture_joints)
    lo = np.array([model.model.lowerPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    hi = np.array([model.model.upperPositionLimit[model.model.joints[model.jid[j]].idx_q] for j in joints])
    x = rng.uniform(lo, hi, size=(n, len(joints)))
    return [Candidate(dict(zip(joints, row)), float(rng.uniform(0.03, 0.2))) for row in x]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--candidates', type=int, default=20000)
    ap.add_argument('--repeats', type=int, default=2000)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    import os
    print(f'shared machine: figures are noisy (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)')
    for roles in ('rover_pr3d_roles.yaml', 'rover_osr_like_roles.yaml', 'rover_rcp_like_roles.yaml'):
        model = load_model({'model_yaml': roles, 'urdf_path': ''})
        obs = Obstacle(np.deg2rad(70), WHEELS)
        ev = PostureEvaluator(model, ground_mode='free')
        cands = candidates(model, a.candidates, rng)
        ev.evaluate({}, cands[:100], obs)                    # warm-up
        t0 = time.perf_counter()
        res = ev.evaluate({}, cands, obs)
        dt = time.perf_counter() - t0
        print(f'{model.roles.model_name:9s} free  : {len(cands)} candidates in {dt:.3f} s = {len(cands) / dt:9.0f} '
              f'candidates/s ({res.feasible.mean() * 100:.0f} % feasible; ground solve + CRBA + T_c, batched)')
        evb = PostureEvaluator(model, ground_mode='both')
        nb = min(1000, len(cands))
        t0 = time.perf_counter()
        evb.evaluate({}, cands[:nb], obs)
        dt = time.perf_counter() - t0
        print(f'{model.roles.model_name:9s} both  : {nb} candidates in {dt:.3f} s = {nb / dt:9.0f} candidates/s '
              f'(rigid mode: impulsive LCP per candidate)')
        q = model.configuration()
        v = model.rolling_velocity(q, 0.07)
        lat_free, lat_both = [], []
        n_in = n_in_ros(np.deg2rad(70))
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            M = model.mass_matrix(q)
            lam = model.contact_rows(q, WHEELS, n_in)
            impact(M, model.mech_rows(), lam, v)
            lat_free.append(time.perf_counter() - t0)
        for _ in range(a.repeats // 4):
            t0 = time.perf_counter()
            evaluate(model, q, v, np.deg2rad(70), WHEELS, 'both')
            lat_both.append(time.perf_counter() - t0)
        f = lambda x, p: np.percentile(np.array(x) * 1e3, p)
        print(f'{model.roles.model_name:9s} single T_c (CRBA + Λ + T_c, M_eff, shares): p50 {f(lat_free, 50):.3f} ms, '
              f'p90 {f(lat_free, 90):.3f} ms, p99 {f(lat_free, 99):.3f} ms')
        print(f'{model.roles.model_name:9s} single indicator, both modes (+ projection, LCP): p50 {f(lat_both, 50):.3f} ms, '
              f'p90 {f(lat_both, 90):.3f} ms, p99 {f(lat_both, 99):.3f} ms')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
