"""Signal conditioning of an impedance experiment (wahl_colton.md B5), offline and online alike.

Both the batch fit and the streaming pipeline use the shared parallel filter of
``contact_dynamics_common.signal.conditioning`` (a Gaussian kernel h on the real stamps):

    F_f = h * F,   x_f = h * x,   v_f = h' * x = h * v,   a_f = h'' * x = h * a      (or h * a_measured)

so F_f = m a_f + b v_f + k x_f + c holds *exactly* for the linear segment model: no differentiator bias, and
x, v, a and F see the same filter (matched delay online, zero phase offline).

**Coulomb friction** F_c sgn(v) is not linear in the regressors: through h it becomes F_c (h * s) with
s = sgn(v), a smeared step around every reversal, which the per-direction intercept c cannot follow (it
biased m by ~1 % and b by up to 22 % near reversals). Parallel filtering of that column too makes it exact:
in a (segment, direction d) bin, c absorbs F_c d, and the *friction transient column*

    r = h * s - s,    s = sgn(v_f) (zero phase: v_f is aligned with v)

(zero away from reversals) carries the rest; its coefficient (one F_c for the record, see
:mod:`.cells`) is estimated alongside. Online, h * s needs the sign ``half`` samples ahead: the stream is
delayed by a second ``half`` (total delay 2 x half samples, stated in the output).

**Holes**: a step between stamps longer than ``GAP_PERIODS`` periods restarts the kernel (no filter or
derivative state across a hole; the kernel centres whose window would span it are dropped).
**Jittered loggers** (5-25 ms gaps every few tens of samples: no kernel window would be hole-free): a gap of
at most one kernel width (``BRIDGE_WIDTHS``) is bridged first (``signal.conditioning.bridge_gaps``: x, F
(and a) interpolated linearly at the period, the same operator on every column); the kernel runs across it
and the outputs at the inserted stamps are dropped (only real samples are fitted), counted in
``meta['bridged_samples']``. Longer gaps stay holes.

**Noise** (for the errors-in-variables term and the unique-variance check): the white-equivalent level
sigma_x of x from its PSD floor *above* the excitation band (``noise_std_band`` over 1.5 x the band top ..
3 x the cut-off; the former running median over the whole PSD counted a sub-Hz stroke tone as noise and
refused every bin), carried through the kernels: sigma_v = g1 sigma_x, sigma_a = g2 sigma_x
(``derivative_noise_gain``). The samples per independent residual of Gaussian-filtered white noise are
2 sqrt(pi) w f_s (w the kernel width).
``filtered=False`` reproduces the paper's failure mode: raw central differences of the quantised x (S3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from contact_dynamics_common.signal.conditioning import (FastCausalKernel, bridge_gaps, choose_bandwidth,
                                                         cutoff_for_width,
                                                         derivative_noise_gain, hole_segments, noise_std,
                                                         noise_std_band,
                                                         stamp_jitter, uniform_kernel_apply,
                                                         uniform_kernel_weights, width_for_cutoff)

#: a step between stamps longer than this many periods is a hole
GAP_PERIODS = 4.0
#: ... unless it is at most this many kernel widths: then it is bridged (bridge_gaps) and the kernel runs on
BRIDGE_WIDTHS = 1.0
_BLOCK = 16384


@dataclass
class Conditioned:
    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    a: np.ndarray
    F: np.ndarray
    rate_hz: float
    band_hz: float
    cutoff_hz: float              # -3 dB cut-off of the kernel; NaN when not filtered
    noise_variance: np.ndarray    # per column a, v, x, 1 (m^2/s^4, m^2/s^2, m^2, 0)
    r: np.ndarray = None          # friction transient column h * s - s (zeros when not filtered)
    width_s: float = float('nan')
    alternative_cutoff_hz: float = float('nan')
    holes: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def correlation(self) -> float:
        """Samples per independent residual of kernel-filtered white noise: 2 sqrt(pi) w f_s (1 raw)."""
        return residual_correlation(self.width_s, self.rate_hz) if np.isfinite(self.width_s) else 1.0


def residual_correlation(width_s: float, rate_hz: float) -> float:
    """sum_l rho(l / f_s) of white noise through a Gaussian of width w: 2 sqrt(pi) w f_s (>= 1)."""
    return max(1.0, 2.0 * math.sqrt(math.pi) * float(width_s) * float(rate_hz))


def column_noise_variance(sigma_x: float, width_s: float, period_s: float) -> np.ndarray:
    """Variance of the white-noise part of the columns a_f, v_f, x_f (and 0 for the ones)."""
    g = [derivative_noise_gain(width_s, period_s, o) for o in (2, 1, 0)]
    return np.array([(sigma_x * gi) ** 2 for gi in g] + [0.0])


def sign_held(v: np.ndarray, start: float = 0.0) -> np.ndarray:
    """sgn(v) with exact zeros replaced by the previous sign (``start`` before the first nonzero)."""
    s = np.sign(np.asarray(v, dtype=float))
    idx = np.where(s != 0, np.arange(len(s)), -1)
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx >= 0, s[np.maximum(idx, 0)], start)


def sample_rate(t: np.ndarray) -> float:
    """Median sample rate (Hz) of increasing stamps."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 3:
        raise ValueError('need at least 3 time stamps')
    dt = np.diff(t)
    if not np.all(np.isfinite(dt)) or np.any(dt <= 0):
        raise ValueError('time stamps must be finite and strictly increasing')
    return 1.0 / float(np.median(dt))


