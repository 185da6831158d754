"""Offline input pipeline (spec §2.0): onset, deformation, zero-phase filtering and differentiation,
plateau segmentation, creep/drift check and an excitation (identifiability) report. ROS-free, vectorised.

Units SI: t (s), F (N, compressive > 0), positions and x (m), xd (m/s), xdd (m/s^2).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from contact_dynamics_common.signal import differentiate, local_derivatives, zero_phase_lowpass  # noqa: F401

from .gls import GlobalLeastSquares
from .models import KELVIN_VOIGT, ContactModel
from .samples import ContactSamples


def _series(t: np.ndarray, y: np.ndarray, names: str = 't, force') -> tuple[np.ndarray, np.ndarray]:
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if t.ndim != 1 or t.shape != y.shape:
        raise ValueError(f'{names} must be 1-D arrays of equal length, got {t.shape}, {y.shape}')
    return t, y


# ------------------------------------------------------------------------------------------ contact onset
def detect_onset(t: np.ndarray, force: np.ndarray, *, baseline_samples: int, k_sigma: float = 5.0,
                 f_min: float, rate_threshold: float | None = None) -> int | None:
    """Index i0 of the first "force spike" (§2.0 step 1), or None if there is none.

    Baseline mean mu and std sigma from the first ``baseline_samples``; i0 is the first later sample with
    F > mu + max(k_sigma sigma, f_min) and a rising force, (F[i] - F[i-1]) / dt > rate_threshold (N/s,
    default 0). The datum is then x(i0) = 0; the true contact begins at most a few samples earlier.
    """
    t, f = _series(t, force)
    if not 2 <= baseline_samples < len(f):
        raise ValueError(f'baseline_samples must be in [2, {len(f) - 1}], got {baseline_samples}')
    if f_min < 0 or k_sigma < 0:
        raise ValueError('f_min and k_sigma must be >= 0')
    base = f[:baseline_samples]
    level = base.mean() + max(k_sigma * base.std(ddof=1), f_min)
    rate = np.diff(f) / np.diff(t)
    hit = (f[1:] > level) & (rate > (0.0 if rate_threshold is None else rate_threshold))
    hit[:baseline_samples - 1] = False
    idx = np.flatnonzero(hit)
    return int(idx[0] + 1) if idx.size else None


@dataclass(frozen=True)
class OnsetSensitivity:
    """Estimate recomputed with the datum moved by ``shifts`` samples; relative to the unshifted value."""

    shifts: np.ndarray
    values: np.ndarray
    relative_change: np.ndarray


def onset_sensitivity(estimate: Callable[[int], float], datum_index: int,
                      max_shift: int = 5) -> OnsetSensitivity:
    """Spec S3 / §2.0: call ``estimate(datum_index + s)`` for s = -max_shift..max_shift.

    ``estimate`` maps a datum index to a scalar (e.g. the stiffness); shifts that leave the record
    (index < 0) or non-finite results give NaN.
    """
    if max_shift < 1:
        raise ValueError(f'max_shift must be >= 1, got {max_shift}')
    shifts = np.arange(-max_shift, max_shift + 1)
    values = np.array([float(estimate(datum_index + s)) if datum_index + s >= 0 else np.nan for s in shifts])
    ref = values[max_shift]
    rel = values / ref - 1.0 if np.isfinite(ref) and ref != 0 else np.full(len(values), np.nan)
    return OnsetSensitivity(shifts, values, rel)


# ------------------------------------------------------------------------------------------ deformation
def deformation(p: np.ndarray, n_env: np.ndarray, *, datum_index: int | None = None,
                datum_point: np.ndarray | None = None) -> np.ndarray:
    """x[n] = (p_datum - p[n]) . n_env / |n_env| for positions p (N, 3) (§2.0 step 2).

    n_env is the environment's outward normal, so x grows as the payload moves into the environment.
    Give exactly one of ``datum_index`` (p_datum = p[i0]) or ``datum_point``.
    """
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n_env, dtype=np.float64)
    if p.ndim != 2 or n.shape != (p.shape[1],):
        raise ValueError(f'p must be (N, d) and n_env (d,), got {p.shape}, {n.shape}')
    norm = float(np.linalg.norm(n))
    if not norm > 0:
        raise ValueError('n_env must be a non-zero vector')
    if (datum_index is None) == (datum_point is None):
        raise ValueError('give exactly one of datum_index or datum_point')
    if datum_index is not None:
        if not -len(p) <= datum_index < len(p):
            raise ValueError(f'datum_index {datum_index} outside 0..{len(p) - 1}')
        ref = p[datum_index]
    else:
        ref = np.asarray(datum_point, dtype=np.float64)
        if ref.shape != n.shape:
            raise ValueError(f'datum_point must have shape {n.shape}, got {ref.shape}')
    return (ref - p) @ (n / norm)


def joint_deformation(q: np.ndarray, datum: float, sign: float = 1.0) -> np.ndarray:
    """x = sign (q - datum) for a single joint coordinate q (m or rad); sign = +-1 makes x > 0 in contact."""
    if sign not in (1.0, -1.0):
        raise ValueError(f'sign must be +1 or -1, got {sign}')
    return sign * (np.asarray(q, dtype=np.float64) - datum)


# ------------------------------------------------------------------------------------------ filtering
# zero_phase_lowpass and differentiate live in contact_dynamics_common.signal (shared with the impedance
# profiler); they are imported above and remain importable from here.


# ------------------------------------------------------------------------------------------ plateaus
@dataclass(frozen=True)
class Plateau:
    """Samples [start, stop) where the load is constant; mean and std of F there (N)."""

    start: int
    stop: int
    mean_load: float
    std_load: float


def _rolling_std(y: np.ndarray, width: int, chunk: int = 8192) -> np.ndarray:
    """Std over centred windows of ``width`` (odd) samples; NaN where the window is incomplete."""
    h = width // 2
    out = np.full(len(y), np.nan)
    if len(y) < width:
        return out
    win = sliding_window_view(y, width)
    for a in range(0, len(win), chunk):
        out[h + a:h + a + len(win[a:a + chunk])] = win[a:a + chunk].std(axis=1)
    return out


def find_plateaus(t: np.ndarray, force: np.ndarray, *, window_s: float = 0.5, min_duration_s: float = 1.0,
                  tolerance: float | None = None, min_load: float | None = None) -> list[Plateau]:
    """Constant-load windows of a quasi-static staircase (§2.0 step 4) by a rolling-std detector on F.

    A sample is "flat" when the std of F over the centred ``window_s`` window is below ``tolerance`` (N;
    default max(3 sigma_noise, 1e-3 * range(F)), sigma_noise robustly from first differences: 1.4826
    MAD(dF)/sqrt 2). Runs of flat samples lasting at least ``min_duration_s`` are plateaus; runs with mean
    load below ``min_load`` (e.g. the pre-contact baseline) are dropped. Each run starts once the
    window-averaged force is within tolerance/6 of the run's median (drops the transition tail).
    """
    t, f = _series(t, force)
    if not (window_s > 0 and min_duration_s > 0):
        raise ValueError('window_s and min_duration_s must be > 0')
    if len(f) < 3:
        return []
    dt = float(np.median(np.diff(t)))
    width = 2 * max(1, int(round(window_s / dt / 2))) + 1
    if tolerance is None:
        df = np.diff(f)
        sigma = 1.4826 * float(np.median(np.abs(df - np.median(df)))) / np.sqrt(2.0)
        tolerance = max(3.0 * sigma, 1e-3 * float(np.ptp(f)))
    flat = _rolling_std(f, width) < tolerance
    edges = np.diff(np.concatenate(([0], flat.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    smooth = np.convolve(f, np.ones(width) / width, mode='same')
    out = []
    for a, b in zip(starts, stops):
        # trim a settling tail: start where the smoothed force is within tolerance/6 of the run's median
        settled = np.abs(smooth[a:b] - np.median(f[a:b])) <= tolerance / 6.0
        a += int(np.argmax(settled)) if settled.any() else 0
        if t[b - 1] - t[a] < min_duration_s:
            continue
        seg = f[a:b]
        if min_load is not None and seg.mean() < min_load:
            continue
        out.append(Plateau(int(a), int(b), float(seg.mean()), float(seg.std())))
    return out


# ------------------------------------------------------------------------------------------ creep / drift
@dataclass(frozen=True)
class DriftReport:
    """Linear trend of x within a constant-load window. ``warning`` is None when no creep is detected."""

    slope: float           # m/s
    slope_std: float       # m/s
    change: float          # m over the window
    relative_change: float           # change / mean(x)
    relative_force_change: float     # force trend * duration / mean(F) (0 without force)
    warning: str | None


def detect_drift(t: np.ndarray, x: np.ndarray, force: np.ndarray | None = None, *,
                 rate_threshold: float = 1e-6, significance: float = 3.0) -> DriftReport:
    """Creep check on one plateau (spec S6): fit x = a + s t by least squares.

    A static hardening law (x ~ F^(1/n), n >= 1) lets x change at most as much, relatively, as F does, so
    the unexplained rate is u = (|dx/x| - |dF/F|) |mean x| / duration (dF = 0 without ``force``). Warns
    when u > ``rate_threshold`` (m/s) and u > ``significance`` * std(s).
    """
    t, x = _series(t, x, 't, x')
    if len(t) < 3:
        raise ValueError('need at least 3 samples')
    tc = t - t.mean()
    stt = float(tc @ tc)
    if not stt > 0:
        raise ValueError('t must not be constant')
    slope = float(tc @ (x - x.mean())) / stt
    resid = x - x.mean() - slope * tc
    slope_std = float(np.sqrt((resid @ resid) / (len(t) - 2) / stt))
    duration = float(t[-1] - t[0])
    change = slope * duration
    xm = float(x.mean())
    rel = change / xm if xm != 0 else np.inf
    rel_f = 0.0
    if force is not None:
        _, f = _series(t, force, 't, force')
        fm = float(f.mean())
        rel_f = float(tc @ (f - fm)) / stt * duration / fm if fm != 0 else np.inf
    unexplained = (abs(rel) - abs(rel_f)) * abs(xm) / duration if duration > 0 else 0.0   # m/s
    creeping = unexplained > rate_threshold and unexplained > significance * slope_std
    warning = None
    if creeping:
        warning = (f'x drifts {slope * 1e6:+.3g} um/s (+-{slope_std * 1e6:.2g}, {change * 1e6:+.3g} um, '
                   f'{100 * rel:+.3g} % of x) while F changes {100 * rel_f:+.3g} %: creep; recursive and '
                   f'batch estimates of this level will disagree')
    return DriftReport(slope, slope_std, change, float(rel), float(rel_f), warning)


def drift_warnings(t: np.ndarray, x: np.ndarray, force: np.ndarray, plateaus: list[Plateau],
                   **kwargs) -> list[str]:
    """:func:`detect_drift` on every plateau; one line per plateau that creeps."""
    out = []
    for i, p in enumerate(plateaus):
        sl = slice(p.start, p.stop)
        r = detect_drift(t[sl], x[sl], force[sl], **kwargs)
        if r.warning:
            out.append(f'plateau {i} ({p.mean_load:.1f} N, samples {p.start}..{p.stop}): {r.warning}')
    return out


# ------------------------------------------------------------------------------------------ excitation
@dataclass(frozen=True)
class ExcitationReport:
    """Per parameter: identifiable?, excitation (RMS of the regressor's unique part) and its threshold."""

    identifiable: dict[str, bool]
    excitation: dict[str, float]
    threshold: dict[str, float]
    message: str


def excitation_report(samples: ContactSamples, model: ContactModel = KELVIN_VOIGT,
                      **gls_kwargs) -> ExcitationReport:
    """Which parameters the window can identify, from GLS's information matrix (estimate.identifiable)."""
    gls = GlobalLeastSquares(model, **gls_kwargs)
    est = gls.fit(samples)
    names = model.names
    ident = {n: bool(est.identifiable[i]) if est.identifiable else False for i, n in enumerate(names)}
    exc = {n: float(est.excitation[i]) if len(est.excitation) else 0.0 for i, n in enumerate(names)}
    thr = dict(zip(names, map(float, gls.min_exc)))
    parts = [f"{n}: {'identifiable' if ident[n] else 'NOT identifiable'} "
             f'(excitation {exc[n]:.3g} vs {thr[n]:.3g})' for n in names]
    msg = '; '.join(parts) if est.samples_used > model.size else f'no estimate: {est.reason}'
    return ExcitationReport(ident, exc, thr, msg)
