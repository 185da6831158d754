"""Signal conditioning for regression on differentiated signals: one place for every package.

The problem it solves: a model linear in its parameters, y = phi(x, xdot, xddot, ...)^T theta, is fitted on
regressors built from *measured and differentiated* signals. Any differentiator attenuates the excitation's
higher tones (a local fit over +-M samples multiplies xdot at angular frequency w by about
1 - (w h)^2 (3 M^2 + 3 M - 1) / 30) while the target y is not attenuated at all: the fit is biased by a few
tenths of a percent to percent, far beyond a white-noise sigma. And filter / derivative state carried across
a hole in the record mixes two unrelated pieces of signal.

**Parallel filtering** (state-variable / Gaussian-kernel form): the same linear filter h is applied to the
target and to x, and the derivative regressors are x convolved with h', h'' (the kernel's own derivatives):

    y_f = h * y,   x_f = h * x,   xdot_f = h' * x = h * xdot,   xddot_f = h'' * x = h * xddot

so y_f = phi(x_f, xdot_f, xddot_f)^T theta holds *exactly* for every model linear in theta (convolution
commutes with differentiation): no differentiator bias, whatever the excitation's frequencies, as long as the
kernel is resolved by the sampling. h is a Gaussian of standard deviation ``width_s`` (gain
exp(-(2 pi f width)^2 / 2); -3 dB at f = 0.1874 / width), truncated at +-5 width, evaluated on the *real*
stamps with trapezoid weights (jittered stamps are handled on their real times, no resampling; with
width >= 2 sample periods the sum is exact to ~1e-8 for uniform stamps). A centred kernel gives the offline
(zero-phase) form; online the same kernel is causal with a known delay of ``half`` samples (5 width).
For regressor columns that are *already built* (e.g. a PKM regressor from measured twists),
:func:`parallel_filter` applies the same kernel to every column and the target (exact for a model linear in
its parameters with the columns as measured).

**Bandwidth from the data** (:func:`choose_bandwidth`): the top of the excitation band f_exc from the Welch
PSD of x (:func:`excitation_top`, noise floor excluded); the kernel cut-off is ``factor`` x f_exc (default 4),
kept between a floor and 0.4 x Nyquist; a second, defensible cut-off (``alternative_ratio`` x, default 0.6 of it, still
>= 2 f_exc) is returned for the conditioning term of :mod:`contact_dynamics_common.trust.covariance` (how much
the estimate moves between the two bandwidths). Both are stated in :class:`Bandwidth`
(``as_dict()`` for the published extras).

**Holes** (:func:`hole_segments`): a step between stamps longer than ``gap_periods`` x the median period
splits the record; :func:`kernel_filter` / :func:`filtered_derivatives` never let a kernel span a hole (the
centres whose window would are NaN: the caller drops them, counted).

Also: :func:`noise_std` (white-noise level of a smooth signal from its high-order differences),
:func:`stamp_jitter` (rms deviation of the stamps from a uniform grid, relative to the period),
:func:`derivative_noise_gain` (how white noise on x reaches each filtered derivative: sigma_d = gain sigma_x)
and :class:`CausalKernel` (the streaming form: feed blocks, get the centres whose window is complete).

All functions are ROS-free numpy; times in s, rates in Hz, widths in s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.signal  # noqa: F401  (loaded with this module: its ~1.5 s import must not stall a first trust check)
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ['Bandwidth', 'choose_bandwidth', 'excitation_top', 'width_for_cutoff', 'cutoff_for_width', 'kernel_half',
           'hole_segments', 'kernel_filter', 'filtered_derivatives', 'parallel_filter', 'noise_std',
           'stamp_jitter', 'derivative_noise_gain', 'CausalKernel', 'local_fit_attenuation',
           'local_polynomial_weights']

#: the Gaussian kernel is truncated at this many widths each side (its relative tail beyond it is 6e-7)
TRUNCATION = 5.0
#: -3 dB point of a Gaussian smoother: exp(-(2 pi f w)^2 / 2) = 1/sqrt(2)  ->  f w = sqrt(ln 2) / (2 pi)
_F3DB = math.sqrt(math.log(2.0)) / (2.0 * math.pi)


def width_for_cutoff(cutoff_hz: float) -> float:
    """Gaussian kernel width (s) whose -3 dB frequency is ``cutoff_hz``."""
    return _F3DB / float(cutoff_hz)


def cutoff_for_width(width_s: float) -> float:
    """-3 dB frequency (Hz) of the Gaussian kernel of width ``width_s``."""
    return _F3DB / float(width_s)


def kernel_half(width_s: float, period_s: float) -> int:
    """Half length (samples) of the truncated kernel: ceil(TRUNCATION width / period), at least 2."""
    return max(2, int(math.ceil(TRUNCATION * width_s / period_s - 1e-6)))


def local_fit_attenuation(f_hz: float, period_s: float, half_window: int) -> float:
    """Relative attenuation of xdot at f by a centred local-linear fit over +-M samples (small-w form):
    (2 pi f h)^2 (3 M^2 + 3 M - 1) / 30."""
    m = int(half_window)
    return (2 * math.pi * f_hz * period_s) ** 2 * (3 * m * m + 3 * m - 1) / 30.0


@dataclass(frozen=True)
class Bandwidth:
    """The derivative bandwidth chosen from the data, stated with the figures it came from.

    ``excitation_hz``: top of the excitation band of x; ``cutoff_hz``: -3 dB cut-off of the primary kernel;
    ``alternative_hz``: the second defensible cut-off (conditioning term); ``rate_hz``: median sample rate;
    ``width_s``/``alternative_width_s``: the Gaussian kernel widths; ``half``/``alternative_half``: their half
    lengths in samples (= the online delay in samples); ``jitter``: rms stamp jitter / period.
    """
    excitation_hz: float
    cutoff_hz: float
    alternative_hz: float
    rate_hz: float
    jitter: float = 0.0

    @property
    def width_s(self) -> float:
        return width_for_cutoff(self.cutoff_hz)

    @property
    def alternative_width_s(self) -> float:
        return width_for_cutoff(self.alternative_hz)

    @property
    def half(self) -> int:
        return kernel_half(self.width_s, 1.0 / self.rate_hz)

    @property
    def alternative_half(self) -> int:
        return kernel_half(self.alternative_width_s, 1.0 / self.rate_hz)

    @property
    def delay_s(self) -> float:
        """Online delay of the primary kernel (its half length)."""
        return self.half / self.rate_hz

    def as_dict(self) -> dict:
        return {'excitation_hz': float(self.excitation_hz), 'cutoff_hz': float(self.cutoff_hz),
                'alternative_cutoff_hz': float(self.alternative_hz), 'rate_hz': float(self.rate_hz),
                'kernel_width_s': float(self.width_s), 'delay_s': float(self.delay_s),
                'stamp_jitter': float(self.jitter)}


def excitation_top(x: np.ndarray, rate_hz: float, *, rel_floor: float = 1e-3, floor_factor: float = 30.0,
                   resolution_hz: float = 0.25) -> float:
    """Highest frequency (Hz) where the Welch PSD of the detrended x stands out of both ``rel_floor`` x its
    peak and ``floor_factor`` x its median (the noise floor: a multisine or a band-limited excitation
    occupies few of the bins), so that measurement noise and quantisation are not counted as excitation."""
    from scipy.signal import welch
    x = np.asarray(x, dtype=np.float64)
    nper = int(min(len(x), max(16, round(rate_hz / resolution_hz))))
    f, p = welch(x - x.mean(), fs=rate_hz, nperseg=nper, detrend='linear')
    if not p.max() > 0:
        return 0.0
    above = np.flatnonzero(p > max(rel_floor * p.max(), floor_factor * float(np.median(p))))
    return float(f[above[-1]]) if len(above) else 0.0


def choose_bandwidth(t: np.ndarray, x: np.ndarray, *, factor: float = 4.0, alternative_ratio: float = 0.6,
                     minimum_hz: float = 2.0, rel_floor: float = 1e-3, floor_factor: float = 30.0,
                     max_nyquist_share: float = 0.4, min_width_periods: float = 2.0) -> Bandwidth:
    """Derivative bandwidth from the excitation spectrum of x (stamps t, s).

    f_exc = :func:`excitation_top` (Welch PSD above ``rel_floor`` of its peak and ``floor_factor`` x its median
    noise floor, on the longest hole-free segment); cutoff = clip(factor f_exc, minimum_hz, hi) with
    hi = min(max_nyquist_share x Nyquist, the cut-off of a kernel ``min_width_periods`` samples wide);
    alternative = max(alternative_ratio cutoff, 2 f_exc, minimum_hz / 2) (kept below cutoff).
    Raises ValueError with fewer than 16 samples.
    """
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if len(t) < 16 or len(t) != len(x):
        raise ValueError(f'choose_bandwidth needs >= 16 samples of equal-length t, x (got {len(t)}, {len(x)})')
    period = float(np.median(np.diff(t)))
    if not period > 0:
        raise ValueError('stamps do not increase')
    rate = 1.0 / period
    segs = hole_segments(t)
    a, b = max(segs, key=lambda s: s[1] - s[0])
    xs = x[a:b]
    ok = np.isfinite(xs)
    f_exc = excitation_top(xs[ok], rate, rel_floor=rel_floor, floor_factor=floor_factor) if ok.sum() >= 16 else 0.0
    hi = min(max_nyquist_share * rate / 2.0, cutoff_for_width(min_width_periods * period))
    cutoff = float(min(max(factor * f_exc, minimum_hz), hi))
    alt = float(min(max(alternative_ratio * cutoff, 2.0 * f_exc, 0.5 * minimum_hz), cutoff))
    if alt >= cutoff:
        alt = 0.75 * cutoff
    return Bandwidth(float(f_exc), cutoff, alt, rate, stamp_jitter(t))


def stamp_jitter(t: np.ndarray) -> float:
    """RMS deviation of the intervals from their median, relative to it (0 for uniform stamps; holes,
    i.e. intervals > 4 periods, excluded)."""
    d = np.diff(np.asarray(t, dtype=np.float64))
    if len(d) < 2:
        return 0.0
    med = float(np.median(d))
    if not med > 0:
        return float('inf')
    d = d[d <= 4.0 * med]
    return float(np.sqrt(np.mean((d / med - 1.0) ** 2)))


def hole_segments(t: np.ndarray, gap_periods: float = 4.0, period_s: float | None = None) -> list[tuple[int, int]]:
    """[(start, stop), ...] index ranges of the hole-free pieces of a record: a step between stamps longer
    than ``gap_periods`` x the period (median interval unless given), or a non-increasing stamp, splits it."""
    t = np.asarray(t, dtype=np.float64)
    n = len(t)
    if n < 2:
        return [(0, n)] if n else []
    d = np.diff(t)
    period = float(np.median(d)) if period_s is None else float(period_s)
    cut = np.flatnonzero((d > gap_periods * period) | ~(d > 0)) + 1
    edges = np.concatenate(([0], cut, [n]))
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _kernel_rows(t: np.ndarray, width_s: float, half: int, orders: tuple[int, ...]) -> dict:
    """For every centre i in [half, n - half): weights of the Gaussian (and its derivatives) on the real
    stamps t[i-half..i+half] with trapezoid quadrature weights; normalised so that the 0th-order weights sum
    to 1 (and the derivative weights are exact for a constant / a ramp)."""
    tw = sliding_window_view(t, 2 * half + 1)
    u = tw - tw[:, half:half + 1]                       # centred times (s)
    q = np.empty_like(u)                               # trapezoid weights of the real stamps
    q[:, 1:-1] = 0.5 * (u[:, 2:] - u[:, :-2])
    q[:, 0] = 0.5 * (u[:, 1] - u[:, 0])
    q[:, -1] = 0.5 * (u[:, -1] - u[:, -2])
    s2 = width_s * width_s
    g = np.exp(-0.5 * u * u / s2) * q
    out = {}
    norm = g.sum(axis=1, keepdims=True)
    if 0 in orders:
        out[0] = g / norm
    if 1 in orders:
        # h'(t_i - t_j) as a weight on x_j: d/dt_i of sum_j h(t_i - t_j) x_j = sum_j -h'(u_j) x_j ... with
        # u = t_j - t_i the weight is (u / s^2) h(u); normalised to give exactly 1 on a unit ramp
        w1 = g * u / s2
        w1 -= (w1.sum(axis=1, keepdims=True) / norm) * g      # exact 0 on a constant (truncation)
        out[1] = w1 / np.einsum('ij,ij->i', w1, u)[:, None]
    if 2 in orders:
        w2 = g * (u * u / s2 - 1.0) / s2
        # exact 0 on a constant and on a ramp, exactly 2 on u^2 (least-squares style projection)
        basis = np.stack([g, g * u], axis=2)                   # (n, L, 2)
        bb = np.einsum('ijk,ijl->ikl', basis, np.stack([np.ones_like(u), u], axis=2))
        coef = np.linalg.solve(bb, np.einsum('ij,ijl->il', w2, np.stack([np.ones_like(u), u], axis=2))[:, :, None])
        w2 = w2 - np.einsum('ijk,ik->ij', basis, coef[:, :, 0])
        out[2] = 2.0 * w2 / np.einsum('ij,ij->i', w2, u * u)[:, None]
    return out


#: the last few kernel-row sets: (n, width, half, stamps bytes) -> {order: rows}. The trust checks filter several
#: signals of one window with one kernel (x and F at two bandwidths, the regressor noise, the band split of the
#: regressors and of their noise): the rows are built once per window and kernel, bit for bit the same numbers
_ROWS_CACHE: list = []
_ROWS_CACHE_SIZE = 3


def _cached_rows(t: np.ndarray, width_s: float, half: int, orders: tuple[int, ...]) -> dict:
    """``_kernel_rows`` through a small exact cache (the key holds the stamps' bytes: no hash collisions);
    each order's rows do not depend on which other orders are built, so a cached set serves any subset."""
    key = (len(t), float(width_s), int(half), np.ascontiguousarray(t, dtype=np.float64).tobytes())
    for i, (k, rows) in enumerate(_ROWS_CACHE):
        if k == key:
            missing = tuple(o for o in orders if o not in rows)
            if missing:
                rows.update(_kernel_rows(t, width_s, half, missing))
            _ROWS_CACHE.append(_ROWS_CACHE.pop(i))          # most recently used last
            return rows
    rows = _kernel_rows(t, width_s, half, orders)
    _ROWS_CACHE.append((key, rows))
    del _ROWS_CACHE[:-_ROWS_CACHE_SIZE]
    return rows


#: a window whose intervals all lie within this share of the period of each other is filtered with the uniform
#: weights (one row for every centre, a correlation: FFT for long kernels); the weights then differ from the
#: real-stamp ones by about this share (1 ns on a 1 kHz stream) - far below any noise. Other windows get their
#: own weights on their real stamps.
UNIFORM_TOL = 1e-6


def _apply_segment(ts: np.ndarray, cols: list[np.ndarray], width_s: float, half: int, orders: tuple[int, ...],
                   period_s: float, cached: bool, tol: float = UNIFORM_TOL, method: str = 'auto'
                   ) -> list[list[np.ndarray]]:
    """Kernel outputs at the centres [half, len - half) of one hole-free piece, per column and order: windows whose
    intervals lie within ``tol`` (relative) of ``period_s`` by correlation with :func:`uniform_kernel_weights`,
    the others with their own real-stamp rows (``_kernel_rows``; through ``_cached_rows`` when ``cached``). The
    choice is made per window, so the outputs do not depend on how a stream is cut into blocks (bit for bit with
    ``method='direct'``; scipy's 'auto' may correlate long pieces by FFT, whose rounding depends on the length)."""
    from scipy.signal import correlate
    m = half
    n_c = len(ts) - 2 * m
    off = np.abs(np.diff(ts) / period_s - 1.0) > tol
    bad = np.concatenate(([0], np.cumsum(off)))
    nonuni = (bad[2 * m:] - bad[:len(bad) - 2 * m]) > 0             # per window (centre m + i)
    out = [[np.empty(n_c) for _ in orders] for _ in cols]
    if not nonuni.all():
        w = _uniform_rows(width_s, period_s, m, orders)
        for c, col in enumerate(cols):
            # a NaN must reach only the windows that hold it (an FFT would spread it over the whole piece)
            how = method if np.isfinite(col).all() else 'direct'
            for k, o in enumerate(orders):
                out[c][k][:] = correlate(col, w[o], mode='valid', method=how)
    if nonuni.any():
        if nonuni.all():
            runs = [(0, n_c)]
        else:
            idx = np.flatnonzero(nonuni)
            runs = [(int(r[0]), int(r[-1]) + 1) for r in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)]
        for i0, i1 in runs:
            sub = slice(i0, i1 + 2 * m)
            rows = (_cached_rows if cached else _kernel_rows)(ts[sub], width_s, m, orders)
            for c, col in enumerate(cols):
                win = sliding_window_view(col[sub], 2 * m + 1)
                for k, o in enumerate(orders):
                    out[c][k][i0:i1] = np.einsum('ij,ij->i', rows[o], win)
    return out