def _run_kernel(kernel: FastCausalKernel, t, x, y):
    if not len(t):
        return tuple(np.zeros(0) for _ in range(5))
    parts = [kernel(t[i:i + _BLOCK], x[i:i + _BLOCK], y[i:i + _BLOCK]) for i in range(0, len(t), _BLOCK)]
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(5))


def kernel_columns(t, x, F, a, width_s: float, period_s: float):
    """Offline parallel filtering of one record: (t, x_f, v_f, a_f, F_f, r) at the kernel centres whose window
    (two windows for r) is complete and hole-free. Uniform stamps (jitter < 1e-3 of the period): the kernel
    as a convolution per hole-free piece; otherwise the kernel on the real stamps (FastCausalKernel in
    blocks: the same numbers as the streaming pipeline)."""
    if stamp_jitter(t) < 1e-3:
        W = uniform_kernel_weights(width_s, period_s, (0, 1, 2))
        m = (len(W[0]) - 1) // 2
        parts = []
        for lo, hi in hole_segments(t, GAP_PERIODS, period_s):
            if hi - lo < 4 * m + 1:
                continue
            sl = slice(lo, hi)
            xf, vf, af = (uniform_kernel_apply(x[sl], W[o]) for o in (0, 1, 2))
            Ff = uniform_kernel_apply(F[sl], W[0])
            if a is not None:
                af = uniform_kernel_apply(a[sl], W[0])
            s = np.full(hi - lo, np.nan)
            s[m:hi - lo - m] = sign_held(vf[m:hi - lo - m])
            hs = np.full(hi - lo, np.nan)
            hs[m:hi - lo - m] = uniform_kernel_apply(s[m:hi - lo - m], W[0])
            k = slice(2 * m, hi - lo - 2 * m)
            parts.append((t[sl][k], xf[k], vf[k], af[k], Ff[k], hs[k] - s[k]))
        if not parts:
            return tuple(np.zeros(0) for _ in range(6))
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(6))
    k1 = FastCausalKernel(width_s, period_s, gap_periods=GAP_PERIODS)
    tt, Ff, xf, vf, af = _run_kernel(k1, t, x, F)
    if not len(tt):
        return tuple(np.zeros(0) for _ in range(6))
    if a is not None:
        ka = FastCausalKernel(width_s, period_s, gap_periods=GAP_PERIODS, orders=())
        ta, am, *_ = _run_kernel(ka, t, a, a)
        if not np.array_equal(ta, tt):
            raise RuntimeError('measured-acceleration kernel lost alignment')
        af = am
    s = sign_held(vf)
    ks = FastCausalKernel(width_s, period_s, gap_periods=GAP_PERIODS, orders=())
    ts, hs, *_ = _run_kernel(ks, tt, s, s)
    keep = np.isin(tt, ts, assume_unique=True)
    return tt[keep], xf[keep], vf[keep], af[keep], Ff[keep], hs - s[keep]


