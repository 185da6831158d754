"""Feed-forward of the identified Stewart-Gough model (ROS-free).

    F_ff(t) = Y(q(t), qd(t), qdd(t)) theta                      [N per strut]
    sigma_i(t)^2 = (Y Sigma Y^T)_ii                             [N^2]

Y is ``dynamics.regressor`` (the 8 base parameters, plus the 12 friction ones when the estimate carries
them), q, qd, qdd the platform pose and rates of the desired strut lengths L, L_dot, L_ddot
(``kinematics.forward_kinematics``, ``rates_from_struts``). theta and Sigma come from ``parameters_for``:
a parameter the identifier reports as identified or converging in a valid estimate takes its estimated value
and covariance; every other one (not_excited, prior_only, never_identifiable, or no valid estimate yet) takes
its configured value with variance (configured_rel_std x value)^2 and no correlation: the output says which.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dynamics as D
from .. import kinematics as K

#: identifier flags whose value and covariance the feed-forward takes from the estimate
FROM_ESTIMATE = ('identified', 'converging')


@dataclass
class FeedForwardParameters:
    names: tuple
    theta: np.ndarray            # (n,)
    covariance: np.ndarray       # (n, n)
    source: list                 # per parameter: 'identified' | 'converging' | 'configured'

    def configured(self) -> list:
        return [n for n, s in zip(self.names, self.source) if s == 'configured']


def parameters_for(configured: dict, configured_rel_std: float, estimate: dict | None = None
                   ) -> FeedForwardParameters:
    """theta and Sigma of the feed-forward (module docstring).

    ``configured``: {name: value} for at least the base parameters (and friction when the estimate has it);
    ``estimate``: {'names', 'values', 'covariance' (row-major n*n or [-1]), 'flags', 'valid'} as in
    contact_dynamics/ParameterEstimate, or None."""
    names = tuple(estimate['names']) if estimate else D.BASE_NAMES
    n = len(names)
    theta = np.array([float(configured[k]) for k in names])
    cov = np.diag((configured_rel_std * theta) ** 2)
    source = ['configured'] * n
    if estimate and estimate.get('valid'):
        values = np.asarray(estimate['values'], float)
        c = np.asarray(estimate['covariance'], float)
        flags = list(estimate.get('flags') or [])
        if c.size == n * n and len(flags) == n and np.all(np.isfinite(values)) and np.all(np.isfinite(c)):
            c = c.reshape(n, n)
            use = np.array([f in FROM_ESTIMATE for f in flags])
            theta[use] = values[use]
            cov[np.ix_(use, use)] = 0.5 * (c + c.T)[np.ix_(use, use)]
            source = [f if u else 'configured' for f, u in zip(flags, use)]
    return FeedForwardParameters(names, theta, cov, source)


def pose_rates(machine, L, Ld, Ldd, q0=None):
    """(q, qd, qdd, ok) of the platform for strut lengths L, L_dot, L_ddot (N, 6) [m, m/s, m/s^2]."""
    q, ok = K.forward_kinematics(machine, np.atleast_2d(L), q0=q0)
    qd, qdd = K.rates_from_struts(machine, q, np.atleast_2d(Ld), np.atleast_2d(Ldd))
    return q, qd, qdd, ok


def feedforward(machine, params: FeedForwardParameters, q, qd, qdd, friction_model: str = 'continuous'
                ) -> tuple[np.ndarray, np.ndarray]:
    """(F (N, 6) [N], sigma (N, 6) [N]) = Y theta and sqrt(diag(Y Sigma Y^T)) at the given pose states
    (the friction columns of ``friction_model`` when the parameters include friction)."""
    friction = len(params.names) > len(D.BASE_NAMES)
    Y = D.regressor(machine, np.atleast_2d(q), np.atleast_2d(qd), np.atleast_2d(qdd), friction=friction,
                    friction_model=friction_model)
    F = Y @ params.theta
    var = np.einsum('nkp,pq,nkq->nk', Y, params.covariance, Y)
    return F, np.sqrt(np.maximum(var, 0.0))


class TrajectorySampler:
    """L, L_dot, L_ddot of a desired strut trajectory at any time (piecewise polynomial through its points).

    Per segment: quintic Hermite when every point has positions, velocities and accelerations (exact for the
    quintic that joint_trajectory_controller itself interpolates), cubic Hermite when they have positions and
    velocities, linear in position otherwise (velocity constant, acceleration 0 per segment). Before the first
    point: the first point at rest; after the last: the last point held."""

    def __init__(self, t, positions, velocities=None, accelerations=None):
        self.t = np.asarray(t, float)
        self.p = np.asarray(positions, float)
        n = len(self.t)
        if n < 1 or self.p.shape != (n, 6):
            raise ValueError(f'positions must be (points, 6), got {self.p.shape}')
        if n > 1 and np.any(np.diff(self.t) <= 0):
            raise ValueError('time_from_start must increase strictly')
        if not (np.all(np.isfinite(self.t)) and np.all(np.isfinite(self.p))):
            raise ValueError('non-finite time or position')
        self.v = None if velocities is None else np.asarray(velocities, float).reshape(n, 6)
        self.a = (None if accelerations is None or self.v is None
                  else np.asarray(accelerations, float).reshape(n, 6))
        for arr, what in ((self.v, 'velocity'), (self.a, 'acceleration')):
            if arr is not None and not np.all(np.isfinite(arr)):
                raise ValueError(f'non-finite {what}')

    @property
    def duration(self) -> float:
        return float(self.t[-1])

    def __call__(self, tq) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tq = np.atleast_1d(np.asarray(tq, float))
        if len(self.t) == 1:
            z = np.zeros((len(tq), 6))
            return np.repeat(self.p, len(tq), 0), z, z.copy()
        tc = np.clip(tq, self.t[0], self.t[-1])
        k = np.clip(np.searchsorted(self.t, tc, side='right') - 1, 0, len(self.t) - 2)
        h = (self.t[k + 1] - self.t[k])[:, None]
        s = ((tc - self.t[k])[:, None]) / h
        p0, p1 = self.p[k], self.p[k + 1]
        if self.v is None:
            v = (p1 - p0) / h
            L, Ld, Ldd = p0 + s * (p1 - p0), v, np.zeros_like(v)
        else:
            v0, v1 = self.v[k] * h, self.v[k + 1] * h            # derivatives in s
            a0 = self.a[k] * h * h if self.a is not None else None
            a1 = self.a[k + 1] * h * h if self.a is not None else None
            L, d1, d2 = _hermite(s, p0, p1, v0, v1, a0, a1)
            Ld, Ldd = d1 / h, d2 / (h * h)
        outside = (tq < self.t[0]) | (tq > self.t[-1])
        Ld[outside] = 0.0
        Ldd[outside] = 0.0
        return L, Ld, Ldd


def _hermite(s, p0, p1, v0, v1, a0=None, a1=None):
    """Value, first and second derivative in s of the cubic (a0 None) or quintic Hermite on s in [0, 1]."""
    if a0 is None:
        c = [p0, v0, 3 * (p1 - p0) - 2 * v0 - v1, 2 * (p0 - p1) + v0 + v1]
    else:
        c = [p0, v0, a0 / 2,
             10 * (p1 - p0) - 6 * v0 - 4 * v1 - 1.5 * a0 + 0.5 * a1,
             -15 * (p1 - p0) + 8 * v0 + 7 * v1 + 1.5 * a0 - a1,
             6 * (p1 - p0) - 3 * v0 - 3 * v1 - 0.5 * a0 + 0.5 * a1]
    val = sum(ci * s ** i for i, ci in enumerate(c))
    d1 = sum(i * ci * s ** (i - 1) for i, ci in enumerate(c) if i >= 1)
    d2 = sum(i * (i - 1) * ci * s ** (i - 2) for i, ci in enumerate(c) if i >= 2)
    return val, d1, d2
