"""Spec §6.1 S1: soft, persistently excited Kelvin-Voigt wall; all nine single-point algorithms.

Truth k = 4800 N/m, b = 200 N s/m; x = 10 mm + sum_j 2 mm sin(2 pi f_j t), f_j in {0.5, 1, 2, 5} Hz,
20 s (an integer number of periods of every tone), at 100 Hz and 1 kHz.

Settings for S1 (the spec gives none): RLS/ILS forgetting with a 4 s memory, lambda = 1 - dt / 4 s
(two periods of the slowest tone; the thesis's 0.98 is a 50-sample memory, 50 ms at 1 kHz, in which the
noisy k wanders by ~0.8 %); IA gain diag(1e5, 2e3) instead of the thesis's diag(2e9, 2.5e3): on this
soft contact (x ~ 1e-2 m, not 1e-4 m) the thesis gain makes the Euler step gain dt phi^T Gamma phi
~ 2e3 (up to 4.8e3) at 100 Hz, i.e. unstable (checked in test_estimators_failures.py); diag(1e5, 2e3)
gives convergence rates Gamma_k E[x^2] ~ 11/s and Gamma_b E[xdot^2] ~ 5/s with a step gain <= 0.25.
"""
from functools import lru_cache

import numpy as np
import pytest

from contact_estimation.single_point.algorithms import ALGORITHMS, make, run, run_all
from contact_estimation.single_point.models import KELVIN_VOIGT_MASS
from contact_estimation.single_point.rls import RecursiveLeastSquares
from contact_estimation.single_point.samples import ContactSamples

K, B, MASS = 4800.0, 200.0, 2.0
TONES = np.array([0.5, 1.0, 2.0, 5.0])
BINS = [0.0, *TONES]
SEED = 20041101


@lru_cache(maxsize=None)
def s1(fs: float, noisy: bool = False, mass: float = 0.0, fd_velocity: bool = False) -> ContactSamples:
    """S1 samples. Noisy: sigma_F = 0.5 N, sigma_x = 10 um (seeded), xd = central difference of the
    measured x (np.gradient); noise-free: analytic xd unless ``fd_velocity``."""
    t = np.arange(int(round(20.0 * fs))) / fs
    arg = 2.0 * np.pi * TONES[:, None] * t
    w = 2.0 * np.pi * TONES[:, None]
    x = 10e-3 + (2e-3 * np.sin(arg)).sum(0)
    xd = (2e-3 * w * np.cos(arg)).sum(0)
    xdd = (-2e-3 * w ** 2 * np.sin(arg)).sum(0)
    f = K * x + B * xd + mass * xdd
    if noisy:
        rng = np.random.default_rng(SEED)
        f = f + 0.5 * rng.standard_normal(len(t))
        x = x + 10e-6 * rng.standard_normal(len(t))
    if noisy or fd_velocity:
        xd = np.gradient(x, t)
    return ContactSamples.make(t, f, x, xd, xdd)


def s1_options(fs: float) -> dict:
    lam = 1.0 - 1.0 / (4.0 * fs)
    freq = {'frequencies': BINS}
    return {'rls': {'forgetting': lam}, 'ils': {'forgetting': lam}, 'ia': {'gain': (1e5, 2e3)},
            'etfe': freq, 'oem': freq, 'eem': freq, 'gmle': freq}


def rel_err(est) -> np.ndarray:
    return np.abs(est.values[:2] / [K, B] - 1.0)


@pytest.mark.parametrize('fs', [100.0, 1000.0])
@pytest.mark.parametrize('name', ['gls', 'etfe', 'oem', 'eem', 'gmle'])
def test_noise_free_batch_exact(fs, name):
    """Model-consistent data, bins exactly on the tones: exact to 1e-6 (spec: GLS, EEM, OEM; ETFE and GMLE
    are exact on these data too). Observed ~1e-13."""
    est = run(make(name, **s1_options(fs).get(name, {})), s1(fs))
    assert est.valid, est.reason
    assert np.all(rel_err(est) < 1e-6), est.values
    np.linalg.cholesky(est.covariance)


@pytest.mark.parametrize('fs', [100.0, 1000.0])
@pytest.mark.parametrize('name', ['rls', 'ils', 'ia', 'kalman'])
def test_noise_free_recursive_converge(fs, name):
    """Within 1e-3 from 5 s on (after convergence) and at the end; observed < 1e-9."""
    est = make(name, record=True, **s1_options(fs).get(name, {}))
    est.update(s1(fs))
    t, theta = est.trajectory()
    late = t >= 5.0
    assert np.all(np.abs(theta[late] / [K, B] - 1.0) < 1e-3)
    final = est.estimate()
    assert final.valid, final.reason
    assert np.all(rel_err(final) < 1e-3)


@pytest.mark.parametrize('fs', [100.0, 1000.0])
def test_noise_free_rls_mass_path(fs):
    """S1 with m = 2 kg and analytic xddot: RLS with the mass term recovers k, b, m (1e-3)."""
    est = make('rls', model=KELVIN_VOIGT_MASS, **s1_options(fs)['rls'])
    est.update(s1(fs, mass=MASS))
    final = est.estimate()
    assert np.all(np.abs(final.values / [K, B, MASS] - 1.0) < 1e-3), final.values


