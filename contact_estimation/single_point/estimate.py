"""The result every contact estimator returns: values with covariance, quality figures and a verdict.

Also the shared quality computation from a (scaled) information matrix, so that every algorithm
reports excitation, conditioning and covariance the same way.
"""
from __future__ import annotations

import math
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

    @classmethod
    def of(cls, algorithm: str, model: str, names: tuple[str, ...], values: np.ndarray,
           covariance: np.ndarray, valid: bool, reason: str, residual_rms: float, condition_number: float,
           excitation: np.ndarray, identifiable: tuple[bool, ...], bounds_active: tuple[bool, ...],
           samples_used: int, stamp: float, extras: dict,
           stiffness_type: str = 'secant') -> 'ContactEstimate':
        """The same estimate as ``ContactEstimate(...)`` with every field given, built without the frozen
        __init__'s per-field setattr (replay builds ~100 estimates per bag second)."""
        new = object.__new__(cls)
        new.__dict__.update(algorithm=algorithm, model=model, names=names, values=values,
                            covariance=covariance, valid=valid, reason=reason, stiffness_type=stiffness_type,
                            residual_rms=residual_rms, condition_number=condition_number,
                            excitation=excitation, identifiable=identifiable, bounds_active=bounds_active,
                            samples_used=samples_used, stamp=stamp, extras=extras)
        return new

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
    return make_spd_batch(np.asarray(cov, dtype=np.float64)[None], floor)[0]


def make_spd_batch(cov: np.ndarray, floor: float = 1e-300) -> np.ndarray:
    """``make_spd`` of each matrix of a stack (K, p, p).

    C_s = (C + C^T) / 2 is kept when its Cholesky factorisation exists; a non-finite C becomes 1e300 I;
    otherwise C_s = V diag(max(w, max(floor, 1e-15 max(w_max, floor)))) V^T from C_s = V diag(w) V^T.
    """
    cov = np.asarray(cov, dtype=np.float64)
    cov = 0.5 * (cov + cov.swapaxes(1, 2))
    finite = np.isfinite(cov).all(axis=(1, 2))
    cov[~finite] = np.eye(cov.shape[1]) * 1e300
    fix = np.zeros(len(cov), dtype=bool)
    fix[finite] = ~_cholesky_exists(cov[finite])
    if fix.any():
        w, v = np.linalg.eigh(cov[fix])
        top = np.maximum(w.max(axis=1), floor)
        w = np.maximum(w, np.maximum(floor, top * 1e-15)[:, None])
        fixed = (v * w[:, None, :]) @ v.swapaxes(1, 2)
        cov[fix] = 0.5 * (fixed + fixed.swapaxes(1, 2))      # symmetric to the last bit again
    return cov


def _cholesky_exists(mats: np.ndarray) -> np.ndarray:
    """Per matrix of a stack: does its Cholesky factorisation exist? (one call; bisection on failure)"""
    try:
        np.linalg.cholesky(mats)
        return np.ones(len(mats), dtype=bool)
    except np.linalg.LinAlgError:
        if len(mats) == 1:
            return np.zeros(1, dtype=bool)
        half = len(mats) // 2
        return np.concatenate((_cholesky_exists(mats[:half]), _cholesky_exists(mats[half:])))


@dataclass(frozen=True)
class Quality:
    """Covariance and identifiability figures derived from one information matrix."""

    covariance: np.ndarray        # SI units
    excitation: np.ndarray        # SI regressor units
    condition_number: float
    identifiable: tuple[bool, ...]
    regressor_rms: np.ndarray | None = None   # SI regressor units, RMS over the (weighted) samples


def quality_from_information(info_scaled: np.ndarray, n_eff: float, sigma2: float, scales: np.ndarray,
                             min_excitation: np.ndarray) -> Quality:
    """Figures from the information matrix of the scaled regressors phi_s = phi / scales (quality_batch)."""
    return quality_batch(np.asarray(info_scaled, dtype=np.float64)[None], np.array([n_eff], dtype=np.float64),
                         np.array([sigma2], dtype=np.float64), scales, min_excitation)[0]


