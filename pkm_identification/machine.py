"""The machine record of a 6-UPS Stewart-Gough platform: joints, strut masses, gravity, home pose, inertia.

Plain data, no I/O and no kinematics: ``geometry.py`` loads and checks it from YAML, ``kinematics.py``
computes with it. Lengths in m, angles in rad (z-x-z Euler), gravity in m/s^2, inertia in the
12-parameter form of ``INERTIA_NAMES_12`` (kg, kg m^2).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contact_dynamics_common.ros.params import ConfigError

INERTIA_NAMES_12 = ('m_e', 'm_b', 'm_p', 'Ixxb', 'Iyyb', 'Izzb', 'Ixxp', 'Iyyp', 'Izzp', 'Ixxe', 'Iyye', 'Izze')


class GeometryError(ConfigError):
    """A machine description that cannot be used (unknown or missing key, wrong shape or unit, singular
    architecture). A ConfigError (a ValueError): every command reports it in one line with exit code 2."""


@dataclass
class Machine:
    name: str
    base: np.ndarray                  # (6, 3) b_i in {W} [m]
    platform: np.ndarray              # (6, 3) p_i in {P} [m]
    L_B: float                        # [m]
    d_E: float                        # [m]
    gravity: np.ndarray               # (3,) [m/s^2]
    home_position: np.ndarray         # (3,) [m]
    home_euler: np.ndarray            # (3,) z-x-z [rad]
    stroke: tuple[float, float] = (0.0, np.inf)
    strut_names: tuple[str, ...] = tuple(f'strut_{i}' for i in range(1, 7))
    inertia: dict = field(default_factory=dict)   # 12-parameter form, see INERTIA_NAMES_12

    @property
    def home_q(self) -> np.ndarray:
        return np.concatenate([self.home_position, self.home_euler])

    def theta12(self) -> np.ndarray:
        return np.array([float(self.inertia[k]) for k in INERTIA_NAMES_12])
