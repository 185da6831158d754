"""Instantaneous least squares (Agar 2004 §2.2, after Weber 2001): RLS with the mass neglected.

    F = k x + b xdot,     theta = [k, b],     phi = [x, xdot]

The recursion is exactly that of :class:`~contact_estimation.single_point.rls.RecursiveLeastSquares` (eqs. 2.3-2.5,
exponential forgetting, wind-up floor); only the model is restricted to Kelvin-Voigt, so ILS needs no
deformation acceleration and no mass guess. xdot is measured or a finite difference of x.

Published sigma: as RLS (``rls`` module docstring): own P, HAC sandwich, IV and parallel-filter gaps (EIV +
conditioning terms), omitted-term shifts, tracking spread.
"""
from __future__ import annotations

from .models import KELVIN_VOIGT, ContactModel
from .rls import RecursiveLeastSquares


class InstantaneousLeastSquares(RecursiveLeastSquares):
    """RLS on phi = [x, xdot]; takes every RLS option (forgetting, initial_covariance, initial, ...)."""

    name = 'ils'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, **options):
        if model.uses_acceleration:
            raise ValueError(f"ILS neglects the mass: it needs a model without acceleration, "
                             f"got '{model.name}'")
        super().__init__(model, **options)
