"""Randomized calibration families of the impedance profiler.

``contact-dynamics calibrate --family 'impedance/*'``

Each draw makes one experiment with a plant written here, independently of the estimator and of the
package's own simulator (:mod:`.plant`): a position-controlled stiff actuator moves the mechanism along a
prescribed random multisine (so x, v, a are exact) and the force sensor reads the inverse dynamics

    F = m a + b v + F_spring(x) + F_c sgn(v)

Drawn at random per run: m 0.05-5 kg, the natural frequency of the base spring 1.5-12 Hz (so k over
decades), damping ratio 0.05-1, stroke 4-80 mm; 3-12 tones up to 5-20 Hz (log-spread, random phases, equal
velocity share), with a sub-Hz stroke tone (0.1-0.8 Hz, half the stroke) in half the draws; Coulomb
friction 0-50 % of the rms dynamic force m a + b v; sensor noise 0.1-5 % of the force rms; encoder
quantisation 0.1-5 um; 1-4 kHz; stamp jitter (stamps only, 2-20 % of the period) in a third of the draws;
one to three holes of 0.03-0.5 s in a third. Families differ in the spring:

* ``impedance/piecewise_linear``: 0-2 stiffness steps (ratio 1.3-5, continuous force) at random positions -
  the segments without a step fit the model exactly (model_fits; coverage and false refusals are counted
  there); a segment holding a step must be flagged or cover its secant stiffness;
* ``impedance/smooth_hardening``: F = k0 x (1 + (x / x_h)^2) - model mismatch in every segment (k varies);
* ``impedance/detent_stop``: linear spring + a detent bump (Gaussian derivative, 5-30 % of the spring
  force) + a hard stop (20 k0) near the end of the stroke - mismatch in the segments they touch.

Both estimators run as the tools do: ``batch`` = :func:`.report.profile_record` (the impedance-profile CLI
without the bag), ``online`` = :class:`.pipeline.ImpedancePipeline` fed the joint position and effort in
blocks (the node / run-bag). One Outcome per (estimator, segment, direction, parameter m/b/k); the truth of
k in a segment is the least-squares slope of the true spring force over the segment's samples (the physical
k where the spring is linear). ``good_data``: model-consistent bin with at least 1000 true samples.
"""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.params import validate_all
from contact_dynamics_common.signal.conditioning import cutoff_for_width
from contact_dynamics_common.trust.calibration import Outcome

from .config import PARAMS
from .pipeline import ImpedancePipeline
from .report import profile_record
from .segmented import FitOptions, segment_index

_NAMES = (('mass', 0, 'kg'), ('damping', 1, 'N*s/m'), ('stiffness', 2, 'N/m'))
_EPOCH_NS = 1_750_000_000 * 10**9


def _motion(rng, t, stroke, sub_hz):
    """Exact x, v, a of a random multisine (+ optional sub-Hz stroke tone), 1 s raised-cosine fade-in."""
    f_top = rng.uniform(5.0, 20.0)
    n = int(rng.integers(3, 13))
    f = np.sort(np.exp(rng.uniform(np.log(f_top / 8.0), np.log(f_top), n)))
    f[-1] = f_top
    amp = 1.0 / f
    amp *= 0.25 * stroke / amp.sum()
    if sub_hz:
        f = np.concatenate([[rng.uniform(0.1, 0.8)], f])
        amp = np.concatenate([[0.5 * stroke / 2.0], amp * 0.6])
    ph = rng.uniform(0, 2 * np.pi, len(f))
    w = 2 * np.pi * f
    arg = np.outer(t, w) + ph
    s = np.sin(arg) @ amp
    ds = np.cos(arg) @ (amp * w)
    dds = -np.sin(arg) @ (amp * w * w)
    Tf = 1.0
    u = np.clip(t / Tf, 0, 1)
    fw = 0.5 * (1 - np.cos(np.pi * u))
    dfw = np.where(t < Tf, 0.5 * np.pi / Tf * np.sin(np.pi * u), 0.0)
    ddfw = np.where(t < Tf, 0.5 * (np.pi / Tf) ** 2 * np.cos(np.pi * u), 0.0)
    x = fw * s
    v = dfw * s + fw * ds
    a = ddfw * s + 2 * dfw * ds + fw * dds
    return x, v, a, {'tones_hz': f.tolist(), 'top_hz': float(f_top), 'sub_hz': bool(sub_hz)}


