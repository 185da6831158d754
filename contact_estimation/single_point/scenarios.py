"""Seeded single-point test scenarios S1-S9 with known ground truth (spec §6.1).

Every generator returns a :class:`Scenario`: sampled time t (s), compressive normal force F (N),
deformation x (m, from the contact datum, < 0 before contact), its analytic rate xd (m/s) and acceleration
xdd (m/s^2), the truth, and per-scenario extras (settled plateau windows, ideal secant stiffness per level).
Noise is added only to ``force`` and ``x``; ``xd``/``xdd`` stay the noise-free analytic truth (pass them as a
"measured velocity", or differentiate the noisy x with :func:`contact_estimation.single_point.preprocess.differentiate`).

Facts used (spec §4): k_SMT = 3.46e6 N/m; Table 3-5 power laws F = k_nl d^n; Appendix C mean plateau
loads; Instron dead band 1.3 mm, 40-50 N clearance plateau over 0.5 mm, cut-off 48.5 N, 0.0083 mm/s;
Hertz k* from §1.4 (computed by :mod:`contact_estimation.single_point.fit`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import fit
from .samples import ContactSamples

#: Facility (SMT) stiffness used in eq. 3.4 (N/m), spec §4.3.
K_SMT = 3.46e6
#: Table 3-5 Instron power laws F = k_nl d^n: payload -> (k_nl [N/m^n], n).
POWER_LAWS = {
    'al_half_sphere': (2.01e8, 1.27),
    'pl_half_sphere': (7.00e7, 1.28),
    'pl_cone': (4.98e7, 1.32),
    'pl_pyramid': (1.57e7, 1.26),
    'pl_prism': (4.34e8, 1.42),
    'pl_cube': (3.08e8, 1.34),
}
#: Appendix C mean STVF plateau loads (N): (payload, experiment set) -> loads.
MEAN_LOADS = {
    ('al_half_sphere', 1): (52.00, 100.80, 149.80, 198.79, 247.89, 297.00),
    ('al_half_sphere', 2): (50.50, 97.83, 145.18, 192.96, 241.38, 290.09),
    ('pl_half_sphere', 1): (50.40, 97.82, 144.77, 192.71, 240.48, 287.45),
    ('pl_half_sphere', 2): (50.57, 98.05, 145.61, 193.14, 241.28, 289.94),
    ('pl_cone', 1): (50.84, 98.59, 146.43, 194.49, 242.44, 290.47),
    ('pl_cone', 2): (50.92, 98.68, 146.60, 194.08, 241.64, 290.19, 337.65),
    ('pl_pyramid', 1): (51.02, 98.78, 146.48, 194.16, 242.79, 290.90),
    ('pl_pyramid', 2): (50.78, 98.40, 146.34, 193.79, 242.27, 290.08),
    ('pl_prism', 1): (50.83, 98.61, 146.35, 194.19, 241.95, 290.23, 337.55),
    ('pl_prism', 2): (50.93, 98.68, 146.67, 194.60, 242.58, 290.58, 338.24),
    ('pl_cube', 1): (50.07, 97.28, 145.24, 192.99, 241.87, 288.40, 336.72),
    ('pl_cube', 2): (51.00, 98.71, 146.69, 194.76, 242.77, 290.86),
}
#: S4 initial stiffness guesses (N/m): 0 and 1e4 ... 1e12.
S4_INITIAL_GUESSES = (0.0,) + tuple(10.0 ** e for e in range(4, 13))
#: Instron protocol (spec §2.11b, §4.1).
INSTRON_SPEED = 0.0083e-3          # m/s
INSTRON_DEAD_BAND = 1.3e-3         # m of crosshead travel before load rises
INSTRON_PLATEAU_TRAVEL = 0.5e-3    # m of travel on the clearance plateau


@dataclass(frozen=True)
class Scenario:
    """One synthetic record. ``plateaus`` are the true settled windows [start, stop) per load level."""

    name: str
    t: np.ndarray
    force: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    truth: dict
    rate_hz: float
    notes: str = ''
    plateaus: tuple[tuple[int, int], ...] = ()
    level_loads: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ideal_secant: np.ndarray = field(default_factory=lambda: np.zeros(0))
    extras: dict = field(default_factory=dict)

    def samples(self, window: tuple[int, int] | slice | None = None, *,
                acceleration: bool = False) -> ContactSamples:
        """The record (or ``window``) as ContactSamples with the analytic xd (and xdd)."""
        sl = slice(*window) if isinstance(window, tuple) else (window or slice(None))
        return ContactSamples.make(self.t[sl], self.force[sl], self.x[sl], self.xd[sl],
                                   self.xdd[sl] if acceleration else None)


def _law(payload: str | tuple[float, float]) -> tuple[float, float]:
    if isinstance(payload, str):
        if payload not in POWER_LAWS:
            raise ValueError(f"unknown payload '{payload}' (known: {', '.join(POWER_LAWS)})")
        return POWER_LAWS[payload]
    k_nl, n = map(float, payload)
    if not (k_nl > 0 and n > 0):
        raise ValueError(f'power law needs k_nl > 0 and n > 0, got {payload}')
    return k_nl, n


def _grid(duration_s: float, rate_hz: float) -> np.ndarray:
    if not (rate_hz > 0 and duration_s > 0):
        raise ValueError(f'rate and duration must be > 0, got {rate_hz} Hz, {duration_s} s')
    return np.arange(int(round(duration_s * rate_hz)) + 1) / rate_hz


# --------------------------------------------------------------------------------------------------- S1
def multisine(t: np.ndarray, offset: float, amplitude: float, frequencies) -> tuple[np.ndarray, ...]:
    """x = offset + A sum_j sin(2 pi f_j t) and its analytic first and second derivatives (m, m/s, m/s^2)."""
    w = 2 * np.pi * np.asarray(frequencies, dtype=np.float64)
    ph = np.outer(t, w)
    return (offset + amplitude * np.sin(ph).sum(axis=1), amplitude * (w * np.cos(ph)).sum(axis=1),
            -amplitude * (w ** 2 * np.sin(ph)).sum(axis=1))


def s1_kelvin_voigt(rate_hz: float = 1000.0, *, noise: bool = False, mass: float = 0.0,
                    duration_s: float = 20.0, approach_s: float = 0.0, stiffness: float = 4800.0,
                    damping: float = 200.0, sigma_f: float = 0.5, sigma_x: float = 10e-6,
                    seed: int = 0) -> Scenario:
    """S1: soft Kelvin-Voigt wall under a multisine, F = k x + b xd + m xdd (UVic-like, damping identifiable).

    x = x0 + sum_j A sin(2 pi f_j t), x0 = 10 mm, A = 2 mm, f_j = 0.5, 1, 2, 5 Hz (x >= 2 mm). With
    ``approach_s`` > 0 the record starts with a free approach (F = 0, x < 0 at constant speed) and the
    contact motion is x(tau) = ms(tau) - x0 exp(-tau / 0.1 s), which starts at the datum
    (extras['onset_index']).
    Noise (``noise=True``): F + N(0, sigma_f), x + N(0, sigma_x).
    """
    x0, amp, freqs = 10e-3, 2e-3, np.array([0.5, 1.0, 2.0, 5.0])
    t = _grid(duration_s + approach_s, rate_hz)
    tau = t - approach_s
    w = 2 * np.pi * freqs
    x, xd, xdd = multisine(np.maximum(tau, 0.0), x0, amp, freqs)
    onset = 0
    if approach_s > 0:
        tb = 0.1
        blend = x0 * np.exp(-np.maximum(tau, 0.0) / tb)
        x, xd, xdd = x - blend, xd + blend / tb, xdd - blend / tb ** 2
        v0 = amp * w.sum() + x0 / tb                                        # xd at the datum
        before = tau < 0
        x = np.where(before, v0 * tau, x)
        xd = np.where(before, v0, xd)
        xdd = np.where(before, 0.0, xdd)
        onset = int(np.searchsorted(tau, 0.0))
    force = np.where(tau >= 0, stiffness * x + damping * xd + mass * xdd, 0.0)
    rng = np.random.default_rng(seed)
    if noise:
        force = force + rng.normal(0.0, sigma_f, len(t))
        x = x + rng.normal(0.0, sigma_x, len(t))
    return Scenario(
        name='S1', t=t, force=force, x=x, xd=xd, xdd=xdd, rate_hz=rate_hz,
        truth={'stiffness': stiffness, 'damping': damping, 'mass': mass},
        notes=(f'multisine {freqs.tolist()} Hz, '
               + (f'sigma_F={sigma_f} N, sigma_x={sigma_x} m' if noise else 'noise-free')),
        extras={'onset_index': onset, 'frequencies_hz': freqs})


# --------------------------------------------------------------------------------------------------- S2
def s2_staircase(payload: str | tuple[float, float] = 'pl_half_sphere', rate_hz: float = 100.0, *,
                 loads: tuple[float, ...] | None = None, max_load: float = 300.0,
                 experiment: int | None = None, hold_s: float = 5.0, tau_s: float = 0.3, lead_s: float = 1.0,
                 approach_speed: float = 5e-4, k_facility: float = K_SMT, settle_taus: float = 10.0,
                 sigma_f: float = 0.0, sigma_x: float = 0.0, x_bias: float = 0.0, seed: int = 0) -> Scenario:
    """S2: quasi-static load staircase through the series chain facility + power-law payload.

    F follows the staircase F_j (50, 100, ... ``max_load`` N; or ``loads``; or the Appendix C mean loads of
    ``experiment`` 1/2) through first-order transitions dF/dt = (F_j - F)/tau, each level held ``hold_s``.
    x = F/k_facility + (F/k_nl)^(1/n) from the exact datum (t = lead_s, extras['datum_index']); before it
    the payload approaches at ``approach_speed`` (x < 0). ``plateaus`` start ``settle_taus`` tau after each
    step; ``ideal_secant`` = F_j / x(F_j) is the system secant stiffness. Noise: F + N(0, sigma_f),
    x + x_bias + N(0, sigma_x).
    """
    k_nl, n = _law(payload)
    if experiment is not None:
        if not isinstance(payload, str) or (payload, experiment) not in MEAN_LOADS:
            raise ValueError(f'no Appendix C mean loads for payload {payload!r}, experiment {experiment}')
        levels = np.array(MEAN_LOADS[(payload, experiment)])
    elif loads is not None:
        levels = np.asarray(loads, dtype=np.float64)
    else:
        levels = np.arange(50.0, max_load + 1e-9, 50.0)
    if levels.size == 0 or np.any(levels <= 0):
        raise ValueError(f'load levels must be > 0, got {levels}')
    if not (tau_s > 0 and settle_taus * tau_s < hold_s):
        raise ValueError(f'need tau > 0 and settle_taus * tau < hold ({settle_taus} * {tau_s} >= {hold_s})')
    t = _grid(lead_s + len(levels) * hold_s, rate_hz)
    t_c = lead_s
    starts = t_c + hold_s * np.arange(len(levels))
    # force at the start of each level (the previous transition has not fully settled)
    f_start = np.zeros(len(levels))
    decay = np.exp(-hold_s / tau_s)
    for j in range(1, len(levels)):
        f_start[j] = levels[j - 1] + (f_start[j - 1] - levels[j - 1]) * decay
    j = np.clip(np.searchsorted(starts, t, side='left') - 1, 0, len(levels) - 1)
    contact = t > t_c
    e = np.exp(-(t - starts[j]) / tau_s)
    force = np.where(contact, levels[j] + (f_start[j] - levels[j]) * e, 0.0)
    fdot = np.where(contact, (levels[j] - force) / tau_s, 0.0)
    fpos = np.where(contact, force, 1.0)
    delta = np.where(contact, (fpos / k_nl) ** (1.0 / n), 0.0)
    compliance = 1.0 / k_facility + delta / (n * fpos)                      # dx/dF
    dcompliance = (1.0 / n - 1.0) * delta / (n * fpos ** 2)                 # d2x/dF2
    x = np.where(contact, force / k_facility + delta, -approach_speed * (t_c - t))
    xd = np.where(contact, compliance * fdot, approach_speed)
    xdd = np.where(contact, -compliance * fdot / tau_s + dcompliance * fdot ** 2, 0.0)
    i0 = int(np.searchsorted(t, t_c, side='right') - 1)
    ends = starts + hold_s
    plateaus = tuple((int(np.ceil((s + settle_taus * tau_s) * rate_hz - 1e-9)),
                      int(np.floor(f * rate_hz + 1e-9)) + 1) for s, f in zip(starts, ends))
    x_static = levels / k_facility + (levels / k_nl) ** (1.0 / n)
    rng = np.random.default_rng(seed)
    if sigma_f > 0:
        force = force + rng.normal(0.0, sigma_f, len(t))
    x = x + x_bias + (rng.normal(0.0, sigma_x, len(t)) if sigma_x > 0 else 0.0)
    name = payload if isinstance(payload, str) else 'custom'
    return Scenario(
        name='S2', t=t, force=force, x=x, xd=xd, xdd=xdd, rate_hz=rate_hz,
        truth={'k_nl': k_nl, 'n': n, 'k_facility': k_facility, 'damping': 0.0},
        notes=(f'{name}: staircase {np.round(levels, 2).tolist()} N, hold {hold_s} s, tau {tau_s} s; '
               f'sigma_F={sigma_f} N, sigma_x={sigma_x} m, bias={x_bias} m'),
        plateaus=plateaus, level_loads=levels, ideal_secant=levels / x_static,
        extras={'payload': name, 'datum_index': i0, 'onset_time': t_c, 'level_starts': starts,
                'ideal_payload_secant': fit.secant_stiffness(levels, k_nl, n), 'experiment': experiment})


def s3_datum_shift(scenario: Scenario, shift: int) -> Scenario:
    """S3: the record with the datum moved by ``shift`` samples, x' = x - x[i0 + shift] (S2-like input)."""
    i0 = int(scenario.extras['datum_index'])
    i = i0 + int(shift)
    if not 0 <= i < len(scenario.x):
        raise ValueError(f'datum shift {shift} leaves the record (datum {i0}, {len(scenario.x)} samples)')
    return replace(scenario, name='S3', x=scenario.x - scenario.x[i],
                   notes=f'{scenario.notes}; datum moved by {shift:+d} samples',
                   extras=dict(scenario.extras, datum_index=i, datum_shift=int(shift),
                               datum_offset=float(scenario.x[i])))


