"""Randomized calibration families of the single-point contact estimator (``contact-dynamics calibrate``).

Each family draws ONE experiment per call (``draw(rng) -> list[Outcome]``) with a plant written here,
independently of the estimators and of ``simulate.py``: the deformation is imposed (a position-controlled tool
pressing on the environment) as a preload plus a random-phase multisine, and the normal force is computed in
closed form from the family's environment law:

    F = k x + b xdot [+ m xddot] [+ friction mu F_dyn s(xdot)] [+ k_h (x - P_r(x)) (Jenkins-element hysteresis)]

Drawn per run (every family): stiffness k log-uniform 1e2 - 1e6 N/m; preload force 10 - 1000 N (x stays in
contact: x in [0.4, 1.6] x0); damping with a rate-force share of 3 - 60 % of the spring's dynamic force at the
top tone; 3 - 10 log-spaced tones from either a sub-Hz (0.2 - 0.8 Hz) or a >= 1 Hz lowest tone up to 2 - 20 Hz;
force and displacement noise 0.1 - 5 % of their dynamic rms (log-uniform, independent); displacement
quantisation (half the draws, a step of 0.1 - 2 % of the dynamic amplitude); stamp jitter (half the draws,
up to 30 % of the period, on the real stamps both streams carry); a hole (a third of the draws, 30 - 300 ms of
both streams); a rate mismatch (a third of the draws: the displacement stream at 1/2 or 1/4 of the wrench rate,
interpolated by the pipeline); wrench rate 250 - 2000 Hz; 6 - 10 s (<= 12000 samples).

Every draw runs the node's own ``ContactPipeline`` (stamp gates, pairing, datum, differentiation, estimators,
live trust monitors and the shared verdict) with the node's config defaults (plus any ``calibrate --param
NAME=VALUE``, e.g. ``derivative_filter=consistent_kernel``) and ``algorithms`` = rls, ils, ia, kalman, gls, pushed whole and stepped once (the pipeline is batching-independent, so this is what the live
node and run-bag publish after the record). One ``Outcome`` per estimator and published parameter: stiffness
always; damping (and mass) counted valid only when the estimate is valid AND the parameter is identified.

``model_fits``: the family's law is the estimator's model (ils / ia always fit Kelvin-Voigt, so under a mass
family they do not). ``good_data``: model fits, both noise levels <= 1 %, damping share >= 10 % (well excited),
and the estimator's own documented excitation requirement is met by the draw: for the adaptive law (ia) every
identifiable parameter adapted over >= 5 time constants of its gain (``adaptive.adaptation_excited``, computed
by the estimator from the data and its gains, never from the truth). With the thesis gains no draw meets it
(the damping adapts over 0.006 - 1 time constant): ia's refusals are then counted as refusals, not as false
refusals (doc/trust/single_point.md).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from contact_dynamics_common.trust.calibration import Outcome

ALGORITHMS = ['rls', 'ils', 'ia', 'kalman', 'gls']
#: contact-compare's batch-only estimators (frequency domain)
BATCH = ['etfe', 'oem', 'eem', 'gmle']
UNITS = {'stiffness': 'N/m', 'damping': 'N*s/m', 'mass': 'kg'}


@lru_cache(maxsize=None)
def _defaults() -> dict:
    from contact_dynamics_common.params import validate_all
    from .config import PARAMS
    return validate_all(PARAMS, {})


def _params(model: str) -> dict:
    """The node's defaults for this draw, with the ``contact-dynamics calibrate --param`` overrides."""
    from contact_dynamics_common.params import validate_all
    from contact_dynamics_common.trust.calibration import parameter_overrides
    from .config import PARAMS
    return validate_all(PARAMS, dict(dict(joint_name='joint1', model=model, algorithms=ALGORITHMS,
                                          datum_mode='fixed', datum=0.0), **parameter_overrides()))


def _play(x: np.ndarray, r: float) -> np.ndarray:
    """Play operator of half-width r (backlash): y follows x with a dead band 2r; starts at x[0]."""
    y = np.empty_like(x)
    prev = x[0]
    for i, v in enumerate(x):          # a scalar recursion; records are <= 12000 samples
        prev = min(max(prev, v - r), v + r)
        y[i] = prev
    return y


