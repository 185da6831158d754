"""Least-squares cross-checks on the linear regressor F_a = Y theta (spec sec. 4.5).

``batch_wls``: theta = argmin sum (F - Y theta)^T W (F - Y theta) restricted to the excited subspace (the
minimum-norm solution relative to a reference theta_ref, so unexcited parameters stay at theta_ref).
``RecursiveLS``: information-form RLS with a prior (equal to a Kalman filter on a constant theta).
"""
from __future__ import annotations

import numpy as np


def batch_wls(Y: np.ndarray, F: np.ndarray, R_e=None, theta_ref=None, scale=None, rtol: float = 1e-9):
    """(theta, covariance, rank) from stacked Y (N, m, n), F (N, m); non-finite rows are skipped."""
    n = Y.shape[-1]
    m = Y.shape[1]
    ok = np.isfinite(Y).all(axis=(1, 2)) & np.isfinite(F).all(axis=1)
    R = np.eye(m) if R_e is None else (np.diag(R_e) if np.ndim(R_e) == 1 else np.asarray(R_e))
    Wh = np.linalg.cholesky(np.linalg.inv(R)).T           # W = Wh^T Wh
    ref = np.zeros(n) if theta_ref is None else np.asarray(theta_ref, float)
    sc = np.ones(n) if scale is None else np.asarray(scale, float)
    A = np.einsum('ij,kjl->kil', Wh, Y[ok]).reshape(-1, n) * sc
    b = np.einsum('ij,kj->ki', Wh, F[ok] - Y[ok] @ ref).reshape(-1)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    rank = int((s > rtol * s[0]).sum()) if len(s) and s[0] > 0 else 0
    x = Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])
    cov = (Vt[:rank].T / s[:rank] ** 2) @ Vt[:rank]
    return ref + sc * x, sc[:, None] * cov * sc[None, :], rank


class RecursiveLS:
    """theta_k = theta_{k-1} + P Y^T R^-1 (F - Y theta), P^-1 += Y^T R^-1 Y (block per sample)."""

    def __init__(self, theta0, P0, R_e, forgetting: float = 1.0):
        self.theta = np.asarray(theta0, float).copy()
        self.P = np.diag(P0) if np.ndim(P0) == 1 else np.asarray(P0, float).copy()
        self.R = np.diag(R_e) if np.ndim(R_e) == 1 else np.asarray(R_e, float)
        self.lam = forgetting
        self.rejected = 0

    def update(self, Y: np.ndarray, F: np.ndarray) -> bool:
        if not (np.isfinite(Y).all() and np.isfinite(F).all()):
            self.rejected += 1
            return False
        P = self.P / self.lam
        S = Y @ P @ Y.T + self.R
        K = np.linalg.solve(S, Y @ P).T
        self.theta = self.theta + K @ (F - Y @ self.theta)
        P = P - K @ S @ K.T
        self.P = 0.5 * (P + P.T)
        return True

    def update_many(self, Y: np.ndarray, F: np.ndarray) -> None:
        for k in range(len(F)):
            self.update(Y[k], F[k])