def s4_initial_guess_sweep(payload: str | tuple[float, float] = 'pl_half_sphere', rate_hz: float = 100.0,
                           **s2_kwargs) -> Scenario:
    """S4: S2 data for the initial-guess sweep k0 in ``S4_INITIAL_GUESSES`` (P0 = 1e5 I, lambda = 0.98)."""
    s = s2_staircase(payload, rate_hz, **s2_kwargs)
    return replace(s, name='S4', extras=dict(s.extras, initial_guesses=S4_INITIAL_GUESSES,
                                             initial_covariance=1e5, forgetting=0.98))


# --------------------------------------------------------------------------------------------------- S5
def s5_onset(damping: float = 2000.0, speed: float = 5e-3, rate_hz: float = 1000.0, *, mass: float = 20.0,
             stiffness: float = 2e6, drive_gain: float = 2e4, lead_s: float = 0.05, duration_s: float = 0.5,
             sigma_f: float = 0.0, sigma_x: float = 0.0, seed: int = 0) -> Scenario:
    """S5: a mass driven at ``speed`` into a Kelvin-Voigt contact; exact (matrix-exponential) solution.

    The drive is an FMA-like velocity servo, F_drive = c (v - xd) (force proportional to the commanded
    speed, c = ``drive_gain`` N s/m: 40-200 N at 2-10 mm/s), so the approach runs at v with F = 0. In
    contact m xdd = c (v - xd) - (k x + b xd), x(0) = 0, xd(0) = v; the measured force is F = k x + b xd.
    Contact begins at extras['onset_index'] (the first sample with x >= 0).
    """
    if not (mass > 0 and stiffness > 0 and damping >= 0 and drive_gain >= 0 and speed > 0):
        raise ValueError('need mass, stiffness, speed > 0 and damping, drive_gain >= 0')
    t = _grid(lead_s + duration_s, rate_hz)
    tau = t - lead_s
    # exp(A s), A = [[0, 1], [-k/m, -c/m]], by Cayley-Hamilton:
    # e^{mu s} [cosh(D s) I + s sinhc(D s) (A - mu I)], mu = -c/(2m), D = sqrt(mu^2 - k/m) (complex if needed)
    mu = -(damping + drive_gain) / (2.0 * mass)
    disc = np.sqrt(complex(mu * mu - stiffness / mass))
    s_ = np.maximum(tau, 0.0)
    z = disc * s_
    sinhc = np.where(np.abs(z) < 1e-8, 1.0 + z * z / 6.0, np.sinh(z) / np.where(z == 0, 1.0, z))
    ch, sh, ex = np.cosh(z).real, (s_ * sinhc).real, np.exp(mu * s_)
    x_ss = drive_gain * speed / stiffness
    y0, v0 = -x_ss, speed                                   # state minus steady state at contact
    contact = tau >= 0
    x = np.where(contact, x_ss + ex * (ch * y0 + sh * (-mu * y0 + v0)), speed * tau)
    xd = np.where(contact, ex * (ch * v0 + sh * (-stiffness / mass * y0 + mu * v0)), speed)
    force = np.where(contact, stiffness * x + damping * xd, 0.0)
    xdd = np.where(contact, (drive_gain * (speed - xd) - force) / mass, 0.0)
    rng = np.random.default_rng(seed)
    if sigma_f > 0:
        force = force + rng.normal(0.0, sigma_f, len(t))
    if sigma_x > 0:
        x = x + rng.normal(0.0, sigma_x, len(t))
    zeta = (damping + drive_gain) / (2.0 * np.sqrt(stiffness * mass))
    return Scenario(
        name='S5', t=t, force=force, x=x, xd=xd, xdd=xdd, rate_hz=rate_hz,
        truth={'stiffness': stiffness, 'damping': damping, 'mass': mass, 'speed': speed,
               'drive_gain': drive_gain},
        notes=f'onset at {speed * 1e3:g} mm/s, b={damping:g} kg/s, closed-loop damping ratio {zeta:.2f}',
        extras={'onset_index': int(np.searchsorted(tau, 0.0)), 'steady_force': drive_gain * speed})


