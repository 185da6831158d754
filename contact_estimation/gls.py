"""Global least squares (Agar 2004 §2.5, eqs. 2.10-2.11): one estimate from a whole window.

    theta = argmin || Phi theta - F ||^2        (QR / lstsq on column-scaled Phi)
    cov   = sigma^2 (Phi^T Phi)^-1,  sigma^2 = RSS / (N - p)

Optional bounds use ``scipy.optimize.lsq_linear`` (the thesis projected damping onto b >= 0).
``SlidingWindowGLS`` refits over the last ``window_s`` seconds for online use.
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
        active = (False,) * p
        if self.bounds:
            lo = np.array([self.bounds.get(nm, (-np.inf, np.inf))[0] for nm in self.model.names]) * self.scales
            hi = np.array([self.bounds.get(nm, (-np.inf, np.inf))[1] for nm in self.model.names]) * self.scales
            res = lsq_linear(phi, y, bounds=(lo, hi), method='bvls')
            theta = res.x
            active = tuple(bool(a != 0) for a in res.active_mask)
        else:
            theta = np.linalg.lstsq(phi, y, rcond=None)[0]
        resid = y - phi @ theta
        rss = float(resid @ resid)
        sigma2 = rss / (n - p)
        q = quality_from_information(phi.T @ phi, n, sigma2, self.scales, self.min_exc)
        values = theta / self.scales
        valid, reason = verdict(self.model.names, values, q, n, self.min_samples, self.max_condition)
        ss_tot = float(((y - y.mean()) ** 2).sum())
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
            covariance=q.covariance, valid=valid, reason=reason, residual_rms=float(np.sqrt(rss / n)),
            condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
            bounds_active=active, samples_used=n, stamp=stamp,
            extras={'r_squared': 1.0 - rss / ss_tot if ss_tot > 0 else 0.0})


class SlidingWindowGLS:
    """GLS over the samples of the last ``window_s`` seconds; refits lazily when asked for an estimate."""

    name = 'gls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, window_s: float = 10.0, **kwargs):
        if not window_s > 0:
            raise ValueError(f'window must be > 0 s, got {window_s}')
        self.window_s = float(window_s)
        self.gls = GlobalLeastSquares(model, **kwargs)
        self.model = model
        self.reset()

    def reset(self) -> None:
        self._parts: list[ContactSamples] = []
        self._cached: ContactEstimate | None = None

    def update(self, samples: ContactSamples) -> None:
        if len(samples) == 0:
            return
        window = ContactSamples.concat(self._parts + [samples])
        keep = window.t > window.t[-1] - self.window_s
        self._parts = [window.slice(keep)]
        self._cached = None

    def estimate(self) -> ContactEstimate:
        if self._cached is None:
            data = ContactSamples.concat(self._parts)
            est = self.gls.fit(data)
            self._cached = est
        return self._cached