def _experiment(rng: np.random.Generator, *, mass_share: float = 0.0, friction: float = 0.0,
                hysteresis: float = 0.0) -> dict:
    """Draw and simulate one record (see the module docstring). Returns streams, truth and the draw."""
    rate = float(np.exp(rng.uniform(np.log(250.0), np.log(2000.0))))
    duration = min(float(rng.uniform(6.0, 10.0)), 12000.0 / rate)
    k = float(10 ** rng.uniform(2, 6))
    f0 = float(10 ** rng.uniform(1, 3))
    x0 = f0 / k
    n_tones = int(rng.integers(3, 11))
    f_top = float(rng.uniform(2.0, 20.0))
    f_low = float(rng.uniform(0.2, 0.8)) if rng.random() < 0.5 else float(rng.uniform(1.0, min(2.0, f_top / 2)))
    freqs = np.geomspace(f_low, f_top, n_tones)
    amp = 0.6 * x0 / n_tones
    phases = rng.uniform(0, 2 * np.pi, n_tones)
    w = 2 * np.pi * freqs
    damping_share = float(10 ** rng.uniform(np.log10(0.03), np.log10(0.6)))
    b = damping_share * k / w[-1]
    m = mass_share * k / w[-1] ** 2
    # the wrench stream's true times: uniform or jittered
    n = int(duration * rate)
    period = 1.0 / rate
    jitter = float(rng.uniform(0.05, 0.3)) if rng.random() < 0.5 else 0.0
    t = np.arange(n) * period + 0.2 + rng.uniform(-jitter, jitter, n) * period
    t.sort()

    def motion(tt):
        ramp = np.clip((tt - 0.2) / 0.3, 0, 1)
        s = np.sin(w[:, None] * tt[None] + phases[:, None])
        c = np.cos(w[:, None] * tt[None] + phases[:, None])
        x = x0 + amp * s.sum(0)
        xd = amp * (w[:, None] * c).sum(0)
        xdd = -amp * (w[:, None] ** 2 * s).sum(0)
        return x, xd, xdd, ramp

    x, xd, xdd, _ = motion(t)
    force = k * x + b * xd + m * xdd
    dyn = float(np.std(force))
    if friction > 0:
        v_s = 0.02 * float(np.std(xd))
        force = force + friction * dyn * np.tanh(xd / v_s)
    if hysteresis > 0:
        # a Jenkins element (spring k_h in series with a slider that slips at k_h r) beside the spring: the
        # dissipative two-branch loop of a hysteretic spring (loading branch above unloading)
        r = hysteresis * float(np.std(x))
        k_h = 0.5 * k
        force = force + k_h * (x - _play(x, r))
    noise_f = float(10 ** rng.uniform(-3, np.log10(0.05)))
    noise_x = float(10 ** rng.uniform(-3, np.log10(0.05)))
    f_meas = force + noise_f * dyn * rng.standard_normal(n)
    # the displacement stream: same stamps, or a slower one (rate mismatch) on its own jittered stamps
    div = int(rng.choice([2, 4])) if rng.random() < 1 / 3 else 1
    td = t[::div].copy()
    xdm, _, _, _ = motion(td)
    if hysteresis > 0 or friction > 0:
        pass                                    # the displacement itself is exact; the force carries the law
    xdm = xdm + noise_x * float(np.std(x)) * rng.standard_normal(len(td))
    quant = float(10 ** rng.uniform(-3, np.log10(0.02))) * float(np.std(x)) if rng.random() < 0.5 else 0.0
    if quant > 0:
        xdm = np.round(xdm / quant) * quant
    keep_w = np.ones(n, dtype=bool)
    keep_d = np.ones(len(td), dtype=bool)
    hole = float(rng.uniform(0.03, 0.3)) if rng.random() < 1 / 3 else 0.0
    if hole > 0:
        start = float(rng.uniform(t[0] + 0.3 * duration, t[0] + 0.8 * duration))
        keep_w &= ~((t >= start) & (t < start + hole))
        keep_d &= ~((td >= start) & (td < start + hole))
    # a soft approach: the record starts out of contact (force ramps in over 0.3 s)
    ramp_w = np.clip((t - 0.2) / 0.3, 0, 1)
    ramp_d = np.clip((td - 0.2) / 0.3, 0, 1)
    f_meas = f_meas * ramp_w
    xdm = xdm * ramp_d
    return dict(t=t[keep_w], f=f_meas[keep_w], td=td[keep_d], x=xdm[keep_d],
                truth={'stiffness': k, 'damping': b, 'mass': m},
                good=noise_f <= 0.01 and noise_x <= 0.01 and damping_share >= 0.1,
                draw=dict(rate=rate, k=k, damping_share=damping_share, f_top=f_top, f_low=f_low, noise_f=noise_f,
                          noise_x=noise_x, jitter=jitter, div=div, hole=hole, quant=quant))


def _run_pipeline(exp: dict, model: str) -> list:
    """The node's pipeline on the record: push both streams whole, one step (= the node after the record)."""
    from .pipeline import ContactPipeline
    pipe = ContactPipeline(_params(model))
    ns_w = (exp['t'] * 1e9).astype(np.int64)
    ns_d = (exp['td'] * 1e9).astype(np.int64)
    force = np.zeros((len(ns_w), 3))
    force[:, 2] = exp['f']
    pipe.push_wrench_columns(ns_w, force)
    pipe.push_joint_columns(ns_d, ['joint1'], exp['x'][:, None])
    return pipe.step()


