"""Kinematics of the Stewart-Gough platform, vectorised over N samples (spec sec. 2).

Generalised coordinates q = [x_c, y_c, z_c, phi, theta, psi] (COM in {W} [m]; z-x-z Euler angles [rad],
R = Rz(phi) Rx(theta) Rz(psi) maps {P} to {W}), speeds qd = [v_c, beta_dot], accelerations qdd.
  r_pc,i = R p_i ;  l_i = r_c + r_pc,i - b_i ;  L_i = |l_i| ;  s3,i = l_i / L_i
  omega = U(beta) beta_dot ;  alpha = U beta_ddot + U_dot beta_dot
  J = [s3_i ; U^T (r_pc,i x s3_i)] (6x6, column per strut),  L_dot = J^T qd
Rotations come from scipy.spatial.transform.Rotation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .machine import Machine


def rotation(euler: np.ndarray) -> np.ndarray:
    """(N, 3) z-x-z Euler angles -> (N, 3, 3) R = Rz(phi) Rx(theta) Rz(psi)."""
    return Rotation.from_euler('ZXZ', np.atleast_2d(euler)).as_matrix()


def u_matrix(euler: np.ndarray) -> np.ndarray:
    """omega = U beta_dot (eq. 2.14); det U = -sin(theta)."""
    e = np.atleast_2d(euler)
    cf, sf, ct, st = np.cos(e[:, 0]), np.sin(e[:, 0]), np.cos(e[:, 1]), np.sin(e[:, 1])
    U = np.zeros((len(e), 3, 3))
    U[:, 0, 1], U[:, 0, 2] = cf, sf * st
    U[:, 1, 1], U[:, 1, 2] = sf, -cf * st
    U[:, 2, 0], U[:, 2, 2] = 1.0, ct
    return U


def u_dot(euler: np.ndarray, euler_rate: np.ndarray) -> np.ndarray:
    """Time derivative of U (eq. 2.38)."""
    e, r = np.atleast_2d(euler), np.atleast_2d(euler_rate)
    cf, sf, ct, st = np.cos(e[:, 0]), np.sin(e[:, 0]), np.cos(e[:, 1]), np.sin(e[:, 1])
    fd, td = r[:, 0], r[:, 1]
    Ud = np.zeros((len(e), 3, 3))
    Ud[:, 0, 1], Ud[:, 0, 2] = -sf * fd, cf * st * fd + sf * ct * td
    Ud[:, 1, 1], Ud[:, 1, 2] = cf * fd, sf * st * fd - cf * ct * td
    Ud[:, 2, 2] = -st * td
    return Ud


def skew(v: np.ndarray) -> np.ndarray:
    """(..., 3) -> (..., 3, 3) cross-product matrix [v]x."""
    S = np.zeros(v.shape + (3,))
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


@dataclass
class Pose:
    """Per-sample kinematic quantities (N samples, 6 struts)."""
    q: np.ndarray          # (N, 6)
    R: np.ndarray          # (N, 3, 3)
    U: np.ndarray          # (N, 3, 3)
    r_pc: np.ndarray       # (N, 6, 3) platform joint offsets in {W}
    L: np.ndarray          # (N, 6)
    s3: np.ndarray         # (N, 6, 3)
    J: np.ndarray          # (N, 6, 6)


def pose(m: Machine, q: np.ndarray) -> Pose:
    q = np.atleast_2d(np.asarray(q, dtype=float))
    R = rotation(q[:, 3:])
    U = u_matrix(q[:, 3:])
    r_pc = np.einsum('nij,kj->nki', R, m.platform)
    l = q[:, None, :3] + r_pc - m.base[None]
    L = np.linalg.norm(l, axis=2)
    s3 = l / L[..., None]
    J = np.empty((len(q), 6, 6))
    J[:, :3, :] = s3.transpose(0, 2, 1)
    J[:, 3:, :] = np.einsum('nji,nkj->nik', U, np.cross(r_pc, s3))
    return Pose(q, R, U, r_pc, L, s3, J)


def strut_lengths(m: Machine, q: np.ndarray) -> np.ndarray:
    """Inverse kinematics L(q), (N, 6) [m]."""
    return pose(m, q).L


def jacobian(m: Machine, q: np.ndarray) -> np.ndarray:
    """(N, 6, 6) J with L_dot = J^T qd."""
    return pose(m, q).J


@dataclass
class StrutMotion:
    """Strut velocities and accelerations from platform motion (eq. 2.13-2.36)."""
    Ld: np.ndarray         # (N, 6)
    Ldd: np.ndarray        # (N, 6)
    omega: np.ndarray      # (N, 3) platform angular velocity in {W}
    alpha: np.ndarray      # (N, 3)
    w_s: np.ndarray        # (N, 6, 3) strut angular velocity (perpendicular to s3)
    a_s: np.ndarray        # (N, 6, 3) strut angular acceleration
    a_p: np.ndarray        # (N, 6, 3) platform joint accelerations


def strut_motion(p: Pose, qd: np.ndarray, qdd: np.ndarray) -> StrutMotion:
    qd, qdd = np.atleast_2d(qd), np.atleast_2d(qdd)
    omega = np.einsum('nij,nj->ni', p.U, qd[:, 3:])
    alpha = np.einsum('nij,nj->ni', p.U, qdd[:, 3:]) + np.einsum('nij,nj->ni', u_dot(p.q[:, 3:], qd[:, 3:]), qd[:, 3:])
    w = omega[:, None, :]
    v_p = qd[:, None, :3] + np.cross(w, p.r_pc)
    a_p = qdd[:, None, :3] + np.cross(alpha[:, None, :], p.r_pc) + np.cross(w, np.cross(w, p.r_pc))
    Ld = np.einsum('nki,nki->nk', p.s3, v_p)
    w_s = np.cross(p.s3, v_p) / p.L[..., None]
    Ldd = np.einsum('nki,nki->nk', p.s3, a_p) + p.L * np.einsum('nki,nki->nk', w_s, w_s)
    a_s = (np.cross(p.s3, a_p) - 2.0 * Ld[..., None] * w_s) / p.L[..., None]
    return StrutMotion(Ld, Ldd, omega, alpha, w_s, a_s, a_p)


def forward_kinematics(m: Machine, L: np.ndarray, q0: np.ndarray | None = None, tol: float = 1e-12,
                       max_iter: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Newton FK, vectorised: q <- q + J^-T (L_meas - L(q)) from q0 (default home) for every sample.

    Returns (q (N, 6), converged (N,) bool); a sample is converged when max|L(q) - L_meas| < tol [m].
    """
    L = np.atleast_2d(np.asarray(L, dtype=float))
    q = np.tile(m.home_q if q0 is None else np.asarray(q0, float), (len(L), 1)) if (q0 is None or np.ndim(q0) == 1) \
        else np.array(q0, dtype=float)
    finite = np.isfinite(L).all(axis=1)
    Lc = np.where(finite[:, None], L, strut_lengths(m, m.home_q))
    done = np.zeros(len(L), bool)
    for _ in range(max_iter):
        p = pose(m, q)
        r = Lc - p.L
        done = np.abs(r).max(axis=1) < tol
        if done.all():
            break
        with np.errstate(all='ignore'):
            dq = np.linalg.solve(p.J.transpose(0, 2, 1), r[..., None])[..., 0]
        dq[done] = 0.0
        dq[~np.isfinite(dq)] = 0.0
        q = q + dq
    # one more Newton step for every sample: quadratic convergence takes the converged ones to round-off, so
    # the result no longer depends on the starting pose (live batches and run-bag agree to the last bits)
    with np.errstate(all='ignore'):
        p = pose(m, q)
        dq = np.linalg.solve(p.J.transpose(0, 2, 1), (Lc - p.L)[..., None])[..., 0]
    polish = done & np.isfinite(dq).all(axis=1)
    q[polish] += dq[polish]
    ok = done & finite & (np.abs(np.sin(q[:, 4])) > 1e-6)
    return q, ok


def rates_from_struts(m: Machine, q: np.ndarray, Ld: np.ndarray, Ldd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """qd = J^-T L_dot and qdd from J^T qdd = c (spec sec. 2.5)."""
    p = pose(m, q)
    JT = p.J.transpose(0, 2, 1)
    qd = np.linalg.solve(JT, np.atleast_2d(Ld)[..., None])[..., 0]
    sm = strut_motion(p, qd, np.zeros_like(qd))       # Ldd of qdd = 0: the velocity-product part
    qdd = np.linalg.solve(JT, (np.atleast_2d(Ldd) - sm.Ldd)[..., None])[..., 0]
    return qd, qdd
