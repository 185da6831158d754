"""Signal conditioning shared by the estimators (one implementation for every package): centred
local-polynomial differentiation, zero-phase and causal (streaming) Butterworth low-pass filters, and a
cut-off tied to the excitation band.

``local_derivatives`` fits, for every sample i with a full window, a polynomial by least squares to the
2M+1 samples i-M..i+M (actual time stamps, so uneven sampling is handled) and returns its first (and
second) derivative at t_i. On uniform sampling this is the Savitzky-Golay differentiator. For a sinusoid
of angular frequency w, the first-derivative gain is ~ 1 - (w M dt)^2 / 10 (linear fit), and white
position noise sigma_x gives velocity noise sigma_x * sqrt(3 / (M (M+1) (2M+1))) / dt.
Online use is causal with a delay of M samples (the window must be full on both sides).

scipy.signal is imported by the functions that use it, not by this module: importing it takes ~1.5 s (most of a
rover node's start-up, which needs only the stamp gate of this package). The packages that filter at run time
load it at start through :mod:`.conditioning`.
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


def zero_phase_lowpass(y: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 2,
                       padlen: int | None = None) -> np.ndarray:
    """Butterworth low-pass run forwards and backwards: zero phase (``scipy.signal.sosfiltfilt``, the
    second-order-section form of ``filtfilt``, numerically safer at low cut-off/rate ratios).

    The magnitude is |H|^2 of the designed filter, so the gain at ``cutoff_hz`` is 1/2 (-6 dB, not -3 dB)
    and the roll-off is 2*order poles. Needs more than 3 * (2 * order + 1) samples (edge padding).
    ``padlen``: samples of odd extension at each end (default scipy's 3 * (2 * sections + 1)); about
    3 * rate / cutoff keeps the filter's start-up transient out of the record's ends.
    """
    y = np.asarray(y, dtype=np.float64)
    if not 0 < cutoff_hz < rate_hz / 2:
        raise ValueError(f'cutoff must be in (0, Nyquist = {rate_hz / 2} Hz), got {cutoff_hz}')
    if order < 1:
        raise ValueError(f'order must be >= 1, got {order}')
    from scipy.signal import butter, sosfiltfilt
    sos = butter(order, cutoff_hz, fs=rate_hz, output='sos')
    pad = 3 * (2 * len(sos) + 1)
    if y.shape[-1] <= pad:
        raise ValueError(f'signal too short for filtfilt ({y.shape[-1]} <= {pad} samples)')
    if padlen is None:
        return sosfiltfilt(sos, y, axis=-1)
    return sosfiltfilt(sos, y, axis=-1, padlen=int(min(max(padlen, pad), y.shape[-1] - 1)))


def differentiate(t: np.ndarray, x: np.ndarray, *, half_window: int, cutoff_hz: float | None = None,
                  order: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Offline xd, xdd: optional zero-phase low-pass, then centred local-polynomial fits.

    Uses :func:`local_derivatives` (Savitzky-Golay on uniform sampling) over 2 * half_window + 1 samples.
    Returns arrays as long as x, NaN at the ``half_window`` samples at each end.
    """
    t, x = np.asarray(t, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if t.ndim != 1 or t.shape != x.shape:
        raise ValueError(f't, x must be 1-D arrays of equal length, got {t.shape}, {x.shape}')
    if cutoff_hz is not None:
        x = zero_phase_lowpass(x, 1.0 / float(np.median(np.diff(t))), cutoff_hz, order)
    d1, d2 = local_derivatives(t, x, half_window, second=True)
    xd = np.full(len(x), np.nan)
    xdd = np.full(len(x), np.nan)
    m = int(half_window)
    if len(d1):
        xd[m:len(x) - m] = d1
        xdd[m:len(x) - m] = d2
    return xd, xdd


class CausalLowpass:
    """Streaming Butterworth low-pass on several channels at once (``scipy.signal.sosfilt`` with carried
    state): the same filter, hence the same group delay, on every channel. Filtering a record in pieces
    gives the same output as filtering it whole. The state starts at the first sample's steady state.
    """

    def __init__(self, rate_hz: float, cutoff_hz: float, order: int = 2, channels: int = 1):
        if not 0 < cutoff_hz < rate_hz / 2:
            raise ValueError(f'cutoff must be in (0, Nyquist = {rate_hz / 2} Hz), got {cutoff_hz}')
        if order < 1 or channels < 1:
            raise ValueError('order and channels must be >= 1')
        from scipy.signal import butter, sosfilt, sosfilt_zi
        self._sosfilt = sosfilt
        self.sos = butter(order, cutoff_hz, fs=rate_hz, output='sos')
        self.channels = channels
        self._zi0 = sosfilt_zi(self.sos)            # (sections, 2), unit-step steady state
        self.zi: np.ndarray | None = None

    def reset(self) -> None:
        self.zi = None

    def __call__(self, y: np.ndarray) -> np.ndarray:
        """y (N, channels) -> filtered (N, channels)."""
        y = np.asarray(y, dtype=np.float64).reshape(-1, self.channels)
        if not len(y):
            return y.copy()
        if self.zi is None:
            self.zi = self._zi0[:, :, None] * y[0][None, None, :]
        out, self.zi = self._sosfilt(self.sos, y, axis=0, zi=self.zi)
        return out


def excitation_band(x: np.ndarray, rate_hz: float, rel_floor: float = 1e-4,
                    resolution_hz: float = 0.25) -> float:
    """Highest frequency (Hz) where the Welch PSD of the detrended x exceeds ``rel_floor`` times its peak
    (the top of the excitation band, harmonics of imperfect tracking included)."""
    from scipy.signal import welch
    x = np.asarray(x, dtype=np.float64)
    nper = int(min(len(x), max(16, round(rate_hz / resolution_hz))))
    f, p = welch(x - x.mean(), fs=rate_hz, nperseg=nper, detrend='linear')
    above = np.flatnonzero(p > rel_floor * p.max()) if p.max() > 0 else np.array([], dtype=int)
    return float(f[above[-1]]) if len(above) else 0.0


def cutoff_for_band(f_max_hz: float, rate_hz: float, factor: float = 4.0, minimum_hz: float = 5.0) -> float:
    """Low-pass cut-off tied to the excitation band: factor x the highest excitation frequency (at least
    ``minimum_hz``), kept below 0.45 x Nyquist. 3-4x keeps the bias of the damping estimate <= 5 %."""
    return float(min(max(factor * f_max_hz, minimum_hz), 0.45 * rate_hz / 2))
