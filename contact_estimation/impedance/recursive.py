"""Recursive (online) segmented least squares: one RLS with forgetting per (segment, direction) bin (B4 8).

Each bin holds its information in the exponentially weighted form that RLS computes recursively,

    A = lambda^n P0^-1 + sum_i lambda^(n-i) phi_i phi_i^T,  r = sum_i lambda^(n-i) phi_i F_i,  theta = A^-1 r,

with phi = [a v x 1] / scale (scaled units: 1 m/s^2, 1 cm/s, 1 mm, 1 N), P0 = alpha I and lambda applied once
per sample that falls in the bin (lambda = 1 - 1/(f_s T_mem): 0.999975 at 4 kHz for 10 s). A block of samples
is added at once with weights lambda^(B-1-rank) (vectorised bincounts), which is exactly the sequence of
RLS updates, so the estimate does not depend on how the stream was batched. The covariance is
sigma^2 A^-1 with sigma^2 the forgetting-weighted residual variance; kappa is that of the data information
(column-normalised, square root of the information's condition number).
"""
from __future__ import annotations

import numpy as np

from .segmented import (DIRECTIONS, KAPPA_REFUSE, KAPPA_WARN, ImpedanceProfile, segment_index)

SCALE = np.array([1.0, 0.01, 0.001, 1.0])
_IU = np.triu_indices(4)


