"""Excitation designer: score a trajectory before running it (spec sec. 6.3-6.4).

For a motion (q, qd, qdd) on a machine: the stacked base regressor's rank and condition number (columns scaled
by the CAD values), per-parameter excitation 1 - posterior/prior variance with P_0 = (prior_rel_std theta)^2
and R^e = sigma_F^2 I (1: fully determined by the data, 0: no information), the verdict per parameter, and the
strut stroke / speed use. ``contact-dynamics pkm-excite`` prints it for the built-in trajectories.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from . import dynamics as D
from . import kinematics as K
from . import trajectories as T
from .geometry import Machine, load_machine
from .identifiability import InformationMatrix, stacked_rank


@dataclass
class ExcitationScore:
    names: tuple
    rank: int
    condition_number: float
    excitation: np.ndarray
    excited: list
    L_range: tuple
    max_speed: float
    within_stroke: bool
    max_force: float


def score(m: Machine, q, qd, qdd, *, friction: bool = False, prior_rel_std: float = 0.5, sigma_f: float = 1.0,
          decimate: int = 1, threshold: float = 0.19) -> ExcitationScore:
    q, qd, qdd = (np.atleast_2d(a)[::decimate] for a in (q, qd, qdd))
    Y = D.regressor(m, q, qd, qdd, friction=friction)
    theta = D.base_from_12(m.theta12())
    if friction:
        theta = np.concatenate([theta, np.tile([200.0, 15.0], 6)])
    rep = stacked_rank(Y, np.abs(theta))
    info = InformationMatrix(len(theta), np.full(6, sigma_f ** 2))
    info.add(Y)
    exc = info.excitation((prior_rel_std * theta) ** 2)
    names = D.ALL_NAMES if friction else D.BASE_NAMES
    p = K.pose(m, q)
    Ld = K.strut_motion(p, qd, qdd).Ld
    lo, hi = m.stroke
    excited = [n for n, e in zip(names, exc) if e >= threshold]
    return ExcitationScore(names, rep.rank, rep.condition_number, exc, excited,
                           (float(p.L.min()), float(p.L.max())), float(np.abs(Ld).max()),
                           bool(p.L.min() >= lo and p.L.max() <= hi), float(np.abs(Y @ theta).max()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics pkm-excite', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--machine', default='uf_like')
    ap.add_argument('--trajectory', nargs='+', default=list(T.NAMES), choices=T.NAMES)
    ap.add_argument('--duration', type=float, default=4.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--scale', type=float, default=1.0, help='amplitude scale')
    ap.add_argument('--friction', action='store_true', help='score the 20-parameter set')
    ap.add_argument('--sigma-force', type=float, default=1.0, help='force noise for the information figures [N]')
    a = ap.parse_args(argv)
    m = load_machine(a.machine)
    t = np.arange(int(a.duration * a.rate)) / a.rate
    for name in a.trajectory:
        s = score(m, *T.make(name, a.scale).sample(m.home_q, t), friction=a.friction, sigma_f=a.sigma_force,
                  decimate=max(1, int(a.rate // 250)))
        print(f"{name:10s} rank {s.rank:2d}/{len(s.names)}  cond {s.condition_number:9.3g}  L {s.L_range[0]:.3f}-"
              f"{s.L_range[1]:.3f} m ({'ok' if s.within_stroke else 'OUTSIDE STROKE'})  max|L_dot| "
              f"{s.max_speed:.2f} m/s  max|F| {s.max_force:.0f} N")
        print('           excites: ' + (', '.join(f'{n} {e:.2f}' for n, e in zip(s.names, s.excitation)
                                                 if e >= 0.19) or 'nothing'))
        missing = [n for n in s.names if n not in s.excited]
        if missing:
            print('           NOT excited: ' + ', '.join(missing))
    return 0
