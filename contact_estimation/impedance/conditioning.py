"""Offline signal conditioning of an impedance experiment (wahl_colton.md B5), one clock, SI units.

1. the same zero-phase Butterworth (order 4) on x, a and F (contact_dynamics_common.signal, shared with the
   single-point estimators), cut-off tied to the excitation band: f_c = factor x the top excitation
   frequency (factor 4 by default, B5 step 4), the band taken from the PSD of x unless given;
2. v = numpy.gradient of the filtered x: a quantised encoder (5 um steps) is differentiated only after the
   low-pass, so its steps never reach v as spikes; a is measured (filtered) or, when absent, the gradient
   of v;
3. the first ``t_skip`` seconds (start-up transient) are dropped;
4. the noise variance of every regressor column is estimated from the PSD bands that carry no excitation
   (a running median of the PSD rejects the excitation lines), for the post-fit identifiability check.
``filtered=False`` reproduces the paper's failure mode: raw central differences of the quantised x (S3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import median_filter
from scipy.signal import welch

from contact_dynamics_common.signal import cutoff_for_band, excitation_band, zero_phase_lowpass


@dataclass
class Conditioned:
    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    a: np.ndarray
    F: np.ndarray
    rate_hz: float
    band_hz: float
    cutoff_hz: float              # NaN when not filtered
    noise_variance: np.ndarray    # per column a, v, x, 1 (m^2/s^4, m^2/s^2, m^2, 0)

    @property
    def correlation(self) -> float:
        """Samples per independent residual after the low-pass: f_s / (2 f_c) (1 unfiltered)."""
        return float(self.rate_hz / (2 * self.cutoff_hz)) if np.isfinite(self.cutoff_hz) else 1.0


def sample_rate(t: np.ndarray) -> float:
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 3:
        raise ValueError('need at least 3 time stamps')
    dt = np.diff(t)
    if not np.all(np.isfinite(dt)) or np.any(dt <= 0):
        raise ValueError('time stamps must be finite and strictly increasing')
    med = float(np.median(dt))
    if np.max(np.abs(dt - med)) > 0.05 * med:
        raise ValueError('sampling is not uniform (resample to one clock first)')
    return 1.0 / med


def noise_variance(y: np.ndarray, rate_hz: float, resolution_hz: float = 0.25,
                   floor_hz: float = 8.0) -> float:
    """Variance of the broadband part of y: sum over the Welch PSD of min(P, running median of P)."""
    y = np.asarray(y, dtype=float)
    nper = int(min(len(y), max(16, round(rate_hz / resolution_hz))))
    f, p = welch(y - y.mean(), fs=rate_hz, nperseg=nper, detrend='linear')
    size = max(3, int(round(floor_hz / (f[1] - f[0]))) | 1)
    floor = median_filter(p, size=size, mode='nearest')
    return float(np.sum(np.minimum(p, floor)) * (f[1] - f[0]))


def condition(t, x, F, a=None, *, cutoff_hz: float | None = None, band_hz: float | None = None,
              factor: float = 4.0, order: int = 4, filtered: bool = True, t_skip: float = 2.0) -> Conditioned:
    """Filter, differentiate and trim one record (module docstring)."""
    t, x, F = (np.asarray(y, dtype=float) for y in (t, x, F))
    if not (t.shape == x.shape == F.shape) or (a is not None and np.shape(a) != t.shape):
        raise ValueError('t, x, F (and a) must have the same length')
    for name, y in (('x', x), ('F', F)) + ((('a', np.asarray(a)),) if a is not None else ()):
        if not np.all(np.isfinite(y)):
            raise ValueError(f'{name} holds NaN or inf samples')
    rate = sample_rate(t)
    band = float(band_hz) if band_hz else excitation_band(x, rate)
    if filtered:
        fc = float(cutoff_hz) if cutoff_hz else cutoff_for_band(band, rate, factor)
        pad = int(3 * rate / fc)          # odd extension long enough for the filter to settle at both ends
        xf = zero_phase_lowpass(x, rate, fc, order, padlen=pad)
        Ff = zero_phase_lowpass(F, rate, fc, order, padlen=pad)
        af = (zero_phase_lowpass(np.asarray(a, dtype=float), rate, fc, order, padlen=pad)
              if a is not None else None)
    else:
        fc, xf, Ff, af = float('nan'), x, F, (np.asarray(a, dtype=float) if a is not None else None)
    v = np.gradient(xf, t)
    if af is None:
        af = np.gradient(v, t)
    keep = t >= t[0] + t_skip
    if keep.sum() < 16:
        raise ValueError(f'record too short: {keep.sum()} samples after the {t_skip} s start-up skip')
    cols = (af[keep], v[keep], xf[keep])
    nv = np.array([noise_variance(c, rate) for c in cols] + [0.0])
    return Conditioned(t[keep], xf[keep], v[keep], af[keep], Ff[keep], rate, band, fc, nv)
