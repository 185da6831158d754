"""The test plant of Colton & Hollerbach (wahl_colton.md B6, B8) and its measurement model, ROS-free.

Mechanism (the impedance to identify), SI units:
    F = m a + b(sgn v) v + F_s(x) + F_c tanh(v / eps)
with m = 0.581 kg, b = 11.5 kg/s (b^- may differ: S7), F_c = 0.3 N, eps = 0.1 mm/s, and a continuous hardening
spring F_s: slope k1 = 400 N/m below x_T = 12 mm, k2 = 2000 N/m up to 20 mm, k3 = 3000 N/m above.
It is driven by a linear motor (slider 0.35 kg) under PID position control (omega_n = 2 pi 29 rad/s,
zeta = 0.8) with inertia feed-forward; the impedance head measures F between slider and mechanism.
Integration: velocity Verlet at the sample rate, so x, v and a are mutually consistent to O(dt^2), and the
recorded F satisfies the model exactly at every sample (the oracle fit of noise-free signals is the physics
wherever a segment holds no kink).

Measurement model [A]: x quantised to 5 um; a and F with white noise (0.05 m/s^2, 0.02 N RMS) passed through
a causal 2nd-order 1 kHz Butterworth (the charge amplifiers).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.signal import butter, sosfilt


@dataclass
class HardeningSpring:
    """Piecewise-linear continuous spring: slopes ``k`` (N/m) between ``knots`` (m), F_s(0) = 0."""

    k: tuple = (400.0, 2000.0, 3000.0)
    knots: tuple = (0.012, 0.020)

    def force(self, x):
        x = np.asarray(x, dtype=float)
        f = self.k[0] * x
        for j, xt in enumerate(self.knots):
            f = f + (self.k[j + 1] - self.k[j]) * np.maximum(x - xt, 0.0)
        return f

    def slope(self, x):
        return np.asarray(self.k)[np.searchsorted(np.asarray(self.knots), np.asarray(x), side='right')]

    def intercept(self, x):
        """c_s(x) with F_s = k(x) x + c_s(x) locally."""
        return self.force(x) - self.slope(x) * np.asarray(x)


@dataclass
class Plant:
    """The mechanism plus the motor loop. ``b_neg`` (None = ``b``) is the damping while moving in -x (S7)."""

    mass: float = 0.581
    damping: float = 11.5
    damping_neg: float | None = None
    coulomb: float = 0.3
    eps: float = 1e-4
    spring: HardeningSpring = field(default_factory=HardeningSpring)
    slider_mass: float = 0.35
    wn: float = 2 * math.pi * 29.0
    zeta: float = 0.8
    integral_ratio: float = 0.1        # Ki = integral_ratio * wn * Kp

    def mechanism_force(self, x, v, a):
        b = np.where(np.asarray(v) >= 0, self.damping, self.b_neg)
        return self.mass * a + b * v + self.spring.force(x) + self.coulomb * np.tanh(np.asarray(v) / self.eps)

    @property
    def b_neg(self) -> float:
        return self.damping if self.damping_neg is None else self.damping_neg

    def truth(self, edges: np.ndarray) -> dict:
        """Physical per-segment values at the segment centres (valid where a segment holds no kink)."""
        mid = 0.5 * (edges[:-1] + edges[1:])
        k = self.spring.slope(mid)
        cs = self.spring.intercept(mid)
        return {'mass': self.mass, 'damping_pos': self.damping, 'damping_neg': self.b_neg,
                'stiffness': k.tolist(), 'intercept_pos': (cs + self.coulomb).tolist(),
                'intercept_neg': (cs - self.coulomb).tolist(), 'coulomb': self.coulomb,
                'kinks': list(self.spring.knots)}


def track(plant: Plant, t: np.ndarray, x_ref: np.ndarray, v_ref: np.ndarray, a_ref: np.ndarray,
          closed_loop: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Simulate the motor tracking x_ref; returns x, v, a, F (noise-free, F from the mechanism model).

    ``closed_loop=False`` takes the reference as the motion (perfect tracking, no harmonics).
    """
    if not closed_loop:
        x, v, a = (np.asarray(y, dtype=float).copy() for y in (x_ref, v_ref, a_ref))
        return x, v, a, plant.mechanism_force(x, v, a)
    n = len(t)
    dt = float(t[1] - t[0])
    M = plant.mass + plant.slider_mass
    kp, kd = M * plant.wn ** 2, 2 * plant.zeta * plant.wn * M
    ki = plant.integral_ratio * plant.wn * kp
    m, bp, bn, fc, eps = plant.mass, plant.damping, plant.b_neg, plant.coulomb, plant.eps
    ks, knots = plant.spring.k, plant.spring.knots
    k0, k1, k2 = ks[0], ks[1] - ks[0], ks[2] - ks[1]
    x1, x2 = knots
    xr, vr, ar = (np.asarray(y, dtype=float).tolist() for y in (x_ref, v_ref, a_ref))
    xs, vs, as_ = [0.0] * n, [0.0] * n, [0.0] * n
    tanh = math.tanh
    x, v, integ = xr[0], vr[0], 0.0

    def accel(i, x, v, integ):
        e = xr[i] - x
        u = M * ar[i] + kp * e + kd * (vr[i] - v) + ki * integ
        fs = k0 * x + (k1 * (x - x1) if x > x1 else 0.0) + (k2 * (x - x2) if x > x2 else 0.0)
        fm = (bp if v >= 0 else bn) * v + fs + fc * tanh(v / eps)
        return (u - fm) / M

    a = accel(0, x, v, integ)
    for i in range(n):
        xs[i], vs[i], as_[i] = x, v, a
        if i + 1 == n:
            break
        integ += (xr[i] - x) * dt
        x = x + v * dt + 0.5 * a * dt * dt
        vp = v + a * dt
        a_new = accel(i + 1, x, vp, integ)
        v = v + 0.5 * (a + a_new) * dt
        a = accel(i + 1, x, v, integ)
    x, v, a = np.array(xs), np.array(vs), np.array(as_)
    return x, v, a, plant.mechanism_force(x, v, a)


