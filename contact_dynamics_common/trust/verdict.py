"""One verdict rule: is an estimate valid, and which of its parameters are identified?

Shared by every front end of a package (live node, run-bag, comparison / batch tools): the same values,
covariance and checks give the same verdict. ROS-free.

Rules (:func:`judge`), in order; the first failure is the reason (stable prefixes a user and a test match):

1. ``non-finite estimate`` - a value or sigma is NaN / inf.
2. a failed trust check (``trust.checks.Check``: convergence, model mismatch, ...) - its own reason.
3. ``not identified: <name> ...`` - a *required* parameter (e.g. stiffness) must stand out against its honest
   sigma: |value| > z sigma (default z = 3). The sigma must already hold the model-error scale (residual /
   HAC sandwich from ``trust.covariance``), so a parameter is identified against what the residuals show,
   not against the prior or a configured measurement noise.
4. ``model error dominates: ...`` - with ``residual_rms`` and ``signal_rms`` given: the residual carries more
   than ``max_misfit`` of the signal (the model explains too little to publish a value).
5. positivity of the ``positive`` parameters (``non-physical <name>``).

Identification flags (:func:`identified`): a parameter is identified only when the estimator's own
excitation flag says so AND |value| >= ``min_snr`` sigma (default 2) AND its information stands out against the
residual level (sigma computed from residuals). A flag that says yes while sigma > |value| is a bug: the
guard turns it off and names the parameter in ``Verdict.notes`` (``<name> not identified: sigma ... > |value|``).

Model-error scale (:func:`model_error_scale`): residual rms, the share of the signal it carries and, with a
noise level, the ratio residual / noise (> 1.5: the residual is model error, not noise).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

__all__ = ['Verdict', 'judge', 'identified', 'model_error_scale', 'MAX_MISFIT', 'MIN_SNR', 'Z_VALID']

#: |value| / sigma a required parameter needs for a valid estimate
Z_VALID = 3.0
#: |value| / sigma below which an identification flag is turned off (sigma > |value| / 2)
MIN_SNR = 2.0
#: residual rms share of the signal rms above which no value is published
MAX_MISFIT = 0.5


@dataclass(frozen=True)
class Verdict:
    """valid / reason of the estimate, per-parameter ``identified`` flags, and notes (flags turned off)."""
    valid: bool
    reason: str
    identified: tuple[bool, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return self.valid


def _sigma(covariance) -> np.ndarray:
    c = np.asarray(covariance, dtype=np.float64)
    return np.sqrt(np.maximum(np.diagonal(c), 0.0)) if c.ndim == 2 else np.abs(c)


def identified(names: Sequence[str], values, covariance, flags: Sequence[bool] | None = None, *,
               min_snr: float = MIN_SNR) -> tuple[tuple[bool, ...], tuple[str, ...]]:
    """(flags, notes): the estimator's own flags (all True when None) AND |value| >= min_snr sigma.
    A flag turned off by the guard gets a note; the guard is never allowed to turn a flag on."""
    v = np.asarray(values, dtype=np.float64)
    s = _sigma(covariance)
    own = [True] * len(names) if flags is None or len(flags) != len(names) else [bool(f) for f in flags]
    out, notes = [], []
    for j, name in enumerate(names):
        ok = own[j] and math.isfinite(v[j]) and math.isfinite(s[j]) and abs(v[j]) >= min_snr * s[j]
        if own[j] and not ok:
            notes.append(f'{name} not identified: sigma {s[j]:.3g} vs |value| {abs(v[j]):.3g}')
        out.append(bool(ok))
    return tuple(out), tuple(notes)


def model_error_scale(residuals, signal, noise_std: float | None = None) -> dict:
    """{'residual_rms', 'signal_rms', 'misfit' (= residual_rms / signal_rms), 'noise_ratio' (residual_rms /
    noise_std, NaN without a noise level)}."""
    r = np.asarray(residuals, dtype=np.float64)
    y = np.asarray(signal, dtype=np.float64)
    r, y = r[np.isfinite(r)], y[np.isfinite(y)]
    rr = float(np.sqrt(np.mean(r * r))) if len(r) else float('nan')
    yr = float(np.sqrt(np.mean(y * y))) if len(y) else float('nan')
    return {'residual_rms': rr, 'signal_rms': yr, 'misfit': rr / yr if yr > 0 else float('nan'),
            'noise_ratio': rr / noise_std if noise_std else float('nan')}


def judge(names: Sequence[str], values, covariance, *, flags: Sequence[bool] | None = None,
          required: Iterable[str] = ('stiffness',), positive: Iterable[str] = ('stiffness',),
          checks: Iterable = (), residual_rms: float | None = None, signal_rms: float | None = None,
          z: float = Z_VALID, min_snr: float = MIN_SNR, max_misfit: float = MAX_MISFIT,
          prior_valid: bool = True, prior_reason: str = 'ok') -> Verdict:
    """The verdict of one estimate (module docstring). ``prior_valid``/``prior_reason``: the estimator's own
    verdict (too few samples, ill-conditioned, ...), kept when it already refuses."""
    names = tuple(names)
    v = np.asarray(values, dtype=np.float64)
    s = _sigma(covariance)
    flags_out, notes = identified(names, v, covariance, flags, min_snr=min_snr)
    fail = lambda reason: Verdict(False, reason, flags_out, notes)      # noqa: E731
    if not prior_valid:
        return fail(prior_reason)
    if not (np.isfinite(v).all() and np.isfinite(s).all()):
        return fail('non-finite estimate')
    for c in checks:
        if c is not None and not c.ok:
            return fail(c.reason)
    for name in required:
        if name not in names:
            continue
        j = names.index(name)
        if not abs(v[j]) > z * s[j]:
            return fail(f'not identified: {name} {v[j]:.4g} not above {z:g} sigma ({s[j]:.3g}) of the model-error '
                        'scale')
    for name in positive:
        if name in names and not v[names.index(name)] > 0:
            return fail(f'non-physical {name} {v[names.index(name)]:.4g}')
    if residual_rms is not None and signal_rms and residual_rms / signal_rms > max_misfit:
        return fail(f'model error dominates: residual {residual_rms / signal_rms:.0%} of the signal rms')
    return Verdict(True, prior_reason if prior_reason else 'ok', flags_out, notes)