def condition(t, x, F, a=None, *, cutoff_hz: float | None = None, band_hz: float | None = None,
              factor: float = 4.0, order: int | None = None, filtered: bool = True,
              t_skip: float = 2.0) -> Conditioned:
    """Filter, differentiate and trim one record (module docstring). ``cutoff_hz``: -3 dB cut-off of the
    kernel (default ``factor`` x the top of the excitation band of x, from its PSD, with a second
    defensible cut-off for the conditioning term in ``alternative_cutoff_hz``). ``order`` is ignored (kept
    for callers of the former Butterworth form)."""
    t, x, F = (np.asarray(y, dtype=float) for y in (t, x, F))
    if not (t.shape == x.shape == F.shape) or (a is not None and np.shape(a) != t.shape):
        raise ValueError('t, x, F (and a) must have the same length')
    for name, y in (('x', x), ('F', F)) + ((('a', np.asarray(a)),) if a is not None else ()):
        if not np.all(np.isfinite(y)):
            raise ValueError(f'{name} holds NaN or inf samples')
    rate = sample_rate(t)
    period = 1.0 / rate
    holes = len(hole_segments(t, GAP_PERIODS, period)) - 1
    bw = choose_bandwidth(t, x, factor=factor)
    band = float(band_hz) if band_hz else bw.excitation_hz
    alt = bw.alternative_hz
    if filtered:
        fc = float(cutoff_hz) if cutoff_hz else bw.cutoff_hz
        if cutoff_hz:
            alt = min(max(0.6 * fc, 2.0 * band), 0.75 * fc)
        width = width_for_cutoff(fc)
        if not 2.0 * period <= width:
            width = 2.0 * period
            fc = cutoff_for_width(width)
        cols = np.column_stack([x, F] + ([np.asarray(a, float)] if a is not None else []))
        tb, cb, inserted = bridge_gaps(t, cols, period, BRIDGE_WIDTHS * width, gap_periods=GAP_PERIODS)
        tt, xf, v, af, Ff, r = kernel_columns(tb, cb[:, 0], cb[:, 1], cb[:, 2] if a is not None else None,
                                              width, period)
        if inserted.any():
            real = ~np.isin(tt, tb[inserted])
            tt, xf, v, af, Ff, r = (y[real] for y in (tt, xf, v, af, Ff, r))
        bridged = int(inserted.sum())
        holes = len(hole_segments(tb, GAP_PERIODS, period)) - 1
    else:
        fc, width = float('nan'), float('nan')
        tt, xf, Ff = t, x, F
        v = np.gradient(x, t)
        af = np.asarray(a, dtype=float) if a is not None else np.gradient(v, t)
        r = np.zeros(len(t))
        bridged = 0
    keep = tt >= t[0] + t_skip
    if keep.sum() < 16:
        raise ValueError(f'record too short: {int(keep.sum())} complete samples after the {t_skip} s '
                         f'start-up skip ({holes} hole(s))')
    segs = hole_segments(t, GAP_PERIODS, period)
    a0, b0 = max(segs, key=lambda s: s[1] - s[0])
    f_lo = 1.5 * band
    f_hi = 3.0 * fc if filtered else rate / 2.0
    sigma_x = noise_std_band(x[a0:b0], rate, f_lo, f_hi) if f_hi > f_lo else noise_std(x[a0:b0])
    nv = (column_noise_variance(sigma_x, width, period) if filtered else
          np.array([(sigma_x * math.sqrt(6.0) / 4.0 * rate ** 2) ** 2, (sigma_x * rate / math.sqrt(2)) ** 2,
                    sigma_x ** 2, 0.0]))
    if a is not None:
        # a measured acceleration: its own white noise (through the smoothing kernel when filtered)
        sa = np.asarray(a, dtype=float)[a0:b0]
        sigma_a = noise_std_band(sa, rate, f_lo, f_hi) if f_hi > f_lo else noise_std(sa)
        nv[0] = (sigma_a * (derivative_noise_gain(width, period, 0) if filtered else 1.0)) ** 2
    return Conditioned(tt[keep], xf[keep], v[keep], af[keep], Ff[keep], rate, band, fc, nv, r[keep], width,
                       alt, holes, {'sigma_x': sigma_x, 'excitation_hz': band, 'cutoff_hz': fc,
                                    'alternative_cutoff_hz': alt, 'kernel_width_s': width,
                                    'stamp_jitter': bw.jitter, 'holes': holes,
                                    'bridged_samples': bridged})
