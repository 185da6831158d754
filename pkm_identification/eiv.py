"""Errors-in-variables weighting for the force model (effective-variance method).

With noisy states x = (q, qd, qdd) + n, n ~ (0, diag(sigma^2)) and exact or nearly exact forces, the equation error
of sample k is e_k = F_k - Y(x_k) theta ~ -G_k n_k with G_k = d(Y(x) theta)/dx (6 x 18), so its covariance is

    R_k = R_F + G_k diag(sigma^2) G_k^T          [N^2]

(R_F the force-measurement noise). Few noisy channels drive all six strut equations, so R_k is strongly
correlated across struts; weighting each sample by R_k^-1 (in the UKF: R_k as that sample's measurement covariance)
discounts the directions the state noise corrupts. A scalar R^e ignores that structure and leaves the noise
flowing through the near-collinear m_e / m_b / m_p columns. G_k is evaluated at the prior theta_0 (the weighting
needs only the error's directions and relative size, not the exact parameters).
"""
from __future__ import annotations

import numpy as np

from . import dynamics as D
from .geometry import Machine

CHANNELS = ('q', 'qd', 'qdd')


def uniform_noise_std(level: float, q, qd, qdd) -> np.ndarray:
    """(3, 6) standard deviations of uniform noise +/-(level x channel range): sigma = level * range / sqrt(3)."""
    return np.stack([level * np.ptp(np.asarray(a, float), axis=0) for a in (q, qd, qdd)]) / np.sqrt(3.0)


def state_jacobian(m: Machine, theta, q, qd, qdd, sigma, *, friction: bool = False,
                   friction_model: str = 'continuous', rel_step: float = 1e-6) -> np.ndarray:
    """G_k diag(sigma) (N, 6, C) for the C channels with sigma > 0 by forward differences (step rel_step x
    max(1, |x|max)); exact for qdd, in which Y is linear."""
    theta = np.asarray(theta, float)
    sigma = np.asarray(sigma, float)
    if sigma.shape != (3, 6) or not np.isfinite(sigma).all() or (sigma < 0).any():
        raise ValueError(f'sigma must be a finite, non-negative (3, 6) array (q, qd, qdd x 6), got {sigma.shape}')
    x = {c: np.asarray(a, float) for c, a in zip(CHANNELS, (q, qd, qdd))}

    def f(a):
        return D.regressor(m, a['q'], a['qd'], a['qdd'], friction=friction, friction_model=friction_model) @ theta

    cols = []
    base = f(x) if (sigma > 0).any() else None
    for i, c in enumerate(CHANNELS):
        for j in np.flatnonzero(sigma[i] > 0):
            h = rel_step * max(1.0, float(np.abs(x[c][:, j]).max()))
            hi = dict(x)
            hi[c] = x[c].copy()
            hi[c][:, j] += h
            cols.append((f(hi) - base) / h * sigma[i, j])
    n = len(x['q'])
    return np.stack(cols, axis=-1) if cols else np.zeros((n, 6, 0))


def equation_error_cov(m: Machine, theta, q, qd, qdd, sigma, force_var=1e-4, **kw) -> np.ndarray:
    """R_k = force_var I + G_k diag(sigma^2) G_k^T, (N, 6, 6) [N^2], symmetric positive definite for
    force_var > 0 (force_var: scalar or (6,) force-measurement variance)."""
    fv = np.broadcast_to(np.asarray(force_var, float), (6,))
    if not (np.isfinite(fv).all() and (fv > 0).all()):
        raise ValueError('force_var must be finite and > 0')
    G = state_jacobian(m, theta, q, qd, qdd, sigma, **kw)
    R = G @ np.swapaxes(G, 1, 2)
    R = 0.5 * (R + np.swapaxes(R, 1, 2))
    R[:, np.arange(6), np.arange(6)] += fv
    return R