class RecursiveSegmentedLS:
    def __init__(self, edges, forgetting: float = 0.999975, initial_covariance: float = 1e5,
                 v_min: float = 5e-3, n_min: int = 200, min_unique_fraction: float = 1e-2,
                 kappa_refuse: float = KAPPA_REFUSE, correlation: float = 1.0,
                 record_min_unique_fraction: float = 0.1):
        edges = np.asarray(edges, dtype=float)
        if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
            raise ValueError('edges must be finite and strictly increasing (>= 2 values)')
        if not 0 < forgetting <= 1:
            raise ValueError(f'forgetting factor must be in (0, 1], got {forgetting}')
        if not initial_covariance > 0:
            raise ValueError('initial covariance must be > 0')
        self.edges = edges
        self.nseg = len(edges) - 1
        self.lam = float(forgetting)
        self.alpha = float(initial_covariance)
        self.v_min, self.n_min = float(v_min), int(n_min)
        self.min_unique_fraction, self.kappa_refuse = float(min_unique_fraction), float(kappa_refuse)
        self.record_min_unique_fraction = float(record_min_unique_fraction)
        self.correlation = max(float(correlation), 1.0)   # samples per independent residual (cov. scale)
        self.reset()

    def reset(self) -> None:
        nb = 2 * self.nseg
        self.A = np.zeros((nb, 4, 4))        # data information (scaled units)
        self.r = np.zeros((nb, 4))
        self.yy = np.zeros(nb)
        self.weight = np.zeros(nb)           # sum of forgetting weights (effective sample count)
        self.prior = np.ones(nb)             # lambda^count: weight left on P0^-1
        self.count = np.zeros(nb, dtype=np.int64)
        self.last_stamp = np.zeros(nb)       # time (s) of the newest sample per bin
        self.G = np.zeros((2, 4, 4))         # per direction, over every segment: the record-level information

    def update(self, x, v, a, F, t=None) -> int:
        """Add samples in time order; returns how many fell in a bin (|v| > v_min, x inside the edges)."""
        x, v, a, F = (np.asarray(y, dtype=float).ravel() for y in (x, v, a, F))
        ok = np.isfinite(x) & np.isfinite(v) & np.isfinite(a) & np.isfinite(F) & (np.abs(v) > self.v_min)
        seg = np.full(len(x), -1)
        seg[ok] = segment_index(x[ok], self.edges)
        ok &= seg >= 0
        if not ok.any():
            return 0
        blk = np.where(v[ok] > 0, 0, 1) * self.nseg + seg[ok]
        nb = 2 * self.nseg
        counts = np.bincount(blk, minlength=nb)
        order = np.argsort(blk, kind='stable')
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rank = np.empty(len(blk), dtype=np.int64)
        rank[order] = np.arange(len(blk)) - starts[blk[order]]
        lam = self.lam
        w = lam ** (counts[blk] - 1 - rank).astype(float)
        decay = lam ** counts.astype(float)
        phi = np.column_stack([a[ok], v[ok], x[ok], np.ones(len(blk))]) / SCALE
        y = F[ok]
        self.A *= decay[:, None, None]
        self.r *= decay[:, None]
        self.yy *= decay
        self.weight *= decay
        self.prior *= decay
        for i, j in zip(*_IU):
            s = np.bincount(blk, weights=w * phi[:, i] * phi[:, j], minlength=nb)
            self.A[:, i, j] += s
            if i != j:
                self.A[:, j, i] += s
        wy = w * y
        for i in range(4):
            self.r[:, i] += np.bincount(blk, weights=wy * phi[:, i], minlength=nb)
        self.yy += np.bincount(blk, weights=wy * y, minlength=nb)
        self.weight += np.bincount(blk, weights=w, minlength=nb)
        self.count += counts
        # record level (per direction, all segments), the same forgetting per sample of that direction
        d = blk // self.nseg
        dcounts = np.bincount(d, minlength=2)
        dorder = np.argsort(d, kind='stable')
        dstarts = np.concatenate(([0], np.cumsum(dcounts)[:-1]))
        drank = np.empty(len(d), dtype=np.int64)
        drank[dorder] = np.arange(len(d)) - dstarts[d[dorder]]
        wd = lam ** (dcounts[d] - 1 - drank).astype(float)
        self.G *= (lam ** dcounts.astype(float))[:, None, None]
        for i, j in zip(*_IU):
            s = np.bincount(d, weights=wd * phi[:, i] * phi[:, j], minlength=2)
            self.G[:, i, j] += s
            if i != j:
                self.G[:, j, i] += s
        if t is not None:
            tt = np.asarray(t, dtype=float).ravel()[ok]
            last = np.full(nb, -np.inf)
            np.maximum.at(last, blk, tt)
            self.last_stamp = np.where(counts > 0, last, self.last_stamp)
        return int(len(blk))

    def profile(self) -> ImpedanceProfile:
        """The current estimate of every bin as an ImpedanceProfile (NaN where not identifiable)."""
        nseg, nb = self.nseg, 2 * self.nseg
        theta = np.full((nb, 4), np.nan)
        cov = np.full((nb, 4, 4), np.nan)
        kappa = np.full(nb, np.inf)
        rms = np.full(nb, np.nan)
        uv = np.full((nb, 4), np.nan)
        colvar = np.full((nb, 4), np.nan)
        valid = np.zeros(nb, bool)
        sep = np.zeros(nb, bool)
        damp = np.zeros(nb, bool)
        reason = ['no samples'] * nb
        outer = np.outer(SCALE, SCALE)
        record_share = np.full(2, np.nan)
        for d in (0, 1):
            G = self.G[d]
            if G[3, 3] > 4:
                try:
                    u = 1.0 / np.linalg.inv(G)[0, 0] / G[3, 3]
                    var = G[0, 0] / G[3, 3] - (G[0, 3] / G[3, 3]) ** 2
                    record_share[d] = u / var if var > 0 else 0.0
                except np.linalg.LinAlgError:
                    record_share[d] = 0.0
        for b in range(nb):
            if self.count[b] == 0:
                continue
            A, W = self.A[b], self.weight[b]
            info = A + (self.prior[b] / self.alpha) * np.eye(4)
            th_s = np.linalg.solve(info, self.r[b])
            rss = max(self.yy[b] - 2 * th_s @ self.r[b] + th_s @ A @ th_s, 0.0)
            dof = W - 4.0
            sigma2 = rss / dof if dof > 0 else np.nan
            d = np.sqrt(np.maximum(np.diag(A), 1e-300))
            ev = np.linalg.eigvalsh(A / np.outer(d, d))
            kappa[b] = float(np.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else np.inf
            try:
                ainv = np.linalg.inv(A)
                uv[b] = 1.0 / np.maximum(np.diag(ainv), 1e-300) / W * SCALE ** 2
            except np.linalg.LinAlgError:
                uv[b] = 0.0
            mean = A[3] / W
            colvar[b] = (np.diag(A) / W - mean ** 2) * SCALE ** 2
            rms[b] = np.sqrt(sigma2) if np.isfinite(sigma2) else np.nan
            theta[b] = th_s / SCALE
            if np.isfinite(sigma2):
                c = self.correlation * sigma2 * np.linalg.inv(info)
                cov[b] = 0.5 * (c + c.T) / outer
            why = []
            share = uv[b, :3] / np.where(colvar[b, :3] > 0, colvar[b, :3], np.inf)
            low = share < self.min_unique_fraction
            conditioned = kappa[b] <= self.kappa_refuse
            one_tone = record_share[b // nseg] < self.record_min_unique_fraction
            sep[b] = conditioned and not low[0] and not low[2] and not one_tone
            damp[b] = conditioned and not low[1]
            if W < self.n_min:
                why.append(f'{W:.0f} effective samples (< n_min = {self.n_min})')
            if not conditioned:
                why.append(f'kappa {kappa[b]:.3g} > {self.kappa_refuse:.0e}: regressor singular')
            elif kappa[b] > KAPPA_WARN:
                why.append(f'kappa {kappa[b]:.3g} > {KAPPA_WARN:.0e}: poorly conditioned')
            if one_tone:
                why.append(f'only {100 * record_share[b // nseg]:.2g} % of the acceleration is independent '
                           f'of x and v over the record: single-tone excitation')
            for c_name, flag in zip('avx', low):
                if flag:
                    why.append(f"column '{c_name}' has no information of its own "
                               f"(unique share {share['avx'.index(c_name)]:.2g})")
            if not sep[b]:
                theta[b] = np.nan
                why.append('mass and stiffness are not separable: use a multisine excitation')
            elif not damp[b]:
                theta[b, 1] = np.nan
            valid[b] = bool(sep[b] and damp[b] and W >= self.n_min and np.all(np.isfinite(cov[b])))
            reason[b] = '; '.join(why) or 'ok'
        shp = (2, nseg)
        r2 = np.full(shp, np.nan)
        return ImpedanceProfile(edges=self.edges.copy(), theta=theta.reshape(shp + (4,)),
                                cov=cov.reshape(shp + (4, 4)),
                                n=np.round(self.weight).astype(np.int64).reshape(shp),
                                kappa=kappa.reshape(shp),
                                residual_rms=rms.reshape(shp), r2=r2, unique_variance=uv.reshape(shp + (4,)),
                                column_variance=colvar.reshape(shp + (4,)), valid=valid.reshape(shp),
                                separable=sep.reshape(shp), damping_identifiable=damp.reshape(shp),
                                reason=[reason[:nseg], reason[nseg:]],
                                options={'forgetting': self.lam, 'initial_covariance': self.alpha,
                                         'v_min': self.v_min,
                                         'recursive': True, 'record_unique_share': record_share.tolist()},
                                model='segmented_impedance (recursive, forgetting): F = m a + b v + k x + c '
                                      'per '
                                      '(position segment, direction of travel)')


__all__ = ['RecursiveSegmentedLS', 'DIRECTIONS', 'SCALE']