@dataclass
class MeasurementModel:
    """Sensor model: position quantum (m), accelerometer and force noise RMS, charge-amplifier low-pass."""

    quantum: float = 5e-6
    sigma_a: float = 0.05
    sigma_f: float = 0.02
    amp_cutoff: float = 1000.0
    amp_order: int = 2
    seed: int = 0

    def apply(self, rate: float, x, a, f) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        x, a, f = (np.asarray(y, dtype=float) for y in (x, a, f))
        xq = np.round(x / self.quantum) * self.quantum if self.quantum > 0 else x.copy()
        a_m = a + rng.normal(0.0, self.sigma_a, len(a)) if self.sigma_a > 0 else a.copy()
        f_m = f + rng.normal(0.0, self.sigma_f, len(f)) if self.sigma_f > 0 else f.copy()
        if self.amp_cutoff and self.amp_cutoff < rate / 2:
            sos = butter(self.amp_order, self.amp_cutoff, fs=rate, output='sos')
            a_m, f_m = sosfilt(sos, a_m - a_m[0]) + a_m[0], sosfilt(sos, f_m - f_m[0]) + f_m[0]
        return xq, a_m, f_m


def dashpot_drop(mass: float = 0.5, damping: float = 11.5, g: float = 9.81, rate: float = 100.0,
                 duration: float = 0.6, sigma_x: float = 1e-4,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """S6: a mass falling through the dashpot from rest: x(t) = v_t (t - tau (1 - e^{-t/tau})), tau = m/b,
    v_t = m g / b, sampled at ``rate`` with Gaussian position noise (Optotrak-class)."""
    t = np.arange(int(round(duration * rate)) + 1) / rate
    tau, vt = mass / damping, mass * g / damping
    x = vt * (t - tau * (1.0 - np.exp(-t / tau)))
    return t, x + np.random.default_rng(seed).normal(0.0, sigma_x, len(t))


def plant_dict(plant: Plant) -> dict:
    d = asdict(plant)
    d['spring'] = {'k': list(plant.spring.k), 'knots': list(plant.spring.knots)}
    return d
