"""Generalised maximum likelihood in the frequency domain (Agar 2004 §2.9, after Klein 1978 / Mehra).

Force noise-free, displacement noisy: Z_i = X_i(theta) + V_i, V ~ N(0, R), at the selected bins, with

    X_i(theta) = F_i / (k + j b w_i),     s_i = dX_i/dtheta = -F_i [1, j w_i] / (k + j b w_i)^2
    R          = sum_i |V_i|^2 / (rows - p)                                         (2.26a)
    M          = Re sum_i s_i^* R^-1 s_i,  g = -Re sum_i s_i^* R^-1 V_i       (Fisher information, gradient)
    theta      = theta_prev - M^-1 g                                                (2.26b, Gauss-Newton)

alternating R and theta until the scaled Gauss-Newton step |dtheta_s| <= tol (1 + |theta_s|) or
``max_iter``. The spec's N dt factors (and, for one output, R itself) scale M and g alike and cancel in
the step; R sets the covariance M^-1 at the optimum (R is per real component, in the Parseval
normalisation of :mod:`spectra`, not the spec's dt sum |V_i|^2). A step that does not lower the cost is
halved (up to 30 times).
The default start is the frequency-domain least squares (OEM) solution; ``initial`` overrides it.
Non-convergence, a singular M or a model pole on a selected bin is a structured failure, never NaN.
"""
from __future__ import annotations

import numpy as np

from .models import KELVIN_VOIGT, ContactModel
from .spectra import FrequencyEstimator, Solution, Spectrum, least_squares, real_stack


class GeneralisedMaximumLikelihood(FrequencyEstimator):
    name = 'gmle'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, initial: dict | None = None, max_iter: int = 50,
                 tol: float = 1e-10, max_condition_m: float = 1e12, **options):
        super().__init__(model, **options)
        if not max_iter >= 1 or not tol > 0 or not max_condition_m > 1:
            raise ValueError(f'max_iter must be >= 1, tol > 0, max_condition_m > 1; got {max_iter}, {tol}, '
                             f'{max_condition_m}')
        self.initial = None if initial is None else dict(initial)
        self.max_iter, self.tol, self.max_cond_m = int(max_iter), float(tol), float(max_condition_m)

    def solve(self, spec: Spectrum, bins: np.ndarray) -> Solution | str:
        f, z, w = spec.force[bins], spec.x[bins], spec.omega[bins]
        jw = np.column_stack((np.ones(len(w)), 1j * w)) / self.scales        # d(k + j b w) / d theta_s

        def residual(theta_s: np.ndarray) -> np.ndarray | None:
            den = jw @ theta_s
            if not np.all(np.abs(den) > 0):
                return None
            return real_stack(z - f / den)

        if self.initial is None:
            h = real_stack(spec.regressor(bins)) / self.scales
            theta = least_squares(h, real_stack(f)).theta
        else:
            theta = np.array([self.initial.get(n, 0.0) for n in self.model.names]) * self.scales
        v = residual(theta)
        if v is None:
            return 'GMLE: k + j b w = 0 at a selected bin for the initial theta'
        cost = float(v @ v)
        for it in range(1, self.max_iter + 1):
            s = real_stack(-(f / (jw @ theta) ** 2)[:, None] * jw)          # dX/dtheta_s
            norms = np.linalg.norm(s, axis=0)
            if not (np.all(np.isfinite(s)) and np.all(norms > 0)
                    and np.linalg.cond(s / norms) ** 2 <= self.max_cond_m):
                return (f'GMLE: singular information matrix M at iteration {it} '
                        f'(condition > {self.max_cond_m:.3g})')
            gn = least_squares(s, v)                                        # step -M^-1 g, sigma^2 M^-1
            delta = gn.theta
            size = float(np.linalg.norm(delta))
            scale = 1.0 + float(np.linalg.norm(theta))
            if size <= self.tol * scale:
                return self._solution(theta, gn, it, size, cost)
            for _ in range(31):
                v_new = residual(theta + delta)
                if v_new is not None and float(v_new @ v_new) <= cost:
                    break
                delta = 0.5 * delta
            else:
                # no step lowers the cost: at the optimum to round-off (a noise-free fit, or a start that is
                # already the solution) this is convergence; elsewhere it is a failure
                if size <= 1e-6 * scale or cost <= 1e-24 * float(real_stack(z) @ real_stack(z)):
                    return self._solution(theta, gn, it, size, cost)
                return f'GMLE: no descent from the Gauss-Newton step at iteration {it}'
            theta = theta + delta
            v, cost = v_new, float(v_new @ v_new)
        return f'GMLE did not converge in {self.max_iter} iterations (last scaled step {size:.3g})'

    def _solution(self, theta: np.ndarray, gn, iterations: int, step: float, cost: float) -> Solution:
        return Solution(values=theta / self.scales, covariance=gn.covariance / np.outer(self.scales, self.scales),
                        extras={'iterations': iterations, 'last_step': step,
                                'displacement_noise_variance': cost / max(gn.rows - 2, 1)})
