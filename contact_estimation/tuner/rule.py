"""The gain rule: admittance mass and damping ratio for the contact axis from the estimated environment.

Along the contact axis the admittance controller renders

    M xdd + D xd + K (x - x_d) = F_ext,        D = 2 zeta_a sqrt(M K)   (the controller's zeta, see
                                                                         admittance_params)

and the environment pushes back with F_ext = -(k_e x + b_e xd) (Kelvin-Voigt, ContactEstimate's k and b). In
contact the coupled axis is the second-order system

    M xdd + (D + b_e) xd + (K + k_e) x = K x_d,
    omega_n = sqrt((K + k_e) / M)              [rad/s]
    zeta_cl = (D + b_e) / (2 sqrt((K + k_e) M)) [-]

For a target bandwidth omega_c = 2 pi f_c (``bandwidth_hz``) and a target closed-loop damping ratio zeta_c
(``target_damping_ratio``) the rule solves for M and zeta_a with the admittance stiffness K fixed
(``admittance_stiffness``, N/m):

    M       = (K + k_e) / omega_c^2                                      [kg]
    D       = max(2 zeta_c sqrt((K + k_e) M) - b_e, 0)                   [N s/m]
    zeta_a  = D / (2 sqrt(M K))                                          [-]

then clips each to its bounds. M is never below the robot's apparent mass m_r along the axis
(``robot_apparent_mass``): a virtual mass lighter than the robot asks the inner position loop for
accelerations it cannot follow against a stiff contact (the classic admittance instability), so M >=
max(mass_min, m_r). Environment damping b_e is used only when the estimate says it is identifiable (on
quasi-static data b_e = 0 is assumed, which gives more controller damping: the conservative side). K must be
> 0 because the controller's damping is defined through sqrt(M K). ``closed_loop`` gives the omega_n and
zeta_cl that the clipped gains actually achieve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class GainBounds:
    mass: tuple[float, float]                 # kg
    damping_ratio: tuple[float, float]        # -
    stiffness: tuple[float, float]            # N/m

    def clip(self, mass: float, zeta: float, stiffness: float) -> tuple[float, float, float]:
        return (min(max(mass, self.mass[0]), self.mass[1]),
                min(max(zeta, self.damping_ratio[0]), self.damping_ratio[1]),
                min(max(stiffness, self.stiffness[0]), self.stiffness[1]))


@dataclass(frozen=True)
class RuleConfig:
    bandwidth_hz: float               # f_c, Hz
    target_damping_ratio: float       # zeta_c, -
    admittance_stiffness: float       # K, N/m (> 0)
    robot_apparent_mass: float        # m_r, kg (0: not configured)
    bounds: GainBounds


def admittance_gains(k_env: float, b_env: float, cfg: RuleConfig) -> tuple[float, float, float]:
    """(M kg, zeta_a -, K N/m) for environment stiffness ``k_env`` (N/m) and damping ``b_env`` (N s/m).

    The equations are in the module docstring; the result is within ``cfg.bounds`` and M >= m_r."""
    k_env, b_env = max(float(k_env), 0.0), max(float(b_env), 0.0)
    lo_m = max(cfg.bounds.mass[0], cfg.robot_apparent_mass)
    K = min(max(cfg.admittance_stiffness, cfg.bounds.stiffness[0]), cfg.bounds.stiffness[1])
    K = max(K, 1e-9)
    wc = 2.0 * math.pi * cfg.bandwidth_hz
    M = min(max((K + k_env) / (wc * wc), lo_m), cfg.bounds.mass[1])
    D = max(2.0 * cfg.target_damping_ratio * math.sqrt((K + k_env) * M) - b_env, 0.0)
    zeta = D / (2.0 * math.sqrt(M * K))
    return cfg.bounds.clip(M, zeta, K)


def closed_loop(mass: float, zeta_a: float, stiffness: float, k_env: float, b_env: float
                ) -> tuple[float, float]:
    """(omega_n rad/s, zeta_cl -) of the admittance coupled with the environment (module docstring)."""
    D = 2.0 * zeta_a * math.sqrt(mass * stiffness)
    kk = stiffness + max(k_env, 0.0)
    return math.sqrt(kk / mass), (D + max(b_env, 0.0)) / (2.0 * math.sqrt(kk * mass))
