"""Unit tests of contact_dynamics_common.trust (convergence, whiteness, NIS, omitted regressor, HAC)."""
import numpy as np
import pytest
from scipy.signal import lfilter

from contact_dynamics_common import trust

NAMES = ('stiffness', 'damping')


def _converging(n=400, truth=(4800.0, 200.0), sigma0=(50.0, 5.0), seed=0):
    """A least-squares-like path: theta_n = truth + noise of std sigma0/sqrt(n) (cumulative mean)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(n, 2)) * np.array(sigma0)
    k = np.arange(1, n + 1)[:, None]
    hist = np.array(truth) + np.cumsum(noise, axis=0) / k
    sig = np.array(sigma0) / np.sqrt(k)
    return hist, sig


def test_converged_path_is_ok():
    hist, sig = _converging()
    c = trust.convergence(NAMES, hist, sig, initial=(0.0, 0.0), prior_sigma=(1e4, 1e3))
    assert c.ok, c.reason
    assert c.reason == 'ok' and c.kind == 'convergence'


def test_stuck_at_initial_guess_without_prior_sigma():
    """The issue's IA case: damping never leaves 10 while its sigma is 75."""
    hist, sig = _converging()
    hist[:, 1] = 10.0 + np.linspace(0.0, 0.1, len(hist))
    sig[:, 1] = 75.0
    c = trust.convergence(NAMES, hist, sig, initial=(0.0, 10.0))
    assert not c.ok
    assert c.reason.startswith('not converged: damping still at its initial guess'), c.reason


def test_stuck_at_initial_guess_with_prior_sigma():
    hist, sig = _converging()
    hist[:, 1] = 10.0
    sig[:, 1] = 900.0          # barely below the prior 1000: no information
    c = trust.convergence(NAMES, hist, sig, initial=(0.0, 10.0), prior_sigma=(1e4, 1e3))
    assert not c.ok and 'damping still at its initial guess' in c.reason


def test_reference_disagreement_lags_or_stuck():
    hist, sig = _converging()
    hist[:, 1] = 10.0
    c = trust.convergence(NAMES, hist, initial=(0.0, 10.0), reference=(4800.0, 80.0), reference_sigma=(1.0, 0.5))
    assert not c.ok and c.reason.startswith('not converged: damping still at its initial guess'), c.reason
    hist[:, 1] = 60.0
    c = trust.convergence(NAMES, hist, initial=(0.0, 10.0), reference=(4800.0, 80.0), reference_sigma=(1.0, 0.5))
    assert not c.ok and c.reason.startswith('not converged: damping lags the data by -20'), c.reason
    hist[:, 1] = 80.2
    assert trust.convergence(NAMES, hist, initial=(0.0, 10.0), reference=(4800.0, 80.0),
                             reference_sigma=(1.0, 0.5)).ok


def test_oscillating_is_flagged():
    """Stiffness swinging +-8 % about the truth with a sigma of 0.1 %."""
    hist, sig = _converging()
    t = np.arange(len(hist)) / 100.0
    hist[:, 0] = 4800.0 * (1 + 0.08 * np.sin(2 * np.pi * 3.1 * t))
    sig[:, 0] = 4.8
    c = trust.convergence(NAMES, hist, sig, initial=(0.0, 0.0))
    assert not c.ok and c.reason.startswith('oscillating: stiffness'), c.reason
    assert c.details['stiffness']['crossings'] >= 4


def test_drift_is_flagged():
    hist, sig = _converging()
    hist[:, 0] += np.linspace(0.0, 300.0, len(hist))
    c = trust.convergence(NAMES, hist, sig, initial=(0.0, 0.0))
    assert not c.ok and c.reason.startswith('not settled: stiffness drifted'), c.reason


def test_unjudged_parameter_is_skipped_and_bad_shape_raises():
    hist, sig = _converging()
    hist[:, 1] = 10.0
    assert trust.convergence(NAMES, hist, sig, initial=(0.0, 10.0), check=(True, False)).ok
    with pytest.raises(ValueError):
        trust.convergence(NAMES, hist[:, :1], sig)
    assert not trust.convergence(NAMES, np.full((5, 2), np.nan)).ok


def test_stability_split_halves():
    assert trust.stability(NAMES, (100, 5), (1, 1), (101, 5.5), (1, 1)).ok
    c = trust.stability(NAMES, (100, 5), (1, 1), (110, 5), (1, 1))
    assert not c.ok and c.reason.startswith('not settled: stiffness differs')


def test_whiteness_white_and_correlated():
    rng = np.random.default_rng(3)
    e = rng.normal(size=4000)
    w = trust.whiteness(e)
    assert w.ok and abs(w.details['durbin_watson'] - 2) < 0.15 and w.p_value > 1e-3
    ar = lfilter([1.0], [1.0, -0.8], e)
    c = trust.whiteness(ar)
    assert not c.ok and c.reason.startswith('model mismatch suspected: residuals not white')
    assert c.details['durbin_watson'] < 0.6
    # long-run variance ratio of AR(1) 0.8 is (1 + 0.8) / (1 - 0.8) = 9; the Bartlett window underestimates it
    assert 3.0 < c.details['inflation'] < 10.0
    q, p = trust.ljung_box(e, 10)
    assert q > 0 and 0 < p <= 1
    assert trust.whiteness(e[:5]).ok      # too short to test


