"""Impact simulations with compliant contact laws (spec §6.3, §8 T9/T10/T15), integrated with scipy's
solve_ivp (rtol 1e-10 by default). Phases: free motion up to first contact at t = 0, compression, restitution,
separation (an event). Recorded: peak contact force [N] and the observed restitution e* = −δ̇⁺/δ̇⁻.

- ``one_dof``: m δ̈ = −f(δ, δ̇) (T9).
- ``two_body``: model TB in full nonlinear dynamics (M(θ1) q̈ + c = −f J_cᵀ), plane touching at t = 0 (T10).
- ``frozen``: a multibody configuration frozen at impact: M Δq̈ = −Λᵀ f_n + Γ_gᵀ f_g in null(Γ_mech), with
  optional compliant ground (f_g = k_g (−g)^1.5 for g < 0) under the wheels (T15 c/d).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..impact.energy import null_space_basis
from ..models.planar import TwoBodyParams, two_body_mass_matrix
from .contact_laws import chi as chi_of, exponent, force


@dataclass
class ImpactRun:
    f_max: float                # peak total obstacle force [N]
    f_max_each: np.ndarray      # peak per contact [N]
    e_star: float               # observed restitution (first contact)
    duration: float             # contact duration [s]
    energy_error: float = 0.0   # max relative drift of the undamped energy (one_dof only)


def _peak(sol, fn, t_end, n=4000):
    t = np.linspace(0.0, t_end, n)
    f = fn(t, sol.sol(t))
    k = int(np.argmax(f.sum(axis=0) if f.ndim > 1 else f))
    # refine around the grid maximum
    lo, hi = t[max(k - 1, 0)], t[min(k + 1, n - 1)]
    tt = np.linspace(lo, hi, 400)
    ff = fn(tt, sol.sol(tt))
    return ff


def one_dof(law: str, e: float = 0.9, m: float = 1.0, k: float = 1.0, v0: float = 1.0, p: float = 1.5,
            rtol: float = 1e-10) -> ImpactRun:
    """Single DOF: δ(0) = 0, δ̇(0) = v0 > 0 until separation."""
    c = chi_of(law, e)
    pe = exponent(law, p)

    def rhs(t, y):
        return [y[1], -force(y[0], y[1], k, pe, c, v0) / m]

    ev = lambda t, y: y[0] if t > 0 else 1.0
    ev.terminal, ev.direction = True, -1
    t_scale = (m / k) ** 0.5 * 20
    sol = solve_ivp(rhs, (0, t_scale * 10), [0.0, v0], rtol=rtol, atol=1e-14, events=ev, dense_output=True,
                    method='DOP853')
    t_end = sol.t[-1]
    fn = lambda t, y: force(y[0], y[1], k, pe, c, v0)
    ff = np.concatenate([fn(None, sol.sol(np.linspace(0, t_end, 4000))), _peak(sol, fn, t_end)])
    energy = 0.5 * m * sol.y[1] ** 2 + k * np.maximum(sol.y[0], 0) ** (pe + 1) / (pe + 1)
    return ImpactRun(f_max=float(ff.max()), f_max_each=np.array([ff.max()]), e_star=float(-sol.y[1, -1] / v0),
                     duration=float(t_end), energy_error=float(np.abs(energy / energy[0] - 1).max()))


def two_body(beta: float, law: str = 'hertz', e: float = 1.0, k: float = 1e9, p: float = 1.5, v: float = 0.07,
             params: TwoBodyParams = TwoBodyParams(), rtol: float = 1e-10) -> ImpactRun:
    """Model TB hitting a plane of angle β (inward normal (sin β, −cos β)) with its wheel, no gravity."""
    P = params
    n = np.array([np.sin(beta), -np.cos(beta)])
    c_ = chi_of(law, e)
    pe = exponent(law, p)
    y0 = np.array([0.0, 0.0, P.theta1, 0.0, v, 0.0, 0.0, -v / P.R])

    def centre(q):
        return np.array([q[0] + P.l * np.cos(q[2]), q[1] + P.l * np.sin(q[2])])

    g0 = centre(y0[:4]) @ n
    Jc = lambda th: np.array([n[0], n[1], -P.l * np.sin(th) * n[0] + P.l * np.cos(th) * n[1], 0.0])
    v_in = float(Jc(P.theta1) @ y0[4:])

    def rhs(t, y):
        q, qd = y[:4], y[4:]
        th, thd = q[2], qd[2]
        M = two_body_mass_matrix(TwoBodyParams(P.m1, P.I1, P.m2, P.I2, P.l, P.R, th))
        cvec = np.array([-P.m2 * P.l * thd ** 2 * np.cos(th), -P.m2 * P.l * thd ** 2 * np.sin(th), 0.0, 0.0])
        J = Jc(th)
        f = force(centre(q) @ n - g0, J @ qd, k, pe, c_, v_in)
        return np.concatenate([qd, np.linalg.solve(M, -f * J - cvec)])

    ev = lambda t, y: (centre(y[:4]) @ n - g0) if t > 1e-7 else 1.0
    ev.terminal, ev.direction = True, -1
    sol = solve_ivp(rhs, (0, 0.05), y0, rtol=rtol, atol=1e-13, events=ev, dense_output=True, method='DOP853')
    t_end = sol.t[-1]

    def fn(t, Y):
        Y = np.atleast_2d(Y.T).T
        d = np.array([centre(Y[:4, i]) @ n - g0 for i in range(Y.shape[1])])
        dd = np.array([Jc(Y[2, i]) @ Y[4:, i] for i in range(Y.shape[1])])
        return force(d, dd, k, pe, c_, v_in)

    ff = np.concatenate([fn(None, sol.sol(np.linspace(0, t_end, 1500))), _peak(sol, fn, t_end, 1500)])
    yend = sol.y[:, -1]
    return ImpactRun(f_max=float(ff.max()), f_max_each=np.array([ff.max()]),
                     e_star=float(-(Jc(yend[2]) @ yend[4:]) / v_in), duration=float(t_end))


def frozen(M: np.ndarray, Lam: np.ndarray, qd: np.ndarray, mech_rows: np.ndarray | None = None,
           law: str = 'hunt_crossley', e: float = 0.9, k: float = 1e9, p: float = 1.5,
           ground_rows: np.ndarray | None = None, k_ground: float = 0.0, rtol: float = 1e-8) -> ImpactRun:
    """Frozen-configuration multibody impact (s obstacle contacts, optional compliant ground springs)."""
    n = M.shape[0]
    N = null_space_basis(np.zeros((0, n)) if mech_rows is None else mech_rows, n)
    Mr = N.T @ M @ N
    Mr_inv = np.linalg.inv(Mr)
    Lr = np.atleast_2d(Lam) @ N
    Gr = np.zeros((0, N.shape[1])) if ground_rows is None or k_ground <= 0 else np.atleast_2d(ground_rows) @ N
    y_dot0 = np.linalg.lstsq(N, qd, rcond=None)[0]
    v_in = Lr @ y_dot0
    if np.any(v_in <= 0):
        raise ValueError('every contact must be approaching (Λ q̇ > 0)')
    c_ = chi_of(law, e)
    pe = exponent(law, p)
    m = N.shape[1]

    def forces(y, yd):
        fn = force(Lr @ y, Lr @ yd, k, pe, c_, v_in)
        g = Gr @ y
        fg = k_ground * np.where(g < 0, np.abs(g) ** 1.5, 0.0)
        return fn, fg

    def rhs(t, Y):
        y, yd = Y[:m], Y[m:]
        fn, fg = forces(y, yd)
        return np.concatenate([yd, Mr_inv @ (-Lr.T @ fn + Gr.T @ fg)])

    def ev(t, Y):
        return float(np.max(Lr @ Y[:m])) if t > 1e-9 else 1.0
    ev.terminal, ev.direction = True, -1
    meff = 1.0 / np.min(np.einsum('ij,jk,ik->i', Lr, Mr_inv, Lr))
    t_scale = 50 * (meff / k) ** (1 / (pe + 1)) * max(v_in.max(), 1e-6) ** ((1 - pe) / (pe + 1))
    method = 'Radau' if k_ground > 0 else 'DOP853'
    sol = solve_ivp(rhs, (0, max(t_scale, 1e-4) * 20), np.concatenate([np.zeros(m), y_dot0]), rtol=rtol,
                    atol=1e-14, events=ev, dense_output=True, method=method)
    t_end = sol.t[-1]
    t = np.linspace(0, t_end, 3000)
    Y = sol.sol(t)
    F = np.array([forces(Y[:m, i], Y[m:, i])[0] for i in range(t.size)])
    k_ = int(np.argmax(F.sum(axis=1)))
    tt = np.linspace(t[max(k_ - 1, 0)], t[min(k_ + 1, t.size - 1)], 200)
    YY = sol.sol(tt)
    F2 = np.array([forces(YY[:m, i], YY[m:, i])[0] for i in range(tt.size)])
    F = np.vstack([F, F2])
    yend = sol.y[:, -1]
    return ImpactRun(f_max=float(F.sum(axis=1).max()), f_max_each=F.max(axis=0),
                     e_star=float(-(Lr @ yend[m:]).mean() / v_in.mean()), duration=float(t_end))


def two_body_grousers(beta: float, n_grousers: int = 22, offset_deg: float = 0.0, law: str = 'hunt_crossley',
                      e: float = 0.9, k: float = 1e9, p: float = 1.5, v: float = 0.07, slip: float = 0.0,
                      params: TwoBodyParams = TwoBodyParams(), t_max: float = 0.05, rtol: float = 1e-9) -> ImpactRun:
    """Model TB with a grousered wheel (spec §6.4): N grouser tips on the radius R, the first one ``offset_deg``
    from the wheel-centre normal line to the plane, measured along the spin (positive: the tip has passed the
    line and rotates away from the plane; negative: it rotates into it); each tip's penetration δ_i = n·(G2 − G2(0)) + R(cos(φ_i − φ_n) − 1) goes into the contact law
    separately and its force acts at the tip (the plane touches the smooth wheel at t = 0). Wheel spin
    ω = −v/(R(1 − s)) (slip s). Records the summed peak and how many tips touched at once at most."""
    P = params
    n = np.array([np.sin(beta), -np.cos(beta)])
    phi_n = np.arctan2(n[1], n[0])
    c_ = chi_of(law, e)
    pe = exponent(law, p)
    omega = -v / (P.R * (1.0 - slip))
    y0 = np.array([0.0, 0.0, P.theta1, 0.0, v, 0.0, 0.0, omega])
    alphas = np.deg2rad(-offset_deg) + 2 * np.pi * np.arange(n_grousers) / n_grousers   # spin is negative

    def centre(q):
        return np.array([q[0] + P.l * np.cos(q[2]), q[1] + P.l * np.sin(q[2])])

    g0 = centre(y0[:4]) @ n + P.R
    Jc = lambda th: np.array([n[0], n[1], -P.l * np.sin(th) * n[0] + P.l * np.cos(th) * n[1], 0.0])
    v_in = float(Jc(P.theta1) @ y0[4:])

    def tips(y):
        q, qd = y[:4], y[4:]
        rel = alphas + (q[2] + q[3] - P.theta1)                 # tip angle − φ_n
        rel = (rel + np.pi) % (2 * np.pi) - np.pi
        d = centre(q) @ n + P.R * np.cos(rel) - g0
        d = np.where(np.abs(rel) < np.pi / 2, d, -1.0)
        J = Jc(q[2])[None, :] + np.outer(-P.R * np.sin(rel), [0.0, 0.0, 1.0, 1.0])
        return d, J @ qd, J

    def rhs(t, y):
        q, qd = y[:4], y[4:]
        th, thd = q[2], qd[2]
        M = two_body_mass_matrix(TwoBodyParams(P.m1, P.I1, P.m2, P.I2, P.l, P.R, th))
        cvec = np.array([-P.m2 * P.l * thd ** 2 * np.cos(th), -P.m2 * P.l * thd ** 2 * np.sin(th), 0.0, 0.0])
        d, dd, J = tips(y)
        f = force(d, dd, k, pe, c_, v_in)
        return np.concatenate([qd, np.linalg.solve(M, -(f @ J) - cvec)])

    touched = []

    def ev(t, y):
        d = tips(y)[0].max()
        if d > 0:
            touched.append(True)
        return d if touched else 1.0
    ev.terminal, ev.direction = True, -1
    sol = solve_ivp(rhs, (0, t_max), y0, rtol=rtol, atol=1e-13, events=ev, dense_output=True, method='DOP853',
                    max_step=1e-4)
    ts = np.linspace(0, sol.t[-1], 2000)
    F, ncont = [], 0
    for t in ts:
        d, dd, _ = tips(sol.sol(t))
        f = force(d, dd, k, pe, c_, v_in)
        F.append(f)
        ncont = max(ncont, int(np.sum(f > 0)))
    F = np.array(F)
    total = F.sum(axis=1)
    run = ImpactRun(f_max=float(total.max()), f_max_each=F.max(axis=0), e_star=float('nan'), duration=float(sol.t[-1]))
    run.max_tips_in_contact = ncont
    run.force_history = (ts, total)
    return run
