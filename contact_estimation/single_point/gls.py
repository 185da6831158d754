"""Global least squares (Agar 2004 §2.5, eqs. 2.10-2.11): one estimate from a whole window.

    theta = argmin || Phi theta - F ||^2        (QR / lstsq on column-scaled Phi)
    cov   = sigma^2 (Phi^T Phi)^-1,  sigma^2 = RSS / (N - p)

Optional bounds use ``scipy.optimize.lsq_linear`` (the thesis projected damping onto b >= 0).
``SlidingWindowGLS`` is the online form over the last ``window_s`` seconds: it keeps the window's
sufficient statistics (Phi^T Phi, Phi^T F, F^T F, sum F, N), adding arriving samples and subtracting
leaving ones exactly per sample, and solves the (column-scaled) normal equations on demand;
``update_and_report`` gives the window statistics after any prefixes of a block in one pass.

Published sigma (``assess``): sigma^2 (Phi^T Phi)^-1 raised per parameter to the residual HAC sandwich, the
gap to an instrumental-variables fit and to the parallel-filtered fit (its HAC sandwich, EIV bias of the x
noise through the kernels and two-bandwidth conditioning term), and omitted-term shifts; the sliding-window
form is a tracking estimator (its sigma also holds the tracking spread, see ``rls``).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import lsq_linear

from .estimate import ContactEstimate, failure, quality_batch, verdict
from .models import KELVIN_VOIGT, ContactModel
from .reporting import at_counts, check_counts
from .samples import ContactSamples


class GlobalLeastSquares:
    name = 'gls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, bounds: dict | None = None, min_samples: int = 10,
                 max_condition: float = 1e8, scales: dict | None = None, min_excitation: dict | None = None):
        self.model = model
        self.bounds = bounds
        self.min_samples = min_samples
        self.max_condition = max_condition
        self.scales = model.scales(scales)
        self.min_exc = model.min_excitation(min_excitation)

    def fit(self, samples: ContactSamples) -> ContactEstimate:
        n, p = len(samples), self.model.size
        stamp = float(samples.t[-1]) if n else 0.0
        if n <= p:
            return failure(self.name, self.model, f'too few samples ({n})', stamp, n)
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.scales
        y = samples.force
        if self.bounds:
            res = lsq_linear(phi, y, bounds=self._scaled_bounds(), method='bvls')
            theta, active = res.x, tuple(bool(a != 0) for a in res.active_mask)
        else:
            theta, active = np.linalg.lstsq(phi, y, rcond=None)[0], (False,) * p
        resid = y - phi @ theta
        ss_tot = float(((y - y.mean()) ** 2).sum())
        return self._finish_batch(theta[None], [active], (phi.T @ phi)[None], np.array([float(resid @ resid)]),
                                  np.array([ss_tot]), np.array([n]), np.array([stamp]), np.array([float(y @ y)]))[0]

    def fit_normal(self, info: np.ndarray, rhs: np.ndarray, yy: float, ysum: float, n: int,
                   stamp: float) -> ContactEstimate:
        """The same estimate from sufficient statistics of the scaled regressors (info = Phi^T Phi, rhs = Phi^T F)."""
        return self.fit_normal_batch(np.asarray(info)[None], np.asarray(rhs)[None], np.array([yy]),
                                     np.array([ysum]), np.array([n]), np.array([stamp]))[0]

    def fit_normal_batch(self, info: np.ndarray, rhs: np.ndarray, yy: np.ndarray, ysum: np.ndarray,
                         n: np.ndarray, stamp: np.ndarray) -> list[ContactEstimate]:
        """``fit_normal`` of K windows (info (K, p, p), rhs (K, p), yy, ysum, n, stamp (K,)).

        theta = (Phi^T Phi + eps I)^-1 Phi^T F  (eps = max(1e-13 max diag, 1e-300); bounded least squares
        on the Cholesky factor instead when bounds are set and theta leaves them),
        RSS = F^T F - 2 theta^T Phi^T F + theta^T Phi^T Phi theta,  SS_tot = F^T F - (sum F)^2 / N.
        """
        p = self.model.size
        out = [failure(self.name, self.model, f'too few samples ({int(n[k])})', float(stamp[k]), int(n[k]))
               if n[k] <= p else None for k in range(len(n))]
        ok = np.flatnonzero(n > p)
        info, rhs, yy, ysum, n, stamp = info[ok], rhs[ok], yy[ok], ysum[ok], n[ok], stamp[ok]
        ridge = np.maximum(np.diagonal(info, axis1=1, axis2=2).max(axis=1) * 1e-13, 1e-300)
        ridged = info + np.eye(p) * ridge[:, None, None]
        theta = np.linalg.solve(ridged, rhs[:, :, None])[:, :, 0]
        active = [(False,) * p] * len(ok)
        if self.bounds:
            lo, hi = self._scaled_bounds()
            for k in np.flatnonzero(np.any(theta < lo, axis=1) | np.any(theta > hi, axis=1)).tolist():
                chol = np.linalg.cholesky(ridged[k])               # ||L^T theta - L^-1 rhs||^2 + const
                res = lsq_linear(chol.T, np.linalg.solve(chol, rhs[k]), bounds=(lo, hi), method='bvls')
                theta[k], active[k] = res.x, tuple(bool(a != 0) for a in res.active_mask)
        rss = np.maximum(yy - 2.0 * np.einsum('ki,ki->k', theta, rhs)
                         + np.einsum('ki,kij,kj->k', theta, info, theta), 0.0)
        ss_tot = np.maximum(yy - ysum * ysum / n, 0.0)
        for k, est in zip(ok.tolist(), self._finish_batch(theta, active, info, rss, ss_tot, n, stamp, yy)):
            out[k] = est
        return out

    def _finish_batch(self, theta: np.ndarray, active: list, info: np.ndarray, rss: np.ndarray,
                      ss_tot: np.ndarray, n: np.ndarray, stamp: np.ndarray, yy: np.ndarray) -> list[ContactEstimate]:
        """Estimates of K fits: sigma^2 = RSS / (N - p), rms = sqrt(RSS / N), R^2 = 1 - RSS / SS_tot;
        rms(F) = sqrt(F^T F / N) for the verdict's unexcited-share rule."""
        p = self.model.size
        qualities = quality_batch(info, n, rss / (n - p), self.scales, self.min_exc)
        values = theta / self.scales
        rms = np.sqrt(rss / n)
        r2 = 1.0 - np.divide(rss, ss_tot, out=np.ones_like(rss), where=ss_tot > 0)
        out = []
        force_rms = np.sqrt(np.maximum(yy, 0.0) / n)
        for q, v, a, rms_k, n_k, t_k, r2_k, f_k in zip(qualities, values, active, rms.tolist(), n.tolist(),
                                                        stamp.tolist(), r2.tolist(), force_rms.tolist()):
            valid, reason = verdict(self.model.names, v, q, n_k, self.min_samples, self.max_condition, f_k)
            out.append(ContactEstimate.of(
                algorithm=self.name, model=self.model.name, names=self.model.names, values=v,
                covariance=q.covariance, valid=valid, reason=reason, residual_rms=rms_k,
                condition_number=q.condition_number, excitation=q.excitation, identifiable=q.identifiable,
                bounds_active=a, samples_used=n_k, stamp=t_k, extras={'r_squared': r2_k}))
        return out

    def _scaled_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo = np.array([self.bounds.get(nm, (-np.inf, np.inf))[0] for nm in self.model.names]) * self.scales
        hi = np.array([self.bounds.get(nm, (-np.inf, np.inf))[1] for nm in self.model.names]) * self.scales
        return lo, hi