# --------------------------------------------------------------------------------------------------- S6, S7
def s6_creep(payload: str | tuple[float, float] = 'pl_cube', rate_hz: float = 100.0, *, level: int = 2,
             creep: float = 20e-6, **s2_kwargs) -> Scenario:
    """S6: S2 with x rising linearly by ``creep`` (m) over the settled plateau of ``level`` at constant F.

    The offset persists afterwards (creep does not recover), as on the thesis's cube and prism data.
    """
    s = s2_staircase(payload, rate_hz, **s2_kwargs)
    if not 0 <= level < len(s.plateaus):
        raise ValueError(f'level {level} out of range (0..{len(s.plateaus) - 1})')
    a, b = s.plateaus[level]
    t0, t1 = s.t[a], s.t[b - 1]
    ramp = creep * np.clip((s.t - t0) / (t1 - t0), 0.0, 1.0)
    rate = np.where((s.t >= t0) & (s.t <= t1), creep / (t1 - t0), 0.0)
    return replace(s, name='S6', x=s.x + ramp, xd=s.xd + rate,
                   notes=f'{s.notes}; creep {creep * 1e6:g} um over level {level}',
                   truth=dict(s.truth, creep=creep, creep_level=level, creep_rate=creep / (t1 - t0)))


def s7_zero_damping(payload: str | tuple[float, float] = 'pl_half_sphere', rate_hz: float = 100.0,
                    **s2_kwargs) -> Scenario:
    """S7: S2 data (b_true = 0) for the EEM/GMLE degeneracy check: 1/b is unbounded, k must stay right."""
    s = s2_staircase(payload, rate_hz, **s2_kwargs)
    return replace(s, name='S7', truth=dict(s.truth, damping=0.0),
                   notes=f'{s.notes}; b_true = 0: EEM theta_2 = 1/b degenerate, GMLE may not converge')


