"""Recursive least squares with exponential forgetting (Agar 2004 §2.1, eqs. 2.3-2.5), wind-up free.

Information form of the same recursion, with the forgetting regularised towards a floor:

    R[n] = lam R[n-1] + (1 - lam) R_min + phi[n] phi[n]^T,     R[0] = P0^-1
    r[n] = lam r[n-1] + phi[n] F[n],                          r[0] = P0^-1 theta0
    theta[n] = R[n]^-1 r[n]

With R_min = 0 this is exactly the matrix-inversion-lemma RLS of the thesis (P = R^-1). The floor
R_min = I / max_covariance bounds P, so directions without excitation cannot wind up (padasip #5,
spec §2.1): they relax towards zero instead (a ridge on the forgotten information). The floor is
anchored at zero, not at the initial guess, so its bias on an excited parameter is the relative
ridge R_min (1 - lam) / phi_s^2 (~1e-8 with the defaults) whatever theta0 was: the thesis's sensitivity
to a wild initial guess (S4: 45 % at k0 = 1e12) does not return through the floor. Both recursions are linear, so a block of samples is
processed with ``scipy.signal.lfilter`` and a batched solve, giving the sample-by-sample result at
vectorised cost; ``update_and_report`` turns those per-sample states into the estimates after any
prefixes of the block. Regressors are scaled (phi / scales) so that P0 = a I is meaningful.

Published sigma (issue 14; ``assess``, the same in the node, run-bag and contact-compare): the own P scaled
by the residual variance and by ``ewls_factor`` (the exact covariance of exponentially weighted least squares,
-> 1/(1 + lambda) of sigma^2 P once the memory is full), raised per parameter to the residual HAC sandwich, the gap to an instrumental-
variables fit and to the parallel-filtered fit of the window (whose covariance holds its HAC sandwich, the
errors-in-variables bias of the x noise through the kernels and the two-bandwidth conditioning term), the
shift of an omitted mass / direction-dependent force when significant, and - being a tracking estimator
(lambda < 1) - how far its value moved within the adequacy window beyond 2 sigma.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from .estimate import ContactEstimate, failure, project, quality_batch, verdict
from .models import KELVIN_VOIGT, ContactModel
from .reporting import at_counts, check_counts
from .samples import ContactSamples


class RecursiveLeastSquares:
    """RLS of F = phi^T theta; ``update`` takes blocks of any length, ``estimate`` reports the latest."""

    name = 'rls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, forgetting: float = 0.98,
                 initial_covariance: float = 1e5, initial: dict | None = None, max_covariance: float = 1e8,
                 bounds: dict | None = None, min_samples: int = 50, max_condition: float = 1e8,
                 scales: dict | None = None, min_excitation: dict | None = None, record: bool = False):
        if not 0.0 < forgetting <= 1.0:
            raise ValueError(f'forgetting factor must be in (0, 1], got {forgetting}')
        if not initial_covariance > 0 or not max_covariance > 0:
            raise ValueError('initial_covariance and max_covariance must be > 0')
        self.model = model
        self.lam = float(forgetting)
        self.p0 = float(initial_covariance)
        self.r_min = 1.0 / float(max_covariance)
        self.bounds = bounds
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.scales = model.scales(scales)
        self.min_exc = model.min_excitation(min_excitation)
        self.initial = dict(initial or {})
        self.record = record
        self.reset()

    def reset(self) -> None:
        p = self.model.size
        theta0 = np.array([self.initial.get(n, 0.0) for n in self.model.names]) * self.scales
        self._R = np.eye(p) / self.p0
        self._r = self._R @ theta0
        self._theta = theta0.copy()
        self._s = 0.0          # forgetting-weighted sum of squared a-priori residuals
        self._w = 0.0          # forgetting-weighted sample count
        self._yy = 0.0         # forgetting-weighted sum of F^2 (for the verdict's unexcited-share rule)
        self._n = 0
        self._t = 0.0
        self._cached: ContactEstimate | None = None
        self.history_t: list[np.ndarray] = []
        self.history_theta: list[np.ndarray] = []

    def update(self, samples: ContactSamples) -> None:
        if len(samples):
            self._commit(samples, *self._filter(samples))

    def update_and_report(self, samples: ContactSamples, counts: np.ndarray) -> list[ContactEstimate]:
        """Process the block; return the estimate after its first counts[j] samples, for each j."""
        counts = check_counts(counts, len(samples))
        if not len(samples):
            return [self.estimate()] * len(counts)
        R, r, w, theta, s, yy = self._filter(samples)
        # state after the first c samples of the block, c = 0..n (row 0: the state before the block)
        R_c = np.concatenate((self._R[None], R))
        theta_c = np.concatenate((self._theta[None], theta))
        s_c = np.concatenate(([self._s], s))
        w_c = np.concatenate(([self._w], w))
        yy_c = np.concatenate(([self._yy], yy))
        n_c = self._n + np.arange(len(samples) + 1)
        t_c = np.concatenate(([self._t], samples.t))
        self._commit(samples, R, r, w, theta, s, yy)
        return at_counts(counts, lambda c: self._estimates(R_c[c], theta_c[c], s_c[c], w_c[c], n_c[c], t_c[c],
                                                           yy_c[c]))

    def _filter(self, samples: ContactSamples) -> tuple[np.ndarray, ...]:
        """Per-sample R[n] (n, p, p), r[n], w[n], theta[n], s[n] and yy[n] of the block, from the current state.

        w[n] = lam w[n-1] + 1 counts samples, s[n] = lam s[n-1] + e[n]^2 sums the a-priori residuals
        e[n] = F[n] - phi[n]^T theta[n-1], yy[n] = lam yy[n-1] + F[n]^2.
        """
        n = len(samples)
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.scales
        y = samples.force
        p = self.model.size
        lam = self.lam
        # the recursions share the filter 1 / (1 - lam z^-1): run them as one lfilter over columns
        # [phi phi^T + (1-lam) R_min | phi F | F^2 | 1]
        cols = np.empty((n, p * p + p + 2))
        cols[:, :p * p] = np.einsum('ni,nj->nij', phi, phi).reshape(n, p * p)
        cols[:, :p * p] += ((1 - lam) * self.r_min * np.eye(p)).ravel()
        cols[:, p * p:p * p + p] = phi * y[:, None]
        cols[:, -2] = y * y
        cols[:, -1] = 1.0
        zi = lam * np.concatenate((self._R.ravel(), self._r, [self._yy, self._w]))[None, :]
        out = lfilter([1.0], [1.0, -lam], cols, axis=0, zi=zi)[0]
        R = out[:, :p * p].reshape(n, p, p)
        r = out[:, p * p:p * p + p]
        yy = out[:, -2]
        w = out[:, -1]
        # a relative ridge (1e-13 of the largest diagonal) keeps the solve defined when one huge regressor
        # has made R singular to float precision (x ~ 1e16 m in the fuzz tests); negligible otherwise
        ridge = np.diagonal(R, axis1=1, axis2=2).max(axis=1) * 1e-13
        theta = np.linalg.solve(R + ridge[:, None, None] * np.eye(p), r[:, :, None])[:, :, 0]
        prior = np.vstack([self._theta[None, :], theta[:-1]])
        e = y - np.einsum('ni,ni->n', phi, prior)
        s = lfilter([1.0], [1.0, -lam], e * e, zi=[lam * self._s])[0]
        return R, r, w, theta, s, yy

    def _commit(self, samples: ContactSamples, R, r, w, theta, s, yy) -> None:
        """Take the state after the block's last sample."""
        self._R, self._r, self._theta = R[-1], r[-1], theta[-1]
        self._s, self._w, self._yy = float(s[-1]), float(w[-1]), float(yy[-1])
        self._n += len(samples)
        self._t = float(samples.t[-1])
        self._cached = None
        if self.record:
            self.history_t.append(samples.t.copy())
            self.history_theta.append(theta / self.scales)

    def trajectory(self) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (t, theta[N, p]) in SI units (``record=True``)."""
        if not self.history_t:
            return np.zeros(0), np.zeros((0, self.model.size))
        return np.concatenate(self.history_t), np.vstack(self.history_theta)

    def estimate(self) -> ContactEstimate:
        if self._cached is None:
            self._cached = self._estimate()
        return self._cached

    def _estimate(self) -> ContactEstimate:
        return self._estimates(self._R[None], self._theta[None], np.array([self._s]), np.array([self._w]),
                               np.array([self._n]), np.array([self._t]), np.array([self._yy]))[0]

    def _estimates(self, R: np.ndarray, theta: np.ndarray, s: np.ndarray, w: np.ndarray, n: np.ndarray,
                   t: np.ndarray, yy: np.ndarray) -> list[ContactEstimate]:
        """Estimates of K states: information R (K, p, p), theta (K, p), residual sum s, weight w, samples
        n, newest time t, sum of F^2 yy; covariance sigma^2 R^-1 x ``ewls_factor(w, lam)`` with
        sigma^2 = s / max(w - p, 1), residual_rms = sqrt(s / w), rms(F) = sqrt(yy / w)."""
        live = np.flatnonzero(n > 0)
        p = self.model.size
        sigma2 = s[live] / np.maximum(w[live] - p, 1.0) * ewls_factor(w[live], self.lam)
        qualities = quality_batch(R[live], w[live], sigma2, self.scales, self.min_exc)
        raw = theta[live] / self.scales
        rms = np.sqrt(s[live] / np.maximum(w[live], 1e-12))
        force_rms = np.sqrt(np.maximum(yy[live], 0.0) / np.maximum(w[live], 1e-12))
        out = [failure(self.name, self.model, 'no samples yet')] * len(n)
        for k, q, raw_k, rms_k, w_k, n_k, t_k, f_k in zip(live.tolist(), qualities, raw, rms.tolist(),
                                                          w[live].tolist(), n[live].tolist(), t[live].tolist(),
                                                          force_rms.tolist()):
            values, active = project(raw_k, self.model.names, self.bounds)
            valid, reason = verdict(self.model.names, values, q, n_k, self.min_samples, self.max_condition, f_k)
            out[k] = ContactEstimate.of(
                algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
                covariance=q.covariance, valid=valid, reason=reason, residual_rms=rms_k,
                condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
                bounds_active=active, samples_used=int(round(w_k)), stamp=t_k,
                extras={'forgetting_factor': self.lam, 'samples_total': n_k})
        return out


def ewls_factor(w: np.ndarray, lam: float) -> np.ndarray:
    """w2 / w: the covariance of exponentially weighted least squares relative to sigma^2 R^-1 (white noise).

    theta = R^-1 sum lam^k phi_k F_k with R = sum lam^k phi phi^T has covariance sigma^2 R^-1 R2 R^-1,
    R2 = sum lam^(2k) phi phi^T. For stationary regressors R2 = R w2 / w with w = sum lam^k, w2 = sum lam^(2k);
    after N samples w = (1 - lam^N) / (1 - lam), so w2 / w = (2 - w (1 - lam)) / (1 + lam): 1 without
    forgetting or at the start, 1 / (1 + lam) ~ 1/2 once the memory is full (sigma^2 R^-1 alone overstates the
    variance of a forgetting RLS by up to 2x). The P0 prior and the wind-up floor are left out (negligible
    once the data dominate R)."""
    lam = float(lam)
    return np.clip((2.0 - np.asarray(w, dtype=np.float64) * (1.0 - lam)) / (1.0 + lam), 1.0 / (1.0 + lam), 1.0)