def quality_batch(info_scaled: np.ndarray, n_eff: np.ndarray, sigma2: np.ndarray, scales: np.ndarray,
                  min_excitation: np.ndarray) -> list[Quality]:
    """``Quality`` of each of K information matrices (K, p, p) of the scaled regressors, in batched calls.

    With A = (I + I^T) / 2 + eps I (eps = max(1e-13 max_j A_jj, 1e-300), a tiny ridge that keeps the
    inverse finite when a regressor is not excited at all, e.g. xdot = 0 on a noise-free plateau: that
    parameter then gets a huge variance and ~0 excitation, not a crash):

        covariance (SI) = make_spd(sigma2 A^-1 / (scales scales^T))
        excitation_j    = scales_j / sqrt(n_eff (A^-1)_jj),   identifiable_j: excitation_j >= min_excitation_j
        regressor_rms_j = scales_j sqrt(A_jj / n_eff)
        condition       = ||C||_1 ||C^-1||_1,  C = D^-1 A_S D^-1,  D = diag(A_S)^1/2

    where A_S is A restricted to the identifiable parameters S (all of them when S is empty): an
    unexcited parameter is reported as not identifiable instead of as ill-conditioning.
    """
    info = np.asarray(info_scaled, dtype=np.float64)
    info = 0.5 * (info + info.swapaxes(1, 2))
    p = info.shape[1]
    ridge = np.maximum(np.diagonal(info, axis1=1, axis2=2).max(axis=1) * 1e-13, 1e-300)
    ridged = info + np.eye(p) * ridge[:, None, None]
    inv = np.linalg.inv(ridged)
    diag_inv = np.maximum(np.diagonal(inv, axis1=1, axis2=2), 1e-300)
    excitation = scales / np.sqrt(np.maximum(n_eff, 1e-12)[:, None] * diag_inv)
    identifiable = excitation >= min_excitation
    cond = _condition_numbers(ridged, inv, identifiable)
    cov = make_spd_batch(np.asarray(sigma2, dtype=np.float64)[:, None, None] * inv / np.outer(scales, scales))
    rms = scales * np.sqrt(np.diagonal(info, axis1=1, axis2=2).clip(0) / np.maximum(n_eff, 1e-12)[:, None])
    return [Quality(covariance=c, excitation=e, condition_number=k, identifiable=tuple(i), regressor_rms=r)
            for c, e, k, i, r in zip(cov, excitation, cond.tolist(), identifiable.tolist(), rms)]


def _condition_numbers(ridged: np.ndarray, inv: np.ndarray, identifiable: np.ndarray) -> np.ndarray:
    """Correlation-normalised 1-norm condition numbers over each row's identifiable subset.

    Rows are grouped by identifiability pattern: rows with all or no parameters identifiable use the
    whole matrix and its inverse; the others invert their sub-block, one batched call per pattern.
    """
    cond = np.empty(len(ridged))
    whole = identifiable.all(axis=1) | ~identifiable.any(axis=1)
    cond[whole] = _correlation_condition(ridged[whole], inv[whole])
    partial = ~whole
    if not partial.any():
        return cond
    for pattern in np.unique(identifiable[partial], axis=0):
        rows = partial & (identifiable == pattern).all(axis=1)
        sub = np.flatnonzero(pattern)
        block = ridged[rows][:, sub][:, :, sub]
        cond[rows] = _correlation_condition(block, np.linalg.inv(block))
    return cond


def _correlation_condition(block: np.ndarray, block_inv: np.ndarray) -> np.ndarray:
    """||C||_1 ||C^-1||_1 per matrix, C = D^-1 B D^-1, C^-1 = D B^-1 D, D = diag(B)^1/2 (max column sums)."""
    d = np.sqrt(np.diagonal(block, axis1=1, axis2=2))
    dd = d[:, :, None] * d[:, None, :]
    corr = np.abs(block / dd)
    corr_inv = np.abs(block_inv * dd)
    return corr.sum(axis=1).max(axis=1) * corr_inv.sum(axis=1).max(axis=1)


#: largest share of the RMS force an unidentifiable parameter may carry in a valid estimate
MAX_UNEXCITED_SHARE = 0.05


def verdict(names: tuple[str, ...], values: np.ndarray, quality: Quality, samples: float, min_samples: float,
            max_condition: float, force_rms: float | None = None) -> tuple[bool, str]:
    """The shared validity rule: enough samples, stiffness excited and significantly positive
    (k > 3 sigma_k), well conditioned.

    Damping that is not identifiable does not invalidate the stiffness (it is reported separately),
    unless it carries more than ``MAX_UNEXCITED_SHARE`` of the force (|theta_j| rms(phi_j) > share
    rms(F), with ``force_rms`` given): then an unexcited regressor is fitting drift or model mismatch
    (spec S6, a creeping plateau) and the stiffness cannot be trusted either.
    """
    if samples < min_samples:
        return False, f'warming up: {samples:.0f} of {min_samples:.0f} samples'
    if not all(map(math.isfinite, np.asarray(values, dtype=np.float64).tolist())):
        return False, 'non-finite estimate'
    i_k = names.index('stiffness')
    k = values[i_k]
    if not quality.identifiable[i_k]:
        return False, 'stiffness not excited (no deformation)'
    if k <= 0:
        return False, f'non-physical stiffness {k:.4g} N/m'
    sigma_k = math.sqrt(max(float(quality.covariance[i_k, i_k]), 0.0))
    if k <= 3.0 * sigma_k:
        return False, f'stiffness {k:.4g} N/m not significantly above zero (sigma {sigma_k:.3g} N/m)'
    if not quality.condition_number <= max_condition:
        return False, f'ill-conditioned regressor (condition {quality.condition_number:.3g})'
    if force_rms and quality.regressor_rms is not None:
        for j, name in enumerate(names):
            if quality.identifiable[j]:          # only an unexcited parameter's share of the force counts
                continue
            share = abs(float(values[j])) * float(quality.regressor_rms[j]) / force_rms
            if share > MAX_UNEXCITED_SHARE:
                return False, (f'{name} is not identifiable yet carries {share:.0%} of the force '
                               '(drift or model mismatch): estimate not trusted')
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
