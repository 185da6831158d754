"""Recursive (online) segmented least squares: one RLS with forgetting per (segment, direction) bin (B4 8).

Each bin holds its information in the exponentially weighted form that RLS computes recursively, per position
cell of the bin (:mod:`.cells`: Gram matrices of z = [a v x 1 r F] / scale),

    G = sum_i lambda^(n-i) z_i z_i^T,   A = lambda^n P0^-1 + (G's [a v x 1] block),
    theta = A^-1 (X^T F - gamma X^T r)

with scaled units (1 m/s^2, 1 cm/s, 1 mm, 1 N), P0 = alpha I and lambda applied once per sample that falls in
the bin (lambda = 1 - 1/(f_s T_mem): 0.999975 at 4 kHz for 10 s). A block of samples is added at once with
weights lambda^(B-1-rank) (vectorised bincounts), which is exactly the sequence of RLS updates, so the
estimate does not depend on how the stream was batched. gamma is the Coulomb coefficient of the friction
transient column r (pooled over the usable bins, :func:`.cells.friction_coefficient`).

sigma (which terms, see doc/trust/impedance.md): residual variance sigma^2 (forgetting-weighted) times A^-1,
its force-noise part multiplied by c, the samples per independent residual of the kernel-filtered stream
(2 sqrt(pi) w f_s), the part the regressors' own (differentiated, blue) noise explains counted as white
(:func:`blue_share`); as its base the larger (per sigma, trust.covariance.combine) of that and the
recursive Newey-West (HAC) sandwich, the batch fit's sandwich in streaming form (:class:`HacScores`):

    C_HAC = A^-1 S A^-1,  S = sum_i lambda^(n-i) [g_i g_i^T + g_i h_i^T + h_i g_i^T],
    h_i = sum_{l=1..L} (1 - l/(L+1)) g_(i-l),   g_i = x_i e_i,  e_i = F_i - theta^T x_i - gamma r_i,

over the bin's samples in time order (x = [a v x 1] scaled, L = ceil(4 c) lags, as the batch fit). S is
evaluated at the *current* theta and gamma although the residuals are never stored: g_i = U_i beta with
U_i = x_i z_i^T (z = [a v x 1 r F], beta = [-theta, -gamma, 1]), so S[a, b] = sum_pq beta_p beta_q
H[a p, b q] with H the same sums of u_i = vec(U_i) (24 x 24 per bin), kept with the last L u_i per bin
(bounded memory, one pass); plus the
friction coefficient's share beta beta^T var(gamma); plus the errors-in-variables bias of the noisy filtered
derivatives (``noise_variance``, trust.covariance.eiv_bias); plus, when the split test finds the parameters
varying inside the segment, the variation term (d/2)(d/2)^T (:mod:`.cells`); plus the conditioning term
d d^T, d = the move of the estimate between this fit and the same fit on the stream conditioned at the second
cut-off (``profile(alternative=...)``, the pipeline runs both); combined by trust.covariance.combine.
Verdict: trust.verdict.judge with the bin's own checks (samples, kappa, unique variance, single tone,
within-segment split test).
"""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.trust.covariance import combine, eiv_bias
from contact_dynamics_common.trust.covariance import conditioning as conditioning_cov
from contact_dynamics_common.trust.verdict import judge

from . import cells as cl
from .segmented import (DIRECTIONS, blue_share, KAPPA_REFUSE, KAPPA_WARN, PARAMS, ImpedanceProfile, snr_guard,
                        normalised_condition_gram, segment_index)

SCALE = np.array([1.0, 0.01, 0.001, 1.0])
ZSCALE = np.concatenate([SCALE, [1.0, 1.0, 1.0, 1.0]])


