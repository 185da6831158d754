"""Dashpot calibration by a drop test (wahl_colton.md B6, S6): b = m_d g / v_t.

A mass m_d falling through the dashpot from rest moves as x(t) = v_t (t - tau (1 - exp(-t/tau))) with
tau = m_d / b = v_t / g. The terminal velocity v_t is the slope of a straight line fitted to x(t) once
the transient has decayed (t > settle_taus * tau, iterated from a first guess), so only the terminal part
of the record is used; the standard error follows from the line fit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DashpotResult:
    damping: float            # N*s/m
    damping_std: float
    terminal_velocity: float  # m/s
    time_constant: float      # s
    travel: float             # m of terminal-velocity travel used
    samples: int
    warning: str


def dashpot_damping(t, x, mass: float, g: float = 9.81, settle_taus: float = 5.0,
                    min_travel: float = 0.1) -> DashpotResult:
    """b from a drop record (t from release, s; x downward travel, m)."""
    t, x = np.asarray(t, dtype=float), np.asarray(x, dtype=float)
    if t.shape != x.shape or len(t) < 4 or not (np.all(np.isfinite(t)) and np.all(np.isfinite(x))):
        raise ValueError('t and x must be finite arrays of equal length (>= 4 samples)')
    if not mass > 0 or not g > 0:
        raise ValueError('mass and g must be > 0')
    tau = 0.25 * (t[-1] - t[0]) / settle_taus
    for _ in range(5):
        sel = t >= t[0] + settle_taus * tau
        if sel.sum() < 3:
            raise ValueError('no samples after the transient: record longer')
        tc = t[sel] - t[sel].mean()
        slope = float(tc @ (x[sel] - x[sel].mean()) / (tc @ tc))
        if not slope > 0:
            raise ValueError('x does not increase: not a drop record')
        tau = slope / g
    resid = x[sel] - x[sel].mean() - slope * tc
    slope_std = float(np.sqrt(resid @ resid / max(sel.sum() - 2, 1) / (tc @ tc)))
    b = mass * g / slope
    travel = float(x[sel][-1] - x[sel][0])
    warning = '' if travel >= min_travel else f'only {travel:.3f} m of terminal travel (< {min_travel} m)'
    return DashpotResult(b, b * slope_std / slope, slope, tau, travel, int(sel.sum()), warning)
