"""RLS and GLS against ground truth and against the textbook recursion (Agar 2004 eqs. 2.3-2.5)."""
import numpy as np
import pytest

from contact_estimation.single_point.gls import GlobalLeastSquares, SlidingWindowGLS
from contact_estimation.single_point.models import KELVIN_VOIGT, KELVIN_VOIGT_MASS
from contact_estimation.single_point.rls import RecursiveLeastSquares
from contact_estimation.single_point.samples import ContactSamples

K, B, M = 4800.0, 200.0, 2.0


def s1(rate=1000.0, duration=20.0, mass=0.0, noise=False, seed=0):
    t = np.arange(0, duration, 1 / rate)
    w = 2 * np.pi * np.array([0.5, 1, 2, 5])[:, None]
    x = 0.01 + 0.002 * np.sin(w * t).sum(0)
    xd = 0.002 * (w * np.cos(w * t)).sum(0)
    xdd = -0.002 * (w * w * np.sin(w * t)).sum(0)
    f = K * x + B * xd + mass * xdd
    if noise:
        f = f + np.random.default_rng(seed).normal(0, 0.5, len(t))
    return ContactSamples.make(t, f, x, xd, xdd)


@pytest.mark.parametrize('rate', [100.0, 1000.0])
def test_noise_free_kelvin_voigt_is_recovered(rate):
    data = s1(rate)
    gls = GlobalLeastSquares().fit(data)
    assert gls.valid and gls.reason == 'ok'
    np.testing.assert_allclose(gls.values, [K, B], rtol=1e-9)
    rls = RecursiveLeastSquares(forgetting=0.98, initial={'stiffness': 1e6, 'damping': 50})
    rls.update(data)
    np.testing.assert_allclose(rls.estimate().values, [K, B], rtol=1e-6)


def test_rls_estimates_the_environment_mass():
    data = s1(1000.0, mass=M)
    rls = RecursiveLeastSquares(KELVIN_VOIGT_MASS, forgetting=0.999)
    rls.update(data)
    est = rls.estimate()
    np.testing.assert_allclose(est.values, [K, B, M], rtol=1e-5)
    assert est.model == 'kelvin_voigt_mass' and est.names == ('stiffness', 'damping', 'mass')


def test_rls_equals_the_textbook_covariance_recursion():
    """Eqs. 2.3-2.5 with lambda < 1, on scaled regressors, sample by sample (no covariance floor)."""
    data = s1(200.0, duration=5.0, noise=True)
    lam, p0 = 0.98, 1e5
    rls = RecursiveLeastSquares(forgetting=lam, initial_covariance=p0, max_covariance=1e300,
                                initial={'stiffness': 1000.0, 'damping': 10.0})
    rls.update(data)
    scales = KELVIN_VOIGT.scales()
    theta = np.array([1000.0, 10.0]) * scales
    P = np.eye(2) * p0
    for f, x, xd in zip(data.force, data.x, data.xd):
        phi = np.array([x, xd]) / scales
        gain = P @ phi / (lam + phi @ P @ phi)
        theta = theta + gain * (f - phi @ theta)
        P = (P - np.outer(P @ phi, phi @ P) / (lam + phi @ P @ phi)) / lam
    np.testing.assert_allclose(rls.estimate().values, theta / scales, rtol=1e-8)


def test_rls_batching_does_not_change_the_result():
    data = s1(1000.0, duration=3.0, noise=True)
    whole = RecursiveLeastSquares(forgetting=0.995)
    whole.update(data)
    pieces = RecursiveLeastSquares(forgetting=0.995)
    for a in range(0, len(data), 97):
        pieces.update(data.slice(slice(a, a + 97)))
    np.testing.assert_allclose(pieces.estimate().values, whole.estimate().values, rtol=1e-12)
    np.testing.assert_allclose(pieces.estimate().covariance, whole.estimate().covariance, rtol=1e-9)


def test_rls_does_not_wind_up_without_excitation():
    """padasip #5: lambda < 1 and a zero regressor blow P up to 1e35, then NaN. Here P stays bounded."""
    rls = RecursiveLeastSquares(forgetting=0.95, max_covariance=1e6)
    rls.update(s1(1000.0, duration=2.0))
    t = np.arange(20000) * 1e-3 + 2.0
    zeros = np.zeros_like(t)
    rls.update(ContactSamples.make(t, zeros, zeros, zeros))
    est = rls.estimate()
    assert np.all(np.isfinite(est.values)) and np.all(np.isfinite(est.covariance))
    assert np.max(np.linalg.eigvalsh(rls._R)) < 1e7 and np.min(np.linalg.eigvalsh(rls._R)) >= 1e-6 * 0.99
    assert not est.valid and 'not excited' in est.reason
    np.linalg.cholesky(est.covariance)


def test_noisy_estimates_have_honest_covariance():
    """Over 40 seeds the GLS errors are consistent with the reported standard deviations."""
    z = []
    for seed in range(40):
        est = GlobalLeastSquares().fit(s1(200.0, duration=10.0, noise=True, seed=seed))
        z.append((est.values - [K, B]) / np.sqrt(np.diag(est.covariance)))
    z = np.array(z)
    assert np.all(np.abs(z.mean(0)) < 0.5) and np.all(np.abs(z.std(0) - 1) < 0.3)


def test_quasi_static_data_reports_damping_not_identifiable():
    t = np.arange(0, 5, 1e-3)
    x = np.full_like(t, 1.2e-4)
    est = GlobalLeastSquares().fit(ContactSamples.make(t, 2.0e6 * x, x, np.zeros_like(t)))
    assert est.valid and est.stiffness == pytest.approx(2.0e6, rel=1e-9)
    assert not est.is_identifiable('damping') and 'damping not identifiable' in est.reason


def test_bounded_gls_projects_damping_and_flags_it():
    data = s1(500.0, duration=4.0)
    data = ContactSamples.make(data.t, K * data.x - 50.0 * data.xd, data.x, data.xd)   # negative b
    est = GlobalLeastSquares(bounds={'damping': (0.0, np.inf)}).fit(data)
    assert est.damping == 0.0 and est.bounds_active == (False, True)


def test_sliding_window_gls_equals_batch_gls_on_the_window():
    data = s1(500.0, duration=12.0, noise=True)
    win = SlidingWindowGLS(window_s=5.0)
    for a in range(0, len(data), 123):
        win.update(data.slice(slice(a, a + 123)))
    inside = data.t > data.t[-1] - 5.0
    ref = GlobalLeastSquares().fit(data.slice(inside))
    assert win.estimate().samples_used == ref.samples_used
    np.testing.assert_allclose(win.estimate().values, ref.values, rtol=1e-9)
    np.testing.assert_allclose(win.estimate().covariance, ref.covariance, rtol=1e-6)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match='forgetting'):
        RecursiveLeastSquares(forgetting=-0.5)
    with pytest.raises(ValueError, match='window'):
        SlidingWindowGLS(window_s=0.0)
    with pytest.raises(ValueError, match='equal length'):
        ContactSamples.make([0, 1], [1.0], [1.0, 2.0], [0.0, 0.0])