class SlidingWindowGLS:
    """GLS over the samples of the last ``window_s`` seconds, from running sufficient statistics.

    The statistics are kept as one vector z = sum over the window of the per-sample row
    [phi phi^T (p*p) | phi F (p) | F^2 | F] (phi scaled); an update adds the block's rows and subtracts
    the rows that left the window (t <= t_newest - window_s).
    """

    name = 'gls'

    def __init__(self, model: ContactModel = KELVIN_VOIGT, *, window_s: float = 10.0, **kwargs):
        if not window_s > 0:
            raise ValueError(f'window must be > 0 s, got {window_s}')
        self.window_s = float(window_s)
        self.gls = GlobalLeastSquares(model, **kwargs)
        self.model = model
        self.reset()

    def reset(self) -> None:
        p = self.model.size
        self._t = np.zeros(0)
        self._rows = np.zeros((0, p * p + p + 2))
        self._z = np.zeros(p * p + p + 2)
        self._cached: ContactEstimate | None = None

    def update(self, samples: ContactSamples) -> None:
        if len(samples):
            self._advance(samples, np.zeros(0, dtype=np.int64))
            self._cached = None

    def update_and_report(self, samples: ContactSamples, counts: np.ndarray) -> list[ContactEstimate]:
        """Process the block; return the estimate after its first counts[j] samples, for each j."""
        counts = check_counts(counts, len(samples))
        if not len(samples):
            return [self.estimate()] * len(counts)
        reports = at_counts(counts, lambda c: self._fits(*self._advance(samples, c)))
        self._cached = None
        return reports

    def estimate(self) -> ContactEstimate:
        if self._cached is None:
            stamp = float(self._t[-1]) if len(self._t) else 0.0
            self._cached = self._fits(self._z[None], np.array([len(self._t)]), np.array([stamp]))[0]
        return self._cached

    def _advance(self, samples: ContactSamples, counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """Add the block to the window; return (z, N, newest t) after the first counts[j] samples of it.

        With A = window + block (rows a_i, times t_i), the window after c block samples is [s_c, e_c),
        e_c = len(window) + c, s_c = #{i: t_i <= t_{e_c - 1} - window_s}. z is advanced exactly as
        successive updates would: z += sum(a[e_prev:e]); z -= sum(a[s_prev:s]), in that order.
        """
        phi = self.model.regressor(samples.x, samples.xd, samples.xdd) / self.gls.scales
        y = samples.force
        rows = np.column_stack((np.einsum('ni,nj->nij', phi, phi).reshape(len(y), -1), phi * y[:, None],
                                y * y, y))
        t = np.concatenate((self._t, samples.t))
        rows = np.concatenate((self._rows, rows))
        ends = len(self._t) + np.append(counts, len(samples))        # the last one: the whole block
        newest = t[np.maximum(ends - 1, 0)]
        starts = np.where(ends > 0, np.searchsorted(t, newest - self.window_s, side='right'), 0)
        steps = np.empty((2 * len(ends) + 1, rows.shape[1]))
        steps[0] = self._z
        steps[1::2] = _segment_sums(rows, np.append(len(self._t), ends))
        steps[2::2] = -_segment_sums(rows, np.append(0, starts))
        z = np.cumsum(steps, axis=0)[2::2]
        self._z, self._t, self._rows = z[-1], t[starts[-1]:], rows[starts[-1]:]
        stamp = np.where(ends > 0, newest, 0.0)
        return z[:-1], (ends - starts)[:-1], stamp[:-1]

    def _fits(self, z: np.ndarray, n: np.ndarray, stamp: np.ndarray) -> list[ContactEstimate]:
        """GLS estimates from K window statistics z (K, p*p + p + 2)."""
        p = self.model.size
        out = self.gls.fit_normal_batch(z[:, :p * p].reshape(-1, p, p), z[:, p * p:p * p + p], z[:, -2],
                                        z[:, -1], n, stamp)
        for est in out:
            est.extras['window_s'] = self.window_s
        return out


def _segment_sums(rows: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """sum(rows[bounds[i]:bounds[i+1]]) for each i (zeros for empty segments); bounds nondecreasing."""
    padded = np.concatenate((rows, np.zeros((1, rows.shape[1]))))
    sums = np.add.reduceat(padded, bounds, axis=0)[:-1]
    return np.where((np.diff(bounds) > 0)[:, None], sums, 0.0)
