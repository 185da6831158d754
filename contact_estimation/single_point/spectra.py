"""Frequency-domain data shared by the batch estimators ETFE, OEM, EEM and GMLE (Agar 2004 §2.6-2.9).

* :func:`spectrum`: one-sided DFTs F_i, X_i of a uniformly sampled window, normalised so that Parseval
  holds per bin: X_i = w_i DFT(x)_i / sqrt(N), w_i = sqrt(2) except at DC (and Nyquist) where w_i = 1, so
  sum_i |X_i|^2 = sum_n x[n]^2. White time-domain noise of variance sigma^2 then has variance sigma^2 in
  the real and in the imaginary part of every bin (DC: real part only), which makes the real-stacked
  frequency-domain least squares directly comparable with the time-domain one (same covariance scale).
  No detrending or window by default: the DC bin carries the stiffness of plateau data (F_0 = k X_0).
* :func:`select_bins`: the "frequencies of interest": explicit frequencies (nearest bins) or automatic
  (top-n bins by cross-power |F_i X_i| or by coherence above a threshold), DC optionally always included.
* :func:`least_squares`: the real-stacked least squares with its covariance, used by every method.
* :class:`FrequencyEstimator`: the fit skeleton the four methods share (checks, spectrum, bins, quality
  figures, verdict); a subclass provides :meth:`FrequencyEstimator.solve`. Every method reports the
  same quality figures, from the equivalent real regressor [Re h_i; Im h_i], h_i = [X_i, j w_i X_i]
  (Parseval: excitation is the RMS of x and xdot over the selected bins), and the same
  ``residual_rms``: the RMS per real component of F_i - h_i [k, b]^T over the selected bins (N, an
  estimate of the force-noise standard deviation, comparable with the time-domain methods).

Model: Kelvin-Voigt, F(jw) = (k + j b w) X(jw) (eq. 2.12); only F and x are used (xd is not needed).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.signal import coherence as _coherence
from scipy.signal import detrend as _detrend
from scipy.signal import get_window

from .estimate import ContactEstimate, failure, make_spd, quality_from_information, verdict
from .models import KELVIN_VOIGT, ContactModel
from .samples import ContactSamples

#: inputs beyond this magnitude are rejected (their spectra and squares would overflow)
_LIMIT = 1e100


@dataclass(frozen=True)
class Spectrum:
    """One-sided, Parseval-normalised DFTs of a window (see module doc); ``freq`` in Hz, ``dt`` in s."""

    freq: np.ndarray
    force: np.ndarray
    x: np.ndarray
    dt: float
    n: int
    raw_force: np.ndarray
    raw_x: np.ndarray
    resampled: dict | None = None     # jittered stamps: what signal.conditioning.resample_uniform did

    @property
    def omega(self) -> np.ndarray:
        return 2.0 * np.pi * self.freq

    def regressor(self, bins: np.ndarray) -> np.ndarray:
        """h_i = [X_i, j w_i X_i] (complex, m and m/s): F_i = h_i [k, b]^T."""
        x = self.x[bins]
        return np.column_stack((x, 1j * self.omega[bins] * x))

    def coherence(self) -> np.ndarray:
        """Magnitude-squared coherence of x and F (Welch, 8 segments) at every bin of ``freq``."""
        nper = max(8, self.n // 8)
        f_c, c = _coherence(self.raw_x, self.raw_force, fs=1.0 / self.dt, nperseg=min(nper, self.n))
        return np.nan_to_num(np.interp(self.freq, f_c, c), nan=0.0)


def uniform_step(t: np.ndarray, rtol: float) -> float | str:
    """The sample period if every interval is within ``rtol`` (relative) of the median, else a reason."""
    if len(t) < 2:
        return f'too few samples ({len(t)}) for a spectrum'
    d = np.diff(t)
    dt = float(np.median(d))
    if not (np.isfinite(dt) and dt > 0):
        return f'non-uniform sampling: median interval {dt:.3g} s'
    worst = float(np.max(np.abs(d - dt))) / dt
    if not worst <= rtol:
        return (f'non-uniform sampling: an interval deviates {worst:.3g} (relative) from {dt:.6g} s '
                f'(tolerance {rtol:g})')
    return dt


def spectrum(samples: ContactSamples, *, detrend: str | None = None, window: str | None = None,
             rtol: float = 1e-2) -> Spectrum | str:
    """DFTs of F and x (module doc), or the reason why there is none (range). Stamps of a jittered logger
    (an interval off the median by more than ``rtol``) are resampled onto one uniform clock at the median
    rate first (``signal.conditioning.resample_uniform``: F and x interpolated alike, so F = k x stays
    exact); ``Spectrum.resampled`` says so."""
    dt = uniform_step(samples.t, rtol)
    f, x = samples.force, samples.x
    resampled = None
    if isinstance(dt, str):
        from contact_dynamics_common.signal.conditioning import resample_uniform
        t = np.asarray(samples.t, dtype=np.float64)
        if len(t) < 3 or not np.all(np.diff(t) > 0):
            return dt
        _, cols, resampled = resample_uniform(t, np.column_stack([f, x]))
        f, x = cols[:, 0], cols[:, 1]
        resampled['reason'] = dt
        dt = 1.0 / resampled['rate_hz']
    if not (np.max(np.abs(f)) < _LIMIT and np.max(np.abs(x)) < _LIMIT):
        return f'values out of numeric range (|F| or |x| >= {_LIMIT:g})'
    if detrend:
        f, x = _detrend(f, type=detrend), _detrend(x, type=detrend)
    n = len(f)
    w = get_window(window, n, fftbins=True) if window else np.ones(n)
    weight = np.full(n // 2 + 1, np.sqrt(2.0))
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    norm = weight / np.sqrt(float(w @ w))
    return Spectrum(freq=np.fft.rfftfreq(n, dt), force=np.fft.rfft(w * f) * norm, x=np.fft.rfft(w * x) * norm,
                    dt=dt, n=n, raw_force=f, raw_x=x, resampled=resampled)


def select_bins(spec: Spectrum, frequencies: Sequence[float] | None = None, *, n_auto: int = 8,
                criterion: str = 'magnitude', threshold: float = 1e-4, include_dc: bool = True) -> np.ndarray:
    """Indices of the frequencies of interest, ascending.

    ``frequencies`` (Hz): the nearest bin of each. Otherwise automatic: the ``n_auto`` non-DC bins of largest
    cross-power |F_i X_i| among those with |F_i X_i| >= threshold * max (``criterion='magnitude'``) or with
    coherence >= threshold (``criterion='coherence'``). DC is added when ``include_dc``.
    """
    if frequencies is not None:
        idx = np.rint(np.asarray(frequencies, dtype=np.float64) * spec.n * spec.dt).astype(int)
        idx = idx[(idx >= 0) & (idx < len(spec.freq))]
    else:
        power = np.abs(spec.force * spec.x)
        power[0] = 0.0
        if criterion == 'magnitude':
            eligible = power >= threshold * power.max() if power.max() > 0 else np.zeros(len(power), bool)
        else:
            eligible = spec.coherence() >= threshold
        eligible[0] = False
        cand = np.flatnonzero(eligible & (power > 0))
        idx = cand[np.argsort(power[cand])[::-1][:n_auto]]
    if include_dc:
        idx = np.append(idx, 0)
    return np.unique(idx)


def real_stack(a: np.ndarray) -> np.ndarray:
    """Rows [Re a; Im a]: the real equivalent of a complex regression, Re(a^H b) = stack(a)^T stack(b)."""
    return np.concatenate((a.real, a.imag))


@dataclass(frozen=True)
class LeastSquares:
    """theta = argmin |a theta - y|^2 with cov = sigma^2 (a^T a)^-1, sigma^2 = rss / (rows - p)."""

    theta: np.ndarray
    covariance: np.ndarray
    rss: float
    rows: int


def least_squares(a: np.ndarray, y: np.ndarray) -> LeastSquares:
    """Real least squares on column-normalised a (lstsq, min-norm when rank deficient); all-zero rows
    (e.g. the imaginary part of the DC bin) carry no equation and are not counted."""
    p = a.shape[1]
    c = np.linalg.norm(a, axis=0)
    c[c == 0] = 1.0
    an = a / c
    theta_n = np.linalg.lstsq(an, y, rcond=None)[0]
    r = y - an @ theta_n
    rss = float(r @ r)
    rows = int(np.count_nonzero(np.any(an != 0, axis=1)))
    info = an.T @ an
    ridged = info + np.eye(p) * max(float(info.diagonal().max()) * 1e-13, 1e-300)
    cov = rss / max(rows - p, 1) * np.linalg.inv(ridged) / np.outer(c, c)
    return LeastSquares(theta=theta_n / c, covariance=cov, rss=rss, rows=rows)


@dataclass(frozen=True)
class Solution:
    """What a frequency-domain method returns: SI values [k, b], their covariance, extras.

    ``damping_identifiable=False`` marks damping as not identified even when the data excite it (EEM);
    ``note`` is appended to the reason of a valid estimate.
    """

    values: np.ndarray
    covariance: np.ndarray
    extras: dict = field(default_factory=dict)
    damping_identifiable: bool = True
    note: str = ''


class FrequencyEstimator:
    """Shared ``fit`` of the frequency-domain methods; subclasses implement ``solve(spec, bins)``.

    Options: ``frequencies`` (Hz, explicit bins) or automatic selection (``n_auto``, ``criterion``,
    ``threshold``, ``include_dc``); ``detrend`` ('constant' | 'linear' | None) and ``window`` (a
    scipy window name) trade the exactness of F_i = (k + j b w_i) X_i for less leakage;
    ``uniform_tolerance``: relative deviation of the sample intervals allowed.
    """

    name = 'frequency'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, frequencies: Sequence[float] | None = None,
                 n_auto: int = 8, criterion: str = 'magnitude', threshold: float = 1e-4,
                 include_dc: bool = True, detrend: str | None = None, window: str | None = None,
                 uniform_tolerance: float = 1e-2, min_samples: int = 10, max_condition: float = 1e8,
                 scales: dict | None = None, min_excitation: dict | None = None):
        if model.names != KELVIN_VOIGT.names:
            raise ValueError(f"{self.name} estimates the Kelvin-Voigt model (k, b), got '{model.name}'")
        if criterion not in ('magnitude', 'coherence'):
            raise ValueError(f"criterion must be 'magnitude' or 'coherence', got '{criterion}'")
        if detrend not in (None, 'constant', 'linear'):
            raise ValueError(f"detrend must be None, 'constant' or 'linear', got '{detrend}'")
        if window is not None:
            get_window(window, 8)          # raises ValueError for an unknown window
        if not n_auto >= 1 or not threshold >= 0 or not uniform_tolerance > 0:
            raise ValueError('n_auto must be >= 1, threshold >= 0 and uniform_tolerance > 0')
        self.model = model
        self.frequencies = None if frequencies is None else [float(f) for f in frequencies]
        self.n_auto, self.criterion, self.threshold = int(n_auto), criterion, threshold
        self.include_dc = include_dc
        self.detrend, self.window, self.rtol = detrend, window, float(uniform_tolerance)
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.scales = model.scales(scales)
        self.min_exc = model.min_excitation(min_excitation)

    def solve(self, spec: Spectrum, bins: np.ndarray) -> Solution | str:
        raise NotImplementedError

    def fit(self, samples: ContactSamples) -> ContactEstimate:
        n = len(samples)
        stamp = float(samples.t[-1]) if n else 0.0
        if n < max(self.min_samples, 3):
            return failure(self.name, self.model, f'too few samples ({n})', stamp, n)
        spec = spectrum(samples, detrend=self.detrend, window=self.window, rtol=self.rtol)
        if isinstance(spec, str):
            return failure(self.name, self.model, spec, stamp, n)
        bins = select_bins(spec, self.frequencies, n_auto=self.n_auto, criterion=self.criterion,
                           threshold=self.threshold, include_dc=self.include_dc)
        extras = {'frequencies': spec.freq[bins].tolist(), 'sample_period': spec.dt}
        note = ''
        if spec.resampled:
            r = spec.resampled
            extras['resampled'] = {k: v for k, v in r.items()}
            note = (f"jittered stamps resampled to a uniform {r['rate_hz']:.6g} Hz clock "
                    f"({r['from_samples']} -> {r['to_samples']} samples, jitter "
                    f"{100 * r['stamp_jitter']:.3g} %, longest gap {r['longest_gap_s']:.3g} s)")
        h = real_stack(spec.regressor(bins)) / self.scales
        if len(bins) < 2 or not np.any(h):
            return failure(self.name, self.model, f'too few excited frequency bins ({len(bins)})', stamp, n,
                           **extras)
        sol = self.solve(spec, bins)
        if isinstance(sol, str):
            return failure(self.name, self.model, sol, stamp, n, **extras)
        cov = make_spd(sol.covariance)
        resid = real_stack(spec.force[bins]) - h @ (sol.values * self.scales)      # force equation, N
        rows = max(int(np.count_nonzero(np.any(h != 0, axis=1))), 1)
        residual_rms = float(np.sqrt(resid @ resid / rows))
        if not (np.all(np.isfinite(sol.values)) and np.all(np.isfinite(cov)) and np.isfinite(residual_rms)):
            return failure(self.name, self.model, 'non-finite result', stamp, n, **extras)
        q = quality_from_information(h.T @ h, n, 1.0, self.scales, self.min_exc)
        identifiable = (q.identifiable[0], q.identifiable[1] and sol.damping_identifiable)
        valid, reason = verdict(self.model.names, sol.values, q, n, self.min_samples, self.max_condition)
        if valid and sol.note:
            reason = f'{reason}; {sol.note}'
        if note:
            reason = f'{reason}; {note}'
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=sol.values,
            covariance=cov, valid=valid, reason=reason, residual_rms=residual_rms,
            condition_number=q.condition_number, excitation=q.excitation, identifiable=identifiable,
            bounds_active=(False, False), samples_used=n, stamp=stamp, extras={**extras, **sol.extras})
