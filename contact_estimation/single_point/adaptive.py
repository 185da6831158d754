"""Indirect adaptive estimator (Agar 2004 §2.3, after Seraji & Colbaugh 1997 / Erickson 2000).

Gradient adaptation law (eq. 2.7) integrated by forward Euler at the sample times:

    e[n]     = phi[n]^T theta[n-1] - F[n]                        predicted minus measured force (N)
    theta[n] = theta[n-1] - dt[n] G phi[n] e[n] / m[n]           phi = [x, xdot] (m, m/s), theta = [k, b]

with dt[n] = t[n] - t[n-1] (s); an interval that is not in (0, max_gap] (first sample, repeated or
backward stamps, a gap between contact segments) adapts nothing. G is diagonal, in SI units
(1/(m^2 s) for k, 1/m^2 for b):

* ``gain_convention='multiply'`` (default): G = diag(gain). The thesis gain diag(2e9, 2.5e3) only moves
  the estimates when it multiplies the update (spec §2.3 [I]).
* ``gain_convention='inverse'``: G = diag(gain)^-1, the printed eq. 2.7 (dtheta/dt = -Gamma^-1 phi F~).
* ``normalised=False``: m = 1. The Euler step is stable only while dt phi^T G phi < 2: the largest value
  seen is reported (``extras['max_step_gain']``) and a larger one invalidates the estimate.
* ``normalised=True``: m = 1 + dt phi^T G phi, the normalised gradient ([R] "divide by 1 + phi^T phi",
  with phi^T phi measured in the metric of the gain dt G so that it is unit-consistent). The a-posteriori
  error is then e / m, so the step is stable for any gain.

IA has no covariance of its own. The reported one is its mean squared error about the least squares
over all samples seen so far (from the accumulated S = sum phi_s phi_s^T of the scaled regressors,
r = sum phi_s F, sum F^2; no forgetting):

    cov = sigma^2 S^-1 + d d^T,   sigma^2 = RSS(theta_LS) / (N - p),   d = theta_IA - theta_LS

i.e. the covariance of that least squares plus the IA lag (unconverged or jittering estimates get a
correspondingly large covariance). Excitation and conditioning come from the same S; ``residual_rms``
is that of the IA estimate over the seen samples, sqrt(RSS(theta_IA) / N).

Excitation requirement of the law (``adaptation_excited``): with uncorrelated regressors the normalised gradient
step contracts parameter j's error by (1 - dt G_jj phi_j^2 / m) per sample, so after the record it keeps a share
exp(-E_j) of its initial error, E_j = sum dt G_jj phi_j^2 / m (``extras['adaptation_time_constants']``, the
number of adaptation time constants the data gave it). An identifiable parameter needs E_j >= MIN_ADAPTATION
(5: < 1 % of an initial error left) before the law can have converged; below it a refusal ('not converged') is
the gain being too low for the contact, not the data being bad. The thesis gains with the normalised law give
E_b < 1 wherever dt G_kk x^2 dominates m (stiff or preloaded contacts, slow rates): b keeps its initial guess.

Published sigma: the covariance above (least squares of the seen samples plus the lag), raised by ``assess``
like the others to the HAC sandwich, the IV and parallel-filter gaps (EIV + conditioning terms) and
omitted-term shifts; convergence is judged against the least-squares reference.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .estimate import ContactEstimate, failure, make_spd, project, quality_from_information, verdict
from .models import KELVIN_VOIGT, ContactModel
from .samples import ContactSamples

#: rows with a scaled regressor or force beyond this are rejected (their products would overflow)
_LIMIT = 1e100


class IndirectAdaptive:
    """Gradient (indirect adaptive) estimator of theta = [k, b]; ``update`` takes blocks of any length."""

    name = 'ia'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, gain: Sequence[float] = (2e9, 2.5e3),
                 gain_convention: str = 'multiply', normalised: bool = False, initial: dict | None = None,
                 max_gap: float = 1.0, bounds: dict | None = None, min_samples: int = 50,
                 max_condition: float = 1e8, scales: dict | None = None, min_excitation: dict | None = None,
                 record: bool = False):
        if model.uses_acceleration:
            raise ValueError(f"IA estimates [k, b]: it needs a model without acceleration, "
                             f"got '{model.name}'")
        gain = np.asarray(gain, dtype=np.float64)
        if gain.shape != (2,) or not np.all(np.isfinite(gain)) or not np.all(gain > 0):
            raise ValueError(f'gain must be two finite values > 0 (diagonal of Gamma), got {gain.tolist()}')
        if gain_convention not in ('multiply', 'inverse'):
            raise ValueError(f"gain_convention must be 'multiply' or 'inverse', got '{gain_convention}'")
        if not max_gap > 0:
            raise ValueError(f'max_gap must be > 0 s, got {max_gap}')
        self.model = model
        self.gain = gain if gain_convention == 'multiply' else 1.0 / gain
        self.gain_convention = gain_convention
        self.normalised = bool(normalised)
        self.initial = dict(initial or {})
        self.max_gap = float(max_gap)
        self.bounds = bounds
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.scales = model.scales(scales)
        self.min_exc = model.min_excitation(min_excitation)
        self.record = record
        self.reset()

    def reset(self) -> None:
        self._k = float(self.initial.get('stiffness', 0.0))
        self._b = float(self.initial.get('damping', 0.0))
        self._adapt = np.zeros(2)         # sum dt G_jj phi_j^2 / m: time constants each parameter adapted over
        self._info = np.zeros((2, 2))     # sum phi_s phi_s^T (scaled regressors)
        self._rhs = np.zeros(2)           # sum phi_s F
        self._yy = 0.0                    # sum F^2
        self._n = 0
        self._rejected = 0
        self._t: float | None = None
        self._max_gain = 0.0
        self._diverged = False
        self.history_t: list[np.ndarray] = []
        self.history_theta: list[np.ndarray] = []

    def update(self, samples: ContactSamples) -> None:
        if len(samples) == 0:
            return
        x, xd, f, t = samples.x, samples.xd, samples.force, samples.t
        with np.errstate(over='ignore'):
            phi_s = np.column_stack((x, xd)) / self.scales
        ok = np.all(np.abs(phi_s) < _LIMIT, axis=1) & (np.abs(f) < _LIMIT)
        self._rejected += int(len(ok) - ok.sum())
        if not ok.all():
            x, xd, f, t, phi_s = x[ok], xd[ok], f[ok], t[ok], phi_s[ok]
        n = len(t)
        if n == 0:
            return
        with np.errstate(over='ignore', invalid='ignore'):
            dt = np.diff(t, prepend=t[0] if self._t is None else self._t)
            dt = np.where((dt > 0) & (dt <= self.max_gap), dt, 0.0)
            # dt phi^T G phi (0 * inf -> 0: no elapsed time, no step)
            step_gain = np.nan_to_num(dt * (self.gain[0] * x * x + self.gain[1] * xd * xd), nan=0.0)
            self._max_gain = max(self._max_gain, float(step_gain.max()))
            norm = 1.0 + step_gain if self.normalised else 1.0
            ak = dt * self.gain[0] * x / norm
            ab = dt * self.gain[1] * xd / norm
            self._adapt += (float(np.nan_to_num(ak * x).sum()), float(np.nan_to_num(ab * xd).sum()))
            ck, cb = ak.tolist(), ab.tolist()
        k, b = self._k, self._b
        hist = [] if self.record else None
        if not self._diverged:
            for xi, vi, fi, ak, ab in zip(x.tolist(), xd.tolist(), f.tolist(), ck, cb):
                e = xi * k + vi * b - fi
                nk = k - ak * e
                nb = b - ab * e
                if not (-_LIMIT < nk < _LIMIT and -_LIMIT < nb < _LIMIT):
                    self._diverged = True
                    break
                k, b = nk, nb
                if hist is not None:
                    hist.append((k, b))
        self._k, self._b = k, b
        self._info += phi_s.T @ phi_s
        self._rhs += phi_s.T @ f
        self._yy += float(f @ f)
        self._n += n
        self._t = float(t[-1])
        if hist is not None:
            self.history_t.append(t[:len(hist)].copy())
            self.history_theta.append(np.array(hist).reshape(-1, 2))

    def trajectory(self) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (t, theta[N, 2]) in SI units (``record=True``)."""
        if not self.history_t:
            return np.zeros(0), np.zeros((0, 2))
        return np.concatenate(self.history_t), np.vstack(self.history_theta)

    def estimate(self) -> ContactEstimate:
        stamp = self._t or 0.0
        extras = {'gain': self.gain.tolist(), 'gain_convention': self.gain_convention,
                  'adaptation_time_constants': self._adapt.tolist(),
                  'normalised': self.normalised, 'max_step_gain': self._max_gain,
                  'rejected': self._rejected, 'covariance_basis': 'least squares over all seen samples'}
        if self._n == 0:
            return failure(self.name, self.model, 'no samples yet', stamp, **extras)
        raw = np.array([self._k, self._b])
        info, rhs, yy = self._info, self._rhs, self._yy
        with np.errstate(over='ignore', invalid='ignore'):
            ridged = info + np.eye(2) * max(float(info.diagonal().max()) * 1e-13, 1e-300)
            theta_ls = np.linalg.solve(ridged, rhs)                 # least squares over the seen samples
            sigma2 = _rss(theta_ls, info, rhs, yy) / max(self._n - 2, 1)
            q = quality_from_information(info, self._n, sigma2, self.scales, self.min_exc)
            lag = raw - theta_ls / self.scales
            cov = make_spd(q.covariance + np.outer(lag, lag))
            rss_ia = _rss(raw * self.scales, info, rhs, yy)
        values, active = project(raw, self.model.names, self.bounds)
        valid, reason = verdict(self.model.names, values, q, self._n, self.min_samples, self.max_condition)
        if self._diverged:
            valid, reason = False, 'diverged: estimate left the numeric range (gain too high for dt and phi)'
        elif not self.normalised and self._max_gain >= 2.0:
            valid, reason = False, (f'unstable Euler step: dt phi^T Gamma phi reached {self._max_gain:.3g} '
                                    '>= 2; lower the gain or use normalised=True')
        elif valid and abs(lag[0]) > max(MAX_LAG * abs(theta_ls[0] / self.scales[0]), 3.0 * q.covariance[0, 0] ** 0.5):
            valid, reason = False, (f'not converged: stiffness lags the least-squares solution of the same data '
                                    f'by {lag[0]:.4g} N/m (raise the gain)')
        # the excitation requirement of the law, judged on the parameters whose regressor is excited (the
        # estimator's own flags, before any verdict turns a flag off)
        extras['adaptation_excited'] = bool(all(e >= MIN_ADAPTATION for e, i in zip(self._adapt, q.identifiable) if i))
        # the data-supported solution the trust checks compare the adaptive law with (contact_dynamics_common.trust)
        extras['reference'] = (theta_ls / self.scales).tolist()
        extras['reference_std'] = np.sqrt(np.diagonal(q.covariance)).tolist()
        return ContactEstimate(
            algorithm=self.name, model=self.model.name, names=self.model.names, values=values,
            covariance=cov, valid=valid, reason=reason, residual_rms=float(np.sqrt(rss_ia / self._n)),
            condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
            bounds_active=active, samples_used=self._n, stamp=stamp, extras=extras)


#: largest relative stiffness lag behind the least-squares solution of the same data for a valid estimate
MAX_LAG = 0.05
#: adaptation time constants (E_j, module docstring) an identifiable parameter needs before the law can converge
MIN_ADAPTATION = 5.0


def adaptation_excited(est: ContactEstimate) -> bool:
    """Did the data excite the adaptive law enough to converge (module docstring: every identifiable parameter
    adapted over >= MIN_ADAPTATION time constants)? True for an estimate without that figure (not adaptive)."""
    return bool(est.extras.get('adaptation_excited', True))


def _rss(theta_s: np.ndarray, info: np.ndarray, rhs: np.ndarray, yy: float) -> float:
    """sum (F - phi_s^T theta_s)^2 from the accumulated statistics (clamped at 0 against round-off)."""
    return max(yy - 2.0 * float(theta_s @ rhs) + float(theta_s @ info @ theta_s), 0.0)
