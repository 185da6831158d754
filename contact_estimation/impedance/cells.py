"""Sufficient statistics per (direction, segment, cell) and what the batch and online fits derive from them.

Every (segment, direction) bin is cut into ``CELLS`` equal position cells. For each cell the Gram matrix of

    z = [a, v, x, 1, r, u^2, u^3, F] / scale  (r: the friction transient column of :mod:`.conditioning`,
                                               u = (x - x_centre) / half width of the segment)

is kept (the batch fit sums it once, the recursive fit with forgetting). From them:

* :func:`friction_coefficient` - one Coulomb coefficient gamma (N) for the friction transient column, shared
  by every usable bin (Frisch-Waugh: r and F are projected off each bin's own [a v x 1] and pooled):
  gamma = sum_b r_perp,b^T F_perp,b / sum_b r_perp,b^T r_perp,b. Its estimate is uncorrelated with each bin's
  [a v x 1] fit (r_perp is orthogonal to that bin's columns), so a bin's covariance gains
  beta_b beta_b^T var(gamma) with beta_b = A_b^-1 X_b^T r_b (exact for a model linear in its parameters).
* :func:`corrected` - a bin's [a v x 1] normal equations with gamma r removed from F.
* :func:`split_test` - the within-segment change test: the bin's cells split at the best inner cell edge,
  both sides fitted on their own; T = (RSS_whole - RSS_left - RSS_right) / (sigma^2 c) (c samples per
  independent residual) is chi^2 with 4 degrees of freedom when the segment's parameters are constant. When
  T exceeds its threshold the parameters vary inside the segment: the variation d = theta_left - theta_right
  enters the covariance as (d/2)(d/2)^T (:func:`variation_term`; the published value is an average over the
  segment, its truth lies between the sides), and a *material* change - the stiffness changes by more than
  ``MATERIAL_CHANGE`` (a step, a detent, a stop, a kink within the filter's reach) - flags the bin
  ("parameters change inside the segment"), with k on both sides.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import chi2

CELLS = 4
NZ = 8                    # a, v, x, 1, r, u^2, u^3, F
_R, _Q, _Q3, _F = 4, 5, 6, 7
#: columns of z: the friction transient r and the force F (public for the recursive HAC sums)
COLUMN_R, COLUMN_F = _R, _F
#: a significant split whose stiffness changes by more than this share flags the bin (a step, detent, stop);
#: a smaller significant change is kept with the variation term (d/2)(d/2)^T in the covariance
MATERIAL_CHANGE = 0.25
_IU = np.triu_indices(NZ)
#: family-wise false-alarm probability of the split test per bin (Bonferroni over the CELLS - 1 cuts)
SPLIT_ALPHA = 1e-3


def split_threshold(cells: int = CELLS, alpha: float = SPLIT_ALPHA) -> float:
    return float(chi2.isf(alpha / max(cells - 1, 1), 4))


def cell_of(x: np.ndarray, edges: np.ndarray, seg: np.ndarray, cells: int = CELLS) -> np.ndarray:
    """Cell (0..cells-1) of every sample inside its segment ``seg`` (equal position cells)."""
    lo, hi = edges[seg], edges[seg + 1]
    return np.clip(((x - lo) / (hi - lo) * cells).astype(np.int64), 0, cells - 1)


def accumulate(G: np.ndarray, index: np.ndarray, z: np.ndarray, w: np.ndarray | None = None) -> None:
    """G[index] += w z z^T (G: (K, 6, 6), index (n,), z (n, 6)), vectorised with bincounts."""
    K = len(G)
    ww = np.ones(len(index)) if w is None else w
    for i, j in zip(*_IU):
        s = np.bincount(index, weights=ww * z[:, i] * z[:, j], minlength=K)
        G[:, i, j] += s
        if i != j:
            G[:, j, i] += s


def corrected(G: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, b, yy, n): normal equations of [a v x 1] for the target F - gamma r (scaled units)."""
    A = G[..., :4, :4]
    b = G[..., :4, _F] - gamma * G[..., :4, _R]
    yy = G[..., _F, _F] - 2.0 * gamma * G[..., _R, _F] + gamma * gamma * G[..., _R, _R]
    return A, b, yy, G[..., 3, 3]


def friction_coefficient(G: np.ndarray, usable: np.ndarray, ridge: np.ndarray | None = None
                         ) -> tuple[float, float, np.ndarray]:
    """(gamma, sum of r_perp^2, beta (B, 4)) over the bins G (B, 6, 6) marked ``usable``; ``ridge`` (B,) adds
    ridge * I to each A (the recursive fit's prior). gamma = 0 when no bin sees a reversal transient."""
    B = len(G)
    beta = np.zeros((B, 4))
    num = den = 0.0
    for b in range(B):
        A = G[b, :4, :4] + (0.0 if ridge is None else ridge[b]) * np.eye(4)
        try:
            sol = np.linalg.solve(A, np.column_stack([G[b, :4, _R], G[b, :4, _F]]))
        except np.linalg.LinAlgError:
            continue
        beta[b] = sol[:, 0]
        if usable[b]:
            den += G[b, _R, _R] - G[b, :4, _R] @ sol[:, 0]
            num += G[b, _R, _F] - G[b, :4, _R] @ sol[:, 1]
    rel = den / max(float(np.sum(G[usable, _R, _R])), 1e-300) if np.any(usable) else 0.0
    if not (den > 0 and rel > 1e-9):
        return 0.0, 0.0, beta
    return float(num / den), float(den), beta


