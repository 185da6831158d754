"""Adaptive segmentation (wahl_colton.md B4 item 7): where should the segment edges be?

The position range is cut into ``cells`` equal cells; every run of consecutive cells is a candidate
segment. For a candidate, both directions of travel are fitted with [a v x 1] from the cells' summed
information (X^T X, X^T F, F^T F, so every candidate costs one 4x4 solve per direction), and dynamic
programming picks the partition minimising the BIC-type score

    sum over segments of RSS / (sigma^2 c)  +  8 log(n / c)  per segment (4 parameters x 2 directions),

sigma^2 being the residual variance of the finest partition (every cell its own segment) and c the samples
per independent residual. Segments with
fewer than ``min_samples`` samples per direction are not allowed. Edges then fall where the mechanism's
behaviour changes (a spring's kink, a detent), not on a uniform grid.
"""
from __future__ import annotations

import numpy as np

from .segmented import regressor, segment_index, uniform_edges


def adaptive_edges(x, v, a, F, lo: float, hi: float, *, cells: int = 48, v_min: float = 5e-3,
                   min_samples: int = 200, penalty: float | None = None, max_segments: int | None = None,
                   correlation: float = 1.0, r=None, quasi_static: bool = False) -> np.ndarray:
    """Edges (m) of the BIC-optimal partition of [lo, hi] into runs of ``cells`` equal cells.
    ``correlation``: samples per independent residual (low-passed records: f_s / (2 f_c)); RSS and n are
    divided by it, otherwise the correlated residuals of a filtered record over-segment it. ``r``: the
    friction transient column (:mod:`.conditioning`), fitted alongside [a v x 1] in every candidate so that
    filtered friction steps do not look like a change of the mechanism. ``quasi_static``: candidates are
    fitted with [x 1] only (a force curve, :mod:`.quasistatic`; penalty 4 log(n / c) per segment)."""
    x, v, a, F = (np.asarray(y, dtype=float).ravel() for y in (x, v, a, F))
    r = np.zeros(len(x)) if r is None else np.asarray(r, dtype=float).ravel()
    grid = uniform_edges(lo, hi, cells)
    ok = np.isfinite(x) & np.isfinite(v) & np.isfinite(a) & np.isfinite(F) & (np.abs(v) > v_min)
    cell = np.full(len(x), -1)
    cell[ok] = segment_index(x[ok], grid)
    ok &= cell >= 0
    if ok.sum() < 8:
        raise ValueError('too few moving samples inside [lo, hi] to place edges')
    if quasi_static:
        X = np.column_stack([x[ok], np.ones(int(ok.sum()))])
    else:
        X = np.column_stack([regressor(x[ok], v[ok], a[ok]), r[ok]])
    scale = np.sqrt(np.mean(X ** 2, axis=0))
    scale = np.where(scale > 0, scale, 1.0)
    X = X / scale
    y = F[ok]
    d = np.where(v[ok] > 0, 0, 1)
    c = cell[ok]
    # per (direction, cell) sufficient statistics, cumulated over cells
    p = X.shape[1]
    A = np.zeros((2, cells, p, p))
    rv = np.zeros((2, cells, p))
    yy = np.zeros((2, cells))
    n = np.zeros((2, cells))
    for k in (0, 1):
        sel = d == k
        np.add.at(A[k], c[sel], X[sel, :, None] * X[sel, None, :])
        np.add.at(rv[k], c[sel], X[sel] * y[sel, None])
        np.add.at(yy[k], c[sel], y[sel] ** 2)
        np.add.at(n[k], c[sel], 1.0)
    zero = np.zeros((2, 1))
    cA = np.concatenate([np.zeros((2, 1, p, p)), np.cumsum(A, axis=1)], axis=1)
    cr = np.concatenate([np.zeros((2, 1, p)), np.cumsum(rv, axis=1)], axis=1)
    cyy = np.concatenate([zero, np.cumsum(yy, axis=1)], axis=1)
    cn = np.concatenate([zero, np.cumsum(n, axis=1)], axis=1)

    def rss(i: int, j: int) -> float:
        """Both directions' residual sum of squares of cells [i, j); inf when a direction is too sparse."""
        total = 0.0
        for k in (0, 1):
            if cn[k, j] - cn[k, i] < max(min_samples, 5):
                return np.inf
            Ak, rk = cA[k, j] - cA[k, i], cr[k, j] - cr[k, i]
            th = np.linalg.lstsq(Ak, rk, rcond=None)[0]
            total += max(cyy[k, j] - cyy[k, i] - th @ rk, 0.0)
        return total

    fine = [rss(i, i + 1) for i in range(cells)]
    finite = [f for f in fine if np.isfinite(f)]
    n_fine = sum(cn[k, i + 1] - cn[k, i] for k in (0, 1) for i in range(cells) if np.isfinite(fine[i]))
    npar = 4 if quasi_static else 8                   # parameters per segment, both directions
    if finite and n_fine > npar * len(finite):
        sigma2 = sum(finite) / (n_fine - npar * len(finite))
    else:                                    # cells too sparse to be segments themselves: one segment's fit
        sigma2 = rss(0, cells) / max(len(y) - npar, 1)
    if not (np.isfinite(sigma2) and sigma2 > 0):
        raise ValueError('cannot estimate the residual variance: not enough samples per direction')
    corr = max(float(correlation), 1.0)
    sigma2 *= corr
    pen = (4.0 if quasi_static else 8.0) * np.log(len(y) / corr) if penalty is None else float(penalty)
    max_seg = max_segments or cells
    best = np.full((max_seg + 1, cells + 1), np.inf)
    back = np.zeros((max_seg + 1, cells + 1), dtype=int)
    best[0, 0] = 0.0
    cost = {}
    for m in range(1, max_seg + 1):
        for j in range(1, cells + 1):
            for i in range(m - 1, j):
                if not np.isfinite(best[m - 1, i]):
                    continue
                if (i, j) not in cost:
                    cost[(i, j)] = rss(i, j) / sigma2 + pen
                total = best[m - 1, i] + cost[(i, j)]
                if total < best[m, j]:
                    best[m, j], back[m, j] = total, i
    m = int(np.argmin(best[:, cells]))
    if not np.isfinite(best[m, cells]):
        raise ValueError(f'no partition gives every segment {min_samples} samples per direction')
    cuts = [cells]
    while m > 0:
        cuts.append(back[m, cuts[-1]])
        m -= 1
    return grid[np.array(cuts[::-1])]
