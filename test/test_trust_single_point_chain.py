"""Issue 14, failure class 1 (single point, kelvin_voigt_mass): the differentiator's bias in the rate
regressor made GLS / Kalman report b with sigma ~0.1 % while 0.8 % off (8-12 sigma), valid.

The plant is written here, independently of the project's simulator: a *force-driven* stiff wall with
environment mass, m xdd + b xd + k x = F(t), integrated by scipy's solve_ivp (DOP853), F a smooth ramp to a
preload plus a log-spaced random-phase multisine 0.3-10 Hz; 1 kHz, 2 um displacement noise, 0.2 N force
noise. It goes through the node's ContactPipeline (pairing, fixed datum, local-fit differentiation), both
as contact-compare does (``algorithms.run``) and live, pushed message by message and stepped per tick.
"""
from functools import lru_cache

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from contact_dynamics_common.params import load_params_file, validate_all
from contact_estimation.single_point.algorithms import make, run
from contact_estimation.single_point.config import NODE_NAME, PARAMS
from contact_estimation.single_point.pipeline import ContactPipeline, Stream, estimator_options

TRUTH = {'stiffness': 2e5, 'damping': 500.0, 'mass': 5.0}


def wall_with_mass(seed, k=2e5, b=500.0, m=5.0, rate=1000.0, duration=8.0, f_top=10.0, noise_x=2e-6,
                   noise_f=0.2, preload=300.0, amp=150.0, tones=9):
    rng = np.random.default_rng(seed)
    freqs = np.geomspace(0.3, f_top, tones)
    ph = rng.uniform(0, 2 * np.pi, tones)

    def force(t):
        t = np.atleast_1d(t)
        u = np.clip(t / 0.5, 0, 1)
        ramp = u * u * (3 - 2 * u)
        return ramp * (preload + amp / np.sqrt(tones) * np.sin(2 * np.pi * freqs[:, None] * t + ph[:, None]).sum(0))

    t = np.arange(0, duration, 1 / rate)
    sol = solve_ivp(lambda tt, s: [s[1], (force(tt)[0] - b * s[1] - k * s[0]) / m], (0, duration), [0.0, 0.0],
                    t_eval=t, rtol=1e-10, atol=1e-13, method='DOP853')
    return t, force(t) + noise_f * rng.standard_normal(len(t)), sol.y[0] + noise_x * rng.standard_normal(len(t))


@lru_cache(maxsize=None)
def params():
    from contact_dynamics_common.cli import config_dir
    raw = load_params_file(str(config_dir() / 'contact_estimator.yaml'), NODE_NAME)
    raw = {k: v for k, v in raw.items() if k != 'use_sim_time'}
    raw.update(joint_name='joint1', model='kelvin_voigt_mass', algorithms=['rls', 'ils', 'ia', 'kalman', 'gls'],
               datum_mode='fixed', datum=0.0)
    return validate_all(PARAMS, raw)


@lru_cache(maxsize=None)
def record(seed):
    t, f, x = wall_with_mass(seed)
    ns = (t * 1e9).astype(np.int64) + 1
    return ns, f, x


def samples_of(seed):
    ns, f, x = record(seed)
    pipe = ContactPipeline(params())
    force = np.zeros((len(ns), 3))
    force[:, 2] = f
    return pipe.contact_samples(Stream(ns, ns, force), Stream(ns, ns, x[:, None])), pipe


def z_scores(est):
    return {n: (est.value(n) - TRUTH[n]) / est.std(n) for n in est.names}


@pytest.mark.parametrize('seed', [0, 1])
@pytest.mark.parametrize('name', ['gls', 'kalman'])
def test_class1_reproduced_then_covered_within_3_sigma(name, seed):
    s, pipe = samples_of(seed)
    options = estimator_options(params(), pipe.model)
    own = make(name, **options[name])
    raw = own.fit(s) if hasattr(own, 'fit') else (own.update(s), own.estimate())[1]
    # the failure: the estimator's own sigma says ~0.1 % while b is ~0.8 % off, many sigma, valid
    assert raw.valid and abs(z_scores(raw)['damping']) > 5.0, z_scores(raw)
    assert abs(raw.damping / TRUTH['damping'] - 1) > 0.004
    est = run(make(name, **options[name]), s)
    if est.valid:
        z = z_scores(est)
        assert all(abs(v) <= 3.0 for v in z.values()), z
        # not by an absurd sigma: b still known to ~1-2 %
        assert est.std('damping') / TRUTH['damping'] < 0.03
    else:
        assert est.reason


def test_class1_live_pipeline_covers_or_refuses():
    ns, f, x = record(0)
    pipe = ContactPipeline(params())
    for i in range(0, len(ns), 50):          # 20 Hz ticks of 50 messages, one by one as the callbacks push them
        for j in range(i, min(i + 50, len(ns))):
            pipe.push_wrench(int(ns[j]), 0.0, 0.0, float(f[j]))
            pipe.push_joint_state(int(ns[j]), ['joint1'], [float(x[j])])
        estimates = pipe.step()
    valid = [e for e in estimates if e.valid]
    assert {e.algorithm for e in valid} >= {'gls', 'kalman'}
    for e in valid:
        z = z_scores(e)
        assert all(abs(v) <= 3.0 for v in z.values()), (e.algorithm, z)
