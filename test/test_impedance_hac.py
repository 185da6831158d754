"""The online impedance fit's recursive Newey-West (HAC) sandwich (issue 14): the streaming sums evaluated at
the final estimate equal the batch Newey-West meat on the stored residuals, whatever the block split; and on
a bin whose residuals are correlated far beyond the kernel's own correlation (a slow model error) the online
sigma grows to cover the truth where the white-noise sigma did not."""
from __future__ import annotations

import numpy as np

from contact_estimation.impedance import cells as cl
from contact_estimation.impedance.recursive import HacScores, RecursiveSegmentedLS


def _newey_west_meat(g: np.ndarray, L: int) -> np.ndarray:
    """Written here from the textbook formula: S = sum_t g_t g_t^T + sum_l (1 - l/(L+1)) (G_l + G_l^T)."""
    S = g.T @ g
    for lag in range(1, L + 1):
        G = g[lag:].T @ g[:-lag]
        S += (1.0 - lag / (L + 1.0)) * (G + G.T)
    return S


def test_streaming_sums_equal_the_batch_newey_west_meat_for_any_split():
    rng = np.random.default_rng(3)
    n, L = 3000, 37
    z = np.zeros((n, cl.NZ))
    z[:, :3] = rng.normal(size=(n, 3))
    z[:, 3] = 1.0
    z[:, cl.COLUMN_R] = np.tanh(np.cumsum(rng.normal(size=n)) / 10)
    e = np.convolve(rng.normal(size=n + 50), np.ones(50) / 50, 'valid')[:n]     # correlated residuals
    theta, gamma = np.array([0.5, 2.0, -1.0, 0.3]), 0.7
    z[:, cl.COLUMN_F] = z[:, :4] @ theta + gamma * z[:, cl.COLUMN_R] + e
    blk = np.zeros(n, np.int64)
    g = z[:, :4] * e[:, None]
    reference = _newey_west_meat(g, L)
    for split in ([n], [7] * (n // 7) + [n % 7], list(rng.integers(1, 400, 40))):
        h = HacScores(1)
        h.lags = L
        i = 0
        for size in split:
            sl = slice(i, min(i + size, n))
            m = sl.stop - sl.start
            if m <= 0:
                break
            order, starts, counts = np.arange(m), np.array([0]), np.array([m])
            h.update(z[sl], blk[sl], order, starts, counts, np.ones(m), np.ones(1))
            i = sl.stop
        if i < n:                             # the random split's remainder
            m = n - i
            h.update(z[i:], blk[i:], np.arange(m), np.array([0]), np.array([m]), np.ones(m), np.ones(1))
        np.testing.assert_allclose(h.meat(0, theta, gamma), reference, rtol=1e-9,
                                   atol=1e-9 * np.abs(reference).max())


def _ar(rng, n, rho):
    e = rng.normal(size=n) * np.sqrt(1 - rho ** 2)
    out = np.empty(n)
    out[0] = rng.normal()
    for i in range(1, n):
        out[i] = rho * out[i - 1] + e[i]
    return out


def test_online_sigma_matches_the_spread_of_correlated_residuals():
    """Regressors and residuals both AR(1) with rho 0.95 (scores correlated over ~20 samples); the fit is
    told c = 5 samples per independent residual (so L = 20 lags). The scores' long-run variance is
    (1 + rho^2) / (1 - rho^2) = 19.5 times their variance: the own sigma (c sigma^2 A^-1) is sqrt(5 / 19.5)
    = 0.51 of the true spread; Bartlett weights up to L = 20 reach 11.5 of the 19.5, i.e. 0.77 of it (less in
    a finite record: Newey-West is biased low). Over 60 independent records: own sigma < 0.65 of the spread
    of the stiffness estimates, the sigma with the recursive sandwich 0.6-1.4 of it and >= 1.25 x the own."""
    rng = np.random.default_rng(8)
    n, trials = 2000, 60
    theta = np.array([0.5, 10.0, 1500.0, 2.0])
    est, sig = {False: [], True: []}, {False: [], True: []}
    for _ in range(trials):
        a = _ar(rng, n, 0.95)
        v = 0.05 * _ar(rng, n, 0.95)
        x = 0.002 * _ar(rng, n, 0.95)
        F = theta[0] * a + theta[1] * v + theta[2] * x + theta[3] + 0.05 * _ar(rng, n, 0.95)
        for hac in (False, True):
            r = RecursiveSegmentedLS([-0.1, 0.1], forgetting=1.0, v_min=0.0, n_min=50, hac=hac,
                                     correlation=5.0, cells=1)
            for i in range(0, n, 500):
                sl = slice(i, i + 500)
                keep = v[sl] > 0
                r.update(x[sl][keep], v[sl][keep], a[sl][keep], F[sl][keep])
            p = r.profile()
            est[hac].append(p.theta[0, 0, 2])
            sig[hac].append(np.sqrt(p.cov[0, 0, 2, 2]))
    spread = np.std(est[True])
    np.testing.assert_allclose(est[True], est[False], rtol=1e-12)
    own, sandwich = np.median(sig[False]) / spread, np.median(sig[True]) / spread
    assert own < 0.65, own
    assert 0.6 <= sandwich <= 1.4 and sandwich >= 1.25 * own, (sandwich, own)