def test_ljung_box_size():
    """Under white noise the p-value is not systematically small (size of the test)."""
    rng = np.random.default_rng(4)
    ps = np.array([trust.ljung_box(rng.normal(size=500), 10)[1] for _ in range(200)])
    assert 0.02 <= np.mean(ps < 0.05) <= 0.10


def test_nis_band():
    rng = np.random.default_rng(5)
    v = rng.chisquare(2, size=3000)
    c = trust.nis_check(v, dof=2)
    assert c.ok and abs(c.details['mean'] - 2) < 0.15
    c = trust.nis_check(v * 4, dof=2)
    assert not c.ok and c.reason.startswith('model mismatch suspected: NIS')
    assert c.details['inflation'] == pytest.approx(4 * v.mean() / 2)
    low = trust.nis_check(v / 4, dof=2)
    assert low.ok and low.details['low']
    assert trust.nis_check(1.02, n=100000).ok          # within the tolerance although outside the chi^2 band
    assert not trust.nis_check(3.0, n=100).ok


def _kv_data(n=3000, m=0.0, seed=7, noise=0.5):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 1000.0
    w = 2 * np.pi * np.array([3.0, 11.0, 29.0])
    x = 1e-3 * (2 + np.sin(np.outer(t, w)).sum(axis=1))
    xd = 1e-3 * (np.cos(np.outer(t, w)) * w).sum(axis=1)
    xdd = -1e-3 * (np.sin(np.outer(t, w)) * w ** 2).sum(axis=1)
    y = 4800 * x + 200 * xd + m * xdd + rng.normal(0, noise, n)
    return np.column_stack((x, xd)), xdd, y


def test_omitted_mass_detected_and_not_when_absent():
    X, xdd, y = _kv_data(m=5.0)
    c = trust.omitted_regressor(X, y, xdd, ('mass',))
    assert not c.ok and c.reason.startswith('model mismatch suspected: omitted mass significant')
    assert c.details['gamma']['mass'] == pytest.approx(5.0, rel=0.05)
    false_alarms = 0
    for seed in range(20):
        X, xdd, y = _kv_data(m=0.0, seed=seed)
        false_alarms += not trust.omitted_regressor(X, y, xdd, ('mass',)).ok
        false_alarms += not trust.omitted_regressor(X, y, xdd, ('mass',), robust=False).ok
    assert false_alarms <= 1


def test_hac_covariance_matches_monte_carlo_under_correlated_noise():
    """Slope of y = a + c u + AR(1) noise: HAC sigma within 30 % of the Monte Carlo spread; OLS sigma far below."""
    rng = np.random.default_rng(8)
    n = 800
    u = np.sin(np.linspace(0, 6 * np.pi, n)) + np.linspace(-1, 1, n)
    X = np.column_stack((np.ones(n), u))
    est, hac, ols = [], [], []
    for _ in range(300):
        e = lfilter([1.0], [1.0, -0.7], rng.normal(size=n))
        y = 1.0 + 2.0 * u + e
        b, *_ = np.linalg.lstsq(X, y, rcond=None)
        r = y - X @ b
        est.append(b[1])
        hac.append(np.sqrt(trust.hac_covariance(X, r, lags=20)[1, 1]))
        ols.append(np.sqrt(r @ r / (n - 2) * np.linalg.inv(X.T @ X)[1, 1]))
    spread = np.std(est)
    assert np.median(hac) == pytest.approx(spread, rel=0.3)
    assert np.median(ols) < 0.6 * spread
    cov = trust.hac_covariance(X, y - X @ b)
    assert np.allclose(cov, cov.T) and np.all(np.linalg.eigvalsh(cov) > 0)
    assert trust.newey_west_lags(100) == 4
    assert trust.long_run_variance_ratio(rng.normal(size=2000)) == pytest.approx(1.0, abs=0.2)


def test_first_failure():
    bad = trust.Check(False, 'oscillating: x', 'convergence')
    assert trust.first_failure([trust.OK, None, bad, trust.Check(False, 'other')]) is bad
    assert trust.first_failure([trust.OK, None]) is None
    assert not bad and trust.OK


def test_degenerate_inputs_give_checks_not_exceptions():
    assert trust.whiteness(np.array([])).ok
    assert trust.whiteness(np.full(50, np.nan)).ok
    assert trust.whiteness(np.zeros(100)).ok                         # exact fit: nothing to test
    assert trust.nis_check(np.array([])).ok and trust.nis_check(np.array([np.nan])).ok
    c = trust.omitted_regressor(np.ones((3, 2)), np.ones(3), np.ones(3), ('mass',))
    assert c.ok and 'too few' in c.details['note']
    assert not trust.convergence(NAMES, np.zeros((0, 2))).ok
    assert trust.ljung_box(np.ones(3))[0] != trust.ljung_box(np.ones(3))[0]   # NaN: too short
    X = np.column_stack((np.ones(20), np.arange(20.0)))
    cov = trust.hac_covariance(X, np.zeros(20), lags='auto')
    assert np.all(np.isfinite(cov))