# --------------------------------------------------------------------------------------------------- S8, S9
def _hertz_law(material: str) -> tuple[float, float]:
    if material not in ('al', 'plastic'):
        raise ValueError(f"material must be 'al' or 'plastic', got {material!r}")
    specimen = fit.MATERIALS['al6061' if material == 'al' else 'acetal']
    e_star = fit.effective_modulus(*fit.MATERIALS['steel'], *specimen)
    return float(fit.hertz_coefficient(fit.HERTZ_RADIUS, e_star)), 1.5


def s8_instron(specimen: str | tuple[float, float] = 'al', k_machine: float = np.inf, rate_hz: float = 100.0,
               *, speed: float = INSTRON_SPEED, dead_band: float = INSTRON_DEAD_BAND,
               plateau_travel: float = INSTRON_PLATEAU_TRAVEL,
               plateau_loads: tuple[float, float] = (40.0, 48.0), stop_load: float = 400.0,
               sigma_f: float = 0.0, sigma_x: float = 0.0, seed: int = 0) -> Scenario:
    """S8: Instron crosshead travel u against load F for a specimen law in series with the machine.

    u(F) = dead_band + plateau_travel * clip((F - F_a)/(F_b - F_a), 0, 1) + F/k_machine + (F/k_nl)^(1/n),
    (F_a, F_b) = ``plateau_loads`` (the 40-50 N clearance plateau; it ends at 48 N so the 48.5 N cut-off
    removes it), sampled at constant crosshead ``speed`` until ``stop_load``. ``specimen`` is 'al' / 'plastic'
    (Hertz k*, n = 1.5) or (k_nl, n). x = u, force = F; extras hold the true specimen deflection.
    """
    k_nl, n = _hertz_law(specimen) if isinstance(specimen, str) else _law(specimen)
    f_a, f_b = plateau_loads
    if not (k_machine > 0 and 0 <= f_a < f_b < stop_load):
        raise ValueError(f'need k_machine > 0 and 0 <= plateau loads < stop load, '
                         f'got {k_machine}, {plateau_loads}')
    f_grid = np.linspace(0.0, stop_load, 400_001)
    spec = (f_grid / k_nl) ** (1.0 / n)
    clearance = plateau_travel * np.clip((f_grid - f_a) / (f_b - f_a), 0.0, 1.0)
    u_grid = dead_band + clearance + f_grid / k_machine + spec
    t = np.arange(int(np.floor(u_grid[-1] / speed * rate_hz)) + 1) / rate_hz     # stop at the stop load
    u = speed * t
    force = np.interp(u, u_grid, f_grid, left=0.0)
    deflection = (force / k_nl) ** (1.0 / n)
    rng = np.random.default_rng(seed)
    if sigma_f > 0:
        force = force + rng.normal(0.0, sigma_f, len(t))
    if sigma_x > 0:
        u = u + rng.normal(0.0, sigma_x, len(t))
    return Scenario(
        name='S8', t=t, force=force, x=u, xd=np.full(len(t), speed), xdd=np.zeros(len(t)), rate_hz=rate_hz,
        truth={'k_nl': k_nl, 'n': n, 'k_machine': k_machine, 'cutoff': fit.INSTRON_CUTOFF},
        notes=f'Instron: specimen F = {k_nl:.4g} d^{n:g}, machine stiffness {k_machine:g} N/m',
        extras={'specimen_deflection': deflection, 'machine_deflection': u - deflection,
                'plateau_end_travel': dead_band + plateau_travel})


def s9_hertz(material: str = 'al', rate_hz: float = 100.0, *, max_load: float = 400.0,
             speed: float = INSTRON_SPEED, sigma_f: float = 0.0, seed: int = 0) -> Scenario:
    """S9: Hertz sphere-on-flat F = k* d^1.5 (§1.4 constants) at constant speed up to ``max_load``."""
    k_star, n = _hertz_law(material)
    d_max = (max_load / k_star) ** (1.0 / n)
    t = _grid(d_max / speed, rate_hz)
    d = speed * t
    force = k_star * d ** n
    if sigma_f > 0:
        force = force + np.random.default_rng(seed).normal(0.0, sigma_f, len(t))
    return Scenario(
        name='S9', t=t, force=force, x=d, xd=np.full(len(t), speed), xdd=np.zeros(len(t)), rate_hz=rate_hz,
        truth={'k_nl': k_star, 'n': n, 'material': material},
        notes=f'Hertz {material}: k* = {k_star:.4g} N/m^1.5, up to {max_load:g} N, sigma_F={sigma_f} N')
