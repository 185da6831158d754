"""Anticipatory posture evaluation (spec §5.3), vectorised over candidates.

For each candidate (posture-joint targets + approach speed v): (1) apply the targets, hold the other joints,
solve base height/roll/pitch and the passive joints so that every wheel touches flat ground (batched damped
Gauss–Newton on Φ_i = 0, plus the differential rows; Φ_i = c_z − R for the domed wheel model, the lowest rim
point c_z − R sqrt(1 − a_z²) for the disk, see models.rover3d);
(2) q̇: base at v along the heading, wheels rolling, joints still; (3) Λ from the obstacle's β; (4) T_c
free (Schur complement in null(Γ_mech), batched) and rigid (impulsive LCP activity + 4 ground rows per
active wheel; the LCPs stepped together, one stacked solve per active-wheel set); (5) shares, fraction; (6) optional force estimate ρ·k^{1/(p+1)}((p+1)T_c,i)^{p/(p+1)};
(7) filters (convergence, joint limits, static stability margin) and ranking by the score (T_c of the
ground mode; ``both``: the larger), tie-breakers max share, T_c/T, posture change; (8) v_max = sqrt(T_allow/T_c(u)).
Energies J, speeds m/s, angles rad.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..impact.activity import ground_activity, ground_activity_batch
from ..impact.energy import DEFAULT_RANK_TOL, impact, impact_batch, null_space_basis
from ..impact.geometry import n_in_ros
from ..models.batch import BatchTree, mass_matrix_crba, rpy_matrix
from ..models.rover3d import RoverModel
from ..validation.contact_laws import LAWS, exponent, peak_force_from_tc
# at import, not in damping_ratio: its scipy.integrate import (~0.3 s) would otherwise stall the node's first
# evaluation with a hypothesis, while 500 messages/s fill its obstacle queue (test_fuzz_rover_nodes lost 2-9 good
# hypotheses every run when nothing else had loaded scipy.integrate before)
from ..validation.impact_sim import one_dof


@dataclass
class Candidate:
    joints: dict                 # posture joint -> target position (rad or m)
    speed: float                 # approach speed [m/s]
    label: str = ''


@dataclass
class Obstacle:
    beta: float                  # contact angle [rad]
    wheels: list                 # impacting wheels
    distance: float = float('nan')
    k: float = 0.0               # contact stiffness [N/m^p] (0: no force estimate)
    p: float = 1.5
    e: float = 0.9
    contact_model: str = 'hunt_crossley'


@dataclass
class Evaluation:
    candidates: list
    t_c_free: np.ndarray
    t_c_rigid: np.ndarray
    score: np.ndarray
    f_max_estimate: np.ndarray
    v_max: np.ndarray
    feasible: np.ndarray
    reject_reason: list
    order: np.ndarray            # candidate indices, best first
    t_total: np.ndarray
    max_share: np.ndarray
    ground_mode: str
    warnings: list = field(default_factory=list)
    base_R: np.ndarray | None = None     # solved configurations (K,3,3), (K,3), (K, joints)
    base_p: np.ndarray | None = None
    theta: np.ndarray | None = None
    change: np.ndarray | None = None     # ‖θ_k − θ_current‖ (tie-breaker)
    fraction: np.ndarray | None = None   # score / T (tie-breaker)

    @property
    def best(self) -> int:
        """Index (into ``candidates``) of the recommended candidate, −1 if none is feasible."""
        return int(self.order[0]) if self.order.size and self.feasible[self.order[0]] else -1


def rank(ev: Evaluation) -> np.ndarray:
    """Candidate indices best first: feasible before infeasible, then score, max share, T_c/T, posture change."""
    key_score = np.where(ev.feasible, ev.score, np.inf)
    return np.lexsort((ev.change, ev.fraction, ev.max_share, key_score, ~ev.feasible))


_STACKED = ('t_c_free', 't_c_rigid', 'score', 'f_max_estimate', 'v_max', 'feasible', 't_total', 'max_share',
            'base_R', 'base_p', 'theta', 'change', 'fraction')


def merge_evaluations(parts: list) -> Evaluation:
    """One Evaluation of the candidates of ``parts`` (evaluations of consecutive slices of one candidate list, same
    obstacle and current state), ranked as if evaluated at once: every candidate's numbers are its own."""
    if len(parts) == 1:
        return parts[0]
    ev = Evaluation(candidates=[c for p in parts for c in p.candidates],
                    reject_reason=[r for p in parts for r in p.reject_reason], order=None,
                    ground_mode=parts[0].ground_mode,
                    warnings=list(dict.fromkeys(w for p in parts for w in p.warnings)),
                    **{k: np.concatenate([getattr(p, k) for p in parts]) for k in _STACKED})
    ev.order = rank(ev)
    return ev


