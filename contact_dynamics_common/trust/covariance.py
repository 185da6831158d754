"""Honest covariance of a least-squares-type estimate: the signal chain's own error included.

A published sigma computed as sigma_e^2 (X^T X)^-1 assumes white noise on the target only. Regressors built
by differentiation, filtering, interpolation or resampling carry errors that are larger and correlated. This
module gives the terms and one rule to combine them; each estimator states which terms it uses.

Terms (all in parameter units squared, (p, p)):

* **own**: the estimator's own covariance (white-noise / Kalman P / RLS P).
* **sandwich** (:func:`sandwich`): residual-based Newey-West (HAC) covariance
  (X^T X)^-1 S (X^T X)^-1, S = sum_{|l| <= L} (1 - |l|/(L+1)) sum_t x_t e_t e_{t-l} x_{t-l}^T, with the lag L
  from the residuals' own correlation length (``trust.checks.correlation_lags``): residuals coloured by a
  filter, by model error or by regressor noise are counted at their real size.
* **eiv** (:func:`eiv_bias`): errors in variables. Regressors observed as X + E with E zero-mean, per-row
  error covariance Sigma_E (e.g. white displacement noise sigma_x through the derivative kernels:
  Sigma_E[a, b] = sigma_x^2 sum_j w_a,j w_b,j) bias least squares by
  bias = -(X^T X)^-1 n Sigma_E theta  (first order; attenuation towards zero); the term is bias bias^T.
  (The *variance* the regressor noise adds is already in the residuals, hence in the sandwich.)
* **conditioning** (:func:`conditioning`): how much the estimate moves between two defensible
  differentiator bandwidths (``signal.conditioning.choose_bandwidth`` gives both): d = theta_a - theta_b,
  term d d^T. A proxy for the bias of the bandwidth choice that no noise model contains.
* **bias** (:func:`bias_term`): any other gap to a consistent reference fit of the same data (an
  instrumental-variables or parallel-filtered fit): g g^T plus the reference's own covariance.

:func:`combine` (the one rule): C = D (base) D + sum of the additive terms, where base is the sandwich when
given, else own, and D = diag(max(1, sigma_own / sigma_base)) keeps every sigma at least the estimator's own;
the additive terms are eiv, conditioning and bias. The result is made symmetric positive definite
(eigenvalue floor). :class:`HonestCovariance` keeps the terms for the published extras and the documentation
(``as_dict()`` gives per-parameter sigma of each term).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .checks import hac_covariance

__all__ = ['HonestCovariance', 'sandwich', 'eiv_bias', 'conditioning', 'bias_term', 'combine', 'spd',
           'kernel_error_covariance']


def spd(cov: np.ndarray, rel_floor: float = 1e-15) -> np.ndarray:
    """Symmetrised; eigenvalues floored at rel_floor x the largest (and > 0); non-finite -> 1e300 I."""
    c = np.asarray(cov, dtype=np.float64)
    c = 0.5 * (c + c.T)
    if not np.isfinite(c).all():
        return np.eye(len(c)) * 1e300
    try:
        np.linalg.cholesky(c)
        return c
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(c)
        top = max(float(w.max()), 1e-300)
        w = np.maximum(w, max(top * rel_floor, 1e-300))
        c = (v * w) @ v.T
        return 0.5 * (c + c.T)


def sandwich(X: np.ndarray, residuals: np.ndarray, *, lags: int | str | None = 'auto',
             weights: np.ndarray | None = None) -> np.ndarray:
    """Newey-West (HAC) covariance of the least squares of y on X with these residuals, in parameter units.
    Columns are scaled to unit RMS internally (numerics over decades of units)."""
    X = np.asarray(X, dtype=np.float64)
    scale = np.sqrt(np.maximum((X * X).mean(axis=0), 1e-300))
    cov = hac_covariance(X / scale, residuals, lags=lags, weights=weights)
    return cov / np.outer(scale, scale)


def eiv_bias(X: np.ndarray, theta: np.ndarray, error_covariance: np.ndarray) -> np.ndarray:
    """First-order errors-in-variables bias of least squares: -(X^T X / n)^-1 Sigma_E theta.

    ``X`` (n, p): the *observed* regressors; ``error_covariance`` (p, p): covariance of one row's errors
    Sigma_E (or (p,) variances, independent columns). The true-regressor moment is estimated as
    X^T X / n - Sigma_E (clamped to stay positive definite)."""
    X = np.asarray(X, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    S = np.asarray(error_covariance, dtype=np.float64)
    if S.ndim == 1:
        S = np.diag(S)
    n = max(len(X), 1)
    M = X.T @ X / n
    true = M - S
    w = np.linalg.eigvalsh(0.5 * (true + true.T))
    if not w.min() > 1e-6 * max(w.max(), 1e-300):
        true = M                        # the error moment rivals the signal: report the bias against M
    return -np.linalg.solve(true, S @ theta)


def kernel_error_covariance(weights: dict[int, np.ndarray], sigma_x: float, orders: tuple[int, ...]) -> np.ndarray:
    """Sigma_E of regressor columns built by linear kernels w_o (one row of weights per order) from one
    signal with white noise sigma_x: Sigma_E[a, b] = sigma_x^2 sum_j w_a,j w_b,j."""
    W = np.stack([np.asarray(weights[o], dtype=np.float64) for o in orders])
    return float(sigma_x) ** 2 * (W @ W.T)


def conditioning(theta_a: np.ndarray, theta_b: np.ndarray) -> np.ndarray:
    """d d^T with d = theta_a - theta_b: the estimate's move between two defensible bandwidths."""
    d = np.asarray(theta_a, dtype=np.float64) - np.asarray(theta_b, dtype=np.float64)
    return np.outer(d, d)


