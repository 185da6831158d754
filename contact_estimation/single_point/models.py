"""Single-point contact models and their regressors (Agar 2004, eq. 2.1 and the RLS mass variant).

Kelvin-Voigt:           F = k x + b xdot                  theta = [k, b]
Kelvin-Voigt with mass: F = k x + b xdot + m xddot        theta = [k, b, m]
x is the deformation measured from the contact datum (m, > 0 in contact), F the compressive normal force (N).
Without an intercept, k is the *secant* stiffness referenced to the datum (thesis §3.2.4).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Regressor scales (SI): estimators work on phi / scale so that P0 = a I is meaningful (spec §2.1).
DEFAULT_SCALES = {'stiffness': 1e-3, 'damping': 1e-2, 'mass': 1.0}
#: Minimum excitation (RMS of the unique part of each regressor) to call a parameter identifiable.
DEFAULT_MIN_EXCITATION = {'stiffness': 1e-6, 'damping': 1e-3, 'mass': 5e-2}
UNITS = {'stiffness': 'N/m', 'damping': 'N*s/m', 'mass': 'kg'}


@dataclass(frozen=True)
class ContactModel:
    name: str
    names: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def uses_acceleration(self) -> bool:
        return 'mass' in self.names

    def regressor(self, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray | None = None) -> np.ndarray:
        """phi (N, p): columns x, xdot (, xddot)."""
        cols = [x, xd]
        if self.uses_acceleration:
            if xdd is None:
                raise ValueError(f'model {self.name} needs the deformation acceleration')
            cols.append(xdd)
        return np.column_stack(cols)

    def scales(self, overrides: dict | None = None) -> np.ndarray:
        src = dict(DEFAULT_SCALES, **(overrides or {}))
        return np.array([src[n] for n in self.names])

    def min_excitation(self, overrides: dict | None = None) -> np.ndarray:
        src = dict(DEFAULT_MIN_EXCITATION, **(overrides or {}))
        return np.array([src[n] for n in self.names])


KELVIN_VOIGT = ContactModel('kelvin_voigt', ('stiffness', 'damping'))
KELVIN_VOIGT_MASS = ContactModel('kelvin_voigt_mass', ('stiffness', 'damping', 'mass'))
MODELS = {m.name: m for m in (KELVIN_VOIGT, KELVIN_VOIGT_MASS)}


def get_model(name: str) -> ContactModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown contact model '{name}' (known: {', '.join(MODELS)})") from None


def damping_ratio(k: float, b: float, apparent_mass: float) -> float:
    """zeta = b / (2 sqrt(k m)): the figure an admittance controller is tuned with; 0 when undefined."""
    if apparent_mass <= 0 or k <= 0:
        return 0.0
    return float(b / (2.0 * np.sqrt(k * apparent_mass)))
