"""Study: the single-point pipeline's local-fit regressors against the consistent kernel
(``derivative_filter: consistent_kernel``), on the randomized calibration's own draws (issue 14).

Prints, per family (kv_multisine, kvm_mass), estimator (rls, kalman, gls) and identified parameter, the median
and 90th percentile of |relative error| of the VALID estimates in both modes (the calibration reports coverage
and z; this is the accuracy), and the pipeline's CPU time for 60 s of a 1 kHz stiff wall with mass at 20 Hz
ticks in both modes. Draw i of family F is the calibration's (``rng_for(seed, F, i)``).

    python bench/study_consistent_kernel.py [--runs 40] [--seed 0]      (about 3 min on 2 cores)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contact_dynamics_common.threads import limit_blas_threads  # noqa: E402

MODES = ('local_fit', 'consistent_kernel')
FAMILIES = (('kv_multisine', 'kelvin_voigt', {}), ('kvm_mass', 'kelvin_voigt_mass', {'mass': True}))


def accuracy(runs: int, seed: int) -> None:
    from contact_dynamics_common.trust.calibration import PARAMS_ENV, rng_for
    from contact_estimation.single_point import calibration_families as cf
    for fam, model, opt in FAMILIES:
        errs: dict = {m: {} for m in MODES}
        for mode in MODES:
            os.environ[PARAMS_ENV] = json.dumps({'derivative_filter': mode})
            for i in range(runs):
                rng = rng_for(seed, 'single_point/' + fam, i)
                kw = {'mass_share': float(10 ** rng.uniform(-2, np.log10(0.3)))} if opt.get('mass') else {}
                exp = cf._experiment(rng, **kw)
                for e in cf._run_pipeline(exp, model):
                    if e.algorithm not in ('rls', 'kalman', 'gls') or not e.valid:
                        continue
                    for j, name in enumerate(e.names):
                        if name == 'stiffness' or (len(e.identifiable) == len(e.names) and e.identifiable[j]):
                            errs[mode].setdefault((e.algorithm, name), []).append(
                                abs(e.values[j] / exp['truth'][name] - 1))
        os.environ.pop(PARAMS_ENV, None)
        for key in sorted(errs['local_fit']):
            cells = []
            for mode in MODES:
                a = np.array(errs[mode].get(key, [np.nan]))
                cells.append(f'{mode:17s} {np.median(a) * 100:7.3f} % (p90 {np.percentile(a, 90) * 100:6.2f} %, '
                             f'n {len(a):2d})')
            print(f'{fam:13s} {key[0]:7s} {key[1]:9s} ' + '   '.join(cells))


def cpu() -> None:
    from contact_dynamics_common.params import validate_all
    from contact_estimation.single_point.config import PARAMS
    from contact_estimation.single_point.pipeline import ContactPipeline
    rng = np.random.default_rng(4)
    t = np.arange(60000) / 1000.0 + 1.0
    f = np.geomspace(0.3, 10.0, 9)
    arg = np.outer(t, 2 * np.pi * f) + rng.uniform(0, 2 * np.pi, len(f))
    a = 2e-4 / 3.0
    x = 5e-4 + a * np.sin(arg).sum(axis=1)
    xd = a * (np.cos(arg) * 2 * np.pi * f).sum(axis=1)
    force = np.zeros((len(t), 3))
    force[:, 2] = 2e5 * x + 500 * xd + 0.2 * rng.standard_normal(len(t))
    ns = (t * 1e9).astype(np.int64)
    q = (x + 2e-6 * rng.standard_normal(len(t)))[:, None]
    for mode in MODES:
        p = ContactPipeline(validate_all(PARAMS, dict(joint_name='slider', algorithms=['rls', 'gls'], datum_mode='fixed',
                                                      datum=0.0, derivative_filter=mode)))
        t0 = time.process_time()
        for lo in range(0, len(ns), 50):
            p.push_wrench_columns(ns[lo:lo + 50], force[lo:lo + 50])
            p.push_joint_columns(ns[lo:lo + 50], ['slider'], q[lo:lo + 50])
            p.step()
        print(f'pipeline CPU, 60 s at 1 kHz, rls + gls, 20 Hz ticks: {mode:17s} {time.process_time() - t0:5.2f} s')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=40)
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args(argv)
    limit_blas_threads()
    accuracy(args.runs, args.seed)
    cpu()
    return 0


if __name__ == '__main__':
    sys.exit(main())
