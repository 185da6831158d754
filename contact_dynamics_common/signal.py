"""Signal conditioning shared by the estimators: centred local-polynomial differentiation.

``local_derivatives`` fits, for every sample i with a full window, a polynomial by least squares to the
2M+1 samples i-M..i+M (actual time stamps, so uneven sampling is handled) and returns its first (and
second) derivative at t_i. On uniform sampling this is the Savitzky-Golay differentiator. For a sinusoid
of angular frequency w, the first-derivative gain is ~ 1 - (w M dt)^2 / 10 (linear fit), and white
position noise sigma_x gives velocity noise sigma_x * sqrt(3 / (M (M+1) (2M+1))) / dt.
Online use is causal with a delay of M samples (the window must be full on both sides).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def local_derivatives(t: np.ndarray, x: np.ndarray, half_window: int,
                      second: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Derivatives at the centres t[M:-M] of every full window (length N - 2M).

    First derivative: slope of a local straight line (equal to the quadratic fit's slope at the centre
    for symmetric windows). Second derivative (``second=True``): 2 * curvature of a local quadratic.
    Each window is centred on its own mean time, so results do not depend on how a stream was batched.
    """
    m = int(half_window)
    if m < 1:
        raise ValueError('half_window must be >= 1')
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if len(t) < 2 * m + 1:
        return np.empty(0), (np.empty(0) if second else None)
    tw = sliding_window_view(t, 2 * m + 1)
    xw = sliding_window_view(x, 2 * m + 1)
    tc = tw - tw[:, m:m + 1]          # times relative to the centre sample
    tbar = tc.mean(axis=1, keepdims=True)
    xbar = xw.mean(axis=1, keepdims=True)
    dt = tc - tbar
    dx = xw - xbar
    stt = np.einsum('ij,ij->i', dt, dt)
    slope = np.einsum('ij,ij->i', dt, dx) / stt
    if not second:
        return slope, None
    # quadratic fit x ~ c0 + c1 tc + c2 tc^2 by normal equations on centred powers
    v = tc * tc
    vbar = v.mean(axis=1, keepdims=True)
    dv = v - vbar
    suu = stt
    suv = np.einsum('ij,ij->i', dt, dv)
    svv = np.einsum('ij,ij->i', dv, dv)
    sux = np.einsum('ij,ij->i', dt, dx)
    svx = np.einsum('ij,ij->i', dv, dx)
    det = suu * svv - suv * suv
    c1 = (svv * sux - suv * svx) / det
    c2 = (suu * svx - suv * sux) / det
    return c1, 2.0 * c2


def half_window_samples(window_s: float, dt: float) -> int:
    """Half window M (>= 1 sample) for a centred window of about ``window_s`` seconds each side."""
    if not dt > 0:
        return 1
    return max(1, int(round(window_s / dt)))