def _spring(kind, rng, k0, stroke):
    """F_spring(x) (vectorised) and the positions where the model breaks (kinks, detent, stop)."""
    if kind == 'piecewise_linear':
        nk = int(rng.integers(0, 3))
        kinks = np.sort(rng.uniform(-0.3 * stroke, 0.3 * stroke, nk))
        ks = [k0]
        for _ in range(nk):
            ratio = 10 ** rng.uniform(0.11, 0.7)
            ks.append(ks[-1] * ratio if rng.random() < 0.7 else ks[-1] / ratio)

        def force(x):
            F = ks[0] * x
            for kx, dk in zip(kinks, np.diff(ks)):
                F = F + dk * np.maximum(x - kx, 0.0)
            return F
        breaks = [(float(k), float(k)) for k in kinks]
        return force, breaks
    if kind == 'smooth_hardening':
        xh = stroke * rng.uniform(0.2, 0.6)
        return (lambda x: k0 * x * (1 + (x / xh) ** 2)), [(-np.inf, np.inf)]
    # detent + stop
    xd = rng.uniform(-0.25, 0.25) * stroke
    wd = rng.uniform(0.03, 0.08) * stroke
    ad = rng.uniform(0.05, 0.3) * k0 * 0.25 * stroke
    xs = rng.uniform(0.28, 0.38) * stroke

    def force(x):
        u = (x - xd) / wd
        return k0 * x - ad * u * np.exp(0.5 - 0.5 * u * u) * 1.0 + 20 * k0 * np.maximum(x - xs, 0.0)
    return force, [(xd - 3 * wd, xd + 3 * wd), (xs, np.inf)]


def simulate(kind: str, rng) -> dict:
    """One random experiment of the family ``kind`` (module docstring): stamps, measured x, F, truth."""
    fs = float(rng.choice([1000.0, 2000.0, 4000.0]))
    T = 14.0
    t = np.arange(0.0, T, 1.0 / fs)
    m = 10 ** rng.uniform(np.log10(0.05), np.log10(5.0))
    fn = 10 ** rng.uniform(np.log10(1.5), np.log10(12.0))
    k0 = m * (2 * np.pi * fn) ** 2
    zeta = 10 ** rng.uniform(np.log10(0.05), 0.0)
    b = 2 * zeta * np.sqrt(k0 * m)
    stroke = 10 ** rng.uniform(np.log10(0.004), np.log10(0.08))
    x, v, a, exc = _motion(rng, t, stroke, rng.random() < 0.5)
    spring, breaks = _spring(kind, rng, k0, stroke)
    dyn = m * a + b * v
    dyn_rms = float(np.sqrt(np.mean(dyn[t > 1.0] ** 2)))
    fc = 0.0 if rng.random() < 0.2 else rng.uniform(0.0, 0.5) * dyn_rms
    F = dyn + spring(x) + fc * np.sign(v)
    noise_f = 10 ** rng.uniform(-3, np.log10(0.05)) * float(np.sqrt(np.mean(F[t > 1.0] ** 2)))
    q = 10 ** rng.uniform(-7, np.log10(5e-6))
    x_meas = np.round(x / q) * q
    F_meas = F + rng.normal(0.0, noise_f, len(t))
    stamps = t.copy()
    jitter = 0.0
    if rng.random() < 1 / 3:
        jitter = rng.uniform(0.02, 0.2)
        stamps = t + rng.uniform(-0.5, 0.5, len(t)) * jitter / fs
    keep = np.ones(len(t), bool)
    holes = []
    if rng.random() < 1 / 3:
        for _ in range(int(rng.integers(1, 4))):
            t0, dur = rng.uniform(3.0, T - 1.0), rng.uniform(0.03, 0.5)
            keep &= ~((t >= t0) & (t < t0 + dur))
            holes.append((float(t0), float(dur)))
    return {'t': t, 'stamps': stamps[keep], 'x': x, 'v': v, 'a': a, 'x_meas': x_meas[keep],
            'F_meas': F_meas[keep], 'keep': keep, 'm': m, 'b': b, 'k0': k0, 'fc': fc, 'spring': spring,
            'breaks': breaks, 'stroke': stroke, 'rate': fs, 'excitation': exc, 'noise_f': noise_f, 'q': q,
            'jitter': jitter, 'holes': holes}


