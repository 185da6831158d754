"""Equation error method in the frequency domain (Agar 2004 §2.8, eqs. 2.19-2.23).

    j w_i X_i = -(k/b) X_i + (1/b) F_i + eps_i
    y = x theta + eps,   y_i = j w_i X_i,   x_i = [X_i, F_i],   theta = [-k/b, 1/b]
    theta = [Re(x^* x)]^-1 Re(x^* y),     cov_theta = sigma_eps^2 [Re(x^* x)]^-1
    b = 1 / theta_2,   k = -theta_1 / theta_2        (back-transformation; covariance by the delta method)

Non-iterative, no initial guess. When b is ~0 or not excited, theta_2 = 1/b is ~0 and noisy, and b
explodes or flips sign while k (a ratio whose direction is well determined) stays right. The
``confidence`` interval theta_2 +- z sigma_2 is reported; when it contains 0, damping is flagged not
identifiable (``identifiable[1] = False``, a note in ``reason``, ``extras['theta2_interval_contains_zero']``).
Collinear X_i and F_i (condition of the column-normalised regressor above ``max_collinearity``: b is
exactly 0 or not excited) and theta_2 = 0 (b unbounded) are structured failures.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from .models import KELVIN_VOIGT, ContactModel
from .spectra import FrequencyEstimator, Solution, Spectrum, least_squares, real_stack


class EquationError(FrequencyEstimator):
    name = 'eem'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, confidence: float = 0.95,
                 max_collinearity: float = 1e10, **options):
        super().__init__(model, **options)
        if not 0.0 < confidence < 1.0 or not max_collinearity > 1:
            raise ValueError(f'confidence must be in (0, 1) and max_collinearity > 1, got {confidence}, '
                             f'{max_collinearity}')
        self.confidence = float(confidence)
        self.max_collinearity = float(max_collinearity)

    def solve(self, spec: Spectrum, bins: np.ndarray) -> Solution | str:
        x, f = spec.x[bins], spec.force[bins]
        a = real_stack(np.column_stack((x, f)))
        norms = np.linalg.norm(a, axis=0)
        if not np.all(norms > 0) or np.linalg.cond(a / norms) > self.max_collinearity:
            return ('EEM: X and F are collinear at the selected bins (b = 0 or not excited): '
                    '1/b is undetermined')
        ls = least_squares(a, real_stack(1j * spec.omega[bins] * x))
        t1, t2 = ls.theta
        if not abs(t2) > 1e-300 * max(abs(t1), 1.0):
            return f'EEM: 1/b = theta_2 = {t2:.3g}: damping unbounded (b ~ 0 or not excited)'
        with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
            values = np.array([-t1 / t2, 1.0 / t2])
            jac = np.array([[-1.0 / t2, t1 / t2 ** 2],         # d(k, b) / d(theta_1, theta_2)
                            [0.0, -1.0 / t2 ** 2]])
            cov = jac @ ls.covariance @ jac.T
        half = float(ndtri(0.5 + 0.5 * self.confidence) * np.sqrt(ls.covariance[1, 1]))
        contains_zero = abs(t2) <= half
        return Solution(
            values=values, covariance=cov, damping_identifiable=not contains_zero,
            note=(f'damping not identifiable: the {self.confidence:.0%} interval of 1/b, '
                  f'{t2:.3g} +- {half:.3g}, contains 0' if contains_zero else ''),
            extras={'theta': [float(t1), float(t2)], 'theta2_half_width': half,
                    'theta2_interval_contains_zero': bool(contains_zero)})