@lru_cache(maxsize=64)
def damping_ratio(law: str, e: float, p: float) -> float:
    """ρ = F_max / F_max,undamped for the normalised law (depends on (law, e, p) only, §4.6)."""
    pe = exponent(law, p)
    return one_dof(law, e, p=p).f_max / one_dof('hertz', 1.0, p=pe).f_max


def grid_candidates(joints: list[str], grid: list[list[float]], speeds: list[float]) -> list[Candidate]:
    """Cartesian product of per-joint value lists and speeds."""
    if len(joints) != len(grid):
        raise ValueError(f'{len(joints)} posture joints but {len(grid)} value lists')
    out = []
    for vals in itertools.product(*grid):
        for v in speeds:
            out.append(Candidate(dict(zip(joints, map(float, vals))), float(v),
                                 ','.join(f'{j}={x:g}' for j, x in zip(joints, vals)) + f',v={v:g}'))
    return out


class PostureEvaluator:
    """Batched candidate evaluation on one RoverModel."""

    def __init__(self, model: RoverModel, ground_mode: str = 'both', rolling: bool = True,
                 stability_margin: float = 0.05, energy_budget: float = 0.0, rank_tol: float = DEFAULT_RANK_TOL,
                 max_iter: int = 30, tol: float = 1e-10):
        self.model = model
        self.tree = BatchTree(model)
        self.ground_mode = ground_mode
        self.rolling = rolling
        self.margin = stability_margin
        self.budget = energy_budget
        self.rank_tol = rank_tol
        self.max_iter, self.tol = max_iter, tol
        self.reference_rigid = False     # True: the per-candidate rigid path (equality tests)
        self.mech = model.mech_rows()
        self.N = null_space_basis(self.mech, model.nv, rank_tol)
        roles = model.roles
        self.passive = [self.tree.col[j] for j in roles.passive_joints]
        self.diff = []
        for d in roles.differential:
            if all(j in roles.passive_joints for j in d['joints']):
                c = np.zeros(len(self.tree.names))
                for j, co in zip(d['joints'], d.get('coefficients', [1.0] * len(d['joints']))):
                    c[self.tree.col[j]] = co
                self.diff.append(c)
        self.diff = np.array(self.diff).reshape(-1, len(self.tree.names))

    # ------------------------------------------------------------------ step 1: ground contact
    def _pose(self, x: np.ndarray, theta: np.ndarray):
        Rb = rpy_matrix(x[:, 1], x[:, 2])
        pb = np.zeros((x.shape[0], 3))
        pb[:, 2] = x[:, 0]
        theta[:, self.passive] = x[:, 3:]
        return Rb, pb, self.tree.fk(Rb, pb, theta)

    def solve_ground(self, theta: np.ndarray):
        """Base pose and passive joints with all wheels on flat ground (only the candidates not yet converged are
        iterated). Returns (R, p, θ, converged, residual, (oR, op, oa))."""
        K = theta.shape[0]
        t = self.tree
        theta = theta.copy()
        x = np.zeros((K, 3 + len(self.passive)))
        x[:, 3:] = theta[:, self.passive]
        R_w = t.wheel_radius
        e_y = np.array([0.0, 1.0, 0.0])
        res = np.full(K, np.inf)
        act = np.arange(K)
        for it in range(self.max_iter + 1):
            xa, tha = x[act], theta[act]
            Rb, pb, (oR, op, oa) = self._pose(xa, tha)
            theta[act] = tha
            c, a = t.wheel_geometry(oR, op, oa)
            h = t.ground_height(c, a)
            r = np.concatenate([h, tha @ self.diff.T], axis=1)
            if it == 0:                                   # start from the mean height
                x[act, 0] -= h.mean(axis=1)
                continue
            res[act] = np.abs(r).max(axis=1)
            keep = res[act] >= self.tol
            if not keep.any() or it == self.max_iter:
                break
            act, xa, r, c, a, pb = act[keep], xa[keep], r[keep], c[keep], a[keep], pb[keep]
            op = {j: v[keep] for j, v in op.items()}
            oa = {j: v[keep] for j, v in oa.items()}
            k = act.size
            rel = c - pb[:, None, :]
            # domed h = c_z − R: dh = dc_z; disk h = c_z − R sqrt(1 − a_z²): dh = dc_z + R a_z/sqrt(1 − a_z²) da_z,
            # with dc = u × (c − o), da = u × a
            if t.wheel_contact == 'domed':
                gain = np.zeros(a.shape[:2])
            else:
                gain = R_w * a[:, :, 2] / np.sqrt(np.maximum(1e-12, 1.0 - a[:, :, 2] ** 2))
            W = c.shape[1]
            J = np.zeros((k, r.shape[1], x.shape[1]))
            J[:, :W, 0] = 1.0
            u_roll = np.stack([np.cos(xa[:, 2]), np.zeros(k), -np.sin(xa[:, 2])], axis=1)
            J[:, :W, 1] = np.cross(u_roll[:, None, :], rel)[:, :, 2] + gain * np.cross(u_roll[:, None, :], a)[:, :, 2]
            J[:, :W, 2] = -rel[:, :, 0] + gain * np.cross(e_y, a)[:, :, 2]
            for m_, col in enumerate(self.passive):
                jid = t.jids[col]
                for w, wj in enumerate(t.wheel_jid):
                    if jid in t.ancestors[wj]:
                        J[:, w, 3 + m_] = (np.cross(oa[jid], c[:, w] - op[jid])[:, 2]
                                           + gain[:, w] * np.cross(oa[jid], a[:, w])[:, 2])
                J[:, W:, 3 + m_] = self.diff[:, col]
            JT = np.transpose(J, (0, 2, 1))
            A = JT @ J + 1e-12 * np.eye(x.shape[1])
            x[act] = xa - np.linalg.solve(A, (JT @ r[:, :, None]))[:, :, 0]
        Rb, pb, kin = self._pose(x, theta)
        return Rb, pb, theta, res < 1e-8, res, kin

    # ------------------------------------------------------------------ rigid ground (step 4)
    def _rigid(self, idx, M, Lam, Jg, qd, tc, share):
        """T_c and shares with the ground rows of the wheels the impulsive LCP finds active, for the candidates
        ``idx`` at once: the LCPs stepped together (activity.ground_activity_batch), then one stacked impact
        solve per distinct active-wheel set (energy.impact_batch)."""
        if idx.size == 0:
            return tc, share
        G = Jg[idx, :, 2, :]
        act = ground_activity_batch(M[idx], self.mech, Lam[idx], G, qd[idx], self.rank_tol)
        n = M.shape[1]
        code = act @ (1 << np.arange(act.shape[1]))
        for c in np.unique(code):
            sel = idx[code == c]
            wheels = np.nonzero(act[np.nonzero(code == c)[0][0]])[0]
            rows = []
            for w in wheels:
                rows += [Jg[sel, w, 2], Jg[sel, w, 2]] + ([Jg[sel, w, 0], Jg[sel, w, 1]] if self.rolling else [])
            Gam = np.concatenate([np.broadcast_to(self.mech, (sel.size,) + self.mech.shape),
                                  np.stack(rows, axis=1) if rows else np.zeros((sel.size, 0, n))], axis=1)
            _, tc[sel], share[sel] = impact_batch(M[sel], Gam, Lam[sel], qd[sel], self.rank_tol)
        return tc, share

    def _rigid_reference(self, idx, M, Lam, Jg, qd, tc, share):
        """The per-candidate form of ``_rigid`` (one LCP and one ``impact`` per candidate): the reference the
        batched form is tested against."""
        for k in idx:
            G = Jg[k, :, 2, :]
            act = ground_activity(M[k], self.mech, Lam[k], G, qd[k], self.rank_tol)
            rows = []
            for w in np.where(act)[0]:
                rows += [Jg[k, w, 2], Jg[k, w, 2]] + ([Jg[k, w, 0], Jg[k, w, 1]] if self.rolling else [])
            r = impact(M[k], np.vstack([self.mech] + ([np.array(rows)] if rows else [])), Lam[k], qd[k],
                       self.rank_tol)
            tc[k] = r.t_c
            share[k] = r.t_c_per_contact
        return tc, share

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, current: dict, candidates: list[Candidate], obstacle: Obstacle) -> Evaluation:
        t = self.tree
        K = len(candidates)
        reasons = [''] * K
        warnings = []
        if obstacle.contact_model and obstacle.contact_model not in LAWS:
            warnings.append(f"contact_model '{obstacle.contact_model}' unknown; no force estimate")
        bad_w = [w for w in obstacle.wheels if w not in self.model.wheel_names]
        if bad_w or not obstacle.wheels:
            raise ValueError(f'contact wheels {bad_w or obstacle.wheels} are not wheels of the model')
        if not np.isfinite(obstacle.beta) or not 0 < obstacle.beta <= np.pi / 2 + 1e-9:
            raise ValueError(f'obstacle beta {obstacle.beta} rad must be in (0, pi/2]')
        base = np.array([float(current.get(n, 0.0)) for n in t.names])
        theta = np.tile(base, (K, 1))
        speed = np.array([c.speed for c in candidates], float)
        for k, c in enumerate(candidates):
            for j, x in c.joints.items():
                if j not in t.col:
                    reasons[k] = f"unknown joint '{j}'"
                elif j in self.model.roles.passive_joints:
                    reasons[k] = f"joint '{j}' is passive (set by the ground contact)"
                elif not np.isfinite(x):
                    reasons[k] = f"joint '{j}' target is not finite"
                else:
                    theta[k, t.col[j]] = x
            if not (np.isfinite(c.speed) and c.speed > 0):
                reasons[k] = reasons[k] or f'approach speed {c.speed} must be > 0'
        ok_in = np.array([not r for r in reasons])
        speed = np.where(ok_in, speed, 1.0)
        Rb, pb, theta, conv, res, (oR, op, oa) = self.solve_ground(theta)
        M = mass_matrix_crba(t, oR, op, oa)
        n_in = np.broadcast_to(n_in_ros(obstacle.beta), (K, 3))
        widx = [self.model.wheel_names.index(w) for w in obstacle.wheels]
        Lam = t.contact_rows(widx, n_in, oR, op, oa)
        qd = t.rolling_velocity(speed, np.zeros(K), oR, op, oa)
        T = 0.5 * np.einsum('ki,kij,kj->k', qd, M, qd)
        N = self.N
        Mr = np.transpose(N) @ M @ N
        Lr = Lam @ N
        X = Lr @ np.linalg.solve(Mr, np.transpose(Lr, (0, 2, 1)))
        Meff = np.linalg.pinv(X, rcond=self.rank_tol, hermitian=True)
        vc = np.einsum('ksi,ki->ks', Lam, qd)
        share_free = 0.5 * vc * np.einsum('kst,kt->ks', Meff, vc)
        tc_free = share_free.sum(axis=1)
        # filters
        lim_ok = np.all((theta >= t.lower - 1e-12) & (theta <= t.upper + 1e-12), axis=1)
        Jg, Pg = t.ground_point_jacobians(oR, op, oa)
        com = t.com(oR, op)
        margin = self._stability_margin(Pg[:, :, :2], com[:, :2])
        approaching = np.all(vc > 0, axis=1)
        for k in range(K):
            if reasons[k]:
                continue
            if not conv[k]:
                reasons[k] = f'ground contact solve did not converge (residual {res[k]:.2e} m)'
            elif not lim_ok[k]:
                bad = [t.names[i] for i in np.where((theta[k] < t.lower - 1e-12) | (theta[k] > t.upper + 1e-12))[0]]
                reasons[k] = f"joint limit: {', '.join(bad)}"
            elif margin[k] < self.margin:
                reasons[k] = f'static stability margin {margin[k]:.3f} m < {self.margin:.3f} m'
            elif not approaching[k]:
                reasons[k] = 'a contact wheel does not approach the obstacle'
        feasible = np.array([not r for r in reasons])
        tc_rigid = np.full(K, np.nan)
        share_rigid = np.full((K, len(widx)), np.nan)
        if self.ground_mode in ('rigid', 'both'):
            rigid = self._rigid_reference if self.reference_rigid else self._rigid
            tc_rigid, share_rigid = rigid(np.where(feasible)[0], M, Lam, Jg, qd, tc_rigid, share_rigid)
        if self.ground_mode == 'free':
            score, shares = tc_free, share_free
        elif self.ground_mode == 'rigid':
            score, shares = tc_rigid, share_rigid
        else:
            use_rigid = np.nan_to_num(tc_rigid, nan=-np.inf) > tc_free
            score = np.where(use_rigid, tc_rigid, tc_free)
            shares = np.where(use_rigid[:, None], share_rigid, share_free)
        max_share = np.max(shares, axis=1)
        fmax = np.full(K, np.nan)
        if obstacle.k > 0 and obstacle.contact_model in LAWS:
            pe = exponent(obstacle.contact_model, obstacle.p)
            rho = damping_ratio(obstacle.contact_model, obstacle.e, obstacle.p)
            fmax = rho * peak_force_from_tc(np.maximum(max_share, 0.0), obstacle.k, pe)
        unit = score / speed ** 2
        if self.budget > 0:
            v_max = np.full(K, np.inf)
            np.sqrt(self.budget / unit, out=v_max, where=unit > 0)
        else:
            v_max = np.full(K, np.nan)
        change = np.linalg.norm(theta - base, axis=1)
        frac = np.where(T > 0, score / T, 0.0)
        tc_free[~ok_in] = np.nan
        if not 0.17 <= obstacle.beta <= np.pi / 2 + 1e-9:
            warnings.append(f'beta {np.rad2deg(obstacle.beta):.1f} deg outside the validated range 10-90 deg')
        ev = Evaluation(candidates=list(candidates), t_c_free=tc_free, t_c_rigid=tc_rigid, score=score,
                        f_max_estimate=fmax, v_max=v_max, feasible=feasible, reject_reason=reasons, order=None,
                        t_total=T, max_share=max_share, ground_mode=self.ground_mode, warnings=warnings,
                        base_R=Rb, base_p=pb, theta=theta, change=change, fraction=frac)
        ev.order = rank(ev)
        return ev

    def configuration(self, ev: Evaluation, k: int) -> np.ndarray:
        """pinocchio q of candidate k's solved configuration."""
        import pinocchio as pin
        quat = pin.Quaternion(ev.base_R[k])
        return self.model.configuration(dict(zip(self.tree.names, ev.theta[k])), ev.base_p[k],
                                        (quat.x, quat.y, quat.z, quat.w))

    @staticmethod
    def _stability_margin(P: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Signed distance [m] of the CoM projection c (K,2) inside the support polygon of the contact points
        P (K,W,2), vertices ordered by angle about their centroid (conservative if a point is not on the hull)."""
        cen = P.mean(axis=1, keepdims=True)
        ang = np.arctan2(P[:, :, 1] - cen[:, :, 1], P[:, :, 0] - cen[:, :, 0])
        order = np.argsort(ang, axis=1)
        V = np.take_along_axis(P, order[:, :, None], axis=1)
        E = np.roll(V, -1, axis=1) - V
        L = np.linalg.norm(E, axis=2)
        cross = E[:, :, 0] * (c[:, None, 1] - V[:, :, 1]) - E[:, :, 1] * (c[:, None, 0] - V[:, :, 0])
        return np.min(cross / np.where(L > 0, L, 1.0), axis=1)