def _fit(G: np.ndarray, gamma: float) -> tuple[np.ndarray, float, float]:
    A, b, yy, n = corrected(G, gamma)
    th = np.linalg.lstsq(A, b, rcond=None)[0]
    return th, max(float(yy - b @ th), 0.0), float(n)


def split_test(Gc: np.ndarray, gamma: float, correlation: float, min_n: float) -> dict:
    """The within-segment change test of one bin from its cells' Gram matrices Gc (cells, 6, 6), scaled units.
    Returns {'T': statistic (0 when no split has ``min_n`` samples on both sides), 'cut': cell edge index,
    'theta_left', 'theta_right' (scaled units)}."""
    C = len(Gc)
    whole = Gc.sum(axis=0)
    _, rss_all, n_all = _fit(whole, gamma)
    best = {'T': 0.0, 'cut': 0, 'theta_left': np.full(4, np.nan), 'theta_right': np.full(4, np.nan)}
    for k in range(1, C):
        L, R = Gc[:k].sum(axis=0), Gc[k:].sum(axis=0)
        if L[3, 3] < min_n or R[3, 3] < min_n:
            continue
        tl, rl, _ = _fit(L, gamma)
        tr, rr, _ = _fit(R, gamma)
        dof = n_all - 8.0
        if dof <= 0:
            continue
        s2 = (rl + rr) / dof
        if not s2 > 0:
            continue
        T = (rss_all - rl - rr) / (s2 * max(correlation, 1.0))
        if T > best['T']:
            best = {'T': float(T), 'cut': k, 'theta_left': tl, 'theta_right': tr}
    return best


def segment_curvature(x: np.ndarray, edges: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """(u^2, u^3) with u = (x - centre) / half width of each sample's segment (n, 2)."""
    c = 0.5 * (edges[seg] + edges[seg + 1])
    h = 0.5 * (edges[seg + 1] - edges[seg])
    u = (x - c) / h
    return np.column_stack([u * u, u * u * u])


#: chi^2(2) threshold of the curvature test (false-alarm probability 1e-3)
CURVATURE_THRESHOLD = float(chi2.isf(1e-3, 2))


def curvature_test(G: np.ndarray, gamma: float, correlation: float) -> dict:
    """Omitted-curvature check of one bin (Gram G (8, 8), scaled): refit with the columns u^2 and u^3 (a
    spring whose stiffness varies smoothly inside the segment, hardening or asymmetric). {'T': chi^2(2)
    statistic, 'shift': theta_linear - theta_augmented[:4] (scaled units)}: when T exceeds
    CURVATURE_THRESHOLD the shift is the model error the linear segment model carries into m, b, k (k: the
    gap between the segment's secant and its local slope at the centre), and enters the covariance as
    shift shift^T."""
    idx = [0, 1, 2, 3, _Q, _Q3]
    A5 = G[np.ix_(idx, idx)]
    b5 = G[idx, _F] - gamma * G[idx, _R]
    A, b, yy, n = corrected(G, gamma)
    try:
        th4 = np.linalg.solve(A, b)
        th5 = np.linalg.solve(A5, b5)
    except np.linalg.LinAlgError:
        return {'T': 0.0, 'shift': np.zeros(4)}
    rss4 = max(float(yy - b @ th4), 0.0)
    rss5 = max(float(yy - b5 @ th5), 0.0)
    dof = float(n) - 6.0
    if not (dof > 0 and rss5 > 0):
        return {'T': 0.0, 'shift': np.zeros(4)}
    T = (rss4 - rss5) / (rss5 / dof * max(correlation, 1.0))
    return {'T': float(T), 'shift': th4 - th5[:4]}


def variation_term(split: dict) -> np.ndarray:
    """(d/2)(d/2)^T, d = theta_left - theta_right (the split's units)."""
    d = 0.5 * (np.asarray(split['theta_left'], dtype=float) - np.asarray(split['theta_right'], dtype=float))
    return np.outer(d, d) if np.all(np.isfinite(d)) else np.zeros((4, 4))


def material(split: dict, share: float = MATERIAL_CHANGE) -> bool:
    """The stiffness of the two sides differs by more than ``share`` of the larger one."""
    kl, kr = float(split['theta_left'][2]), float(split['theta_right'][2])
    return abs(kl - kr) > share * max(abs(kl), abs(kr))
