"""The dissertation's benchmark (ch. 3, S1): a cart (mass M) carrying an inverted double pendulum of uniform rods
(l1, m1; l2, m2), absolute angles from the vertical; parameters w = [l1, l2, m1, m2, M] (m, kg).

Equations 3.3-3.5 as residuals E(w; state, acceleration), with the measurement d = [F, 0, 0]:
  E1 = (M+m1+m2) xdd + (m1/2+m2) l1 th1dd c1 + (m2/2) l2 th2dd c2 - (m1/2+m2) l1 th1d^2 s1 - (m2/2) l2 th2d^2 s2
  E2 = (m1/2+m2) l1 xdd c1 + (m1/3+m2) l1^2 th1dd + (m2/2) l1 l2 th2dd c21 - (m1/2+m2) g l1 s1 - (m2/2) l1 l2 th2d^2 s21
  E3 = (m2/2) l2 xdd c2 + (m2/2) l1 l2 th1dd c21 + (m2/3) l2^2 th2dd - (m2/2) g l2 s2 + (m2/2) l1 l2 th1d^2 s21
E is non-linear in w (l1^2, l1 l2, m l products): the UKF's generic hx path. With F = 0 the equations are
homogeneous in the masses: lengths and mass ratios are identifiable, absolute masses are not.
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

G = 9.81
NAMES = ('l1', 'l2', 'm1', 'm2', 'M')
TRUTH = np.array([0.5, 0.75, 0.75, 0.5, 1.5])       # [D] spec 5.5 assumed truth


def residual(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """E for parameters W (..., 5) and samples X (..., 9) = [x, xd, th1, th1d, th2, th2d, xdd, th1dd, th2dd]."""
    l1, l2, m1, m2, M = (W[..., i] for i in range(5))
    _, _, t1, t1d, t2, t2d, xdd, t1dd, t2dd = (X[..., i] for i in range(9))
    c1, s1, c2, s2 = np.cos(t1), np.sin(t1), np.cos(t2), np.sin(t2)
    c21, s21 = np.cos(t2 - t1), np.sin(t2 - t1)
    a, b = m1 / 2 + m2, m2 / 2
    E1 = (M + m1 + m2) * xdd + a * l1 * t1dd * c1 + b * l2 * t2dd * c2 - a * l1 * t1d ** 2 * s1 - b * l2 * t2d ** 2 * s2
    E2 = (a * l1 * xdd * c1 + (m1 / 3 + m2) * l1 ** 2 * t1dd + b * l1 * l2 * t2dd * c21 - a * G * l1 * s1
          - b * l1 * l2 * t2d ** 2 * s21)
    E3 = (b * l2 * xdd * c2 + b * l1 * l2 * t1dd * c21 + (m2 / 3) * l2 ** 2 * t2dd - b * G * l2 * s2
          + b * l1 * l2 * t1d ** 2 * s21)
    return np.stack([E1, E2, E3], axis=-1)


def hx(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """UKF measurement function: W (B, S, 5), X (9,) -> (B, S, 3)."""
    return residual(W, X[None, None, :] if X.ndim == 1 else X[:, None, :])


def accelerations(w, state, F) -> np.ndarray:
    """Forward dynamics: M(q) qdd = rhs (the same equations solved for xdd, th1dd, th2dd)."""
    l1, l2, m1, m2, M = w
    _, _, t1, t1d, t2, t2d = state
    c1, s1, c2, s2 = np.cos(t1), np.sin(t1), np.cos(t2), np.sin(t2)
    c21, s21 = np.cos(t2 - t1), np.sin(t2 - t1)
    a, b = m1 / 2 + m2, m2 / 2
    A = np.array([[M + m1 + m2, a * l1 * c1, b * l2 * c2],
                  [a * l1 * c1, (m1 / 3 + m2) * l1 ** 2, b * l1 * l2 * c21],
                  [b * l2 * c2, b * l1 * l2 * c21, (m2 / 3) * l2 ** 2]])
    rhs = np.array([F + a * l1 * t1d ** 2 * s1 + b * l2 * t2d ** 2 * s2,
                    a * G * l1 * s1 + b * l1 * l2 * t2d ** 2 * s21,
                    b * G * l2 * s2 - b * l1 * l2 * t1d ** 2 * s21])
    return np.linalg.solve(A, rhs)


def multisine_force(t, amplitude: float = 5.0):
    w = 2 * np.pi * np.array([0.3, 0.7, 1.1])
    return amplitude * np.sin(np.multiply.outer(t, w) + np.array([0.0, 1.0, 2.0])).sum(-1)


def simulate(w=TRUTH, duration: float = 10.0, rate: float = 100.0, force=None,
             x0=(0.0, 0.0, 0.1, 0.0, -0.05, 0.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, X (N, 9), F (N,)) sampled at ``rate``; RK45 at rtol 1e-10. force: callable t -> F or None (F = 0)."""
    f = force or (lambda t: 0.0 * t)
    t = np.arange(int(round(duration * rate))) / rate
    sol = solve_ivp(lambda tt, y: np.concatenate([y[[1, 3, 5]], accelerations(w, y, f(tt))])[[0, 3, 1, 4, 2, 5]],
                    (0, t[-1]), np.asarray(x0, float), t_eval=t, rtol=1e-10, atol=1e-12)
    S = sol.y.T
    F = np.asarray(f(t), float) * np.ones(len(t))
    acc = np.array([accelerations(w, s, fk) for s, fk in zip(S, F)])
    return t, np.concatenate([S, acc], axis=1), F


def gauss_newton(X: np.ndarray, F: np.ndarray, w0=np.ones(5), tol: float = 1e-10) -> np.ndarray:
    """Batch Gauss-Newton least squares (scipy least_squares, trust region) on the stacked residuals."""
    Z = np.stack([F, np.zeros_like(F), np.zeros_like(F)], axis=1)
    sol = least_squares(lambda w: (residual(w, X) - Z).ravel(), w0, bounds=(1e-6, np.inf), xtol=tol, ftol=tol,
                        gtol=tol, method='trf')
    return sol.x
