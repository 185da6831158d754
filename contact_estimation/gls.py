"""Global least squares (Agar 2004 §2.5, eqs. 2.10-2.11): one estimate from a whole window.

    theta = argmin || Phi theta - F ||^2        (QR / lstsq on column-scaled Phi)
    cov   = sigma^2 (Phi^T Phi)^-1,  sigma^2 = RSS / (N - p)

Optional bounds use ``scipy.optimize.lsq_linear`` (the thesis projected damping onto b >= 0).
``SlidingWindowGLS`` is the online form over the last ``window_s`` seconds: it keeps the window's
sufficient statistics (Phi^T Phi, Phi^T F, F^T F, N), adding arriving samples and subtracting leaving
ones exactly per sample, and solves the (column-scaled) normal equations on demand.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import lsq_linear

from .estimate import ContactEstimate, failure, quality_from_information, verdict
from .models import KELVIN_VOIGT, ContactModel
from .samples import ContactSamples


class GlobalLeastSquares:
    name = 'gls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, bounds: dict | None = None, min_samples: int = 10,
                 max_condition: float = 1e8, scales: dict | None = None, min_excitation: dict | None = None):
        self.model = model
        self.bounds = bounds
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.scales = model.scales(scales)
        self.min_exc = model.min_excitation(min_excitation)

    def fit(self, samples: ContactSamples) -> ContactEstimate:
        n, p = len(samples), self.model.size
        stamp = float(samples.t[-1]) if n else 0.0
        if n <= p:
            return failure(self.name, self.model, f'too few samples ({n})', stamp, n)
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.scales
        y = samples.force
        if self.bounds:
            res = lsq_linear(phi, y, bounds=self._scaled_bounds(), method='bvls')
            theta, active = res.x, tuple(bool(a != 0) for a in res.active_mask)
        else:
            theta, active = np.linalg.lstsq(phi, y, rcond=None)[0], (False,) * p
        resid = y - phi @ theta
        ss_tot = float(((y - y.mean()) ** 2).sum())
        return self.finish(theta, active, phi.T @ phi, float(resid @ resid), ss_tot, n, stamp)

    def fit_normal(self, info: np.ndarray, rhs: np.ndarray, yy: float, ysum: float, n: int,
                   stamp: float) -> ContactEstimate:
        """The same estimate from sufficient statistics of the scaled regressors (info = Phi^T Phi, rhs = Phi^T F)."""
        p = self.model.size
        if n <= p:
            return failure(self.name, self.model, f'too few samples ({n})', stamp, n)
        top = float(np.max(np.diag(info)))
        ridged = info + np.eye(p) * max(top * 1e-13, 1e-300)
        theta, active = np.linalg.solve(ridged, rhs), (False,) * p
        if self.bounds:
            lo, hi = self._scaled_bounds()
            if np.any(theta < lo) or np.any(theta > hi):
                chol = np.linalg.cholesky(ridged)                 # ||L^T theta - L^-1 rhs||^2 + const
                res = lsq_linear(chol.T, np.linalg.solve(chol, rhs), bounds=(lo, hi), method='bvls')
                theta, active = res.x, tuple(bool(a != 0) for a in res.active_mask)
        rss = max(yy - 2.0 * float(theta @ rhs) + float(theta @ info @ theta), 0.0)
        ss_tot = max(yy - ysum * ysum / n, 0.0)
        return self.finish(theta, active, info, rss, ss_tot, n, stamp)

    def finish(self, theta: np.ndarray, active: tuple, info: np.ndarray, rss: float, ss_tot: float, n: int,
               stamp: float) -> ContactEstimate:
        p = self.model.size
        q = quality_from_information(info, n, rss / (n - p), self.scales, self.min_exc)
        values = theta / self.scales
        valid, reason = verdict(self.model.names, values, q, n, self.min_samples, self.max_condition)
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
            covariance=q.covariance, valid=valid, reason=reason, residual_rms=float(np.sqrt(rss / n)),
            condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
            bounds_active=active, samples_used=n, stamp=stamp,
            extras={'r_squared': 1.0 - rss / ss_tot if ss_tot > 0 else 0.0})

    def _scaled_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo = np.array([self.bounds.get(nm, (-np.inf, np.inf))[0] for nm in self.model.names]) * self.scales
        hi = np.array([self.bounds.get(nm, (-np.inf, np.inf))[1] for nm in self.model.names]) * self.scales
        return lo, hi


class SlidingWindowGLS:
    """GLS over the samples of the last ``window_s`` seconds, from running sufficient statistics."""

    name = 'gls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, window_s: float = 10.0, **kwargs):
        if not window_s > 0:
            raise ValueError(f'window must be > 0 s, got {window_s}')
        self.window_s = float(window_s)
        self.gls = GlobalLeastSquares(model, **kwargs)
        self.model = model
        self.reset()

    def reset(self) -> None:
        p = self.model.size
        self._t = np.zeros(0)
        self._phi = np.zeros((0, p))
        self._y = np.zeros(0)
        self._info = np.zeros((p, p))
        self._rhs = np.zeros(p)
        self._yy = 0.0
        self._ysum = 0.0
        self._cached: ContactEstimate | None = None

    def update(self, samples: ContactSamples) -> None:
        if len(samples) == 0:
            return
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.gls.scales
        y = samples.force
        self._add(phi, y, +1.0)
        t = np.concatenate((self._t, samples.t))
        phi_all = np.concatenate((self._phi, phi))
        y_all = np.concatenate((self._y, y))
        drop = int(np.searchsorted(t, t[-1] - self.window_s, side='right'))
        if drop:
            self._add(phi_all[:drop], y_all[:drop], -1.0)
        self._t, self._phi, self._y = t[drop:], phi_all[drop:], y_all[drop:]
        self._cached = None

    def _add(self, phi: np.ndarray, y: np.ndarray, sign: float) -> None:
        self._info += sign * (phi.T @ phi)
        self._rhs += sign * (phi.T @ y)
        self._yy += sign * float(y @ y)
        self._ysum += sign * float(y.sum())

    def estimate(self) -> ContactEstimate:
        if self._cached is None:
            stamp = float(self._t[-1]) if len(self._t) else 0.0
            self._cached = self.gls.fit_normal(self._info, self._rhs, self._yy, self._ysum, len(self._t), stamp)
            self._cached.extras['window_s'] = self.window_s
        return self._cached
