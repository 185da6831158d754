"""Compliant contact laws of the validation simulations (spec §6.2) and the T_c -> peak force link (§4.6).

Every damped law has the normalised form f = k δ^p (1 + χ δ̇/δ̇⁻) (clipped at f ≥ 0, no tension), δ [m]
penetration, δ̇⁻ [m/s] the approach speed at first contact, k [N/m^p]:
Hunt–Crossley χ = 3(1−e)/2 (5.5); Lankarani–Nikravesh χ = 3(1−e²)/4 (5.6); Lee–Wang p = 1, χ = 3(1−e)/4 (5.8);
Gonthier χ = d/e with (1 + d/e)/(1 − d) = exp(d(1 + 1/e)) (5.9-5.10, solved by bisection); Hertz χ = 0.
"""
from __future__ import annotations

import numpy as np

LAWS = ('hertz', 'hunt_crossley', 'lankarani_nikravesh', 'lee_wang', 'gonthier')


def gonthier_d(e: float) -> float:
    """d ∈ (0, 1) solving (1 + d/e)/(1 − d) = exp(d(1 + 1/e)) (non-trivial root), by bisection."""
    if not 0.0 < e <= 1.0:
        raise ValueError(f'restitution e = {e} must be in (0, 1]')
    if e == 1.0:
        return 0.0
    g = lambda d: np.log1p(d / e) - np.log1p(-d) - d * (1.0 + 1.0 / e)
    lo, hi = 1e-6, 1.0 - 1e-15
    while g(lo) >= 0 and lo < 0.5:       # g < 0 just above the trivial root
        lo *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if g(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def chi(law: str, e: float = 1.0) -> float:
    """Damping factor χ of the normalised law."""
    if law == 'hertz':
        return 0.0
    if law == 'hunt_crossley':
        return 1.5 * (1.0 - e)
    if law == 'lankarani_nikravesh':
        return 0.75 * (1.0 - e * e)
    if law == 'lee_wang':
        return 0.75 * (1.0 - e)
    if law == 'gonthier':
        return gonthier_d(e) / e
    raise ValueError(f"unknown contact law '{law}' (one of {', '.join(LAWS)})")


def exponent(law: str, p: float) -> float:
    """Lee–Wang is linear in δ (p = 1); the others use p."""
    return 1.0 if law == 'lee_wang' else p


def force(delta, delta_dot, k: float, p: float, chi_: float, v_in: float):
    """f = max(0, k δ^p (1 + χ δ̇/δ̇⁻)) for δ > 0, else 0 [N]."""
    delta = np.asarray(delta, float)
    dp = np.where(delta > 0, np.abs(delta) ** p, 0.0)
    return np.maximum(0.0, k * dp * (1.0 + chi_ * np.asarray(delta_dot, float) / v_in))


def peak_force_from_tc(tc: float, k: float, p: float) -> float:
    """Undamped frozen-configuration peak F_max = k^{1/(p+1)} ((p+1) T_c)^{p/(p+1)} [N] (§4.6)."""
    return k ** (1.0 / (p + 1.0)) * ((p + 1.0) * tc) ** (p / (p + 1.0))
