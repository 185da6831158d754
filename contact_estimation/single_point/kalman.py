"""Kalman filter with the contact parameters as states (Agar 2004 §2.4, eqs. 2.8-2.9, after Weber 2001).

    theta[n+1] = theta[n] + w[n],   w ~ N(0, Q dt[n])        (G = I; Q = 0 in the thesis)
    F[n]       = H[n] theta[n] + v[n],   v ~ N(0, R_v),   H[n] = phi[n]^T = [x, xdot (, xddot)]

per sample, in scaled units (phi_s = phi / scales, theta_s = theta * scales):

    1. predict  P- = P + Q_s dt
    2. gain     v = P- h,  s = h^T v + R_v,  K = v / s
    3. update   theta = theta + K (F - h^T theta)
    4. cov.     P = (I - K h^T) P- (I - K h^T)^T + K R_v K^T = P- - K v^T - v K^T + s K K^T   (Joseph form)

P0 = a I in scaled units. ``process_noise`` gives Q per parameter in SI units per second, ((N/m)^2/s
for k): the random-walk variance grows by Q dt over dt = t[n] - t[n-1] (capped at ``max_gap``; the first
sample and repeated or backward stamps add none). With Q = 0 the filter equals RLS with lambda = 1 and
P0_rls = a / R_v (same estimates), and converges to the batch least squares of the data.

The reported covariance is the filter's P (it assumes the noise variance R_v; ``extras['nis']`` is the
mean normalised innovation squared e^2/s, ~1 when R_v and the model fit the data). Excitation and
conditioning come from the accumulated information sum phi_s phi_s^T of the samples seen.
P is kept symmetric (only the upper triangle is computed) and, after every block, positive definite
(``make_spd`` eigenvalue floor). ``residual_rms`` is the RMS of the innovations e = F - h^T theta-.

Published sigma (``assess``): the own P, multiplied by max(1, mean NIS) when the force-noise setting is too
low, raised per parameter to the HAC sandwich, the IV and parallel-filter gaps (EIV bias + two-bandwidth
conditioning term) and omitted-term shifts; the settle rule judges drift against that honest sigma. With
process noise it is a tracking estimator and its sigma also holds the tracking spread (see ``rls``).
"""
from __future__ import annotations

import numpy as np

from .estimate import ContactEstimate, failure, make_spd, project, quality_from_information, verdict
from .models import KELVIN_VOIGT, ContactModel
from .samples import ContactSamples

#: rows with a scaled regressor or force beyond this are rejected (their products would overflow)
_LIMIT = 1e100


