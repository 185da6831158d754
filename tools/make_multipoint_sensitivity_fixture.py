"""Write test/fixtures/multipoint_sensitivity_m2/: the recorded M2 gravity drop and its sensitivity tables.

The drop bounces: it is chaotic, so a table simulated afresh differs between machines (the BLAS kernel alone
moves 'vg2' damping error of the 0.6 mm forward shift from 7.4 % to 4.4 %). The regression fixture is
therefore the *recorded input* (``trajectory.npz``: t, p, q, v, w, force, moment, count of the simulated drop
plus its truth) and the tables computed from it; the sweep over that fixed record is a deterministic
least-squares computation, the same on every machine to rounding.

    .venv/bin/python tools/make_multipoint_sensitivity_fixture.py     # re-simulate, re-record, re-tabulate
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / 'test' / 'fixtures' / 'multipoint_sensitivity_m2'
FIELDS = ('t', 'p', 'q', 'v', 'w', 'force', 'moment', 'count')
TRUTH_NUMBERS = ('stiffness', 'damping', 'friction', 'mass', 'dt', 'rate')


def save_record(trajectory, truth: dict, path: Path) -> None:
    """The trajectory's arrays and the numeric truth in one .npz (strings of the truth as 0-d arrays)."""
    arrays = {f: getattr(trajectory, f) for f in FIELDS}
    arrays.update({f'truth_{k}': np.asarray(v) for k, v in truth.items()})
    np.savez_compressed(path, **arrays)


def load_record(path: Path = FIXTURE / 'trajectory.npz'):
    """(Trajectory, truth dict) as written by :func:`save_record`."""
    from contact_estimation.multipoint.simulate import Trajectory
    with np.load(path) as z:
        traj = Trajectory(*(z[f] for f in FIELDS))
        truth = {k[len('truth_'):]: (z[k].item() if z[k].dtype.kind in 'fiub' else str(z[k]))
                 for k in z.files if k.startswith('truth_')}
    return traj, truth


def main() -> int:
    from contact_estimation.multipoint.acu import acu_geometry
    from contact_estimation.multipoint.scenarios import gravity_drop
    from contact_estimation.multipoint.sensitivity import run_sweep, write_report
    FIXTURE.mkdir(parents=True, exist_ok=True)
    rec = gravity_drop('M2')
    save_record(rec.trajectory, rec.truth, FIXTURE / 'trajectory.npz')
    traj, truth = load_record()
    payload, env = acu_geometry()
    print(write_report(run_sweep(traj, payload, env, truth), truth, FIXTURE))
    return 0


if __name__ == '__main__':
    sys.exit(main())
