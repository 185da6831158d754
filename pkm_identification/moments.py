"""Streaming block moments of the force model F_k = Y_k theta + e_k, for the honest sigma and the
identifiability rule of pkm_identifier (issue 14).

Per block of ``block`` used samples (Y_k (6, p) regressor, F_k (6,) forces [N], W_k (6, 6) = R_k^-1 the
weight the UKF gives the sample):

    A_b = sum Y_k^T W_k Y_k        information of the block (what the UKF counts)
    c_b = sum Y_k^T W_k F_k
    f_b = sum F_k^T W_k F_k           (weighted residual sum of squares at theta: f - 2 theta^T c + theta^T A theta)

Scores at theta: g_b = c_b - A_b theta. The long-run (HAC) covariance of the summed score is estimated from
the block scores with Bartlett weights over ``hac_lags`` neighbouring blocks (batch means):

    M = sum_{|l| <= L} (1 - |l| / (L + 1)) sum_b (g_b - gbar_b)(g_{b+l} - gbar_{b+l})^T ,  gbar_b = n_b g / n

so residuals that are coloured (friction, derivative error, a filter) or larger than measurement_std are
counted at their real size. Blocks close at fixed sample counts; beyond ``max_blocks`` neighbours merge
pairwise and the block length doubles. Everything depends only on the sequence of samples, never on how it
was batched between updates (live node, run-bag and chunked replay agree).
"""
from __future__ import annotations

import numpy as np


class BlockMoments:
    def __init__(self, p: int, block: int = 100, max_blocks: int = 256):
        self.p = int(p)
        self.block0 = int(block)
        self.max_blocks = int(max_blocks)
        self.reset()

    def reset(self) -> None:
        p = self.p
        self.block = self.block0
        self.A = np.zeros((0, p, p))
        self.c = np.zeros((0, p))
        self.f = np.zeros(0)
        self.n = np.zeros(0, np.int64)
        self._open = [np.zeros((p, p)), np.zeros(p), 0.0, 0]

    # ------------------------------------------------------------------ input
    def add(self, Y: np.ndarray, F: np.ndarray, W: np.ndarray) -> None:
        """Y (N, 6, p), F (N, 6), W (6, 6) or (N, 6, 6), in sample order."""
        N = len(Y)
        if N == 0:
            return
        W = np.broadcast_to(W, (N, 6, 6))
        WY = W @ Y                                             # (N, 6, p)
        a = np.einsum('nki,nkj->nij', Y, WY)
        c = np.einsum('nki,nk->ni', WY, F)
        s = np.einsum('nk,nkl,nl->n', F, W, F)
        i = 0
        while i < N:
            room = self.block - self._open[3]
            j = min(N, i + room)
            self._open[0] = self._open[0] + a[i:j].sum(0)
            self._open[1] = self._open[1] + c[i:j].sum(0)
            self._open[2] = self._open[2] + s[i:j].sum(0)
            self._open[3] += j - i
            i = j
            if self._open[3] == self.block:
                self._close()

    def _close(self) -> None:
        A, c, f, n = self._open
        self.A = np.concatenate([self.A, A[None]])
        self.c = np.concatenate([self.c, c[None]])
        self.f = np.append(self.f, f)
        self.n = np.append(self.n, n)
        self._open = [np.zeros((self.p, self.p)), np.zeros(self.p), 0.0, 0]
        if len(self.n) > self.max_blocks:                       # merge neighbours, double the block
            k = len(self.n) // 2 * 2
            self.A = np.concatenate([self.A[:k:2] + self.A[1:k:2], self.A[k:]])
            self.c = np.concatenate([self.c[:k:2] + self.c[1:k:2], self.c[k:]])
            self.f = np.concatenate([self.f[:k:2] + self.f[1:k:2], self.f[k:]])
            self.n = np.concatenate([self.n[:k:2] + self.n[1:k:2], self.n[k:]])
            self.block *= 2

    # ------------------------------------------------------------------ output
    def blocks(self):
        """(A (B, p, p), c (B, p), f (B,), n (B,)) including the open block when it holds samples."""
        A, c, f, n = self._open
        if n:
            return (np.concatenate([self.A, A[None]]), np.concatenate([self.c, c[None]]),
                    np.append(self.f, f), np.append(self.n, n))
        return self.A, self.c, self.f, self.n

    @property
    def samples(self) -> int:
        return int(self.n.sum()) + self._open[3]

    def totals(self):
        A, c, f, n = self.blocks()
        return A.sum(0), c.sum(0), float(f.sum()), int(n.sum())

    def score_covariance(self, theta: np.ndarray, hac_lags: int = 2) -> tuple[np.ndarray, int]:
        """(M (p, p), number of blocks): the Bartlett-weighted batch-means long-run covariance of the summed
        score at ``theta`` (module docstring). Only closed blocks of full length count (a short open block
        would weigh its score wrongly)."""
        A, c, n = self.A, self.c, self.n
        B = len(n)
        if B == 0:
            return np.zeros((self.p, self.p)), 0
        g = c - np.einsum('bij,j->bi', A, theta)
        g = g - (n / n.sum())[:, None] * g.sum(0)
        M = g.T @ g
        for lag in range(1, min(hac_lags, B - 1) + 1):
            x = g[lag:].T @ g[:-lag]
            M += (1.0 - lag / (hac_lags + 1.0)) * (x + x.T)
        return 0.5 * (M + M.T), B