_UNIFORM_CACHE: dict = {}


def _uniform_rows(width_s: float, period_s: float, half: int, orders: tuple[int, ...]) -> dict:
    """``uniform_kernel_weights`` through a small exact cache (the trust checks filter many windows with a few
    kernels)."""
    key = (float(width_s), float(period_s), int(half))
    rows = _UNIFORM_CACHE.get(key)
    if rows is None:
        if len(_UNIFORM_CACHE) > 16:
            _UNIFORM_CACHE.clear()
        rows = _UNIFORM_CACHE[key] = {}
    missing = tuple(o for o in orders if o not in rows)
    if missing:
        rows.update(uniform_kernel_weights(width_s, period_s, missing, half))
    return rows


def _apply(t: np.ndarray, cols: list[np.ndarray], width_s: float, half: int, orders: tuple[int, ...],
           gap_periods: float, period_s: float | None = None, cached: bool = True, method: str = 'auto'
           ) -> list[list[np.ndarray]]:
    """Per column and order: the kernel output at every sample (NaN where the window is incomplete or
    spans a hole). ``period_s``: the nominal period (default: the median interval)."""
    n = len(t)
    out = [[np.full(n, np.nan) for _ in orders] for _ in cols]
    if n < 2:
        return out
    period = float(np.median(np.diff(t))) if period_s is None else float(period_s)
    for a, b in hole_segments(t, gap_periods, period_s):
        if b - a < 2 * half + 1:
            continue
        seg = _apply_segment(t[a:b], [np.asarray(col[a:b], dtype=np.float64) for col in cols], width_s, half,
                             orders, period, cached, method=method)
        for c in range(len(cols)):
            for k in range(len(orders)):
                out[c][k][a + half:b - half] = seg[c][k]
    return out