def truth_per_bin(sim: dict, edges: np.ndarray, v_min: float) -> dict:
    """Per (direction, segment): m, b, k (LS slope of the true spring over the bin's samples), the count of
    true samples, and whether the spring is linear there (no break inside the segment)."""
    t, x, v = sim['t'], sim['x'], sim['v']
    use = sim['keep'] & (t > 2.0) & (np.abs(v) > v_min)
    seg = np.full(len(x), -1)
    seg[use] = segment_index(x[use], edges)
    nseg = len(edges) - 1
    k = np.full((2, nseg), np.nan)
    n = np.zeros((2, nseg), int)
    fits = np.zeros((2, nseg), bool)
    for d in (0, 1):
        for j in range(nseg):
            sel = use & (seg == j) & ((v > 0) if d == 0 else (v < 0))
            n[d, j] = int(sel.sum())
            if n[d, j] >= 10 and np.ptp(x[sel]) > 0:
                k[d, j] = np.polyfit(x[sel], sim['spring'](x[sel]), 1)[0]
            lo, hi = edges[j], edges[j + 1]
            fits[d, j] = not any(b0 <= hi and b1 >= lo for b0, b1 in sim['breaks'])
    return {'mass': np.full((2, nseg), sim['m']), 'damping': np.full((2, nseg), sim['b']), 'stiffness': k,
            'n': n, 'fits': fits}


def _params(sim: dict, edges: np.ndarray) -> dict:
    """The profiler's parameters a user would set: edges over the stroke, cut-off 4x the top tone (at most
    that of a kernel 2 samples wide), deadband 3 % of the velocity rms."""
    cutoff = min(4.0 * sim['excitation']['top_hz'], cutoff_for_width(2.0 / sim['rate']))
    return validate_all(PARAMS, {'joint_name': 'slider', 'force_source': 'effort', 'edges': edges.tolist(),
                                 'cutoff_frequency': cutoff,
                                 'min_velocity': 0.03 * float(np.std(sim['v']))})


def run_online(sim: dict, params: dict, block: int = 997):
    pl = ImpedancePipeline(params)
    st = _EPOCH_NS + np.round(sim['stamps'] * 1e9).astype(np.int64)
    for i in range(0, len(st), block):
        sl = slice(i, i + block)
        pl.push_joint_columns(st[sl], ['slider'], sim['x_meas'][sl, None], sim['F_meas'][sl, None])
        pl.step()
    pl.step(flush=True)            # the end of the record: its last, incomplete data-time block too
    return pl.profile()


def outcomes(sim: dict, kind: str) -> list[Outcome]:
    """Both estimators on one experiment -> one Outcome per (estimator, bin, parameter)."""
    x = sim['x'][sim['keep']]
    lo, hi = np.percentile(x, [1.0, 99.0])
    nseg = 4 if kind == 'piecewise_linear' else 3
    edges = np.linspace(lo, hi, nseg + 1)
    params = _params(sim, edges)
    truth = truth_per_bin(sim, edges, params['min_velocity'])
    out = []
    profiles = {}
    try:
        profiles['batch'], _ = profile_record(sim['stamps'], sim['x_meas'], sim['F_meas'], params,
                                              FitOptions(v_min=params['min_velocity']),
                                              cutoff_hz=params['cutoff_frequency'])
    except ValueError as exc:
        profiles['batch'] = str(exc)
    profiles['online'] = run_online(sim, params)
    for est, p in profiles.items():
        for d in (0, 1):
            for j in range(nseg):
                fits = bool(truth['fits'][d, j])
                good = fits and truth['n'][d, j] >= 1000
                for name, i, unit in _NAMES:
                    tr = float(truth[name][d, j])
                    if isinstance(p, str):
                        out.append(Outcome(est, name, np.nan, np.nan, tr, False, fits, good, p, unit))
                        continue
                    out.append(Outcome(est, name, float(p.theta[d, j, i]), float(p.std(name)[d, j]), tr,
                                       bool(p.valid[d, j]), fits, good, p.reason[d][j], unit))
    return out


