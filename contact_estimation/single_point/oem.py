"""Output error method in the frequency domain (Agar 2004 §2.7, eqs. 2.14-2.18).

    F_i(theta) = h_i theta,   h_i = [1, j w_i] X_i,   V_i = Z_i - F_i(theta_prev)     (Z_i: measured F)
    J(theta)   = 1/2 sum_i V_i^* R^-1 V_i
    theta      = theta_prev + [Re sum h_i^* h_i]^-1 Re sum h_i^* V_i                  (Gauss-Newton)

R is a scalar for one output and cancels in the step. The model is linear in theta, so the iteration
converges in one step to the frequency-domain least squares; it is kept (``max_iter``, ``tol`` on the
scaled step |dtheta_s| <= tol (1 + |theta_s|)) for nonlinear models. Covariance sigma^2 [Re sum h^* h]^-1
with sigma^2 from the residuals at the final theta.
"""
from __future__ import annotations

import numpy as np

from .models import KELVIN_VOIGT, ContactModel
from .spectra import FrequencyEstimator, Solution, Spectrum, least_squares, real_stack


class OutputError(FrequencyEstimator):
    name = 'oem'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, initial: dict | None = None, max_iter: int = 20,
                 tol: float = 1e-10, **options):
        super().__init__(model, **options)
        if not max_iter >= 1 or not tol > 0:
            raise ValueError(f'max_iter must be >= 1 and tol > 0, got {max_iter}, {tol}')
        self.initial = dict(initial or {})
        self.max_iter, self.tol = int(max_iter), float(tol)

    def solve(self, spec: Spectrum, bins: np.ndarray) -> Solution | str:
        h = real_stack(spec.regressor(bins)) / self.scales
        z = real_stack(spec.force[bins])
        theta = np.array([self.initial.get(n, 0.0) for n in self.model.names]) * self.scales
        for it in range(1, self.max_iter + 1):
            step = least_squares(h, z - h @ theta)
            theta = theta + step.theta
            size = float(np.linalg.norm(step.theta))
            if size <= self.tol * (1.0 + float(np.linalg.norm(theta))):
                return Solution(values=theta / self.scales,
                                covariance=step.covariance / np.outer(self.scales, self.scales),
                                extras={'iterations': it, 'last_step': size})
        return f'OEM did not converge in {self.max_iter} iterations (last scaled step {size:.3g})'