def kernel_filter(t: np.ndarray, y: np.ndarray, width_s: float, *, half: int | None = None,
                  gap_periods: float = 4.0) -> np.ndarray:
    """h * y on the real stamps (Gaussian of width ``width_s``), NaN where the window is incomplete or spans
    a hole. y may be (n,) or (n, p) (every column filtered alike)."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    period = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    m = kernel_half(width_s, period) if half is None else int(half)
    cols = [y] if y.ndim == 1 else [y[:, j] for j in range(y.shape[1])]
    res = [c[0] for c in _apply(t, cols, width_s, m, (0,), gap_periods)]
    return res[0] if y.ndim == 1 else np.column_stack(res)


def filtered_derivatives(t: np.ndarray, x: np.ndarray, width_s: float, *, orders: tuple[int, ...] = (0, 1, 2),
                         half: int | None = None, gap_periods: float = 4.0) -> tuple[np.ndarray, ...]:
    """(h * x, h' * x, h'' * x) for the requested ``orders``: the filtered signal and its exact derivatives
    (the derivatives of the filtered signal, not a filtered finite difference). Pair them with
    ``kernel_filter(t, y, width_s)`` of the target (same width, same half) for parallel filtering.
    NaN where the window is incomplete or spans a hole."""
    t = np.asarray(t, dtype=np.float64)
    period = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    m = kernel_half(width_s, period) if half is None else int(half)
    return tuple(_apply(t, [np.asarray(x, dtype=np.float64)], width_s, m, tuple(orders), gap_periods)[0])


def consistent_regressors(t: np.ndarray, force: np.ndarray, x: np.ndarray, half: int, period_s: float, *,
                          second: bool = False, gap_periods: float = 4.0) -> tuple[np.ndarray, ...]:
    """The regressors of a contact model from ONE kernel, at the centres t[half:-half] (length N - 2 half):

        F_f = h * F,   x_f = h * x,   xd_f = h' * x,   xdd_f = h'' * x      (N, m, m/s, m/s^2)

    h a Gaussian of width half / 5 samples (truncated at +-half = 5 widths) on the real stamps t (s); because
    convolution commutes with differentiation, F = k x + b xd + m xdd gives F_f = k x_f + b xd_f + m xdd_f
    exactly (to the quadrature error of the kernel sampled at >= 1 sample per width): no differentiator bias,
    unlike a local-fit derivative next to the unfiltered F. Delay: half samples, as the local fit of the same
    window. NaN at centres whose window spans a hole (a step > gap_periods x period_s) - no kernel state crosses
    one. Bit for bit the same whatever the blocks the stream arrives in (direct correlation, per-window rows).
    Returns (F_f, x_f, xd_f, xdd_f or None)."""
    t = np.asarray(t, dtype=np.float64)
    n = len(t)
    if n < 2 * half + 1:
        empty = np.zeros(0)
        return empty, empty, empty, (empty if second else None)
    width = half * period_s / 5.0
    orders = (0, 1, 2) if second else (0, 1)
    inner = slice(half, n - half)
    (f_f,), = _apply(t, [np.asarray(force, dtype=np.float64)], width, half, (0,), gap_periods, period_s,
                     cached=False, method='direct')
    cols = _apply(t, [np.asarray(x, dtype=np.float64)], width, half, orders, gap_periods, period_s,
                  cached=False, method='direct')[0]
    return f_f[inner], cols[0][inner], cols[1][inner], (cols[2][inner] if second else None)


def parallel_filter(t: np.ndarray, columns: np.ndarray, target: np.ndarray, width_s: float, *,
                    half: int | None = None, gap_periods: float = 4.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same kernel on the built regressor columns (n, p) and the target (n,): (columns_f, target_f, ok)
    with ``ok`` the rows whose window is complete and hole-free. Exact for a model linear in its parameters."""
    t = np.asarray(t, dtype=np.float64)
    cols = np.asarray(columns, dtype=np.float64)
    if cols.ndim == 1:
        cols = cols[:, None]
    both = np.column_stack((cols, np.asarray(target, dtype=np.float64)))
    f = kernel_filter(t, both, width_s, half=half, gap_periods=gap_periods)
    ok = np.isfinite(f).all(axis=1)
    return f[:, :-1], f[:, -1], ok


def derivative_noise_gain(width_s: float, period_s: float, order: int) -> float:
    """sigma of the order-th filtered derivative per unit white noise on x (uniform stamps):
    sqrt(sum_j w_j^2) of the kernel weights."""
    m = kernel_half(width_s, period_s)
    t = np.arange(2 * m + 1) * period_s
    w = _kernel_rows(t, width_s, m, (order,))[order][0]
    return float(np.sqrt(np.sum(w * w)))


def noise_std(y: np.ndarray, order: int = 4) -> float:
    """White-noise standard deviation of a smooth signal from its order-th differences:
    std(diff^k y) / sqrt(C(2k, k)) (the smooth part is removed by differencing; quantisation counts as
    noise). NaNs are dropped."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    if len(y) <= order + 2:
        return 0.0
    d = np.diff(y, order)
    return float(np.sqrt(np.mean(d * d) / math.comb(2 * order, order)))


class CausalKernel:
    """Streaming parallel filter with a known delay: feed blocks of (t, x, y); get, for every sample whose
    window of +-``half`` samples is complete, (t, y_f, x_f, xdot_f, xddot_f) - the same numbers as the
    offline :func:`filtered_derivatives` / :func:`kernel_filter` on the whole record, whatever the blocks.
    The delay is ``half`` samples. A hole (``gap_periods``) restarts the window (no state across it)."""

    def __init__(self, width_s: float, period_s: float, *, gap_periods: float = 4.0):
        self.width_s = float(width_s)
        self.period_s = float(period_s)
        self.half = kernel_half(width_s, period_s)
        self.gap_periods = float(gap_periods)
        self._tail = (np.zeros(0), np.zeros(0), np.zeros(0))

    def reset(self) -> None:
        self._tail = (np.zeros(0), np.zeros(0), np.zeros(0))

    def __call__(self, t, x, y) -> tuple[np.ndarray, ...]:
        tt, xx, yy = (np.concatenate((a, np.asarray(b, dtype=np.float64))) for a, b in zip(self._tail, (t, x, y)))
        m = self.half
        xf, xd, xdd = _apply_fixed(tt, xx, self.width_s, m, self.gap_periods, self.period_s)
        yf = _apply_fixed(tt, yy, self.width_s, m, self.gap_periods, self.period_s, orders=(0,))[0]
        # keep what the next block's windows still need: the last 2m samples (none before a hole)
        segs = hole_segments(tt, self.gap_periods, self.period_s)
        start = max(len(tt) - 2 * m, segs[-1][0] if segs else 0)
        self._tail = (tt[start:], xx[start:], yy[start:])
        done = np.isfinite(xf) & np.isfinite(yf)
        return tt[done], yf[done], xf[done], xd[done], xdd[done]


def _apply_fixed(t, x, width_s, half, gap_periods, period_s, orders=(0, 1, 2)):
    return _apply(t, [x], width_s, half, tuple(orders), gap_periods, period_s, cached=False)[0]


def local_polynomial_weights(t_windows: np.ndarray, order: int) -> np.ndarray:
    """Weights of a centred local polynomial fit of degree ``order`` on the real stamps of each window.

    ``t_windows`` (K, 2M+1): the stamps (s) of K windows, each centred on its middle sample. Returns
    G (K, 3, 2M+1) with x(t_c) ~ G[:, 0] @ x_w, xdot(t_c) ~ G[:, 1] @ x_w, xddot(t_c) ~ G[:, 2] @ x_w (least
    squares; exact for polynomials up to degree ``order``, so the derivative bias of a tone at angular
    frequency w falls like (w M h)^(order + 1 - d) instead of (w M h)^2 for the local quadratic). Needs
    2M + 1 > order. Times are scaled by the window's half span for conditioning. Online the fit is causal
    with a delay of M samples.
    """
    tw = np.asarray(t_windows, dtype=np.float64)
    m = tw.shape[1] // 2
    if tw.shape[1] <= order or order < 2:
        raise ValueError(f'a degree-{order} fit needs more than {order} samples per window and order >= 2')
    u = tw - tw[:, m:m + 1]
    s = np.abs(u).max(axis=1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    v = np.stack([(u / s) ** k for k in range(order + 1)], axis=2)          # (K, w, order + 1)
    g = np.linalg.pinv(v)[:, :3, :]                                           # coefficients of 1, u, u^2
    return g * np.stack([np.ones_like(s), 1.0 / s, 2.0 / (s * s)], axis=1)


def uniform_kernel_weights(width_s: float, period_s: float, orders: tuple[int, ...] = (0, 1, 2),
                           half: int | None = None) -> dict:
    """{order: weights (2 half + 1,)} of the kernel on a uniform grid: with uniform stamps every centre has
    these same weights, so the filter is a convolution (:func:`uniform_kernel_apply`, O(n) per order)."""
    m = kernel_half(width_s, period_s) if half is None else int(half)
    t = np.arange(2 * m + 1) * float(period_s)
    rows = _kernel_rows(t, width_s, m, tuple(orders))
    return {o: rows[o][0] for o in orders}


def uniform_kernel_apply(y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_j w_j y[i - half + j] at every centre i with a complete window (NaN at the ``half`` samples of
    each end): the same numbers as :func:`kernel_filter` / :func:`filtered_derivatives` on uniform stamps
    within one hole-free piece (the caller splits at holes, :func:`hole_segments`)."""
    from scipy.signal import correlate
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    m = (len(w) - 1) // 2
    out = np.full(len(y), np.nan)
    if len(y) >= len(w):
        out[m:len(y) - m] = correlate(y, w, mode='valid', method='auto')
    return out


def noise_std_band(y: np.ndarray, rate_hz: float, f_lo: float, f_hi: float, resolution_hz: float = 1.0) -> float:
    """Standard deviation of the white noise equivalent to y's noise floor between f_lo and f_hi (Hz): the
    median of the Welch PSD over that band (robust to lines in it), sigma = sqrt(median PSD x f_s / 2).
    Choose the band above the excitation (e.g. 1.5 x its top .. 3 x the filter cut-off): slow excitation,
    however large, is never counted as noise, and coloured noise is measured where the filter passes it.
    NaNs are dropped; 0 when the band holds no PSD bin."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    if len(y) < 16:
        return 0.0
    from scipy.signal import welch
    nper = int(min(len(y), max(16, round(rate_hz / resolution_hz))))
    f, p = welch(y - y.mean(), fs=rate_hz, nperseg=nper, detrend='linear')
    sel = (f >= f_lo) & (f <= min(f_hi, rate_hz / 2.0))
    if not sel.any():
        return 0.0
    return float(np.sqrt(np.median(p[sel]) * rate_hz / 2.0))


class FastCausalKernel(CausalKernel):
    """:class:`CausalKernel` with the same interface and outputs, for high-rate streams: a window whose
    intervals all lie within ``uniform_tol`` (relative) of ``period_s`` uses the uniform weights
    (:func:`uniform_kernel_weights`, a convolution; the outputs then differ from the real-stamp weights by
    about ``uniform_tol`` relative); every other window gets its own weights on its real stamps, as in
    CausalKernel. The choice is made per window, so the outputs do not depend on the blocks. ``orders``: the
    derivatives of x wanted (() for a plain smoother of y; the others come back as NaN)."""

    def __init__(self, width_s: float, period_s: float, *, gap_periods: float = 4.0, uniform_tol: float = 1e-4,
                 orders: tuple[int, ...] = (0, 1, 2)):
        super().__init__(width_s, period_s, gap_periods=gap_periods)
        self.orders = tuple(orders)
        self.uniform_tol = float(uniform_tol)

    def __call__(self, t, x, y) -> tuple[np.ndarray, ...]:
        tt, xx, yy = (np.concatenate((a, np.asarray(b, dtype=np.float64))) for a, b in zip(self._tail, (t, x, y)))
        m = self.half
        n = len(tt)
        out = {o: np.full(n, np.nan) for o in self.orders}
        yf = np.full(n, np.nan)
        segs = hole_segments(tt, self.gap_periods, self.period_s)
        for a, b in segs:
            if b - a < 2 * m + 1:
                continue
            # one call for y (order 0) and x (the orders wanted): a jittered window's real-stamp rows are built once
            orders = tuple(sorted(set(self.orders) | {0}))
            cols = [yy[a:b], xx[a:b]] if self.orders else [yy[a:b]]
            res = _apply_segment(tt[a:b], cols, self.width_s, m, orders, self.period_s, False, self.uniform_tol)
            yf[a + m:b - m] = res[0][orders.index(0)]
            for o in self.orders:
                out[o][a + m:b - m] = res[1][orders.index(o)]
        start = max(n - 2 * m, segs[-1][0] if segs else 0)
        self._tail = (tt[start:], xx[start:], yy[start:])
        done = np.isfinite(yf)
        nan = np.full(int(done.sum()), np.nan)
        return (tt[done], yf[done]) + tuple(out[o][done] if o in out else nan for o in (0, 1, 2))


# ------------------------------------------------------------------ jittered loggers: bridging and resampling
def bridge_gaps(t: np.ndarray, columns: np.ndarray, period_s: float, max_gap_s: float, *,
                gap_periods: float = 4.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fill the short gaps of a jittered logger so that a kernel can run across them.

    A step t[i+1] - t[i] longer than ``gap_periods`` x ``period_s`` (a hole for :func:`hole_segments`) but at
    most ``max_gap_s`` gets samples at ``period_s`` spacing inside it, every column (x, F, a ... (n, p))
    interpolated linearly between the two real samples; longer steps stay holes. The same linear operator
    is applied to every column, so a relation linear in the columns (F = k x + c) holds exactly at the
    inserted stamps; a derivative taken across a bridged gap sees the chord (error ~ (pi f g)^2 / 2 of the
    amplitude at frequency f for a gap g: choose ``max_gap_s`` small against the band, e.g. the kernel
    width). Returns (t', columns', inserted) with ``inserted`` True at the synthetic samples (callers keep
    them out of fits and count them)."""
    t = np.asarray(t, dtype=np.float64)
    cols = np.asarray(columns, dtype=np.float64)
    cols2 = cols.reshape(len(t), -1)
    if len(t) < 2 or not (period_s > 0):
        return t, cols, np.zeros(len(t), bool)
    d = np.diff(t)
    fill = np.flatnonzero((d > gap_periods * period_s) & (d <= max_gap_s))
    if not len(fill):
        return t, cols, np.zeros(len(t), bool)
    new_t = [np.arange(1, int(np.ceil(d[i] / period_s))) * (d[i] / np.ceil(d[i] / period_s)) + t[i]
             for i in fill]
    tn = np.concatenate(new_t)
    cn = np.column_stack([np.interp(tn, t, cols2[:, k]) for k in range(cols2.shape[1])])
    t_all = np.concatenate([t, tn])
    order = np.argsort(t_all, kind='stable')
    c_all = np.vstack([cols2, cn])[order]
    inserted = np.concatenate([np.zeros(len(t), bool), np.ones(len(tn), bool)])[order]
    return t_all[order], c_all.reshape((len(t_all),) + cols.shape[1:]), inserted


def resample_uniform(t: np.ndarray, columns: np.ndarray, *, rate_hz: float | None = None
                     ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Columns (n, p) of a jittered record linearly interpolated onto one uniform clock t0 + i / rate
    (default rate: the median interval's) over [t[0], t[-1]], for methods that need a uniform grid (DFTs).
    The same linear operator on every column keeps relations linear in them (F = k x + c) exact; the
    dynamic part sees the interpolation's low-pass (about (pi f dt)^2 / 6 of the amplitude at f for an
    interval dt). Returns (t_u, columns_u, info) with info = {'rate_hz', 'from_samples', 'to_samples',
    'stamp_jitter', 'longest_gap_s'}: what the caller should say it did."""
    t = np.asarray(t, dtype=np.float64)
    cols = np.asarray(columns, dtype=np.float64)
    cols2 = cols.reshape(len(t), -1)
    if len(t) < 2 or not np.all(np.diff(t) > 0):
        raise ValueError('resampling needs at least 2 strictly increasing stamps')
    rate = float(rate_hz) if rate_hz else 1.0 / float(np.median(np.diff(t)))
    n = int(np.floor((t[-1] - t[0]) * rate + 1e-9)) + 1
    tu = t[0] + np.arange(n) / rate
    cu = np.column_stack([np.interp(tu, t, cols2[:, k]) for k in range(cols2.shape[1])])
    info = {'rate_hz': rate, 'from_samples': int(len(t)), 'to_samples': int(n),
            'stamp_jitter': stamp_jitter(t), 'longest_gap_s': float(np.max(np.diff(t)))}
    return tu, cu.reshape((n,) + cols.shape[1:]), info
