"""Facility and payload characterisation tools (Agar 2004 ch. 3; spec §1.2-1.4, §1.6, §2.11, §6.3).

Series springs (eqs. 3.4-3.5) with error propagation, the facility line fit (§2.11a), the power law
F = k_nl d^n (eq. 3.1) with the Instron pipeline (§2.11b), its secant/tangent linearisation (§1.3), the
hardware error bound (§2.11e), Hertz sphere-on-flat (eqs. 3.2-3.3) and the two-stage Hunt-Crossley hook.
Units SI: F (N), d/x (m), k (N/m or N/m^n). Unusable data give a result with ok=False and a reason;
invalid arguments raise ValueError.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

#: Instron bias cut-off load (N): mean of five no-specimen compliance tests (§2.11b).
INSTRON_CUTOFF = 48.5
#: Half-sphere radius (m) and (Young's modulus [Pa], Poisson ratio) of the §1.4 materials.
HERTZ_RADIUS = 0.0287
MATERIALS = {'steel': (200e9, 0.29), 'al6061': (70e9, 0.33), 'acetal': (2.75e9, 0.30)}


def _arr(*a) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float64) for v in a]


def _positive(name: str, v: np.ndarray, allow_inf: bool = False) -> None:
    if np.any(~(v > 0)) or (not allow_inf and np.any(np.isinf(v))):
        raise ValueError(f'{name} must be > 0{"" if allow_inf else " and finite"}, got {v}')


# ------------------------------------------------------------------------------------------ series springs
def series_stiffness(*k: float | np.ndarray) -> float | np.ndarray:
    """Springs in series: 1/k = sum_i 1/k_i (N/m); an infinite k_i is rigid."""
    if not k:
        raise ValueError('series_stiffness needs at least one stiffness')
    ks = _arr(*k)
    for v in ks:
        _positive('stiffness', v, allow_inf=True)
    out = 1.0 / sum(1.0 / v for v in ks)
    return float(out) if np.ndim(out) == 0 else out


def payload_from_system(k_system: float | np.ndarray, k_facility: float | np.ndarray) -> float | np.ndarray:
    """Eq. 3.4: k_calc = (1/k_sys - 1/k_facility)^-1 (N/m).

    NaN where the payload is not resolvable: k_sys >= k_facility, or k_sys not a positive number (e.g.
    a failed estimate), so a table of per-level results never raises.
    """
    ks, kf = _arr(k_system, k_facility)
    _positive('k_facility', kf, allow_inf=True)
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = np.where(ks > 0, 1.0 / ks, np.nan) - 1.0 / kf
        out = np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def percent_error(k_true: float | np.ndarray, k_estimate: float | np.ndarray) -> float | np.ndarray:
    """Eq. 3.5 as tabulated: |k_true - k_estimate| / k_true * 100 (%)."""
    kt, ke = _arr(k_true, k_estimate)
    _positive('k_true', kt)
    out = np.abs(kt - ke) / kt * 100.0
    return float(out) if out.ndim == 0 else out


def payload_relative_error(k_payload: float, k_facility: float, rel_err_system: float,
                           rel_err_facility: float = 0.0) -> float:
    """First-order error of the subtraction (spec §6.3), signed:

    dk_c/k_c = (1 + k_c/k_f) dk_sys/k_sys - (k_c/k_f) dk_f/k_f
    """
    r = k_payload / k_facility
    return float((1.0 + r) * rel_err_system - r * rel_err_facility)


def payload_relative_std(k_payload: float, k_facility: float, rel_std_system: float,
                         rel_std_facility: float = 0.0) -> float:
    """First-order relative std of k_c for independent random errors: sqrt(((1+r) s_sys)^2 + (r s_f)^2)."""
    r = k_payload / k_facility
    return float(np.hypot((1.0 + r) * rel_std_system, r * rel_std_facility))


@dataclass(frozen=True)
class MonteCarloPayload:
    """Monte Carlo distribution of k_calc; statistics over resolvable draws (k_sys < k_facility) only."""

    mean: float
    std: float
    median: float
    interval_95: tuple[float, float]
    unresolved_fraction: float
    draws: int

    @property
    def rel_std(self) -> float:
        return self.std / self.median if self.median > 0 else float('nan')


def payload_from_system_mc(k_system: float, k_facility: float, rel_std_system: float,
                           rel_std_facility: float = 0.0, *, draws: int = 100_000,
                           seed: int = 0) -> MonteCarloPayload:
    """Eq. 3.4 under Gaussian relative errors of k_sys and k_facility (the nonlinear counterpart of
    :func:`payload_relative_std`; it shows the skew and the draws where the subtraction breaks down)."""
    if draws < 2 or rel_std_system < 0 or rel_std_facility < 0:
        raise ValueError('need draws >= 2 and non-negative relative standard deviations')
    rng = np.random.default_rng(seed)
    ks = k_system * (1.0 + rel_std_system * rng.standard_normal(draws))
    kf = k_facility * (1.0 + rel_std_facility * rng.standard_normal(draws))
    ok = (ks > 0) & (kf > ks)
    kc = 1.0 / (1.0 / ks[ok] - 1.0 / kf[ok])
    if kc.size < 2:
        nan = float('nan')
        return MonteCarloPayload(nan, nan, nan, (nan, nan), 1.0, draws)
    lo, med, hi = np.percentile(kc, [2.5, 50.0, 97.5])
    return MonteCarloPayload(float(kc.mean()), float(kc.std(ddof=1)), float(med), (float(lo), float(hi)),
                             float(1.0 - ok.mean()), draws)


# ------------------------------------------------------------------------------------------ facility line fit
@dataclass(frozen=True)
class LineFit:
    """F = slope x + intercept. rmse = sqrt(SSE / (N - 2)) (MATLAB cftool convention, as in §2.11a)."""

    ok: bool
    reason: str
    slope: float
    intercept: float
    r_squared: float
    rmse: float
    slope_std: float
    points: int


def line_fit(x: np.ndarray, force: np.ndarray) -> LineFit:
    """Facility stiffness by a load-position line fit with intercept (§2.11a); slope = k (N/m).

    Pass x as a deformation (positive into the contact, e.g. -z when driving along -z); the intercept
    absorbs the unknown datum, so the slope is a tangent-like stiffness (§1.3).
    """
    x, f = _arr(x, force)
    if x.shape != f.shape or x.ndim != 1:
        raise ValueError(f'x and force must be 1-D arrays of equal length, got {x.shape}, {f.shape}')
    keep = np.isfinite(x) & np.isfinite(f)
    x, f = x[keep], f[keep]
    n = len(x)
    nan = float('nan')
    if n < 3:
        return LineFit(False, f'too few finite points ({n})', nan, nan, nan, nan, nan, n)
    xm = x - x.mean()
    sxx = float(xm @ xm)
    if sxx <= 0:
        return LineFit(False, 'no spread in position', nan, nan, nan, nan, nan, n)
    slope = float(xm @ (f - f.mean())) / sxx
    intercept = float(f.mean() - slope * x.mean())
    sse = float(((f - slope * x - intercept) ** 2).sum())
    sst = float(((f - f.mean()) ** 2).sum())
    s2 = sse / (n - 2)
    return LineFit(True, 'ok', slope, intercept, 1.0 - sse / sst if sst > 0 else 1.0, float(np.sqrt(s2)),
                   float(np.sqrt(s2 / sxx)), n)


# ------------------------------------------------------------------------------------------ power law
@dataclass(frozen=True)
class PowerLawFit:
    """F = k d^n fit. ``covariance`` is for (k, n); ``residual_rms`` the unweighted force residual (N);
    ``origin`` the (d, F) subtracted by the shift; ``log_start`` the log-log (k, n) starting point."""

    ok: bool
    reason: str
    k: float
    n: float
    covariance: np.ndarray = field(default_factory=lambda: np.full((2, 2), np.nan))
    residual_rms: float = float('nan')
    points: int = 0
    origin: tuple[float, float] = (0.0, 0.0)
    log_start: tuple[float, float] = (float('nan'), float('nan'))

    @property
    def k_std(self) -> float:
        return float(np.sqrt(self.covariance[0, 0]))

    @property
    def n_std(self) -> float:
        return float(np.sqrt(self.covariance[1, 1]))


def _power_law_failure(reason: str, points: int = 0, origin=(0.0, 0.0)) -> PowerLawFit:
    return PowerLawFit(False, reason, float('nan'), float('nan'), points=points, origin=origin)


def fit_power_law(delta: np.ndarray, force: np.ndarray, *, cutoff: float | None = None,
                  shift_origin: bool = False, weights: np.ndarray | None = None) -> PowerLawFit:
    """Fit F = k d^n (eq. 3.1): log-log LS start, then weighted nonlinear LS in (ln k, n).

    cutoff: drop samples with F < cutoff (N). shift_origin: subtract the first remaining (d, F) so the
    curve starts at (0, 0) (Instron step 3). weights w_i: cost = sum w_i (F_i - k d_i^n)^2 (default 1).
    Points with d < 0 after the shift are unusable and dropped; d = 0 points stay in the nonlinear LS.
    Covariance = s^2 (J^T J)^-1 with s^2 = cost / (N - 2), mapped from (ln k, n) to (k, n).
    """
    d, f = _arr(delta, force)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=np.float64)
    if d.ndim != 1 or d.shape != f.shape or w.shape != d.shape:
        raise ValueError(f'delta, force (and weights) must be 1-D of equal length, '
                         f'got {d.shape}, {f.shape}, {w.shape}')
    if cutoff is not None and not np.isfinite(cutoff):
        raise ValueError(f'cutoff must be finite, got {cutoff}')
    if np.any(w < 0):
        raise ValueError('weights must be >= 0')
    keep = np.isfinite(d) & np.isfinite(f) & np.isfinite(w)
    if cutoff is not None:
        keep &= f >= cutoff
    d, f, w = d[keep], f[keep], w[keep]
    origin = (0.0, 0.0)
    if shift_origin and len(d):
        origin = (float(d[0]), float(f[0]))
        d, f = d - origin[0], f - origin[1]
    usable = d >= 0
    d, f, w = d[usable], f[usable], w[usable]
    pos = (d > 0) & (f > 0)
    if pos.sum() < 3:
        return _power_law_failure(f'too few positive points ({int(pos.sum())} of {len(d)})', len(d), origin)
    ld, lf = np.log(d[pos]), np.log(f[pos])
    if np.ptp(ld) <= 0:
        return _power_law_failure('no spread in deformation', len(d), origin)
    n0, lk0 = np.polyfit(ld, lf, 1)
    sw = np.sqrt(w)
    scale = float(np.max(np.abs(f))) or 1.0
    safe_log = np.log(np.where(d > 0, d, 1.0))

    def resid(p):
        return sw * (np.exp(p[0]) * d ** p[1] - f) / scale

    def jac(p):
        model = np.exp(p[0]) * d ** p[1]
        return np.column_stack((model, model * safe_log)) * (sw / scale)[:, None]

    with np.errstate(over='ignore', invalid='ignore'):
        res = least_squares(resid, [lk0, n0], jac=jac, method='lm', xtol=1e-14, ftol=1e-14, gtol=1e-14,
                            max_nfev=2000)
    if not (res.success and np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.jac))):
        return _power_law_failure(f'nonlinear LS failed: {res.message}', len(d), origin)
    m = len(d)
    cost = float((res.fun ** 2).sum()) * scale ** 2
    s2 = cost / max(m - 2, 1)
    jtj = (res.jac.T @ res.jac) * scale ** 2
    try:
        cov_log = s2 * np.linalg.inv(jtj)
    except np.linalg.LinAlgError:
        return _power_law_failure('singular information matrix', m, origin)
    k = float(np.exp(res.x[0]))
    jmap = np.diag([k, 1.0])
    rms = float(np.sqrt(np.mean((k * d ** res.x[1] - f) ** 2)))
    return PowerLawFit(True, 'ok', k, float(res.x[1]), jmap @ cov_log @ jmap, rms, m, origin,
                       (float(np.exp(lk0)), float(n0)))


def instron_power_law(crosshead: np.ndarray, force: np.ndarray, *,
                      cutoff: float = INSTRON_CUTOFF) -> PowerLawFit:
    """One Instron test (§2.11b steps 2-4): drop F < cutoff, shift the first point to (0, 0), fit.

    Known bias (thesis): the shift assumes no specimen compression below the cut-off.
    """
    return fit_power_law(crosshead, force, cutoff=cutoff, shift_origin=True)


@dataclass(frozen=True)
class PowerLawAverage:
    """Arithmetic mean of k and n over the successful fits (thesis Table 3-5 convention)."""

    ok: bool
    reason: str
    k: float
    n: float
    k_std: float
    n_std: float
    used: int
    failed: int


def average_power_laws(fits: list[PowerLawFit]) -> PowerLawAverage:
    """Average k_nl and n over tests (§2.11b step 5); failed fits are counted, never averaged."""
    good = [f for f in fits if f.ok]
    nan = float('nan')
    if not good:
        return PowerLawAverage(False, 'no successful fit', nan, nan, nan, nan, 0, len(fits))
    k = np.array([f.k for f in good])
    n = np.array([f.n for f in good])
    sd = (lambda v: float(v.std(ddof=1))) if len(good) > 1 else (lambda v: nan)
    return PowerLawAverage(True, 'ok', float(k.mean()), float(n.mean()), sd(k), sd(n), len(good),
                           len(fits) - len(good))


# ------------------------------------------------------------------------------------------ linearisation
def power_law_deformation(force: float | np.ndarray, k_nl: float, n: float) -> float | np.ndarray:
    """d(F) = (F / k_nl)^(1/n) (m)."""
    return (np.asarray(force, dtype=np.float64) / k_nl) ** (1.0 / n)


def secant_stiffness(force: float | np.ndarray, k_nl: float, n: float) -> float | np.ndarray:
    """k_sec(F) = F / d(F) = k_nl^(1/n) F^(1 - 1/n) (N/m), §1.3 (the thesis's linearisation)."""
    return k_nl ** (1.0 / n) * np.asarray(force, dtype=np.float64) ** (1.0 - 1.0 / n)


def tangent_stiffness(force: float | np.ndarray, k_nl: float, n: float) -> float | np.ndarray:
    """k_tan(F) = dF/dd = n k_sec(F) (N/m), §1.3 (what a line fit with intercept measures)."""
    return n * secant_stiffness(force, k_nl, n)


def hardware_error(dx: float, x: float, df: float, f: float) -> float:
    """§2.11e: relative stiffness error from sensor errors, dk/k = sqrt((dx/x)^2 + (dF/F)^2)."""
    if x == 0 or f == 0:
        raise ValueError('x and F must be non-zero')
    return float(np.hypot(dx / x, df / f))


# ------------------------------------------------------------------------------------------ Hertz
def effective_modulus(e1: float, nu1: float, e2: float, nu2: float) -> float:
    """E* = [(1 - nu1^2)/E1 + (1 - nu2^2)/E2]^-1 (Pa), with the outer inverse the thesis footnote omits."""
    if not (e1 > 0 and e2 > 0 and -1 < nu1 <= 0.5 and -1 < nu2 <= 0.5):
        raise ValueError('need E > 0 and -1 < nu <= 0.5')
    return 1.0 / ((1.0 - nu1 ** 2) / e1 + (1.0 - nu2 ** 2) / e2)


def hertz_coefficient(radius: float, e_star: float) -> float:
    """k* = (4/3) sqrt(R) E* (N/m^1.5), eq. 3.3: F = k* d^1.5."""
    if not (radius > 0 and e_star > 0):
        raise ValueError('need R > 0 and E* > 0')
    return 4.0 / 3.0 * np.sqrt(radius) * e_star


def hertz_deformation(force: float | np.ndarray, radius: float, e_star: float) -> float | np.ndarray:
    """d = (9 F^2 / (16 R E*^2))^(1/3) (m), eq. 3.2."""
    return np.cbrt(9.0 * np.asarray(force, dtype=np.float64) ** 2 / (16.0 * radius * e_star ** 2))


def hertz_force(delta: float | np.ndarray, radius: float, e_star: float) -> float | np.ndarray:
    """F = k* d^1.5 (N) for d >= 0."""
    return hertz_coefficient(radius, e_star) * np.asarray(delta, dtype=np.float64) ** 1.5


# ------------------------------------------------------------------------------------------ Hunt-Crossley
@dataclass(frozen=True)
class HuntCrossleyFit:
    """F = k x^n + lam x^n xd. ``damping`` is lam (N s/m^(n+1)); ``static`` the stage-1 power-law fit."""

    ok: bool
    reason: str
    k: float
    n: float
    damping: float
    damping_std: float
    static: PowerLawFit


def fit_hunt_crossley(x: np.ndarray, xd: np.ndarray, force: np.ndarray, *, static: np.ndarray | None = None,
                      rate_threshold: float | None = None) -> HuntCrossleyFit:
    """Two-stage Hunt-Crossley identification (spec §1.6).

    Stage 1: (k, n) by :func:`fit_power_law` on near-static samples (``static`` mask, or
    |xd| <= rate_threshold).
    Stage 2: lam = sum(u r) / sum(u^2) with u = x^n xd and r = F - k x^n over all samples with x > 0.
    """
    x, xd, f = _arr(x, xd, force)
    if x.ndim != 1 or not (x.shape == xd.shape == f.shape):
        raise ValueError('x, xd and force must be 1-D arrays of equal length')
    if (static is None) == (rate_threshold is None):
        raise ValueError('give exactly one of static (mask) or rate_threshold (m/s)')
    mask = np.abs(xd) <= rate_threshold if static is None else np.asarray(static, dtype=bool)
    if mask.shape != x.shape:
        raise ValueError('static mask must match x')
    st = fit_power_law(x[mask], f[mask])
    nan = float('nan')
    if not st.ok:
        return HuntCrossleyFit(False, f'static stage: {st.reason}', nan, nan, nan, nan, st)
    use = (x > 0) & np.isfinite(x) & np.isfinite(xd) & np.isfinite(f)
    xn = x[use] ** st.n
    u = xn * xd[use]
    r = f[use] - st.k * xn
    uu = float(u @ u)
    if uu <= 0 or use.sum() < 2:
        return HuntCrossleyFit(False, 'damping not excited (no deformation rate)', st.k, st.n, nan, nan, st)
    lam = float(u @ r) / uu
    s2 = float(((r - lam * u) ** 2).sum()) / (use.sum() - 1)
    return HuntCrossleyFit(True, 'ok', st.k, st.n, lam, float(np.sqrt(s2 / uu)), st)
