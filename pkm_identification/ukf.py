"""Parameter-only scaled unscented Kalman filter (Wan & van der Merwe; spec sec. 4), our own implementation.

State: the parameter vector w (random walk w_k = w_{k-1} + u_k, u ~ N(0, R^r)); measurement
d_k = G(x_k, w_k) + e_k, e ~ N(0, R^e). Scaled sigma points, lambda = alpha^2 (L + kappa) - L:
  W_0 = w ; W_i = w +/- (sqrt((L + lambda) P))_i ; Wm_0 = lambda/(L+lambda) ; Wc_0 = Wm_0 + 1 - alpha^2 + beta ;
  Wm_i = Wc_i = 1/(2 (L + lambda))
  P_dd = sum Wc (D - d)(D - d)^T + R^e ; P_wd = sum Wc (W - w)(D - d)^T ; K = P_wd P_dd^-1
  w += K (d_k - d_hat) ;  P -= K P_dd K^T (symmetrised)
R^r: 'fixed' (Q), 'robbins_monro' (eq. 2.75, forced diagonal) or 'forgetting' (R^r = (1/lambda - 1) P).

Vectorised: the filter holds B independent filters (theta (B, n), P (B, n, n)); the 2L+1 sigma points of all
of them go to the measurement function in ONE call ``hx(W (B, S, n), x) -> (B, S, m)``. The default hx is
linear, x = Y (m, n) or (B, m, n): D = W Y^T (exact for F_a = Y theta); for one filter with the linear hx the
sigma-point sums are taken in closed form (d = Y w, P_wd = P Y^T, P_dd = Y P Y^T + R^e: the same update, the
unscented transform being exact for a linear function, without forming the points).
Safety: a Cholesky factor that fails is never ignored: P is symmetrised and its eigenvalues clipped (counted
in ``counts['repairs']``); a non-finite measurement or input is rejected (``'rejected_nonfinite'``); an update
that would produce a non-finite value is undone (``'rejected_numerical'``); bounds are enforced after each
update (``'clipped'``). Only the active parameters (``set_active``) are updated; the others stay fixed.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.linalg.lapack import dposv as _dposv, dpotrf as _dpotrf


_TRUE, _FALSE = np.ones(1, bool), np.zeros(1, bool)


def linear_hx(W: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """D = W Y^T for W (B, S, n) and Y (m, n) or (B, m, n)."""
    return W @ np.swapaxes(Y, -1, -2)


def repair_spd(P: np.ndarray, floor_rel: float = 1e-12, floor_abs: float = 1e-300) -> np.ndarray:
    """Nearest-ish SPD matrix: symmetrise, clip eigenvalues to >= floor_rel * max eigenvalue (and floor_abs)."""
    S = 0.5 * (P + np.swapaxes(P, -1, -2))
    S = np.where(np.isfinite(S), S, 0.0)
    lam, V = np.linalg.eigh(S)
    top = np.maximum(lam.max(axis=-1, keepdims=True), floor_abs)
    lam = np.maximum(lam, np.maximum(top * floor_rel, floor_abs))
    return (V * lam[..., None, :]) @ np.swapaxes(V, -1, -2)


class ParameterUKF:
    def __init__(self, theta0, P0, R_e, *, alpha: float = 1e-3, beta: float = 2.0, kappa: float = 0.0,
                 lower=None, upper=None, process: str = 'fixed', Q=None, a_rm: float = 1e-4,
                 forgetting: float = 1.0, hx: Callable | None = None, batch: int | None = None):
        theta0 = np.asarray(theta0, float)
        if theta0.ndim == 1:
            theta0 = np.tile(theta0, (batch or 1, 1))
        self.B, self.n = theta0.shape
        P0 = np.asarray(P0, float)
        if P0.ndim == 1:
            P0 = np.diag(P0)
        self.P0 = np.broadcast_to(P0, (self.B, self.n, self.n)).copy()
        self.theta0 = theta0.copy()
        R_e = np.asarray(R_e, float)
        self.R = np.diag(R_e) if R_e.ndim == 1 else R_e
        if not (np.isfinite(self.theta0).all() and np.isfinite(self.P0).all() and np.isfinite(self.R).all()):
            raise ValueError('theta0, P0 and R_e must be finite')
        if np.any(np.linalg.eigvalsh(self.R) <= 0):
            raise ValueError('R_e must be positive definite')
        if process not in ('fixed', 'robbins_monro', 'forgetting'):
            raise ValueError(f"process '{process}' is not one of fixed, robbins_monro, forgetting")
        if not 0.0 < forgetting <= 1.0:
            raise ValueError('forgetting must be in (0, 1]')
        self.alpha, self.beta, self.kappa = float(alpha), float(beta), float(kappa)
        self.lower = np.full(self.n, -np.inf) if lower is None else np.asarray(lower, float)
        self.upper = np.full(self.n, np.inf) if upper is None else np.asarray(upper, float)
        self.process, self.a_rm, self.forgetting = process, float(a_rm), float(forgetting)
        self.Q0 = np.zeros(self.n) if Q is None else np.asarray(Q, float)
        self.hx = hx or linear_hx
        self.active = np.ones(self.n, bool)
        self._set_weights()
        self.reset()

    # ------------------------------------------------------------------ configuration
    def _set_weights(self) -> None:
        L = int(self.active.sum())
        self.idx = np.flatnonzero(self.active)
        self.all_active = L == self.n
        lam = self.alpha ** 2 * (L + self.kappa) - L
        self.c = L + lam
        if not self.c > 0:
            raise ValueError(f'L + lambda = {self.c:g} must be > 0 (alpha={self.alpha}, kappa={self.kappa})')
        self.Wm = np.full(2 * L + 1, 0.5 / self.c)
        self.Wc = self.Wm.copy()
        self.Wm[0] = lam / self.c
        self.Wc[0] = lam / self.c + 1 - self.alpha ** 2 + self.beta
        self.L = L
        self._zero_row = np.zeros((1, L))
        self._wc_col = self.Wc[:, None]

    def _fast_path_applies(self) -> bool:
        """``_update_linear`` serves this filter: one filter, the linear hx, every parameter active, no process
        noise."""
        return (self.B == 1 and self.all_active and self.hx is linear_hx and self.process == 'fixed'
                and not self._q_nonzero)

    def set_active(self, active) -> None:
        """Update only the parameters where ``active`` is true (staged estimation); the others stay put."""
        a = np.asarray(active)
        if a.dtype != bool:
            mask = np.zeros(self.n, bool)
            mask[a.astype(int)] = True
            a = mask
        a = a.astype(bool).copy()
        if not a.any():
            raise ValueError('at least one parameter must be active')
        self.active = a
        self._set_weights()
        self._fast = self._fast_path_applies()

    def reset(self, theta0=None, P0=None) -> None:
        if theta0 is not None:
            self.theta0 = np.broadcast_to(np.asarray(theta0, float), (self.B, self.n)).copy()
        if P0 is not None:
            P0 = np.asarray(P0, float)
            self.P0 = np.broadcast_to(np.diag(P0) if P0.ndim == 1 else P0, (self.B, self.n, self.n)).copy()
        self.theta = self.theta0.copy()
        self.P = self.P0.copy()
        self._S = None                      # [P | theta] of the fast path (theta and P are views of it)
        self._upper_finite = bool(np.isfinite(self.upper).any())
        self._lower_zero = bool(np.all(self.lower == 0.0))
        n = self.n                          # flat indices in S of the diagonal of P and of theta
        self._diag_and_theta = np.concatenate((np.arange(n) * (n + 2), np.arange(n) * (n + 1) + n))
        if self.Q0.ndim == 1 or self.process == 'robbins_monro':
            q = self.Q0 if self.Q0.ndim == 1 else np.diagonal(self.Q0)
            self.Qd = np.broadcast_to(q, (self.B, self.n)).copy()
        else:
            self.Qd = None
        self._q_nonzero = self.process == 'robbins_monro' or bool(np.any(self.Q0))
        self._fast = self._fast_path_applies()
        self.nis = np.full(self.B, np.nan)
        self.innovation = np.full((self.B, self.R.shape[0]), np.nan)
        self.counts = {'updates': 0, 'rejected_nonfinite': 0, 'rejected_numerical': 0, 'repairs': 0, 'clipped': 0}

    # ------------------------------------------------------------------ filter
    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diagonal(self.P, axis1=1, axis2=2), 0.0))

    def _process_noise(self, Pa: np.ndarray) -> np.ndarray:
        if self.process == 'forgetting':
            return Pa * (1.0 / self.forgetting)
        if self.Qd is not None:
            q = self.Qd if self.all_active else self.Qd[:, self.idx]
            out = Pa.copy()
            d = np.arange(self.L)
            out[:, d, d] += q
            return out
        Q = self.Q0 if self.all_active else self.Q0[np.ix_(self.idx, self.idx)]
        return Pa + Q

    def _chol(self, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cholesky factors of c P; a failure repairs P (counted) instead of passing silently."""
        try:
            return np.linalg.cholesky(self.c * P), P
        except np.linalg.LinAlgError:
            pass
        self.counts['repairs'] += 1
        P = repair_spd(P)
        try:
            return np.linalg.cholesky(self.c * P), P
        except np.linalg.LinAlgError:
            P = repair_spd(P, floor_rel=1e-9)
            return np.linalg.cholesky(self.c * P), P

    @staticmethod
    def _project(t: np.ndarray, P: np.ndarray, lo: np.ndarray, hi: np.ndarray, iters: int = 4) -> np.ndarray:
        """Estimate projection onto the violated bounds (Simon & Chia): t <- t - P_:J P_JJ^-1 (t_J - bound_J),
        which moves the correlated parameters consistently instead of clipping one alone (clipping alone lets
        the filter wind up). A final clip catches what the projection leaves."""
        J = np.zeros(len(t), bool)
        for _ in range(iters):
            J |= (t < lo) | (t > hi)
            if not ((t < lo) | (t > hi)).any():
                break
            target = np.clip(t, lo, hi)
            try:
                corr = P[:, J] @ np.linalg.solve(P[np.ix_(J, J)], (t - target)[J])
            except np.linalg.LinAlgError:
                break
            if not np.isfinite(corr).all():
                break
            t = t - corr
        return t

    def update(self, z, x, R=None) -> np.ndarray:
        """One measurement per filter: z (m,) or (B, m); x is passed to hx. Returns the accepted mask (B,).

        ``R``: this sample's measurement covariance (m, m) in place of R^e (e.g. the errors-in-variables
        covariance of :mod:`pkm_identification.eiv`); it must be symmetric positive definite."""
        if self._fast:
            return self._update_linear(z, x, R)
        if self.B == 1 and self.process != 'robbins_monro':
            return self._update_one(z, x, R)
        return self._update_batch(z, x, R)

    def _update_linear(self, z, x, R=None) -> np.ndarray:
        """``_update_one`` for the common case (one filter, linear hx, every parameter active, no process noise)
        in fewer numpy calls; the same update up to the order of the sums (issue 19: <= 23 us at n = 8).

        With S = [P | w] (n x (n+1)) one product gives G = Y S = [P_wd^T | Y w]; its last column becomes
        Y w - z = -nu; one LAPACK dposv solves P_dd M = G with P_dd = P_wd^T Y^T + R^e; then
        G^T M = [[P_wd M], [-nu^T M]] gives S - P_wd M = [P - K P_dd K^T | w + K nu] (K = P_wd P_dd^-1) and, in its
        last row, nu^T P_dd^-1 nu.
        Anything unusual (a non-finite input, P not SPD, a failed solve, a non-finite or non-positive result,
        a violated bound) goes the general way, ``_update_one``, which counts and repairs it."""
        z = np.asarray(z, dtype=float).ravel()
        if x.ndim != 2:
            return self._update_one(z, x, R)
        S = self._S
        n = self.n
        if S is None or self.P.base is not S or self.theta.base is not S:   # P or theta replaced from outside
            S = np.empty((n, n + 1))
            S[:, :n] = self.P[0]
            S[:, n] = self.theta[0]
        if _dpotrf(S[:, :n], lower=0, clean=0)[1] != 0:
            return self._update_one(z, x, R)
        G = x @ S
        G[:, n] -= z
        Pdd = G[:, :n] @ x.T
        Pdd += self.R if R is None else R
        _, M, info = _dposv(Pdd, G)
        if info != 0:
            return self._update_one(z, x, R)
        Q = G.T @ M                         # rows :n = P_wd M, Q[n, n] = nu^T P_dd^-1 nu (the NIS)
        Sn = S - Q[:n]
        Pn = Sn[:, :n]
        Pn += Pn.T
        Pn *= 0.5
        ta = Sn[:, n]
        # a non-finite z or Y ends here too (non-finite Sn): the general path rejects and counts it
        if not math.isfinite(Sn.sum()) or (
                Sn.take(self._diag_and_theta).min() <= 0.0 if self._lower_zero       # P_jj > 0 and w_j > 0 at once
                else Pn.diagonal().min() <= 0.0 or (ta < self.lower).any()) \
                or (self._upper_finite and (ta > self.upper).any()):
            return self._update_one(z, x, R)      # (w_j == 0 exactly, on its bound, goes there too: same result)
        self._S = Sn
        self.theta = Sn[None, :, n]
        self.P = Sn[None, :, :n]
        self.nis = Q[n, n:]
        self.innovation = -G[None, :, n]
        self.counts['updates'] += 1
        return _TRUE

    def _update_one(self, z, x, R=None) -> np.ndarray:
        """The same recursion as ``_update_batch`` for a single filter with 2-D arrays (fewer numpy calls)."""
        z = np.asarray(z, dtype=float).ravel()
        xs = x.sum() if isinstance(x, np.ndarray) else 0.0
        if not math.isfinite(z.sum() + xs):              # one reduction each: NaN/inf anywhere rejects
            self.counts['rejected_nonfinite'] += 1
            return _FALSE
        idx, all_a = self.idx, self.all_active
        th = self.theta[0]
        Pa = self.P[0] if all_a else self.P[0][np.ix_(idx, idx)]
        if self.process == 'forgetting':
            Pa = Pa * (1.0 / self.forgetting)
        elif self.Qd is not None:
            if self._q_nonzero:
                Pa = Pa + np.diag(self.Qd[0] if all_a else self.Qd[0, idx])
        else:
            Pa = Pa + (self.Q0 if all_a else self.Q0[np.ix_(idx, idx)])
        U, info = _dpotrf(self.c * Pa, lower=0, clean=1)      # upper factor: c Pa = U^T U; rows are sqrt columns
        if info == 0:
            St = U
        else:                                                 # not SPD: repaired and counted, never ignored
            Lc, Pa3 = self._chol(Pa[None])
            Pa, St = Pa3[0], Lc[0].T
        if self.hx is linear_hx and x.ndim == 2:
            # linear hx: the unscented transform is exact, its sums reduce to closed form (sum_i Wc_i s_i s_i^T
            # = Pa over the 2L points +-St, the centre point has D_0 - d_hat = 0): d_hat = Y w, P_wd = Pa Y_a^T,
            # P_dd = Y_a Pa Y_a^T + R^e - the same update without forming the 2L + 1 sigma points (issue 19)
            Ya = x if all_a else x[:, idx]
            Pwd = Pa @ Ya.T
            Pdd = Ya @ Pwd + (self.R if R is None else R)
            nu = z - x @ th
        else:
            sig = np.concatenate((self._zero_row, St, -St))
            if all_a:
                W = th + sig
            else:
                W = np.repeat(th[None], len(sig), axis=0)
                W[:, idx] += sig
            D = W @ x.T if self.hx is linear_hx else self.hx(W[None], x)[0]
            d_hat = self.Wm @ D
            dD = D - d_hat
            dDw = dD * self._wc_col
            Pdd = dD.T @ dDw + (self.R if R is None else R)
            Pwd = sig.T @ dDw
            nu = z - d_hat
        _, sol, info = _dposv(Pdd, np.concatenate((Pwd.T, nu[:, None]), axis=1))
        if info != 0:
            self.counts['rejected_numerical'] += 1
            return _FALSE
        K = sol[:, :-1].T
        ta = (th if all_a else th[idx]) + K @ nu
        Pn = Pa - K @ Pwd.T
        Pn += Pn.T
        Pn *= 0.5
        if not (math.isfinite(ta.sum() + Pn.sum()) and np.diagonal(Pn).min() > 0):
            self.counts['rejected_numerical'] += 1
            return _FALSE
        lo, hi = (self.lower, self.upper) if all_a else (self.lower[idx], self.upper[idx])
        if ((ta < lo) | (ta > hi)).any():
            self.counts['clipped'] += int(((ta < lo) | (ta > hi)).sum())
            ta = np.clip(self._project(ta, Pn, lo, hi), lo, hi)
        if all_a:
            self.theta = ta[None]
            self.P = Pn[None]
        else:
            self.theta = self.theta.copy()
            self.theta[0, idx] = ta
            self.P = self.P.copy()
            self.P[0][np.ix_(idx, idx)] = Pn
        self.nis = np.array([nu @ sol[:, -1]])
        self.innovation = nu[None]
        self.counts['updates'] += 1
        return _TRUE

    def _update_batch(self, z, x, R=None) -> np.ndarray:
        z = np.asarray(z, float).reshape(self.B, -1)
        ok = np.isfinite(z).all(axis=1)
        if isinstance(x, np.ndarray):
            xf = np.isfinite(x)
            ok &= xf.reshape(self.B, -1).all(axis=1) if x.ndim == 3 else bool(xf.all())
        if not ok.all():
            self.counts['rejected_nonfinite'] += int((~ok).sum())
            if not ok.any():
                return ok
        idx = self.idx
        Pa = self.P if self.all_active else self.P[:, idx[:, None], idx]
        Pa = self._process_noise(Pa)
        Lc, Pa = self._chol(Pa)
        S = np.concatenate([np.zeros((self.B, 1, self.L)), np.swapaxes(Lc, 1, 2), -np.swapaxes(Lc, 1, 2)], axis=1)
        W = np.repeat(self.theta[:, None, :], 2 * self.L + 1, axis=1)
        if self.all_active:
            W += S
        else:
            W[:, :, idx] += S
        with np.errstate(all='ignore'):
            D = self.hx(W, np.where(np.isfinite(x), x, 0.0) if isinstance(x, np.ndarray) else x)
            d_hat = np.einsum('s,bsm->bm', self.Wm, D)
            dD = D - d_hat[:, None, :]
            dDw = dD * self.Wc[None, :, None]
            Pdd = np.swapaxes(dDw, 1, 2) @ dD + (self.R if R is None else R)
            Pwd = np.swapaxes(S, 1, 2) @ dDw
            nu = np.where(ok[:, None], z, d_hat) - d_hat
            sol = np.linalg.solve(Pdd, np.concatenate([np.swapaxes(Pwd, 1, 2), nu[..., None]], axis=2))
            K = np.swapaxes(sol[..., :-1], 1, 2)                 # (B, L, m)
            nis = np.einsum('bm,bm->b', nu, sol[..., -1])
            ta = (self.theta if self.all_active else self.theta[:, idx]) + np.einsum('blm,bm->bl', K, nu)
            Pn = Pa - K @ Pwd.swapaxes(1, 2)                     # K P_dd K^T = K P_wd^T
            Pn = 0.5 * (Pn + np.swapaxes(Pn, 1, 2))
        d = np.arange(self.L)
        good = ok & np.isfinite(ta).all(1) & np.isfinite(Pn).all((1, 2)) & (Pn[:, d, d] > 0).all(1)
        bad_num = ok & ~good
        if bad_num.any():
            self.counts['rejected_numerical'] += int(bad_num.sum())
        lo, hi = self.lower[idx], self.upper[idx]
        viol = ((ta < lo) | (ta > hi)) & good[:, None]
        if viol.any():
            self.counts['clipped'] += int(viol.sum())
            for b in np.flatnonzero(viol.any(axis=1)):
                ta[b] = self._project(ta[b], Pn[b], lo, hi)
        clipped = np.clip(ta, lo, hi)
        g = good[:, None]
        new_theta = self.theta.copy()
        if self.all_active:
            new_theta = np.where(g, clipped, self.theta)
            self.P = np.where(g[..., None], Pn, self.P)
        else:
            new_theta[:, idx] = np.where(g, clipped, self.theta[:, idx])
            Pfull = self.P.copy()
            Pfull[:, idx[:, None], idx] = np.where(g[..., None], Pn, Pfull[:, idx[:, None], idx])
            self.P = Pfull
        if self.process == 'robbins_monro' and good.any():
            r = z - self.hx(new_theta[:, None, :], x)[:, 0, :]
            kr = np.einsum('blm,bm->bl', K, np.where(np.isfinite(r), r, 0.0))
            qa = self.Qd[:, idx]
            self.Qd[:, idx] = np.where(g, (1 - self.a_rm) * qa + self.a_rm * kr ** 2, qa)
        self.theta = new_theta
        self.nis = np.where(good, nis, self.nis)
        self.innovation = np.where(g, nu, self.innovation)
        self.counts['updates'] += int(good.sum())
        return good

    def update_many(self, Z: np.ndarray, X: np.ndarray, order: np.ndarray | None = None) -> int:
        """Sequential updates over samples: Z (N, m), X (N, m, n) for the linear hx (one filter, or all
        filters on the same data). Returns the number of accepted updates."""
        n_ok = 0
        for k in (range(len(Z)) if order is None else order):
            n_ok += int(self.update(Z[k], X[k]).sum())
        return n_ok
