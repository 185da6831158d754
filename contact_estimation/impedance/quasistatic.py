"""Quasi-static force curves: a slow press and release (a spring, a button, a soft object on a bench tester).

When the motion is slow, m a and b v are far below the force noise: the dynamic model F = m a + b v + k x + c
cannot separate m from k (the acceleration column is noise), and the useful answer is the force curve itself.
Per position segment j and direction of travel d (press: v > 0, release: v < 0):

    F = k_jd x + c_jd                                           (N; x in m (or rad), k in N/m (or N*m/rad))

fitted by least squares on the *recorded* samples (x, F as logged; no filter, no derivative; samples next to
a hole and at the record's ends included) whose velocity - the filtered v_f interpolated at their stamps, a
local least-squares slope where the kernel has no complete window - is beyond the deadband
(|v| > min_velocity; v only gives the direction). Reported with sigma:

* k_jd (stiffness), c_jd (force offset: the intercept at x = 0), F_jd(x_c) (the branch force at the segment
  centre x_c);
* the hysteresis width H_j = F_j+(x_c) - F_j-(x_c) (press minus release branch at the centre; the two fits
  use disjoint samples, so var H = var F_j+(x_c) + var F_j-(x_c));
* mass and damping: not identifiable (stated in the report, never a number).

Sigma of (k, c): the larger of the OLS covariance and the Newey-West (HAC) sandwich on the bin's residuals
in time order (a force curve's residuals are strongly correlated: the curve bends inside a segment), lags
4 x the residuals' correlation length (at least 4), plus the first-order errors-in-variables bias of the
noisy x (``trust.covariance.eiv_bias``, the white noise of x from the conditioning), plus the quantisation
term: an encoder step q on a slow ramp gives an error that beats with the sampling instead of averaging
out, so its share of the slope is bounded, |dk| <= |k| (q / sqrt 12) / std(x in the bin), and of the level
by |k| q / sqrt 12: they enter as d d^T + l l^T with d = dk [1, -mean x], l = [0, |k| q / sqrt 12] (q = the
median step between distinct x values); combined by
``trust.covariance.combine`` and judged by ``trust.verdict.judge`` (prior: n >= min_samples, the condition
number of [x 1] column-normalised <= max_condition).

**When is the motion quasi-static?** (``quasi_static_evidence``, used by ``profile_mode: auto``): when the
motion's characteristic frequency f_mot = v_rms / (2 pi std x) is below ``QUASI_STATIC_HZ`` (0.2 Hz: a
stroke takes more than ~3 s; the inertial force of any mechanism whose natural frequency exceeds 10 f_mot is
below (f_mot / f_n)^2 = 1 % of its spring force) - or, whatever f_mot, when both
(i) the dynamic fit (:func:`.segmented.fit_segmented`) finds no (segment, direction) bin where mass and
stiffness are separable, and (ii) the rms acceleration of the moving samples is at most
``ACCELERATION_NOISE_FACTOR`` (3) x the noise std of the kernel-differentiated position: the motion's
acceleration is indistinguishable from noise, so no inertial force can be measured ((i) alone also holds
for a fast single tone, whose acceleration is large but proportional to x: that stays a dynamic-mode
refusal, "use a multisine"). The evidence also states the implied bounds: an inertial force m a reaches the
force noise sigma_F only for m > sigma_F / a_rms, a damping force
b v only for b > sigma_F / v_rms (a_rms, v_rms over the moving samples).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .segmented import DIRECTIONS, segment_index

QS_PARAMS = ('stiffness', 'force_offset')
QS_MODEL = ('quasi_static_force_curve: F = k x + c per (position segment, direction of travel); mass and '
            'damping not identifiable (slow motion)')
#: auto mode: the motion is slow when its rms acceleration is at most this many times the noise std of the
#: kernel-differentiated position (a single fast tone also separates m from k in no bin, but its
#: acceleration is far above the noise)
ACCELERATION_NOISE_FACTOR = 3.0
#: auto mode: the motion is slow when its characteristic frequency f_mot = v_rms / (2 pi std x) is below this
#: (a stroke takes more than ~3 s): the inertial force of a mechanism whose natural frequency f_n exceeds
#: 10 f_mot = 2 Hz is then below (f_mot / f_n)^2 = 1 % of its spring force
QUASI_STATIC_HZ = 0.2
NOT_IDENTIFIABLE = ('mass and damping: not identifiable (quasi-static motion: the inertial and damping '
                    'forces are below the force noise)')


@dataclass
class QuasiStaticProfile:
    """Per (direction, segment) [d, j] (d = 0: press, v > 0): k, c and their covariance; per segment the
    hysteresis width. SI units (N/m, N; or N*m/rad, N*m for a rotary joint)."""

    edges: np.ndarray
    theta: np.ndarray              # (2, N, 2) k, c; NaN without a fit
    cov: np.ndarray                # (2, N, 2, 2)
    n: np.ndarray                  # (2, N)
    valid: np.ndarray              # (2, N)
    reason: list                   # [[str] * N] * 2
    residual_rms: np.ndarray       # (2, N)
    centre_force: np.ndarray       # (2, N) F_d(x_c)
    centre_force_std: np.ndarray   # (2, N)
    hysteresis: np.ndarray         # (N,) F+(x_c) - F-(x_c)
    hysteresis_std: np.ndarray     # (N,)
    evidence: dict = field(default_factory=dict)
    model: str = QS_MODEL

    @property
    def segments(self) -> int:
        return len(self.edges) - 1

    @property
    def centres(self) -> np.ndarray:
        return 0.5 * (self.edges[:-1] + self.edges[1:])

    def value(self, name: str) -> np.ndarray:
        return self.theta[:, :, QS_PARAMS.index(name)]

    def std(self, name: str) -> np.ndarray:
        i = QS_PARAMS.index(name)
        return np.sqrt(np.maximum(self.cov[:, :, i, i], 0.0))

    def rows(self) -> list[dict]:
        out = []
        for d, dn in enumerate(DIRECTIONS):
            for j in range(self.segments):
                out.append({'segment': j, 'direction': dn, 'x_lo': float(self.edges[j]),
                            'x_hi': float(self.edges[j + 1]), 'n': int(self.n[d, j]),
                            'stiffness': float(self.theta[d, j, 0]),
                            'stiffness_std': float(np.sqrt(max(self.cov[d, j, 0, 0], 0.0))),
                            'force_offset': float(self.theta[d, j, 1]),
                            'force_offset_std': float(np.sqrt(max(self.cov[d, j, 1, 1], 0.0))),
                            'centre_force': float(self.centre_force[d, j]),
                            'centre_force_std': float(self.centre_force_std[d, j]),
                            'hysteresis_width': float(self.hysteresis[j]),
                            'hysteresis_width_std': float(self.hysteresis_std[j]),
                            'mass': None, 'damping': None, 'residual_rms': float(self.residual_rms[d, j]),
                            'valid': bool(self.valid[d, j]), 'reason': self.reason[d][j]})
        return out


def quasi_static_evidence(dynamic, conditioned) -> dict:
    """The auto-mode criterion (module docstring) and its figures. ``dynamic``: the ImpedanceProfile of the
    dynamic fit of the same record; ``conditioned``: its :class:`.conditioning.Conditioned`."""
    from contact_dynamics_common.signal.conditioning import noise_std
    c = conditioned
    moving = np.abs(c.v) > dynamic.options.get('v_min', 0.0)
    a_rms = float(np.sqrt(np.mean(c.a[moving] ** 2))) if moving.any() else 0.0
    v_rms = float(np.sqrt(np.mean(c.v[moving] ** 2))) if moving.any() else 0.0
    sigma_f = float(noise_std(c.F)) if len(c.F) > 8 else float('nan')
    sigma_a = float(np.sqrt(c.noise_variance[0])) if np.isfinite(c.noise_variance[0]) else float('nan')
    separable = int(np.sum(dynamic.separable))
    slow = bool(not (a_rms > ACCELERATION_NOISE_FACTOR * sigma_a)) if np.isfinite(sigma_a) else False
    x_std = float(np.std(c.x)) if len(c.x) else 0.0
    f_mot = v_rms / (2.0 * np.pi * x_std) if x_std > 0 else float('inf')
    return {'quasi_static': bool(f_mot < QUASI_STATIC_HZ or (separable == 0 and slow)),
            'motion_frequency_hz': f_mot, 'separable_bins': separable,
            'acceleration_at_noise_level': slow,
            'acceleration_rms': a_rms, 'acceleration_noise_std': sigma_a, 'velocity_rms': v_rms,
            'force_noise_std': sigma_f, 'excitation_band_hz': float(c.band_hz),
            'mass_visible_above': sigma_f / a_rms if a_rms > 0 else float('inf'),
            'damping_visible_above': sigma_f / v_rms if v_rms > 0 else float('inf'),
            'rule': 'quasi-static when the motion frequency v_rms / (2 pi std x) is below '
                    f'{QUASI_STATIC_HZ:g} Hz, or when no (segment, direction) bin of the dynamic fit '
                    'separates mass from stiffness and the rms acceleration of the moving samples is at most '
                    f'{ACCELERATION_NOISE_FACTOR:g} x the noise of the differentiated position'}


def _lags(e: np.ndarray) -> int:
    """4 x the correlation length of the residuals (sum of their autocorrelation up to its first zero)."""
    e = e - e.mean()
    var = float(e @ e)
    if not var > 0 or len(e) < 8:
        return 4
    acf = np.correlate(e, e, mode='full')[len(e) - 1:] / var
    neg = np.flatnonzero(acf <= 0)
    stop = int(neg[0]) if len(neg) else len(acf)
    length = 1.0 + 2.0 * float(np.sum(acf[1:stop]))
    return int(min(max(4, np.ceil(4 * length)), len(e) // 2))


def position_resolution(x: np.ndarray) -> float:
    """Quantisation step of a position record: the median gap between its distinct values (an encoder's
    count; for an unquantised record a tiny number whose term vanishes)."""
    u = np.unique(np.asarray(x, dtype=float)[np.isfinite(x)])
    return float(np.median(np.diff(u))) if len(u) > 2 else 0.0


def fit_quasi_static(t, x, F, direction, edges, *, min_samples: int = 200, max_condition: float = 1e6,
                     sigma_x: float = 0.0, resolution: float | None = None,
                     evidence: dict | None = None) -> QuasiStaticProfile:
    """Fit the profile (module docstring) on samples (t s, x, F) with ``direction`` +1 (press), -1 (release)
    or 0 (deadband: not used). ``resolution``: the quantisation step of x (default: the median step between
    its distinct values, :func:`position_resolution`)."""
    from contact_dynamics_common.trust.covariance import combine, eiv_bias, sandwich
    from contact_dynamics_common.trust.verdict import judge
    t, x, F, direction = (np.asarray(y, dtype=float).ravel() for y in (t, x, F, direction))
    edges = np.asarray(edges, dtype=float)
    nseg = len(edges) - 1
    seg = segment_index(x, edges)
    if resolution is None:
        resolution = position_resolution(x)
    shape = (2, nseg)
    theta = np.full(shape + (2,), np.nan)
    cov = np.full(shape + (2, 2), np.nan)
    n = np.zeros(shape, int)
    valid = np.zeros(shape, bool)
    rms = np.full(shape, np.nan)
    fc = np.full(shape, np.nan)
    fcs = np.full(shape, np.nan)
    reason = [['' for _ in range(nseg)] for _ in range(2)]
    xc = 0.5 * (edges[:-1] + edges[1:])
    for d, sgn in enumerate((1.0, -1.0)):
        for j in range(nseg):
            idx = np.flatnonzero((seg == j) & (direction == sgn))
            idx = idx[np.argsort(t[idx], kind='stable')]
            n[d, j] = len(idx)
            if len(idx) < max(min_samples, 3):
                reason[d][j] = f'{len(idx)} samples (< min_samples = {min_samples})'
                continue
            X = np.column_stack([x[idx], np.ones(len(idx))])
            y = F[idx]
            scale = np.sqrt(np.mean(X ** 2, axis=0))
            scale = np.where(scale > 0, scale, 1.0)
            Xs = X / scale
            sv = np.linalg.svd(Xs / np.linalg.norm(Xs, axis=0), compute_uv=False)
            kappa = float(sv[0] / sv[-1]) if sv[-1] > 0 else float('inf')
            if not kappa <= max_condition:
                reason[d][j] = f'x does not vary inside the segment (kappa {kappa:.3g} > {max_condition:.0e})'
                continue
            ths = np.linalg.lstsq(Xs, y, rcond=None)[0]
            e = y - Xs @ ths
            dof = max(len(idx) - 2, 1)
            s2 = float(e @ e) / dof
            own = s2 * np.linalg.inv(Xs.T @ Xs)
            hac = sandwich(Xs, e, lags=_lags(e))
            bias = None
            if sigma_x > 0:
                bias = eiv_bias(Xs, ths, np.diag([(sigma_x / scale[0]) ** 2, 0.0]))
            quant = None
            if resolution > 0:
                # x quantised to steps q: the error e (|e| <= q/2) of a slow ramp is not white (it beats
                # with the sampling), so its share of the slope is bounded, not averaged:
                # |dk| <= |k| sigma_e / sigma_x(bin), sigma_e = q / sqrt(12); c moves by -dk mean(x)
                sigma_e = resolution / np.sqrt(12.0)
                dk = abs(ths[0] / scale[0]) * sigma_e / max(float(np.std(x[idx])), 1e-300)
                dvec = np.array([dk, -dk * float(np.mean(x[idx]))]) * scale
                level = np.array([0.0, abs(ths[0] / scale[0]) * resolution / np.sqrt(12.0)]) * scale
                quant = np.outer(dvec, dvec) + np.outer(level, level)
            hc = combine(own, sandwich=hac, eiv=bias, bias=quant)
            theta[d, j] = ths / scale
            cov[d, j] = hc.covariance / np.outer(scale, scale)
            rms[d, j] = float(np.sqrt(s2))
            g = np.array([xc[j], 1.0])
            fc[d, j] = float(g @ theta[d, j])
            fcs[d, j] = float(np.sqrt(max(g @ cov[d, j] @ g, 0.0)))
            verdict = judge(QS_PARAMS, theta[d, j], cov[d, j], required=(), positive=())
            valid[d, j] = verdict.valid
            reason[d][j] = verdict.reason
    hyst = fc[0] - fc[1]
    hyst_std = np.sqrt(fcs[0] ** 2 + fcs[1] ** 2)
    return QuasiStaticProfile(edges=edges, theta=theta, cov=cov, n=n, valid=valid, reason=reason,
                              residual_rms=rms, centre_force=fc, centre_force_std=fcs, hysteresis=hyst,
                              hysteresis_std=hyst_std, evidence=dict(evidence or {}))


def local_slope(t: np.ndarray, x: np.ndarray, half_s: float) -> np.ndarray:
    """Least-squares slope dx/dt of the samples within +-half_s of every stamp (windows truncated at the
    record's ends; real stamps, no filter state): a direction of travel where the kernel has no complete
    window."""
    t, x = np.asarray(t, dtype=float), np.asarray(x, dtype=float)
    tc = t - t[0]
    lo = np.searchsorted(tc, tc - half_s, side='left')
    hi = np.searchsorted(tc, tc + half_s, side='right')
    cs = [np.concatenate(([0.0], np.cumsum(y))) for y in (np.ones_like(tc), tc, x, tc * tc, tc * x)]
    n, st, sx, stt, stx = (c[hi] - c[lo] for c in cs)
    den = n * stt - st * st
    return np.where(den > 0, (n * stx - st * sx) / np.where(den > 0, den, 1.0), 0.0)


def profile_conditioned(t_raw, x_raw, F_raw, conditioned, edges, *, v_min: float, min_samples: int,
                        max_condition: float = 1e6, t_skip: float = 0.0,
                        evidence: dict | None = None) -> QuasiStaticProfile:
    """The quasi-static profile of a record: every recorded (x, F) sample from ``t_skip`` on is fitted; its
    direction comes from the conditioned velocity v_f interpolated at its stamp (|v_f| <= v_min: not used),
    and, before the first and after the last complete kernel window, from :func:`local_slope` over the
    kernel's reach. The kernel drops the centres whose window spans a hole or the record's end; the force
    curve needs no derivative, so those samples are kept (otherwise every hole and both ends would leave a
    piece of the segment uncovered and bias the slope of a curved force curve)."""
    c = conditioned
    t_raw, x_raw, F_raw = (np.asarray(y, dtype=float) for y in (t_raw, x_raw, F_raw))
    half = 5.0 * c.width_s if np.isfinite(c.width_s) else 10.0 / c.rate_hz
    v = local_slope(t_raw, x_raw, half)
    if len(c.t) >= 2:
        inside = (t_raw >= c.t[0]) & (t_raw <= c.t[-1])
        v = np.where(inside, np.interp(t_raw, c.t, c.v), v)
    use = t_raw >= t_raw[0] + t_skip
    direction = np.where(use & (v > v_min), 1.0, np.where(use & (v < -v_min), -1.0, 0.0))
    return fit_quasi_static(t_raw, x_raw, F_raw, direction, edges, min_samples=min_samples,
                            max_condition=max_condition, sigma_x=float(c.meta.get('sigma_x', 0.0) or 0.0),
                            evidence=evidence)


__all__ = ['QuasiStaticProfile', 'fit_quasi_static', 'profile_conditioned', 'local_slope',
           'position_resolution', 'quasi_static_evidence',
           'QS_PARAMS', 'QS_MODEL', 'NOT_IDENTIFIABLE']