def piecewise_linear(rng) -> list[Outcome]:
    """Piecewise-linear spring with 0-2 stiffness steps (module docstring)."""
    return outcomes(simulate('piecewise_linear', rng), 'piecewise_linear')


def smooth_hardening(rng) -> list[Outcome]:
    """Smooth hardening spring k0 x (1 + (x/x_h)^2): model mismatch in every segment."""
    return outcomes(simulate('smooth_hardening', rng), 'smooth_hardening')


def detent_stop(rng) -> list[Outcome]:
    """Linear spring with a detent bump and a hard stop."""
    return outcomes(simulate('detent_stop', rng), 'detent_stop')


# ------------------------------------------------------------------ quasi-static force curves (issue 17)
def simulate_force_curve(rng) -> dict:
    """One slow press and release, written here independently of :mod:`.quasistatic`: a dwell of 1-3 s, a
    triangle 0 -> stroke -> 0 (stroke 1-20 mm, 10-60 s per direction), a dwell of 0-2 s; a continuous
    piecewise-linear spring (k0 10-1e5 N/m, 0-2 kinks at random positions, each later slope k0 times
    -0.5..3), hysteresis F_h sgn(v) of 0-20 % of the spring's force range, a preload, force noise 0.1-5 % of
    the range, encoder steps of 1e-4..3e-3 of the stroke; 20-500 Hz stamps jittered by 0-20 % of the period,
    0-5 % of the intervals stretched to 2-8 periods (gaps, some beyond the bridge)."""
    stroke = float(np.exp(rng.uniform(np.log(1e-3), np.log(20e-3))))
    speed = stroke / rng.uniform(10.0, 60.0)
    rate = float(np.exp(rng.uniform(np.log(20.0), np.log(500.0))))
    dwell0, dwell1 = rng.uniform(1.0, 3.0), rng.uniform(0.0, 2.0)
    duration = dwell0 + 2 * stroke / speed + dwell1
    n = int(duration * rate * 1.3) + 10
    jit = rng.uniform(0.0, 0.2)
    d = (1.0 + rng.uniform(-jit, jit, n)) / rate
    gaps = rng.random(n) < rng.uniform(0.0, 0.05)
    d[gaps] = rng.uniform(2.0, 8.0, int(gaps.sum())) / rate
    t = np.concatenate(([0.0], np.cumsum(d)))
    t = t[t <= duration]
    ramp = np.clip(t - dwell0, 0.0, None) * speed
    x = np.where(ramp <= stroke, ramp, np.maximum(2 * stroke - ramp, 0.0))
    v_sign = np.where((t > dwell0) & (ramp <= stroke), 1.0,
                      np.where((ramp > stroke) & (ramp < 2 * stroke), -1.0, 0.0))
    k0 = float(np.exp(rng.uniform(np.log(10.0), np.log(1e5))))
    kinks = np.sort(rng.uniform(0.1, 0.9, int(rng.integers(0, 3)))) * stroke
    slopes = np.concatenate(([k0], k0 * rng.uniform(-0.5, 3.0, len(kinks))))
    knots = np.concatenate(([0.0], kinks, [stroke * 1.01]))
    f_knots = np.concatenate(([0.0], np.cumsum(slopes * np.diff(knots))))
    spring = np.interp(x, knots, f_knots)
    span = max(float(np.ptp(spring)), 1e-9)
    f_h = rng.uniform(0.0, 0.2) * span
    preload = rng.uniform(0.0, 0.5) * span
    f_clean = preload + spring + f_h * v_sign
    f_meas = f_clean + rng.normal(0.0, rng.uniform(1e-3, 5e-2) * span, len(t))
    q = stroke * float(np.exp(rng.uniform(np.log(1e-4), np.log(3e-3))))
    return {'t': t, 'x': x, 'x_meas': np.round(x / q) * q, 'F': f_clean, 'F_meas': f_meas, 'v_sign': v_sign,
            'kinks': kinks, 'f_h': f_h, 'stroke': stroke, 'speed': speed}


