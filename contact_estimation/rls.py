"""Recursive least squares with exponential forgetting (Agar 2004 §2.1, eqs. 2.3-2.5), wind-up free.

Information form of the same recursion, with the forgetting regularised towards a floor:

    R[n] = lam R[n-1] + (1 - lam) R_min + phi[n] phi[n]^T,     R[0] = P0^-1
    r[n] = lam r[n-1] + (1 - lam) R_min theta0 + phi[n] F[n]
    theta[n] = R[n]^-1 r[n]

With R_min = 0 this is exactly the matrix-inversion-lemma RLS of the thesis (P = R^-1). The floor
R_min = I / max_covariance bounds P, so directions without excitation cannot wind up (padasip #5,
spec §2.1): they relax towards the prior instead. Both recursions are linear, so a block of samples is
processed with ``scipy.signal.lfilter`` and a batched solve, giving the sample-by-sample result at
vectorised cost. Regressors are scaled (phi / scales) so that P0 = a I is meaningful.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from .estimate import ContactEstimate, failure, project, quality_from_information, verdict
from .models import KELVIN_VOIGT, ContactModel
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
        self._theta0 = theta0
        self._R = np.eye(p) / self.p0
        self._r = self._R @ theta0
        self._theta = theta0.copy()
        self._s = 0.0          # forgetting-weighted sum of squared a-priori residuals
        self._w = 0.0          # forgetting-weighted sample count
        self._n = 0
        self._t = 0.0
        self._cached: ContactEstimate | None = None
        self.history_t: list[np.ndarray] = []
        self.history_theta: list[np.ndarray] = []

    def update(self, samples: ContactSamples) -> None:
        n = len(samples)
        if n == 0:
            return
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.scales
        y = samples.force
        p = self.model.size
        lam = self.lam
        # the four recursions share the filter 1 / (1 - lam z^-1): run them as one lfilter over columns
        # [phi phi^T + (1-lam) R_min | phi F + (1-lam) R_min theta0 | 1]
        cols = np.empty((n, p * p + p + 1))
        cols[:, :p * p] = np.einsum('ni,nj->nij', phi, phi).reshape(n, p * p)
        cols[:, :p * p] += ((1 - lam) * self.r_min * np.eye(p)).ravel()
        cols[:, p * p:p * p + p] = phi * y[:, None] + (1 - lam) * self.r_min * self._theta0
        cols[:, -1] = 1.0
        zi = lam * np.concatenate((self._R.ravel(), self._r, [self._w]))[None, :]
        out = lfilter([1.0], [1.0, -lam], cols, axis=0, zi=zi)[0]
        R = out[:, :p * p].reshape(n, p, p)
        r = out[:, p * p:p * p + p]
        w = out[:, -1]
        theta = np.linalg.solve(R, r[:, :, None])[:, :, 0]
        prior = np.vstack([self._theta[None, :], theta[:-1]])
        e = y - np.einsum('ni,ni->n', phi, prior)
        s = lfilter([1.0], [1.0, -lam], e * e, zi=[lam * self._s])[0]
        self._R, self._r, self._theta = R[-1], r[-1], theta[-1]
        self._s, self._w = float(s[-1]), float(w[-1])
        self._n += n
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
        if self._n == 0:
            return failure(self.name, self.model, 'no samples yet')
        sigma2 = self._s / max(self._w - self.model.size, 1.0)
        q = quality_from_information(self._R, self._w, sigma2, self.scales, self.min_exc)
        raw = self._theta / self.scales
        values, active = project(raw, self.model.names, self.bounds)
        valid, reason = verdict(self.model.names, values, q, self._n, self.min_samples, self.max_condition)
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
            covariance=q.covariance, valid=valid, reason=reason, residual_rms=float(np.sqrt(self._s / max(self._w, 1e-12))),
            condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
            bounds_active=active, samples_used=int(round(self._w)), stamp=self._t,
            extras={'forgetting_factor': self.lam, 'samples_total': self._n})