def _outcomes(estimates, exp: dict, family_model: str, law_fits: bool) -> list[Outcome]:
    from .adaptive import adaptation_excited
    out = []
    for est in estimates:
        fits = law_fits and est.model == family_model
        excited = adaptation_excited(est)
        for j, name in enumerate(est.names):
            known = est.extras.get('covariance_known', True)
            sigma = math.sqrt(max(float(est.covariance[j, j]), 0.0)) if known else math.nan
            ident = name == 'stiffness' or (len(est.identifiable) == len(est.names) and est.identifiable[j])
            out.append(Outcome(estimator=est.algorithm, parameter=name, value=float(est.values[j]), sigma=sigma,
                               truth=float(exp['truth'][name]), valid=bool(est.valid and ident),
                               model_fits=fits,
                               good_data=bool(exp['good'] and fits and excited and name == 'stiffness'),
                               reason=est.reason if not est.valid else ('' if ident else 'not identified'),
                               unit=UNITS[name]))
    return out


def kv_multisine(rng: np.random.Generator) -> list[Outcome]:
    """Kelvin-Voigt environment, Kelvin-Voigt model: the model fits (coverage and false-refusal family)."""
    exp = _experiment(rng)
    return _outcomes(_run_pipeline(exp, 'kelvin_voigt'), exp, 'kelvin_voigt', True)


def kv_friction(rng: np.random.Generator) -> list[Outcome]:
    """Kelvin-Voigt environment with Coulomb friction 0-50 % of the dynamic force (smoothed sign of the rate),
    Kelvin-Voigt model: a mismatch that must be covered or flagged."""
    exp = _experiment(rng, friction=float(rng.uniform(0.0, 0.5)))
    return _outcomes(_run_pipeline(exp, 'kelvin_voigt'), exp, 'kelvin_voigt', False)


def kv_omitted_mass(rng: np.random.Generator) -> list[Outcome]:
    """Environment with mass (inertial force 1-30 % of the spring's at the top tone), Kelvin-Voigt model:
    an omitted mass that must be covered or flagged."""
    exp = _experiment(rng, mass_share=float(10 ** rng.uniform(-2, np.log10(0.3))))
    return _outcomes(_run_pipeline(exp, 'kelvin_voigt'), exp, 'kelvin_voigt', False)


def kvm_mass(rng: np.random.Generator) -> list[Outcome]:
    """Environment with mass (1-30 %), model kelvin_voigt_mass (rls, kalman, gls fit it; ils and ia are
    Kelvin-Voigt only): issue 14's failure class 1 at random."""
    exp = _experiment(rng, mass_share=float(10 ** rng.uniform(-2, np.log10(0.3))))
    return _outcomes(_run_pipeline(exp, 'kelvin_voigt_mass'), exp, 'kelvin_voigt_mass', True)


def kv_hysteresis(rng: np.random.Generator) -> list[Outcome]:
    """A hysteretic spring: k x + b xdot + k_h (x - P_r(x)) (a Jenkins element: P_r the play operator of
    half-width r = 5-50 % of the rms deformation, k_h = k / 2, slipping at k_h r); truth: the large-cycle
    stiffness k and the viscous b. A mismatch to cover or flag."""
    exp = _experiment(rng, hysteresis=float(rng.uniform(0.05, 0.5)))
    return _outcomes(_run_pipeline(exp, 'kelvin_voigt'), exp, 'kelvin_voigt', False)


def compare_batch(rng: np.random.Generator) -> list[Outcome]:
    """contact-compare's batch-only estimators (etfe, oem, eem, gmle) on the node pipeline's in-contact samples
    (``ContactPipeline.contact_samples``, as contact-compare takes them from a bag), judged by
    ``algorithms.run`` (the shared assessment and verdict). The environment is drawn: Kelvin-Voigt (half the
    draws: the model fits), or with friction 0-50 %, a mass 1-30 % or a Jenkins-element hysteresis."""
    from .algorithms import make, run
    from .pipeline import ContactPipeline, Stream
    law = int(rng.integers(0, 6))
    kw = [{}, {}, {}, {'friction': float(rng.uniform(0.0, 0.5))},
          {'mass_share': float(10 ** rng.uniform(-2, np.log10(0.3)))},
          {'hysteresis': float(rng.uniform(0.05, 0.5))}][law]
    exp = _experiment(rng, **kw)
    pipe = ContactPipeline(_params('kelvin_voigt'))
    ns_w = (exp['t'] * 1e9).astype(np.int64)
    ns_d = (exp['td'] * 1e9).astype(np.int64)
    force = np.zeros((len(ns_w), 3))
    force[:, 2] = exp['f']
    samples = pipe.contact_samples(Stream(ns_w, ns_w, force), Stream(ns_d, ns_d, exp['x'][:, None]))
    return _outcomes([run(make(n), samples) for n in BATCH], exp, 'kelvin_voigt', not kw)