def force_curve(rng) -> list[Outcome]:
    """``impedance/force_curve``: a quasi-static press and release (:func:`simulate_force_curve`) through
    impedance-profile's path (:func:`.report.profile_record_modes`, profile_mode auto) -> one Outcome per
    (segment, direction) for the stiffness and per segment for the hysteresis width (estimator
    'quasi_static'). Truth of k: the least-squares slope of the true spring over the bin's samples (true
    direction, from the 2 s start-up skip on); of the hysteresis width: 2 F_h. model_fits: no kink inside the
    segment; good_data: model_fits and >= 50 samples in the bin. When auto does not choose the quasi-static
    mode, every outcome is published not valid (a false refusal on good data)."""
    from .report import profile_record_modes
    sim = simulate_force_curve(rng)
    stroke = sim['stroke']
    params = validate_all(PARAMS, {'joint_name': 'stem', 'position_range': [0.0, stroke], 'segments': 4,
                                   'min_velocity': 0.3 * sim['speed'], 'min_samples': 30})
    edges = np.linspace(0.0, stroke, 5)
    try:
        _, _, qs, evidence = profile_record_modes(sim['t'], sim['x_meas'], sim['F_meas'], params,
                                                  FitOptions(v_min=params['min_velocity'], n_min=30))
        why = '' if qs is not None else f"auto chose {evidence['chosen']}"
    except ValueError as exc:
        qs, why = None, str(exc)
    t, x = sim['t'], sim['x']
    xq = sim['x_meas']
    out = []
    fits_seg = [not np.any((sim['kinks'] > edges[j]) & (sim['kinks'] < edges[j + 1])) for j in range(4)]
    for d, sgn in ((0, 1.0), (1, -1.0)):
        for j in range(4):
            inside = (xq >= edges[j]) & ((xq <= edges[j + 1]) if j == 3 else (xq < edges[j + 1]))
            sel = inside & (sim['v_sign'] == sgn) & (t >= 2.0)
            truth = float(np.polyfit(x[sel], sim['F'][sel], 1)[0]) if sel.sum() >= 3 and np.ptp(x[sel]) > 0 \
                else np.nan
            good = fits_seg[j] and sel.sum() >= 50
            if qs is None:
                out.append(Outcome('quasi_static', 'stiffness', np.nan, np.nan, truth, False, fits_seg[j],
                                   good, why, 'N/m'))
                continue
            out.append(Outcome('quasi_static', 'stiffness', float(qs.theta[d, j, 0]),
                               float(np.sqrt(max(qs.cov[d, j, 0, 0], 0.0))), truth, bool(qs.valid[d, j]),
                               fits_seg[j], good, qs.reason[d][j], 'N/m'))
    for j in range(4):
        good = fits_seg[j] and qs is not None and bool(qs.valid[:, j].all())
        if qs is None:
            out.append(Outcome('quasi_static', 'hysteresis_width', np.nan, np.nan, 2 * sim['f_h'], False,
                               fits_seg[j], False, why, 'N'))
            continue
        out.append(Outcome('quasi_static', 'hysteresis_width', float(qs.hysteresis[j]),
                           float(qs.hysteresis_std[j]), 2 * sim['f_h'], bool(qs.valid[:, j].all()),
                           fits_seg[j], good, '; '.join(qs.reason[d][j] for d in (0, 1)), 'N'))
    return out