class KalmanFilter:
    """Parameters-as-states Kalman filter; ``update`` takes blocks of any length, ``estimate`` the latest."""

    name = 'kalman'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, initial_covariance: float = 1e5,
                 measurement_noise: float = 0.5 ** 2, process_noise: dict | None = None,
                 initial: dict | None = None, max_gap: float = 1.0, bounds: dict | None = None,
                 min_samples: int = 50, max_condition: float = 1e8, scales: dict | None = None,
                 min_excitation: dict | None = None, record: bool = False):
        if not (np.isfinite(initial_covariance) and initial_covariance > 0):
            raise ValueError(f'initial_covariance must be finite and > 0, got {initial_covariance}')
        if not (np.isfinite(measurement_noise) and measurement_noise > 0):
            raise ValueError(f'measurement_noise (R_v, N^2) must be finite and > 0, got {measurement_noise}')
        q = dict(process_noise or {})
        if set(q) - set(model.names) or not all(np.isfinite(v) and v >= 0 for v in q.values()):
            raise ValueError(f'process_noise must map parameters of {model.names} to values >= 0, got {q}')
        if not max_gap > 0:
            raise ValueError(f'max_gap must be > 0 s, got {max_gap}')
        self.model = model
        self.p0 = float(initial_covariance)
        self.r_v = float(measurement_noise)
        self.scales = model.scales(scales)
        self.q_s = np.array([q.get(n, 0.0) for n in model.names]) * self.scales ** 2
        self.initial = dict(initial or {})
        self.max_gap = float(max_gap)
        self.bounds = bounds
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.min_exc = model.min_excitation(min_excitation)
        self.record = record
        self.reset()

    def reset(self) -> None:
        p = self.model.size
        self._theta = [self.initial.get(n, 0.0) * s for n, s in zip(self.model.names, self.scales)]
        self._P = (np.eye(p) * self.p0).tolist()
        self._info = np.zeros((p, p))     # sum phi_s phi_s^T
        self._nis = 0.0                   # sum e^2 / s
        self._ee = 0.0                    # sum e^2 (innovations)
        self._n = 0
        self._rejected = 0
        self._t: float | None = None
        self.history_t: list[np.ndarray] = []
        self.history_theta: list[np.ndarray] = []

    def update(self, samples: ContactSamples) -> None:
        if len(samples) == 0:
            return
        with np.errstate(over='ignore'):
            phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.scales
        f, t = samples.force, samples.t
        ok = np.all(np.abs(phi) < _LIMIT, axis=1) & (np.abs(f) < _LIMIT)
        self._rejected += int(len(ok) - ok.sum())
        phi, f, t = phi[ok], f[ok], t[ok]
        n = len(t)
        if n == 0:
            return
        with np.errstate(over='ignore', invalid='ignore'):
            dt = np.clip(np.diff(t, prepend=t[0] if self._t is None else self._t), 0.0, self.max_gap)
        qdt = dt[:, None] * self.q_s                                  # random-walk variance per sample
        hist = [] if self.record else None
        run = _filter_2 if self.model.size == 2 else _filter
        theta, P, nis, ee = run(self._theta, self._P, phi, f, qdt, self.r_v, hist)
        self._theta, self._P = theta, make_spd(np.array(P)).tolist()     # eigenvalue floor if P lost PD
        self._info += phi.T @ phi
        self._nis += nis
        self._ee += ee
        self._n += n
        self._t = float(t[-1])
        if hist is not None:
            self.history_t.append(t.copy())
            self.history_theta.append(np.array(hist) / self.scales)

    def trajectory(self) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (t, theta[N, p]) in SI units (``record=True``)."""
        if not self.history_t:
            return np.zeros(0), np.zeros((0, self.model.size))
        return np.concatenate(self.history_t), np.vstack(self.history_theta)

    def estimate(self) -> ContactEstimate:
        stamp = self._t or 0.0
        extras = {'measurement_noise': self.r_v, 'rejected': self._rejected,
                  'process_noise': dict(zip(self.model.names, (self.q_s / self.scales ** 2).tolist())),
                  'nis': self._nis / max(self._n, 1)}
        if self._n == 0:
            return failure(self.name, self.model, 'no samples yet', stamp, **extras)
        q = quality_from_information(self._info, self._n, self.r_v, self.scales, self.min_exc)
        raw = np.array(self._theta) / self.scales
        values, active = project(raw, self.model.names, self.bounds)
        valid, reason = verdict(self.model.names, values, q, self._n, self.min_samples, self.max_condition)
        cov = make_spd(np.array(self._P) / np.outer(self.scales, self.scales))
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
            covariance=cov, valid=valid, reason=reason, residual_rms=float(np.sqrt(self._ee / self._n)),
            condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
            bounds_active=active, samples_used=self._n, stamp=stamp, extras=extras)


def _filter(theta: list, P: list, phi: np.ndarray, f: np.ndarray, qdt: np.ndarray, r_v: float,
            hist: list | None) -> tuple[list, list, float, float]:
    """Steps 1-4 over a block, any p; returns theta, P, sum e^2/s, sum e^2. Rejects non-finite updates."""
    p = len(theta)
    rng = range(p)
    pairs = [(i, j) for i in rng for j in range(i, p)]
    nis = ee = 0.0
    for h, z, q in zip(phi.tolist(), f.tolist(), qdt.tolist()):
        for i in rng:
            P[i][i] += q[i]
        v = [sum(P[i][j] * h[j] for j in rng) for i in rng]
        s = sum(h[i] * v[i] for i in rng) + r_v
        e = z - sum(h[i] * theta[i] for i in rng)
        K = [vi / s for vi in v]
        new = [theta[i] + K[i] * e for i in rng]
        if s < _LIMIT and all(-_LIMIT < c < _LIMIT for c in new):
            theta = new
            for i, j in pairs:
                P[i][j] = P[j][i] = P[i][j] - K[i] * v[j] - v[i] * K[j] + s * K[i] * K[j]
            nis += e * e / s
            ee += e * e
        if hist is not None:
            hist.append(theta)
    return theta, P, nis, ee


def _filter_2(theta: list, P: list, phi: np.ndarray, f: np.ndarray, qdt: np.ndarray, r_v: float,
              hist: list | None) -> tuple[list, list, float, float]:
    """:func:`_filter` unrolled for p = 2 (about 4x faster)."""
    t0, t1 = theta
    (p00, p01), (_, p11) = P
    nis = ee = 0.0
    for h0, h1, z, q0, q1 in zip(phi[:, 0].tolist(), phi[:, 1].tolist(), f.tolist(),
                                 qdt[:, 0].tolist(), qdt[:, 1].tolist()):
        p00 += q0
        p11 += q1
        v0 = p00 * h0 + p01 * h1
        v1 = p01 * h0 + p11 * h1
        s = h0 * v0 + h1 * v1 + r_v
        e = z - h0 * t0 - h1 * t1
        k0 = v0 / s
        k1 = v1 / s
        n0 = t0 + k0 * e
        n1 = t1 + k1 * e
        if s < _LIMIT and -_LIMIT < n0 < _LIMIT and -_LIMIT < n1 < _LIMIT:
            t0, t1 = n0, n1
            p00 = p00 - 2.0 * k0 * v0 + s * k0 * k0
            p01 = p01 - k0 * v1 - v0 * k1 + s * k0 * k1
            p11 = p11 - 2.0 * k1 * v1 + s * k1 * k1
            nis += e * e / s
            ee += e * e
        if hist is not None:
            hist.append((t0, t1))
    return [t0, t1], [[p00, p01], [p01, p11]], nis, ee
