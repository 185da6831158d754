"""Synthetic data sets with ground truth (spec sec. 5.1, 7): actuated sinusoids / multisine (prescribed
motion, forces from inverse dynamics), free fall (F_a = 0, forward dynamics), state noise, COM mismatch.

Noise follows the dissertation: uniform +/-(level x channel range) added to q, qd, qdd (the estimator's
inputs); the forces are left exact.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.integrate import solve_ivp

from . import dynamics as D
from . import kinematics as K
from . import trajectories as T
from .geometry import Machine

FRICTION_TRUTH = np.array([[250, 18], [220, 15], [280, 20], [240, 16], [200, 14], [260, 22]], float).ravel()  # [A] 5.5


@dataclass
class Record:
    name: str
    t: np.ndarray            # (N,) [s]
    q: np.ndarray            # (N, 6) estimator-side platform pose (geometric centre)
    qd: np.ndarray
    qdd: np.ndarray
    L: np.ndarray            # (N, 6) strut lengths [m]
    Ld: np.ndarray           # (N, 6) [m/s]
    F: np.ndarray            # (N, 6) actuator forces [N]
    theta8: np.ndarray       # truth, base parameters
    friction: np.ndarray | None = None     # truth (12,) or None
    com_offset: np.ndarray | None = None   # true COM - geometric centre in {P} [m]

    @property
    def truth(self) -> np.ndarray:
        return self.theta8 if self.friction is None else np.concatenate([self.theta8, self.friction])


def com_motion(q, qd, qdd, c):
    """Pose/speeds/accelerations of a point at offset c (in {P}) from the pose point."""
    R = K.rotation(q[:, 3:])
    U = K.u_matrix(q[:, 3:])
    w = np.einsum('nij,nj->ni', U, qd[:, 3:])
    al = np.einsum('nij,nj->ni', U, qdd[:, 3:]) + np.einsum('nij,nj->ni', K.u_dot(q[:, 3:], qd[:, 3:]), qd[:, 3:])
    rc = R @ c
    q2, qd2, qdd2 = q.copy(), qd.copy(), qdd.copy()
    q2[:, :3] += rc
    qd2[:, :3] += np.cross(w, rc)
    qdd2[:, :3] += np.cross(al, rc) + np.cross(w, np.cross(w, rc))
    return q2, qd2, qdd2


def actuated(m: Machine, trajectory: str = 'x', duration: float = 4.0, rate: float = 1000.0, theta12=None,
             friction=None, friction_model: str = 'continuous', com_offset=None, scale: float = 1.0,
             omega: float = T.W_TABLE) -> Record:
    """Prescribed motion about home; F_a from the full-tensor inverse dynamics (with friction if given)."""
    t = np.arange(int(round(duration * rate))) / rate
    q, qd, qdd = T.make(trajectory, scale, omega).sample(m.home_q, t)
    th12 = m.theta12() if theta12 is None else np.asarray(theta12, float)
    if com_offset is not None:
        c = np.asarray(com_offset, float)
        mt = replace(m, platform=m.platform - c)
        qt, qdt, qddt = com_motion(q, qd, qdd, c)
        F = D.inverse_dynamics(mt, th12, qt, qdt, qddt, friction=friction, friction_model=friction_model)
    else:
        F = D.inverse_dynamics(m, th12, q, qd, qdd, friction=friction, friction_model=friction_model)
    p = K.pose(m, q)
    sm = K.strut_motion(p, qd, qdd)
    fr = None if friction is None else np.asarray(friction, float)
    return Record(f'FA_{trajectory.upper()}_{"W" if fr is not None else "WO"}', t, q, qd, qdd, p.L, sm.Ld, F,
                  D.base_from_12(th12), fr, None if com_offset is None else np.asarray(com_offset, float))


def free_fall(m: Machine, duration: float = 0.3, rate: float = 1000.0, theta12=None) -> Record:
    """F_a = 0 from rest at home (no friction); integrated with RK45 at rtol 1e-10, sampled at ``rate``."""
    th8 = D.base_from_12(m.theta12() if theta12 is None else theta12)
    t = np.arange(int(round(duration * rate))) / rate

    def f(_, y):
        qdd = D.forward_dynamics(m, th8, y[None, :6], y[None, 6:], np.zeros((1, 6)))[0]
        return np.concatenate([y[6:], qdd])

    sol = solve_ivp(f, (0, t[-1]), np.concatenate([m.home_q, np.zeros(6)]), t_eval=t, rtol=1e-10, atol=1e-12)
    q, qd = sol.y[:6].T, sol.y[6:].T
    qdd = D.forward_dynamics(m, th8, q, qd, np.zeros_like(q))
    p = K.pose(m, q)
    sm = K.strut_motion(p, qd, qdd)
    return Record('FF_WO', t, q, qd, qdd, p.L, sm.Ld, np.zeros_like(q), th8)


def with_state_noise(rec: Record, level: float, seed: int = 0) -> Record:
    """Uniform noise +/-(level x range) on every q, qd, qdd channel (L, Ld, F unchanged)."""
    rng = np.random.default_rng(seed)

    def noisy(a):
        rng_ = a.max(axis=0) - a.min(axis=0)
        return a + rng.uniform(-1, 1, a.shape) * level * rng_

    return replace(rec, q=noisy(rec.q), qd=noisy(rec.qd), qdd=noisy(rec.qdd), name=f'{rec.name}+{level:g}noise')