def bias_term(theta: np.ndarray, reference: np.ndarray, reference_covariance: np.ndarray | None = None) -> np.ndarray:
    """g g^T (+ the reference's covariance) with g = theta - reference: the gap to a consistent fit."""
    g = np.asarray(theta, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    out = np.outer(g, g)
    return out if reference_covariance is None else out + np.asarray(reference_covariance, dtype=np.float64)


@dataclass(frozen=True)
class HonestCovariance:
    """The combined covariance and the terms it came from (names -> (p, p))."""
    covariance: np.ndarray
    terms: dict = field(default_factory=dict)

    @property
    def sigma(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diagonal(self.covariance), 0.0))

    def inflation(self) -> np.ndarray:
        """Per parameter: combined sigma / own sigma (>= 1)."""
        own = self.terms.get('own')
        if own is None:
            return np.ones(len(self.covariance))
        return self.sigma / np.sqrt(np.maximum(np.diagonal(own), 1e-300))

    def as_dict(self, names: tuple[str, ...]) -> dict:
        """{term: {name: sigma}} plus 'combined'."""
        out = {k: {n: float(np.sqrt(max(v[i, i], 0.0))) for i, n in enumerate(names)} for k, v in self.terms.items()}
        out['combined'] = {n: float(s) for n, s in zip(names, self.sigma)}
        return out


def combine(own: np.ndarray, *, sandwich: np.ndarray | None = None, eiv: np.ndarray | None = None,
            conditioning: np.ndarray | None = None, bias: np.ndarray | None = None) -> HonestCovariance:
    """The one combination rule (module docstring): base (sandwich, else own) scaled so that no sigma is below
    the estimator's own, plus the additive eiv (a bias vector or a (p, p) term), conditioning and bias terms."""
    own = np.asarray(own, dtype=np.float64)
    terms = {'own': own}
    base = own
    if sandwich is not None:
        terms['sandwich'] = np.asarray(sandwich, dtype=np.float64)
        base = terms['sandwich']
        s_own = np.sqrt(np.maximum(np.diagonal(own), 0.0))
        s_base = np.sqrt(np.maximum(np.diagonal(base), 1e-300))
        f = np.maximum(1.0, s_own / s_base)
        base = base * np.outer(f, f)
    total = base.copy()
    for name, term in (('eiv', eiv), ('conditioning', conditioning), ('bias', bias)):
        if term is None:
            continue
        term = np.asarray(term, dtype=np.float64)
        if term.ndim == 1:
            term = np.outer(term, term)
        terms[name] = term
        total = total + term
    return HonestCovariance(spd(total), terms)
