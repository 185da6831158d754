"""The result every contact estimator returns: values with covariance, quality figures and a verdict.

Also the shared quality computation from a (scaled) information matrix, so that every algorithm
reports excitation, conditioning and covariance the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .models import ContactModel


@dataclass(frozen=True)
class ContactEstimate:
    """Estimated contact parameters of one model by one algorithm (SI units).

    ``covariance`` is symmetric positive definite in the order of ``names``; ``excitation`` is, per
    parameter, the RMS of its regressor's part not explained by the other regressors (m, m/s, m/s^2).
    ``valid`` is the verdict a controller may act on; ``reason`` says why not (``'ok'`` when valid).
    """

    algorithm: str
    model: str
    names: tuple[str, ...]
    values: np.ndarray
    covariance: np.ndarray
    valid: bool
    reason: str = 'ok'
    stiffness_type: str = 'secant'
    residual_rms: float = 0.0
    condition_number: float = 1.0
    excitation: np.ndarray = field(default_factory=lambda: np.zeros(0))
    identifiable: tuple[bool, ...] = ()
    bounds_active: tuple[bool, ...] = ()
    samples_used: int = 0
    stamp: float = 0.0
    extras: dict = field(default_factory=dict)

    def value(self, name: str, default: float = 0.0) -> float:
        return float(self.values[self.names.index(name)]) if name in self.names else default

    def std(self, name: str) -> float:
        i = self.names.index(name)
        return float(np.sqrt(self.covariance[i, i]))

    @property
    def stiffness(self) -> float:
        return self.value('stiffness')

    @property
    def damping(self) -> float:
        return self.value('damping')

    @property
    def mass(self) -> float:
        return self.value('mass')

    def is_identifiable(self, name: str) -> bool:
        return bool(self.identifiable[self.names.index(name)]) if name in self.names else False

    def as_dict(self) -> dict:
        """Plain values for reports and YAML."""
        out = {'algorithm': self.algorithm, 'model': self.model, 'valid': self.valid, 'reason': self.reason,
               'stiffness_type': self.stiffness_type, 'residual_rms': float(self.residual_rms),
               'condition_number': float(self.condition_number), 'samples_used': int(self.samples_used),
               'stamp': float(self.stamp)}
        for i, n in enumerate(self.names):
            out[n] = float(self.values[i])
            out[f'{n}_std'] = float(np.sqrt(self.covariance[i, i]))
            out[f'{n}_excitation'] = float(self.excitation[i]) if len(self.excitation) else 0.0
            out[f'{n}_identifiable'] = bool(self.identifiable[i]) if self.identifiable else False
        return out


def failure(algorithm: str, model: ContactModel, reason: str, stamp: float = 0.0,
            samples_used: int = 0, **extras) -> ContactEstimate:
    """A structured 'no estimate' (instead of an exception or NaN): prior-free zeros, unknown covariance."""
    p = model.size
    return ContactEstimate(algorithm=algorithm, model=model.name, names=model.names, values=np.zeros(p),
                           covariance=np.eye(p), valid=False, reason=reason, condition_number=float('inf'),
                           excitation=np.zeros(p), identifiable=(False,) * p, bounds_active=(False,) * p,
                           samples_used=samples_used, stamp=stamp, extras=dict(extras, covariance_known=False))


def make_spd(cov: np.ndarray, floor: float = 1e-300) -> np.ndarray:
    """Symmetrise; if not positive definite (or not finite), floor the eigenvalues so that it is."""
    cov = np.asarray(cov, dtype=np.float64)
    cov = 0.5 * (cov + cov.T)
    if not np.all(np.isfinite(cov)):
        return np.eye(len(cov)) * 1e300
    try:
        np.linalg.cholesky(cov)
        return cov
    except np.linalg.LinAlgError:
        pass
    w, v = np.linalg.eigh(cov)
    top = max(float(w.max()), floor)
    w = np.maximum(w, max(floor, top * 1e-15))
    return (v * w) @ v.T


@dataclass(frozen=True)
class Quality:
    """Covariance and identifiability figures derived from one information matrix."""

    covariance: np.ndarray        # SI units
    excitation: np.ndarray        # SI regressor units
    condition_number: float
    identifiable: tuple[bool, ...]


def quality_from_information(info_scaled: np.ndarray, n_eff: float, sigma2: float, scales: np.ndarray,
                             min_excitation: np.ndarray) -> Quality:
    """Figures from the information matrix of the scaled regressors phi_s = phi / scales.

    covariance (SI) = sigma2 * inv(info) / (scales scales^T); excitation_j = scales_j *
    sqrt(n_eff / inv(info)_jj); condition number of the correlation-normalised information matrix.
    A parameter is identifiable when its excitation reaches ``min_excitation`` (SI regressor units).
    """
    info = 0.5 * (info_scaled + info_scaled.T)
    p = len(info)
    diag = info.diagonal()
    # a tiny ridge keeps the inverse finite when a regressor is not excited at all (e.g. xdot = 0 on a
    # noise-free plateau): that parameter then gets a huge variance and ~0 excitation, not a crash
    ridged = info + np.eye(p) * max(float(diag.max()) * 1e-13, 1e-300)
    inv = np.linalg.inv(ridged)
    diag_inv = np.maximum(inv.diagonal(), 1e-300)
    excitation = scales / np.sqrt(max(n_eff, 1e-12) * diag_inv)
    identifiable = tuple((excitation >= min_excitation).tolist())
    # 1-norm condition number of the correlation-normalised information matrix C = D^-1 info D^-1, over the
    # excited parameters only (an unexcited one is reported as not identifiable instead)
    sub = [i for i in range(p) if identifiable[i]]
    if len(sub) == p or not sub:
        block, block_inv = ridged, inv
    else:
        block = ridged[np.ix_(sub, sub)]
        block_inv = np.linalg.inv(block)
    d = np.sqrt(block.diagonal())
    corr = np.abs(block / np.outer(d, d))
    corr_inv = np.abs(block_inv * np.outer(d, d))
    cond = float(corr.sum(axis=0).max() * corr_inv.sum(axis=0).max())
    cov = make_spd(sigma2 * inv / np.outer(scales, scales))
    return Quality(covariance=cov, excitation=excitation, condition_number=cond, identifiable=identifiable)


def verdict(names: tuple[str, ...], values: np.ndarray, quality: Quality, samples: float, min_samples: float,
            max_condition: float) -> tuple[bool, str]:
    """The shared validity rule: enough samples, positive stiffness, stiffness excited, well conditioned.

    Damping that is not identifiable does not invalidate the stiffness; it is reported separately.
    """
    if samples < min_samples:
        return False, f'warming up: {samples:.0f} of {min_samples:.0f} samples'
    if not np.all(np.isfinite(values)):
        return False, 'non-finite estimate'
    k = values[names.index('stiffness')]
    if not quality.identifiable[names.index('stiffness')]:
        return False, 'stiffness not excited (no deformation)'
    if k <= 0:
        return False, f'non-physical stiffness {k:.4g} N/m'
    if not quality.condition_number <= max_condition:
        return False, f'ill-conditioned regressor (condition {quality.condition_number:.3g})'
    if 'damping' in names and not quality.identifiable[names.index('damping')]:
        return True, 'ok; damping not identifiable (no deformation-rate excitation)'
    return True, 'ok'


def project(values: np.ndarray, names: tuple[str, ...], bounds: dict | None) -> tuple[np.ndarray, tuple[bool, ...]]:
    """Clip values to per-parameter (low, high) bounds; report which bounds are active."""
    if not bounds:
        return values, (False,) * len(names)
    out = values.copy()
    active = []
    for i, n in enumerate(names):
        lo, hi = bounds.get(n, (-np.inf, np.inf))
        out[i] = min(max(out[i], lo), hi)
        active.append(bool(out[i] != values[i]))
    return out, tuple(active)
