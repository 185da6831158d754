"""Empirical transfer function estimate (Agar 2004 §2.6, after Patel 2003).

    G_i = X_i / F_i = 1 / (k + j b w_i)                       (eq. 2.13, at the selected bins)
    k_i = Re(1/G_i),  b_i = Im(1/G_i) / w_i                   (per bin, N/m and N s/m)

combined by least squares on 1/G_i = k + j b w_i, either

  * ``combine='mean'`` (the spec's literal form, unit weights): k = mean_i Re(1/G_i),
    b = sum_i w_i Im(1/G_i) / sum_i w_i^2; or
  * ``combine='weighted'`` (default): weights |X_i|^2, i.e. least squares on F_i = (k + j b w_i) X_i, so
    the bins that carry the deformation dominate. On plateau data the DC bin then gives the secant
    stiffness F/x, instead of being averaged with leakage bins whose ratio is the tangent stiffness of a
    hardening contact (n times the secant for F = k x^n): unit weights put S2 5-6 % off.

The covariance is that of this least squares, sigma^2 from its residuals. The per-bin k_i and b_i
(their spread is the thesis's "b of either sign") are in ``extras``.
"""
from __future__ import annotations

import numpy as np

from .spectra import FrequencyEstimator, Solution, Spectrum, least_squares, real_stack


class EmpiricalTransferFunction(FrequencyEstimator):
    name = 'etfe'

    def __init__(self, model=None, *, combine: str = 'weighted', **options):
        if combine not in ('weighted', 'mean'):
            raise ValueError(f"combine must be 'weighted' or 'mean', got '{combine}'")
        self.combine = combine
        super().__init__(*(() if model is None else (model,)), **options)

    def solve(self, spec: Spectrum, bins: np.ndarray) -> Solution | str:
        x, f, w = spec.x[bins], spec.force[bins], spec.omega[bins]
        keep = np.abs(x) > 1e-12 * np.abs(x).max()
        if not np.any(keep & (w > 0)):
            return 'ETFE: no selected bin above DC with displacement content (damping undetermined)'
        g_inv = f[keep] / x[keep]
        w = w[keep]
        sqrt_w = np.abs(x[keep]) if self.combine == 'weighted' else np.ones(len(w))
        design = np.column_stack((np.ones(len(w)), 1j * w)) * sqrt_w[:, None]
        ls = least_squares(real_stack(design), real_stack(g_inv * sqrt_w))
        above_dc = w > 0
        return Solution(values=ls.theta, covariance=ls.covariance,
                        extras={'k_bins': g_inv.real.tolist(),
                                'b_bins': (g_inv.imag[above_dc] / w[above_dc]).tolist()})
