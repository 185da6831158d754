"""W5 of wahl_colton.md A10, the flat push (reduced model of the paper's Exp. 1), and the sim-vs-real metrics
of A7.

A planar 3R arm (links 0.40, 0.39, 0.20 m, point masses 3, 2, 1 kg at the link ends, joints in the vertical
x-y plane, gravity compensated) under joint stiffness control τ = K_j (q_d − q) − D_j q̇ carries a TCP sphere
(r = 17.5 mm). Its set-point moves the TCP 5 cm below a table plane y = y_table; the table pushes back with
F_n = max(0, k_c δ − d_c ẏ), δ = y_table + r − y_tcp, and friction −μ F_n v_x / sqrt(v_x² + ε²).
Dynamics M(q) q̈ = τ + Jᵀ F (M = Σ m_i J_iᵀ J_i; the velocity-product terms are left out: they vanish at the
steady state the test compares), semi-implicit Euler.

``static_equilibrium`` solves K_j (q_d − q) + J(q)ᵀ [0, F_n] = 0 with y_tcp(q) = y_table + r − F_n/k_c
(scipy fsolve), the ground truth of the frictionless case. ``metrics`` gives E_max, the pooled σ_e and the
per-joint RMS of q_sim − q_real over repetitions (A7), with PASS/FAIL against the paper's 0.1 rad / 0.04 rad.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import fsolve

LINKS = np.array([0.40, 0.39, 0.20])
MASSES = np.array([3.0, 2.0, 1.0])


@dataclass
class FlatPush:
    k_joint: float = 1000.0        # N*m/rad
    zeta: float = 0.7
    k_c: float = 1e5               # N/m
    d_c: float = 300.0             # N*s/m
    mu: float = 0.0
    eps_v: float = 1e-3
    radius: float = 0.0175
    y_table: float = -0.30
    x_target: float = 0.60
    push_depth: float = 0.05       # TCP commanded this far below the table surface

    def points(self, q):
        """Link-end positions (3, 2) of joint angles q (absolute angles are cumulative sums)."""
        a = np.cumsum(q)
        steps = LINKS[:, None] * np.c_[np.cos(a), np.sin(a)]
        return np.cumsum(steps, axis=0)

    def jacobians(self, q):
        """(3 points, 2, 3) Jacobians of the link-end positions."""
        a = np.cumsum(q)
        J = np.zeros((3, 2, 3))
        for i in range(3):             # point i
            for j in range(i + 1):     # joint j moves links j..i
                for k in range(j, i + 1):
                    J[i, 0, j] += -LINKS[k] * np.sin(a[k])
                    J[i, 1, j] += LINKS[k] * np.cos(a[k])
        return J

    def ik(self, x, y, phi=-np.pi / 2):
        """Joint angles putting the TCP at (x, y) with the last link at absolute angle phi (elbow up)."""
        wx, wy = x - LINKS[2] * np.cos(phi), y - LINKS[2] * np.sin(phi)
        c2 = (wx * wx + wy * wy - LINKS[0] ** 2 - LINKS[1] ** 2) / (2 * LINKS[0] * LINKS[1])
        q2 = -np.arccos(np.clip(c2, -1, 1))
        q1 = np.arctan2(wy, wx) - np.arctan2(LINKS[1] * np.sin(q2), LINKS[0] + LINKS[1] * np.cos(q2))
        return np.array([q1, q2, phi - q1 - q2])

    def q_target(self):
        return self.ik(self.x_target, self.y_table + self.radius - self.push_depth)

    def static_equilibrium(self):
        """(q, F_n) of the frictionless steady state under the target set-point."""
        qd = self.q_target()

        def eqs(u):
            q, fn = u[:3], u[3]
            J = self.jacobians(q)[2]
            tcp = self.points(q)[2]
            return np.r_[self.k_joint * (qd - q) + J.T @ np.array([0.0, fn]),
                         tcp[1] - (self.y_table + self.radius - fn / self.k_c)]

        q0 = self.ik(self.x_target, self.y_table + self.radius)
        u = fsolve(eqs, np.r_[q0, 10.0], xtol=1e-13)
        return u[:3], float(u[3])

    def simulate(self, duration: float = 3.0, dt: float = 2e-4, rate: float = 100.0, seed: int | None = None,
                 sigma_q: float = 0.0, sigma_tau: float = 0.0):
        """t, q, τ (measured), F_n: the set-point ramps from 5 cm above to the target in 1 s, then holds."""
        q_up = self.ik(self.x_target, self.y_table + self.radius + 0.05)
        q_tg = self.q_target()
        q, qd_ = q_up.copy(), np.zeros(3)
        every = int(round(1 / (rate * dt)))
        M0 = sum(MASSES[i] * J.T @ J for i, J in enumerate(self.jacobians(q_up)))
        D = 2 * self.zeta * np.sqrt(self.k_joint * np.diag(M0))
        out_t, out_q, out_tau, out_f = [], [], [], []
        for i in range(int(round(duration / dt)) + 1):
            t = i * dt
            s = min(t / 1.0, 1.0)
            q_set = q_up + (q_tg - q_up) * (3 * s * s - 2 * s ** 3)
            Js = self.jacobians(q)
            tcp = self.points(q)[2]
            v = Js[2] @ qd_
            delta = self.y_table + self.radius - tcp[1]
            fn = max(0.0, self.k_c * delta - self.d_c * v[1]) if delta > 0 else 0.0
            ft = -self.mu * fn * v[0] / np.sqrt(v[0] ** 2 + self.eps_v ** 2)
            tau = self.k_joint * (q_set - q) - D * qd_
            if i % every == 0:
                out_t.append(t)
                out_q.append(q.copy())
                out_tau.append(tau.copy())
                out_f.append(fn)
            M = sum(MASSES[k] * J.T @ J for k, J in enumerate(Js))
            qdd = np.linalg.solve(M, tau + Js[2].T @ np.array([ft, fn]))
            qd_ = qd_ + dt * qdd
            q = q + dt * qd_
        t, qs, taus = np.array(out_t), np.array(out_q), np.array(out_tau)
        if seed is not None:
            rng = np.random.default_rng(seed)
            qs = qs + rng.normal(0, sigma_q, qs.shape)
            taus = taus + rng.normal(0, sigma_tau, taus.shape)
        return t, qs, taus, np.array(out_f)


def metrics(q_sim: np.ndarray, q_real: list[np.ndarray], e_max_bound: float = 0.1,
            sigma_bound: float = 0.04) -> dict:
    """E_max = max |q_sim − q_real| over joints, repetitions and time; σ_e pooled; per-joint RMS (rad)."""
    e = np.stack([q_sim - qr for qr in q_real])             # (repetitions, T, joints)
    out = {'E_max': float(np.abs(e).max()), 'sigma_e': float(e.std()),
           'rms_per_joint': [float(v) for v in np.sqrt((e ** 2).mean(axis=(0, 1)))]}
    out['pass'] = bool(out['E_max'] <= e_max_bound and out['sigma_e'] <= sigma_bound)
    return out