def eiv_term(A: np.ndarray, weight: float, theta: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Errors-in-variables bias (scaled units) of a fit with information A (scaled) over ``weight`` samples,
    column noise variances ``noise`` (scaled units, a v x 1): trust.covariance.eiv_bias on rows whose second
    moment is A / weight."""
    if not (weight > 0 and np.all(np.isfinite(noise)) and np.any(noise > 0)):
        return np.zeros(4)
    try:
        L = np.linalg.cholesky(A / weight)
    except np.linalg.LinAlgError:
        return np.zeros(4)
    rows = 2.0 * L.T                       # 4 rows with rows^T rows / 4 = A / weight
    return eiv_bias(rows, theta, np.asarray(noise, dtype=float))


#: columns of z (a v x 1 r F) in the G layout of :mod:`.cells` (u^2, u^3 left out)
_HZ = [0, 1, 2, 3, cl.COLUMN_R, cl.COLUMN_F]
_NU = 4 * len(_HZ)


class HacScores:
    """Streaming Newey-West sums of one fit (module docstring): per bin H = sum_i lambda^(n-i) [u_i u_i^T +
    u_i h_i^T + h_i u_i^T], h_i the Bartlett-weighted sum of the bin's L previous u (kept: the last L rows per
    bin), u_i = vec(x_i z_i^T) (24,). Blocks in time order; the same blocks give the same sums to the bit."""

    def __init__(self, bins: int):
        self.bins = bins
        self.lags = 0
        self.reset()

    def reset(self) -> None:
        self.H = np.zeros((self.bins, _NU, _NU))
        self.tail = [np.zeros((0, _NU)) for _ in range(self.bins)]

    def update(self, z: np.ndarray, blk: np.ndarray, order: np.ndarray, starts: np.ndarray,
               counts: np.ndarray, w: np.ndarray, decay: np.ndarray) -> None:
        """z (n, NZ) scaled samples of the block, blk their bins, order/starts/counts the stable bin sort,
        w the forgetting weights, decay = lambda^counts per bin."""
        L = self.lags
        self.H *= decay[:, None, None]
        u = (z[:, :4, None] * z[:, _HZ][:, None, :]).reshape(len(z), _NU)
        for b in np.flatnonzero(counts):
            idx = order[starts[b]:starts[b] + counts[b]]
            ub, wb = u[idx], w[idx]
            ext = np.vstack([self.tail[b], ub])
            k = np.arange(len(self.tail[b]), len(ext))
            k0 = np.maximum(k - L, 0)
            C = np.vstack([np.zeros((1, _NU)), np.cumsum(ext, axis=0)])
            D = np.vstack([np.zeros((1, _NU)), np.cumsum(np.arange(len(ext))[:, None] * ext, axis=0)])
            h = ((L + 1.0 - k)[:, None] * (C[k] - C[k0]) + (D[k] - D[k0])) / (L + 1.0)
            uw = ub * wb[:, None]
            cross = uw.T @ h
            self.H[b] += uw.T @ ub + cross + cross.T
            self.tail[b] = ext[-L:] if L else ext[:0]

    def meat(self, b: int, theta_s: np.ndarray, gamma: float) -> np.ndarray:
        """S (4, 4) of bin b at the scaled parameters theta_s and friction coefficient gamma."""
        beta = np.concatenate([-np.asarray(theta_s, dtype=float), [-gamma, 1.0]])
        T = self.H[b].reshape(4, len(_HZ), 4, len(_HZ))
        return np.einsum('apbq,p,q->ab', T, beta, beta)


class RecursiveSegmentedLS:
    def __init__(self, edges, forgetting: float = 0.999975, initial_covariance: float = 1e5,
                 v_min: float = 5e-3, n_min: int = 200, min_unique_fraction: float = 1e-2,
                 kappa_refuse: float = KAPPA_REFUSE, correlation: float = 1.0,
                 record_min_unique_fraction: float = 0.1, cells: int = cl.CELLS, hac: bool = True):
        edges = np.asarray(edges, dtype=float)
        if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
            raise ValueError('edges must be finite and strictly increasing (>= 2 values)')
        if not 0 < forgetting <= 1:
            raise ValueError(f'forgetting factor must be in (0, 1], got {forgetting}')
        if not initial_covariance > 0:
            raise ValueError('initial covariance must be > 0')
        self.edges = edges
        self.nseg = len(edges) - 1
        self.cells = int(cells)
        self.lam = float(forgetting)
        self.alpha = float(initial_covariance)
        self.v_min, self.n_min = float(v_min), int(n_min)
        self.min_unique_fraction, self.kappa_refuse = float(min_unique_fraction), float(kappa_refuse)
        self.record_min_unique_fraction = float(record_min_unique_fraction)
        self.correlation = max(float(correlation), 1.0)   # samples per independent residual (cov. scale)
        self.noise_variance = np.full(4, np.nan)          # a, v, x, 1 (SI): errors-in-variables term
        self.hac = HacScores(2 * self.nseg) if hac else None
        self.reset()

    def reset(self) -> None:
        nb = 2 * self.nseg
        self.G = np.zeros((nb * self.cells, cl.NZ, cl.NZ))   # per (bin, cell), scaled units
        self.weight = np.zeros(nb)           # sum of forgetting weights (effective sample count)
        self.prior = np.ones(nb)             # lambda^count: weight left on P0^-1
        self.count = np.zeros(nb, dtype=np.int64)
        self.last_stamp = np.zeros(nb)       # time (s) of the newest sample per bin
        if self.hac is not None:
            self.hac.reset()
            self.hac.lags = 0                # set from the correlation at the first sample

    def update(self, x, v, a, F, t=None, r=None) -> int:
        """Add samples in time order (``r``: friction transient column, zeros when None); returns how many
        fell in a bin (|v| > v_min, x inside the edges)."""
        x, v, a, F = (np.asarray(y, dtype=float).ravel() for y in (x, v, a, F))
        r = np.zeros(len(x)) if r is None else np.asarray(r, dtype=float).ravel()
        ok = (np.isfinite(x) & np.isfinite(v) & np.isfinite(a) & np.isfinite(F) & np.isfinite(r)
              & (np.abs(v) > self.v_min))
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
        q = cl.segment_curvature(x[ok], self.edges, seg[ok])
        z = np.column_stack([a[ok], v[ok], x[ok], np.ones(len(blk)), r[ok], q, F[ok]]) / ZSCALE
        cell = cl.cell_of(x[ok], self.edges, seg[ok], self.cells)
        self.G.reshape(nb, self.cells, cl.NZ, cl.NZ)[...] *= decay[:, None, None, None]
        self.weight *= decay
        self.prior *= decay
        cl.accumulate(self.G, blk * self.cells + cell, z, w)
        if self.hac is not None:
            if not self.count.any():
                self.hac.lags = int(np.ceil(4.0 * self.correlation))
            self.hac.update(z, blk, order, starts, counts, w, decay)
        self.weight += np.bincount(blk, weights=w, minlength=nb)
        self.count += counts
        if t is not None:
            tt = np.asarray(t, dtype=float).ravel()[ok]
            last = np.full(nb, -np.inf)
            np.maximum.at(last, blk, tt)
            self.last_stamp = np.where(counts > 0, last, self.last_stamp)
        return int(len(blk))

    def estimates(self) -> np.ndarray:
        """(2 N, 4) parameters of every bin in scaled units (NaN without samples), with this fit's own
        friction coefficient: the light solve used for the conditioning term of another fit."""
        nb, C = 2 * self.nseg, self.cells
        Gb = self.G.reshape(nb, C, cl.NZ, cl.NZ).sum(axis=1)
        ridge = self.prior / self.alpha
        kappa = np.array([normalised_condition_gram(Gb[b, :4, :4]) if self.count[b] else np.inf
                          for b in range(nb)])
        usable = (self.weight >= self.n_min) & (kappa <= self.kappa_refuse)
        gamma, _, _ = cl.friction_coefficient(Gb, usable, ridge)
        out = np.full((nb, 4), np.nan)
        for b in range(nb):
            if self.count[b]:
                A, bv, _, _ = cl.corrected(Gb[b], gamma)
                out[b] = np.linalg.solve(A + ridge[b] * np.eye(4), bv)
        return out

    def profile(self, alternative: 'RecursiveSegmentedLS | None' = None) -> ImpedanceProfile:
        """The current estimate of every bin as an ImpedanceProfile (NaN where not identifiable).
        ``alternative``: the same fit on the stream conditioned at the second defensible cut-off; its move
        d enters every bin's covariance as d d^T (trust.covariance.conditioning)."""
        alt = alternative.estimates() if alternative is not None else None
        nseg, nb, C = self.nseg, 2 * self.nseg, self.cells
        Gc = self.G.reshape(nb, C, cl.NZ, cl.NZ)
        Gb = Gc.sum(axis=1)
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
            G = Gb[d * nseg:(d + 1) * nseg, :4, :4].sum(axis=0)
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
            A = Gb[b, :4, :4]
            d = np.sqrt(np.maximum(np.diag(A), 1e-300))
            ev = np.linalg.eigvalsh(A / np.outer(d, d))
            kappa[b] = float(np.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else np.inf
        ridge = self.prior / self.alpha
        usable = (self.weight >= self.n_min) & (kappa <= self.kappa_refuse)
        gamma, r_info, beta = cl.friction_coefficient(Gb, usable, ridge)
        rss = np.zeros(nb)
        for b in range(nb):
            if self.count[b] == 0:
                continue
            A, bv, yy, _ = cl.corrected(Gb[b], gamma)
            info = A + ridge[b] * np.eye(4)
            th_s = np.linalg.solve(info, bv)
            rss[b] = max(yy - 2 * th_s @ bv + th_s @ A @ th_s, 0.0)
        dof_all = np.sum(np.maximum(self.weight[usable] - 4.0, 0.0))
        s2_pool = float(rss[usable].sum() / dof_all) if dof_all > 0 else np.nan
        var_gamma = self.correlation * s2_pool / r_info if r_info > 0 and np.isfinite(s2_pool) else 0.0
        threshold = cl.split_threshold(C)
        noise_s = np.asarray(self.noise_variance, dtype=float) / SCALE ** 2
        for b in range(nb):
            if self.count[b] == 0:
                continue
            A, bv, yy, _ = cl.corrected(Gb[b], gamma)
            W = self.weight[b]
            info = A + ridge[b] * np.eye(4)
            th_s = np.linalg.solve(info, bv)
            dof = W - 4.0
            sigma2 = rss[b] / dof if dof > 0 else np.nan
            try:
                ainv = np.linalg.inv(A)
                uv[b] = 1.0 / np.maximum(np.diag(ainv), 1e-300) / W * SCALE ** 2
            except np.linalg.LinAlgError:
                uv[b] = 0.0
            mean = A[3] / W
            colvar[b] = (np.diag(A) / W - mean ** 2) * SCALE ** 2
            rms[b] = np.sqrt(sigma2) if np.isfinite(sigma2) else np.nan
            theta[b] = th_s / SCALE
            split = {'T': 0.0}
            if np.isfinite(sigma2):
                split = cl.split_test(Gc[b], gamma, self.correlation, max(50.0, self.n_min / 4.0))
                share = blue_share(th_s, noise_s, sigma2)
                own = ((self.correlation * (1.0 - share) + share) * sigma2 * np.linalg.inv(info)
                       + var_gamma * np.outer(beta[b], beta[b]))
                bias = eiv_term(A, W, th_s, noise_s) if kappa[b] <= self.kappa_refuse else np.zeros(4)
                curv = cl.curvature_test(Gb[b], gamma, self.correlation)
                varied = cl.variation_term(split) if split['T'] > threshold else np.zeros((4, 4))
                if curv['T'] > cl.CURVATURE_THRESHOLD:
                    varied = varied + np.outer(curv['shift'], curv['shift'])
                cond = (conditioning_cov(th_s, alt[b]) if alt is not None and np.all(np.isfinite(alt[b]))
                        else None)
                hac = None
                if self.hac is not None:
                    bread = np.linalg.inv(info)
                    hac = (bread @ self.hac.meat(b, th_s, gamma) @ bread
                           + var_gamma * np.outer(beta[b], beta[b]))
                c = combine(own, sandwich=hac, eiv=bias, bias=varied, conditioning=cond).covariance
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
            changed = split['T'] > threshold and sep[b] and cl.material(split)
            if changed:
                why.append(split_reason(split, self.edges, b % nseg, C, threshold))
            if not sep[b]:
                theta[b] = np.nan
                why.append('mass and stiffness are not separable: use a multisine excitation')
            elif not damp[b]:
                theta[b, 1] = np.nan
            own_ok = bool(sep[b] and damp[b] and W >= self.n_min and not changed)
            v = judge(PARAMS, theta[b], cov[b], required=(), positive=(), prior_valid=own_ok,
                      prior_reason='; '.join(why) or 'ok')
            valid[b] = v.valid
            reason[b] = v.reason
            sep[b], damp[b] = snr_guard(theta[b], cov[b], bool(sep[b]), bool(damp[b]))
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
                                noise_variance=np.asarray(self.noise_variance, dtype=float),
                                options={'forgetting': self.lam, 'initial_covariance': self.alpha,
                                         'v_min': self.v_min, 'recursive': True,
                                         'record_unique_share': record_share.tolist(),
                                         'friction_transient_coefficient': gamma,
                                         'friction_transient_std': float(np.sqrt(var_gamma)),
                                         'correlation': self.correlation,
                                         'hac_lags': self.hac.lags if self.hac is not None else 0},
                                model='segmented_impedance (recursive, forgetting): F = m a + b v + k x + c '
                                      'per (position segment, direction of travel)')


def split_reason(split: dict, edges: np.ndarray, j: int, cells: int, threshold: float) -> str:
    """The flag of a bin whose parameters change inside the segment (stiffness step, detent, stop)."""
    xc = edges[j] + (edges[j + 1] - edges[j]) * split['cut'] / cells
    kl, kr = split['theta_left'][2] / SCALE[2], split['theta_right'][2] / SCALE[2]
    return (f"parameters change inside the segment: split at x = {1e3 * xc:.4g} mm explains "
            f"chi2 {split['T']:.3g} > {threshold:.3g} (k {kl:.4g} | {kr:.4g} N/m); use more segments or "
            f"adaptive edges")


__all__ = ['RecursiveSegmentedLS', 'HacScores', 'DIRECTIONS', 'SCALE', 'split_reason', 'eiv_term',
           'blue_share']