@pytest.mark.parametrize('fs, bound', [(100.0, 0.0165), (1000.0, 2e-4)])
def test_noise_free_finite_difference_velocity_bias(fs, bound):
    """Central-difference xdot is attenuated by sin(w dt)/(w dt) (5 Hz at 100 Hz: -1.6 %), so b comes out
    high by O((w dt)^2): observed +1.41 % at 100 Hz, +0.014 % at 1 kHz; k is unaffected to 1e-3."""
    est = run(make('gls'), s1(fs, fd_velocity=True))
    err = est.values / [K, B] - 1.0
    assert 0.0 < err[1] < bound
    assert abs(err[0]) < 1e-3


@pytest.mark.parametrize('fs', [100.0, 1000.0])
def test_automatic_bins_are_the_tones(fs):
    """Automatic selection by cross-power finds DC and exactly the four tones on noisy data."""
    est = run(make('oem'), s1(fs, noisy=True))
    assert np.allclose(est.extras['frequencies'], BINS, atol=1e-9)


@pytest.mark.parametrize('fs', [100.0, 1000.0])
def test_noisy_all_nine(fs):
    """k within 1 % for all nine; b within 5 % for GLS, Kalman, OEM, GMLE; EEM/ETFE spread printed.

    Observed at 1 kHz: |dk/k| < 2e-3 for all (IA 1.9e-3, the others < 3e-4); b -2.1 % (GLS, Kalman:
    errors-in-variables from the differentiated noisy x, sigma_xd ~ 7 mm/s against an RMS xdot of 49 mm/s),
    -0.05 % (OEM, GMLE)."""
    results = run_all(s1(fs, noisy=True), options=s1_options(fs))
    assert set(results) == set(ALGORITHMS)
    for name, est in results.items():
        err = est.values / [K, B] - 1.0
        print(f'{fs:6.0f} Hz {name:7s} dk/k {err[0]:+.2e}  db/b {err[1]:+.2e}  valid {est.valid}  '
              f'{est.reason}')
        assert est.valid, (name, est.reason)
        assert abs(err[0]) < 0.01, name
        np.linalg.cholesky(est.covariance)
    for name in ('gls', 'kalman', 'oem', 'gmle'):
        assert rel_err(results[name])[1] < 0.05, name
    etfe_b = np.array(results['etfe'].extras['b_bins'])
    lo, hi = results['eem'].extras['theta']
    print(f'ETFE per-bin b: {np.round(etfe_b, 1)} (spread {np.ptp(etfe_b):.3g} N s/m); '
          f'EEM b = {results["eem"].damping:.4g} +- {results["eem"].std("damping"):.3g} '
          f'(theta = {lo:.4g}, {hi:.4g})')


@pytest.mark.parametrize('fs', [100.0, 1000.0])
def test_kalman_q0_equals_rls_lambda1(fs):
    """Kalman (Q = 0, P0 = a I, R_v) and RLS (lambda = 1, P0 = a / R_v) are the same estimator: 1e-9."""
    a, r_v = 1e4, 0.3 ** 2
    kf = make('kalman', initial_covariance=a, measurement_noise=r_v, record=True)
    rls = RecursiveLeastSquares(forgetting=1.0, initial_covariance=a / r_v, record=True)
    data = s1(fs, noisy=True)
    for part in (data.slice(slice(0, 777)), data.slice(slice(777, None))):
        kf.update(part)
        rls.update(part)
    _, th_kf = kf.trajectory()
    _, th_rls = rls.trajectory()
    assert np.all(np.abs(th_kf[50:] - th_rls[50:]) <= 1e-9 * np.abs(th_rls[50:]))
    assert np.allclose(kf.estimate().values, rls.estimate().values, rtol=1e-9, atol=0)


def test_kalman_process_noise_tracks_a_stiffness_step():
    """S1 at 100 Hz (analytic xdot, sigma_F = 0.5 N) with k stepping 4800 -> 6000 N/m at 10 s. Q = 0 ends
    near the average (10 % low) and its mean normalised innovation squared says so (observed 156);
    Q_k = 1e4 (N/m)^2/s tracks within 2 % from 15 s on (observed 0.96 %, NIS 1.5)."""
    d = s1(100.0)
    k = np.where(d.t < 10.0, K, 6000.0)
    f = d.force + (k - K) * d.x + 0.5 * np.random.default_rng(SEED).standard_normal(len(d.t))
    data = ContactSamples.make(d.t, f, d.x, d.xd)
    fixed = run(make('kalman'), data)
    assert fixed.stiffness / 6000.0 - 1.0 < -0.05 and fixed.extras['nis'] > 10.0
    tracking = make('kalman', process_noise={'stiffness': 1e4}, record=True)
    tracking.update(data)
    t, theta = tracking.trajectory()
    assert np.all(np.abs(theta[t >= 15.0, 0] / 6000.0 - 1.0) < 0.02)
    assert tracking.estimate().extras['nis'] < 3.0
