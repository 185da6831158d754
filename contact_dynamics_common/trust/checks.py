"""Trust checks shared by every estimator: convergence, residual whiteness, NIS, omitted regressors, HAC.

ROS-free numpy/scipy. Every check returns a :class:`Check` (``ok``, ``reason``, statistic, p-value,
details); :func:`first_failure` folds several into the verdict an estimate publishes. Parameter names
are passed in, so the same functions serve the contact estimators, the PKM UKF and the rover packages.

Also: :func:`instrumental_variables` (a consistent fit when the regressors are noisy), :func:`stability`
(split-window agreement for batch estimators), :func:`ljung_box`, :func:`durbin_watson`,
:func:`long_run_variance_ratio`, :func:`correlation_lags`.

Reasons are stable prefixes a user (and a test) can match:

* ``not converged: <name> still at its initial guess`` - the data have not moved it (no information).
* ``not converged: <name> lags the data by ...``    - it disagrees with a data-supported reference.
* ``not settled: <name> drifted by ...``              - the recent estimates still trend.
* ``oscillating: <name> swings ...``                  - sustained oscillation in the recent estimates.
* ``model mismatch suspected: ...``                   - residuals not white, NIS outside its chi^2 band,
  or an omitted regressor (e.g. a mass term) is significant.

Typical use in a least-squares estimator (X regressors (n, p), y measurements, theta its estimate)::

    from contact_dynamics_common import trust
    r = y - X @ theta
    white = trust.whiteness(r, dof=X.shape[1])
    cov = trust.hac_covariance(X, r) if not white.ok else sigma2 * inv(X.T @ X)
    mass = trust.omitted_regressor(X, y, xdd[:, None], ('mass',))
    conv = trust.convergence(('stiffness', 'damping'), history, sigma_history, initial=theta0)
    bad = trust.first_failure([conv, white, mass])      # None when every check passed

A Kalman filter / UKF passes its normalised innovations squared (e_k^T S_k^-1 e_k, m-dimensional
innovations) to :func:`nis_check`; its covariance can be made honest with ``Check.details['inflation']``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy import stats

__all__ = ['Check', 'OK', 'first_failure', 'convergence', 'autocorrelation', 'ljung_box', 'durbin_watson',
           'whiteness', 'nis_check', 'omitted_regressor', 'hac_covariance', 'newey_west_lags',
           'long_run_variance_ratio', 'stability', 'correlation_lags', 'instrumental_variables']

#: reason prefix of every model-adequacy failure
MISMATCH = 'model mismatch suspected'


@dataclass(frozen=True)
class Check:
    """Outcome of one trust check.

    ``ok`` is the verdict, ``reason`` ``'ok'`` or why not (see the module docstring for the prefixes),
    ``kind`` names the check ('convergence', 'whiteness', 'nis', 'omitted_regressor', 'stability'),
    ``statistic``/``p_value`` the test figures (NaN when not a test) and ``details`` anything else
    (e.g. ``inflation``: the factor a covariance should be multiplied by to be honest, >= 1).
    """

    ok: bool
    reason: str = 'ok'
    kind: str = ''
    statistic: float = float('nan')
    p_value: float = float('nan')
    details: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok


OK = Check(True)


def first_failure(checks: Iterable[Check | None]) -> Check | None:
    """The first failed check of ``checks`` (``None`` entries are skipped), or ``None`` if all passed."""
    for c in checks:
        if c is not None and not c.ok:
            return c
    return None


# ---------------------------------------------------------------------------------------------- convergence
def convergence(names: Sequence[str], history, sigma_history=None, *, initial=None, prior_sigma=None,
                reference=None, reference_sigma=None, tail: float = 0.3, min_tail: int = 8,
                shrink: float = 0.5, still: float = 0.1, lag: float = 3.0, lag_rel: float = 0.05,
                max_drift: float = 3.0, drift_t: float = 4.0, max_swing: float = 3.0, min_crossings: int = 4,
                rel_floor: float = 1e-3, check: Sequence[bool] | None = None) -> Check:
    """Has each parameter moved from its prior in a way the data support, and settled?

    ``history`` (N, p): successive estimates (oldest first; per sample or per report);
    ``sigma_history`` (N, p) or (p,): their standard deviations (the last row is the final sigma);
    ``initial`` (p,): the initial guess theta0; ``prior_sigma`` (p,): its standard deviation;
    ``reference``/``reference_sigma`` (p,): a data-supported estimate of the same data (e.g. batch least
    squares), for estimators whose own sigma is not a data covariance (gradient/adaptive laws);
    ``check`` (p,) bools: which parameters to judge (e.g. not an unidentifiable damping).

    Per parameter j, with theta = history[-1], s = the final sigma, s_tail = median sigma over the tail:

    1. information: with ``prior_sigma``: s <= shrink prior_sigma, else ``not converged: <name> still at
       its initial guess`` (when |theta - theta0| <= s) or ``... sigma has not shrunk below its prior``.
       Without it: max_t |theta_t - theta0| <= still s means the data never moved it: ``still at its
       initial guess``.
    2. reference: |theta - ref| > lag sqrt(s_ref^2) and > lag_rel |ref|: ``still at its initial guess`` if
       theta is closer to theta0 than to 10 % of that gap, otherwise ``lags the data by ...``.
    3. settled, over the last ``tail`` share of the history (>= ``min_tail`` points): a straight-line
       fit a + c t; drift = |c| T; swing = std of the detrended tail; se: the standard error of the drift
       from that scatter. With tol = max(s_tail, rel_floor |theta|): swing > max_swing tol with
       >= min_crossings crossings of the fit -> ``oscillating``; drift > max_drift tol and > drift_t se ->
       ``not settled: drifted`` (a trend that stands out of the estimates' own scatter: a stationary
       estimate's endpoints differ by a few sigma now and then); swing > max_swing tol -> ``not settled:
       wanders``.

    Returns the first failure (``kind='convergence'``; details hold per-parameter figures) or an ok Check.
    """
    names = tuple(names)
    p = len(names)
    h = np.asarray(history, dtype=np.float64)
    if h.ndim == 1:
        h = h[:, None]
    if h.ndim != 2 or h.shape[1] != p:
        raise ValueError(f'history must be (N, {p}) for parameters {names}, got shape {h.shape}')
    if sigma_history is None:
        sig = np.full(h.shape, np.nan)
    else:
        sig = np.asarray(sigma_history, dtype=np.float64)
        if sig.ndim == 1:
            sig = np.broadcast_to(sig[None, :], h.shape)
        if sig.shape != h.shape:
            raise ValueError(f'sigma_history must be (p,) or shaped like history {h.shape}, got {sig.shape}')
    keep = np.isfinite(h).all(axis=1)
    h, sig = h[keep], np.abs(sig[keep])
    if len(h) == 0:
        return Check(False, 'not converged: no finite estimate yet', 'convergence')
    prior_sigma = None if prior_sigma is None else np.asarray(prior_sigma, dtype=np.float64)
    theta = h[-1]
    s_final = sig[-1]
    judge = np.ones(p, dtype=bool) if check is None else np.asarray(check, dtype=bool)
    n_tail = max(min_tail, int(math.ceil(tail * len(h))))
    tail_h = h[-n_tail:] if len(h) >= min_tail else h[:0]
    tail_s = sig[len(h) - len(tail_h):]
    details: dict = {name: {'value': float(theta[j]), 'sigma': float(s_final[j])}
                     for j, name in enumerate(names) if judge[j]}
    th0s = None if initial is None else np.asarray(initial, dtype=np.float64)
    refs = None if reference is None else np.asarray(reference, dtype=np.float64)
    ref_s = np.zeros(p) if reference_sigma is None else np.asarray(reference_sigma, dtype=np.float64)
    fail = lambda reason: Check(False, reason, 'convergence', details=details)    # noqa: E731
    # 1. information: has the data moved each parameter at all? (all parameters before any other rule)
    for j, name in enumerate(names):
        if not judge[j]:
            continue
        s = float(s_final[j])
        d = details[name]
        th0 = None if th0s is None else float(th0s[j])
        if prior_sigma is not None and np.isfinite(prior_sigma[j]) and np.isfinite(s):
            d['shrink'] = s / float(prior_sigma[j]) if prior_sigma[j] > 0 else float('inf')
            if not s <= shrink * float(prior_sigma[j]):
                if th0 is not None and abs(theta[j] - th0) <= s:
                    return fail(f'not converged: {name} still at its initial guess {th0:.4g} '
                                f'(sigma {s:.3g} not below {shrink:g} of the prior {prior_sigma[j]:.3g})')
                return fail(f'not converged: {name} sigma {s:.3g} has not shrunk below {shrink:g} of '
                            f'its prior {prior_sigma[j]:.3g}')
        elif th0 is not None and np.isfinite(s) and s > 0 and refs is None:
            moved = float(np.max(np.abs(h[:, j] - th0)))
            d['moved'] = moved
            if moved <= still * s:
                return fail(f'not converged: {name} still at its initial guess ({theta[j]:.4g}, '
                            f'initial {th0:.4g}, sigma {s:.3g})')
        if refs is not None:
            gap = float(theta[j] - refs[j])
            d['lag'] = gap
            if th0 is not None and abs(gap) > lag * ref_s[j] and abs(gap) > lag_rel * abs(refs[j]) \
                    and abs(theta[j] - th0) <= 0.1 * abs(gap):
                return fail(f'not converged: {name} still at its initial guess {th0:.4g} '
                            f'(the data say {refs[j]:.4g} +- {ref_s[j]:.3g})')
    # 2. agreement with a data-supported reference
    if refs is not None:
        for j, name in enumerate(names):
            gap = float(theta[j] - refs[j])
            if judge[j] and abs(gap) > lag * ref_s[j] and abs(gap) > lag_rel * abs(refs[j]):
                return fail(f'not converged: {name} lags the data by {gap:.4g} ({theta[j]:.4g} vs '
                            f'{refs[j]:.4g} +- {ref_s[j]:.3g})')
    # 3. settled
    for j, name in enumerate(names):
        if not judge[j] or len(tail_h) < min_tail:
            continue
        d = details[name]
        s = float(s_final[j])
        y = tail_h[:, j]
        st = tail_s[:, j]
        st = st[np.isfinite(st)]
        s_tail = float(np.median(st)) if len(st) else (s if np.isfinite(s) else 0.0)
        tol = max(s_tail, rel_floor * abs(float(theta[j])), 1e-300)
        u = np.linspace(-0.5, 0.5, len(y))              # straight-line fit, closed form (u centred)
        c = float(u @ (y - y.mean()) / (u @ u))
        det = y - y.mean() - c * u
        swing = float(np.std(det))
        drift = abs(float(c))
        # standard error of that change from the scatter about the line: a trend must stand out of it
        se = swing * math.sqrt(len(y) / max(len(y) - 2, 1) / float(u @ u))
        sgn = np.sign(det[det != 0])
        crossings = int(np.count_nonzero(sgn[1:] != sgn[:-1]))
        d.update(drift=drift, swing=swing, crossings=crossings, tolerance=tol)
        rel = abs(float(theta[j])) or 1.0
        if swing > max_swing * tol and crossings >= min_crossings:
            return fail(f'oscillating: {name} swings +-{swing / rel:.1%} ({swing / tol:.1f} sigma) about '
                        f'its trend, {crossings} crossings in the recent estimates')
        if drift > max_drift * tol and drift > drift_t * se:
            return fail(f'not settled: {name} drifted by {drift:.4g} ({drift / tol:.1f} sigma) over '
                        'the recent estimates')
        if swing > max_swing * tol:
            return fail(f'not settled: {name} wanders by +-{swing:.4g} ({swing / tol:.1f} sigma) in '
                        'the recent estimates')
    return Check(True, 'ok', 'convergence', details=details)


def stability(names: Sequence[str], values_a, sigma_a, values_b, sigma_b, *, z: float = 3.0,
              rel_floor: float = 1e-3) -> Check:
    """Split-sample check for batch estimators: do the estimates of two halves of a window agree?

    |a_j - b_j| <= z sqrt(sa_j^2 + sb_j^2) (or <= rel_floor |mean|) for every parameter; otherwise
    ``not settled: <name> differs between the window's halves``.
    """
    a, b = np.asarray(values_a, float), np.asarray(values_b, float)
    sa, sb = np.asarray(sigma_a, float), np.asarray(sigma_b, float)
    for j, name in enumerate(names):
        gap = abs(a[j] - b[j])
        tol = max(z * math.hypot(sa[j], sb[j]), rel_floor * abs(0.5 * (a[j] + b[j])))
        if not gap <= tol:
            return Check(False, f'not settled: {name} differs between the window halves ({a[j]:.4g} vs '
                                f'{b[j]:.4g}, {gap / max(math.hypot(sa[j], sb[j]), 1e-300):.1f} sigma)',
                         'stability', statistic=gap)
    return Check(True, 'ok', 'stability')


# ----------------------------------------------------------------------------------------------- whiteness
def autocorrelation(x, max_lag: int) -> np.ndarray:
    """Sample autocorrelation r_1..r_L of x about its mean (biased estimator, FFT), shape (L,)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    max_lag = int(min(max_lag, n - 1))
    if max_lag < 1:
        return np.zeros(0)
    last = _ACF_MEMO[0]
    if last is not None and len(last[0]) == n and np.array_equal(last[0], x):
        rho = last[1]            # the same series again (the tests of one residual): every lag is known
    else:
        xc = x - x.mean()
        size = 1 << int(math.ceil(math.log2(2 * n)))
        f = np.fft.rfft(xc, size)
        acov = np.fft.irfft(f * np.conj(f), size)[:n]
        rho = acov[1:] / acov[0] if acov[0] > 0 else None
        _ACF_MEMO[0] = (x.copy(), rho)
    if rho is None:
        return np.zeros(max_lag)
    return rho[:max_lag].copy()


#: the last series autocorrelation() saw and all its lags: whiteness, Ljung-Box, the long-run variance and
#: the HAC lag rule ask for the same residuals' autocorrelation at different lags
_ACF_MEMO: list = [None]


def ljung_box(residuals, lags: int | None = None, dof: int = 0) -> tuple[float, float]:
    """Ljung-Box portmanteau statistic Q = n (n + 2) sum_{l=1..L} r_l^2 / (n - l) and its p-value
    (chi^2 with L - dof degrees of freedom). L defaults to min(20, n // 5)."""
    r = np.asarray(residuals, dtype=np.float64)
    n = len(r)
    L = int(lags if lags is not None else min(20, n // 5))
    if n < 4 or L < 1:
        return float('nan'), float('nan')
    rho = autocorrelation(r, L)
    L = len(rho)
    q = float(n * (n + 2) * np.sum(rho ** 2 / (n - np.arange(1, L + 1))))
    return q, float(stats.chi2.sf(q, max(L - dof, 1)))


def durbin_watson(residuals) -> float:
    """d = sum (e_t - e_{t-1})^2 / sum e_t^2 (~2 for white residuals, ~2 (1 - r_1))."""
    r = np.asarray(residuals, dtype=np.float64)
    den = float(r @ r)
    return float(np.sum(np.diff(r) ** 2) / den) if den > 0 else float('nan')


def long_run_variance_ratio(residuals, lags: int | None = None) -> float:
    """Bartlett-weighted long-run variance over the variance, 1 + 2 sum_l (1 - l/(L+1)) r_l (>= 1/L..).

    The factor by which correlated residuals inflate the variance of a mean (and, roughly, of a
    least-squares estimate whose regressors vary slowly); clamped below at 1 when used as an inflation.
    """
    r = np.asarray(residuals, dtype=np.float64)
    L = newey_west_lags(len(r)) if lags is None else int(lags)
    rho = autocorrelation(r, L)
    w = 1.0 - np.arange(1, len(rho) + 1) / (len(rho) + 1.0)
    return float(1.0 + 2.0 * np.sum(w * rho))


def whiteness(residuals, *, dof: int = 0, lags: int | None = None, alpha: float = 1e-3,
              min_effect: float = 1.5) -> Check:
    """Are the residuals white? Ljung-Box (p-value), Durbin-Watson and the long-run variance ratio.

    Fails (``model mismatch suspected: residuals not white ...``) when the Ljung-Box p-value < ``alpha``
    and the long-run variance ratio of the residuals exceeds ``min_effect`` (an effect size: on long
    records Ljung-Box rejects correlations too small to matter). ``details['inflation']`` is
    max(1, variance ratio): the factor a white-noise covariance understates the truth by.
    """
    r = np.asarray(residuals, dtype=np.float64)
    r = r[np.isfinite(r)]
    if len(r) < 8:
        return Check(True, 'ok', 'whiteness', details={'inflation': 1.0, 'note': 'too few residuals to test'})
    q, p = ljung_box(r, lags, dof)
    dw = durbin_watson(r)
    ratio = long_run_variance_ratio(r)
    details = {'durbin_watson': dw, 'variance_ratio': ratio, 'inflation': max(1.0, ratio),
               'lag1': float(autocorrelation(r, 1)[0]) if len(r) > 1 else 0.0}
    if p < alpha and ratio > min_effect:
        return Check(False, f'{MISMATCH}: residuals not white (Ljung-Box p={p:.2g}, Durbin-Watson {dw:.2f}, '
                            f'variance ratio {ratio:.2f})', 'whiteness', q, p, details)
    return Check(True, 'ok', 'whiteness', q, p, details)


# ---------------------------------------------------------------------------------------------------- NIS
def nis_check(nis, *, dof: int = 1, n: int | None = None, alpha: float = 0.01, tolerance: float = 1.5) -> Check:
    """Normalised innovations squared against their chi^2 band.

    ``nis``: either the per-step values e_k^T S_k^-1 e_k (array) or, with ``n``, their mean over n steps.
    Under a correct model n mean(NIS) ~ chi^2(n dof); the mean must lie inside
    [chi2.ppf(alpha/2, n dof) / (n dof), chi2.ppf(1 - alpha/2, n dof) / (n dof)] scaled by dof, widened by
    ``tolerance`` (the band shrinks as 1/sqrt(n); a few-percent misstated noise is not a model error).
    Too large -> ``model mismatch suspected: NIS ... above its chi^2 band`` (the filter is overconfident);
    ``details['inflation']`` = max(1, mean NIS / dof) makes its covariance honest. Too small only means a
    pessimistic noise setting: reported in details, not a failure.
    """
    if n is None:
        v = np.asarray(nis, dtype=np.float64)
        v = v[np.isfinite(v)]
        n = len(v)
        mean = float(v.mean()) if n else float('nan')
    else:
        mean = float(nis)
        n = int(n)
    if n < 1 or not math.isfinite(mean):
        return Check(True, 'ok', 'nis', details={'inflation': 1.0, 'note': 'no innovations'})
    k = n * dof
    lo = stats.chi2.ppf(alpha / 2, k) / n
    hi = stats.chi2.ppf(1 - alpha / 2, k) / n
    hi_t = max(hi, dof * tolerance)
    lo_t = min(lo, dof / tolerance)
    p = float(2 * min(stats.chi2.sf(mean * n, k), stats.chi2.cdf(mean * n, k)))
    details = {'mean': mean, 'band': (float(lo), float(hi)), 'inflation': max(1.0, mean / dof),
               'low': bool(mean < lo_t)}
    if mean > hi_t:
        return Check(False, f'{MISMATCH}: NIS {mean:.3g} above its chi^2 band [{lo:.3g}, {hi:.3g}] '
                            f'({n} innovations, dof {dof})', 'nis', mean, p, details)
    return Check(True, 'ok', 'nis', mean, p, details)


# ----------------------------------------------------------------------------------------- omitted regressor
def omitted_regressor(X, y, Z, names: Sequence[str], *, alpha: float = 1e-3, robust: bool = True,
                      lags: int | str | None = 'auto', min_share: float = 1e-6) -> Check:
    """Is a regressor the model leaves out significant? (e.g. a mass term xddot under Kelvin-Voigt)

    Augmented least squares y = X beta + Z gamma + e. Test of gamma = 0: with ``robust`` a Wald test
    W = gamma^T V_gamma^-1 gamma ~ chi^2(q) with the Newey-West covariance V (valid under correlated
    residuals), else the classical F test ((RSS_r - RSS_u) / q) / (RSS_u / (n - p - q)). Fails
    (``model mismatch suspected: <names> significant ...``) when p < ``alpha`` and the omitted terms carry
    more than ``min_share`` of rms(y) (rms(Z gamma) / rms(y): an effect size for long records).
    ``details``: gamma, its sigma, the share; ``shift`` = beta_X - beta (how far leaving Z out moves the
    model's parameters) and ``covariance_augmented`` (that of beta): an honest covariance of the
    reduced fit is covariance_augmented + shift shift^T.
    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if Z.ndim == 1:
        Z = Z[:, None]
    names = tuple(names)
    n, p = X.shape
    q = Z.shape[1]
    if n <= p + q + 2:
        return Check(True, 'ok', 'omitted_regressor', details={'note': 'too few samples to test'})
    A = np.hstack([X, Z])
    scale = np.sqrt(np.maximum((A * A).mean(axis=0), 1e-300))
    As = A / scale
    beta_s, *_ = np.linalg.lstsq(As, y, rcond=None)
    e_u = y - As @ beta_s
    beta = beta_s / scale
    gamma = beta[p:]
    if robust:
        cov_s = hac_covariance(As, e_u, lags=lags)
    else:
        cov_s = float(e_u @ e_u) / (n - p - q) * np.linalg.pinv(As.T @ As)
    Vg = cov_s[p:, p:] / np.outer(scale[p:], scale[p:])
    sg = np.sqrt(np.maximum(np.diagonal(Vg), 0.0))
    bx, *_ = np.linalg.lstsq(X, y, rcond=None)
    if robust:
        stat = float(gamma @ np.linalg.pinv(Vg) @ gamma)
        pval = float(stats.chi2.sf(stat, q))
    else:
        rss_r = float(np.sum((y - X @ bx) ** 2))
        rss_u = float(e_u @ e_u)
        stat = ((rss_r - rss_u) / q) / max(rss_u / (n - p - q), 1e-300)
        pval = float(stats.f.sf(stat, q, n - p - q))
    yr = math.sqrt(float(np.mean(y * y))) or 1.0
    share = math.sqrt(float(np.mean((Z @ gamma) ** 2))) / yr
    details = {'gamma': dict(zip(names, gamma.tolist())), 'sigma': dict(zip(names, sg.tolist())), 'share': share,
               # how far the model's own parameters move when the omitted terms are included, and the
               # covariance of the augmented fit's parameters (for an honest covariance of a biased fit)
               'shift': (bx - beta[:p]).tolist(), 'augmented': beta[:p].tolist(),
               'covariance_augmented': (cov_s[:p, :p] / np.outer(scale[:p], scale[:p])).tolist()}
    if pval < alpha and share > min_share:
        terms = ', '.join(f'{nm} = {g:.4g} +- {s:.2g}' for nm, g, s in zip(names, gamma, sg))
        return Check(False, f'{MISMATCH}: omitted {"/".join(names)} significant ({terms}, p={pval:.2g}, '
                            f'{share:.1%} of the signal)', 'omitted_regressor', stat, pval, details)
    return Check(True, 'ok', 'omitted_regressor', stat, pval, details)


# -------------------------------------------------------------------------------------------------- HAC
def newey_west_lags(n: int) -> int:
    """Newey-West (1994) automatic lag truncation floor(4 (n / 100)^(2/9))."""
    return int(math.floor(4.0 * (max(n, 1) / 100.0) ** (2.0 / 9.0)))


def correlation_lags(residuals, *, threshold: float = 0.1, cap: int = 1000) -> int:
    """HAC truncation from the residuals themselves: the first lag at which their autocorrelation falls
    below ``threshold``, doubled (Bartlett weights halve the mid-span), at least the Newey-West rule and
    at most min(cap, n // 4). For model errors correlated over long spans (a periodic unmodelled term)
    where the rule-of-thumb lag is far too short."""
    r = np.asarray(residuals, dtype=np.float64)
    n = len(r)
    hi = int(max(1, min(cap, n // 4)))
    base = min(newey_west_lags(n), hi)
    rho = autocorrelation(r, hi)
    below = np.flatnonzero(rho < threshold)
    first = int(below[0]) + 1 if len(below) else hi
    return int(min(max(base, 2 * first), hi))


def hac_covariance(X, residuals, *, lags: int | str | None = None, weights=None) -> np.ndarray:
    """Newey-West heteroskedasticity and autocorrelation consistent covariance of least squares.

        cov = (X^T W X)^-1 S (X^T W X)^-1,  S = sum_{|l| <= L} (1 - |l| / (L + 1)) sum_t g_t g_{t-l}^T,
        g_t = w_t x_t e_t

    ``X`` (n, p) regressors, ``residuals`` e (n,), optional per-sample ``weights`` w (weighted LS).
    ``lags`` L defaults to :func:`newey_west_lags`; ``'auto'`` uses :func:`correlation_lags` (residuals
    correlated over longer spans, e.g. a periodic model error). Returned symmetric; units those of theta^2.
    """
    X = np.asarray(X, dtype=np.float64)
    e = np.asarray(residuals, dtype=np.float64)
    n, p = X.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if lags == 'auto':
        L = correlation_lags(e)
    else:
        L = newey_west_lags(n) if lags is None else int(max(lags, 0))
    L = min(L, n - 1)
    g = X * (w * e)[:, None]
    S = g.T @ g
    for lag in range(1, L + 1):
        G = g[lag:].T @ g[:-lag]
        S += (1.0 - lag / (L + 1.0)) * (G + G.T)
    bread = np.linalg.pinv((X * w[:, None]).T @ X)
    cov = bread @ S @ bread
    return 0.5 * (cov + cov.T)


def instrumental_variables(X, y, Z, *, lags: int | str | None = 'auto') -> tuple[np.ndarray, np.ndarray]:
    """Just-identified instrumental-variables estimate and its HAC covariance (errors in the regressors).

        theta = (Z^T X)^-1 Z^T y,   cov = (Z^T X)^-1 S (X^T Z)^-1,   S = Newey-West sum of g_t = z_t e_t

    When the regressors X carry measurement noise that also enters the residual (errors in variables:
    least squares is then biased towards zero), instruments Z (n, p) correlated with the true regressors
    but not with that noise (e.g. the same signals taken a few samples away, beyond the noise's correlation
    length) give a consistent estimate. Returns (theta (p,), cov (p, p)); raises LinAlgError if Z^T X is
    singular.
    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sx = np.sqrt(np.maximum((X * X).mean(axis=0), 1e-300))
    sz = np.sqrt(np.maximum((Z * Z).mean(axis=0), 1e-300))
    Xs, Zs = X / sx, Z / sz
    A = Zs.T @ Xs
    theta_s = np.linalg.solve(A, Zs.T @ y)
    e = y - Xs @ theta_s
    n = len(y)
    L = correlation_lags(e) if lags == 'auto' else (newey_west_lags(n) if lags is None else int(lags))
    L = min(L, n - 1)
    g = Zs * e[:, None]
    S = g.T @ g
    for lag in range(1, L + 1):
        G = g[lag:].T @ g[:-lag]
        S += (1.0 - lag / (L + 1.0)) * (G + G.T)
    Ainv = np.linalg.inv(A)
    cov = Ainv @ S @ Ainv.T / np.outer(sx, sx)
    return theta_s / sx, 0.5 * (cov + cov.T)
