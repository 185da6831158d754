"""Batched (vectorised over K configurations) kinematics and mass matrix of a RoverModel's tree, in numpy.

Used by the posture evaluator to score thousands of candidates at once. Same coordinates as pinocchio's
free-flyer (q̇ = [v_base (base frame), ω_base (base frame), joint rates]); M = Σ_b J_bᵀ blockdiag(m_b I₃,
R_b I_b R_bᵀ) J_b over the bodies (a maximal-coordinate assembly; tests check it equals pinocchio's CRBA).
Joints: 1-DOF revolute/continuous (about a joint-frame axis) and prismatic. Shapes: K leading.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .rover3d import RoverModel


def _rot_axis(axis: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Rodrigues rotation (K,3,3) about a fixed unit axis by angles θ (K,)."""
    a = np.asarray(axis, float)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    s, c = np.sin(theta)[:, None, None], np.cos(theta)[:, None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def rpy_matrix(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray | None = None) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll), (K,3,3)."""
    K = roll.shape[0]
    yaw = np.zeros(K) if yaw is None else yaw
    return _rot_axis([0, 0, 1], yaw) @ _rot_axis([0, 1, 0], pitch) @ _rot_axis([1, 0, 0], roll)


class BatchTree:
    """Static description of the tree extracted once from the pinocchio model."""

    def __init__(self, model: RoverModel):
        pm = model.model
        self.rm = model
        self.nv = pm.nv
        self.names = model.joint_names                     # joint order of θ columns
        self.jids = [model.jid[n] for n in self.names]
        self.col = {n: k for k, n in enumerate(self.names)}
        self.parent = {j: pm.parents[j] for j in self.jids}
        self.place_R = {j: pm.jointPlacements[j].rotation.copy() for j in self.jids}
        self.place_p = {j: pm.jointPlacements[j].translation.copy() for j in self.jids}
        self.axis = {j: model.joint_axis(j) for j in self.jids}
        self.prismatic = {j: pm.joints[j].shortname().startswith('JointModelP') for j in self.jids}
        self.idx_v = {j: pm.joints[j].idx_v for j in self.jids}
        self.ancestors = {1: []}
        for j in self.jids:                                # parents precede children in pinocchio
            self.ancestors[j] = self.ancestors[self.parent[j]] + [j]
        self._theta_col = {j: self.col[n] for j, n in zip(self.jids, self.names)}
        self.bodies = [(j, I.mass, I.lever.copy(), I.inertia.copy()) for j, I in enumerate(pm.inertias)
                       if j >= 1 and I.mass > 0]
        lo, hi = [], []
        for n in self.names:
            jm = pm.joints[model.jid[n]]
            if jm.nq == 1:
                lo.append(pm.lowerPositionLimit[jm.idx_q])
                hi.append(pm.upperPositionLimit[jm.idx_q])
            else:
                lo.append(-np.inf)
                hi.append(np.inf)
        self.lower, self.upper = np.array(lo), np.array(hi)
        self.wheel_jid = model.wheel_jid
        self.wheel_radius = model.wheel_radius
        self.wheel_contact = model.wheel_contact

    # ---------------------------------------------------------------- kinematics
    def fk(self, base_R: np.ndarray, base_p: np.ndarray, theta: np.ndarray):
        """World rotations/origins of every joint frame: dicts jid -> (K,3,3), (K,3); world joint axes."""
        oR, op, oa = {1: base_R}, {1: base_p}, {}
        for j in self.jids:
            par = self.parent[j]
            Rj = oR[par] @ self.place_R[j]
            pj = op[par] + oR[par] @ self.place_p[j]
            x = theta[:, self._theta_col[j]]
            oa[j] = Rj @ self.axis[j]
            if not x.any():
                pass                                   # joint at zero in every configuration (locked at 0)
            elif self.prismatic[j]:
                pj = pj + oa[j] * x[:, None]
            else:
                Rj = Rj @ _rot_axis(self.axis[j], x)
            oR[j], op[j] = Rj, pj
        return oR, op, oa

    def point_jacobian(self, jid: int, P: np.ndarray, oR, op, oa) -> np.ndarray:
        """(K,3,nv) linear Jacobian of world points P (K,3) fixed to joint jid's body."""
        K = P.shape[0]
        J = np.zeros((K, 3, self.nv))
        Rb, pb = oR[1], op[1]
        J[:, :, 0:3] = Rb
        r = P - pb
        # ω_local column k: (R_b e_k) × r
        J[:, :, 3:6] = np.cross(np.transpose(Rb, (0, 2, 1)), r[:, None, :]).transpose(0, 2, 1)
        for j in self.ancestors[jid]:
            c = self.idx_v[j]
            J[:, :, c] = oa[j] if self.prismatic[j] else np.cross(oa[j], P - op[j])
        return J

    def angular_jacobian(self, jid: int, oR, oa) -> np.ndarray:
        K = oR[1].shape[0]
        J = np.zeros((K, 3, self.nv))
        J[:, :, 3:6] = oR[1]
        for j in self.ancestors[jid]:
            if not self.prismatic[j]:
                J[:, :, self.idx_v[j]] = oa[j]
        return J

    def mass_matrix(self, oR, op, oa) -> np.ndarray:
        """(K,nv,nv) M = Σ_b m_b J_vᵀJ_v + J_ωᵀ (R I Rᵀ) J_ω."""
        K = oR[1].shape[0]
        M = np.zeros((K, self.nv, self.nv))
        for jid, m, lever, I in self.bodies:
            c = op[jid] + np.einsum('kij,j->ki', oR[jid], lever)
            Jv = self.point_jacobian(jid, c, oR, op, oa)
            Jw = self.angular_jacobian(jid, oR, oa)
            Iw = oR[jid] @ I @ np.transpose(oR[jid], (0, 2, 1))
            JvT = np.transpose(Jv, (0, 2, 1))
            M += m * (JvT @ Jv) + np.transpose(Jw, (0, 2, 1)) @ (Iw @ Jw)
        return 0.5 * (M + np.transpose(M, (0, 2, 1)))

    def com(self, oR, op) -> np.ndarray:
        tot = 0.0
        acc = 0.0
        for jid, m, lever, _ in self.bodies:
            acc = acc + m * (op[jid] + np.einsum('kij,j->ki', oR[jid], lever))
            tot += m
        return acc / tot

    def wheel_geometry(self, oR, op, oa):
        """Centres (K,W,3), unit axles (K,W,3)."""
        c = np.stack([op[j] for j in self.wheel_jid], axis=1)
        a = np.stack([np.einsum('kij,j->ki', oR[j], self.axis[j]) for j in self.wheel_jid], axis=1)
        return c, a

    def contact_point(self, c, a, d, R):
        """Contact points (K,3) of wheels (centres c, unit axles a) with a surface of inward unit normal d
        (K,3), ``wheel_contact`` geometry: domed c + R d; disk c + R unit(d − (d·a)a) (see rover3d)."""
        if self.wheel_contact == 'domed':
            return c + R * d
        e = d - np.sum(d * a, axis=-1, keepdims=True) * a
        return c + R * e / np.linalg.norm(e, axis=-1, keepdims=True)

    def ground_height(self, c, a):
        """Height above flat ground z = 0 of the wheels' lowest points (K,W): domed c_z − R; disk
        c_z − R sqrt(1 − a_z²)."""
        if self.wheel_contact == 'domed':
            return c[..., 2] - self.wheel_radius
        return c[..., 2] - self.wheel_radius * np.sqrt(np.maximum(0.0, 1.0 - a[..., 2] ** 2))

    def contact_rows(self, wheels_idx: list[int], n_in: np.ndarray, oR, op, oa) -> np.ndarray:
        """(K,s,nv) rows n_inᵀ J_v,C for the impacting wheels (n_in (K,3))."""
        c, a = self.wheel_geometry(oR, op, oa)
        rows = []
        for k in wheels_idx:
            C = self.contact_point(c[:, k], a[:, k], n_in, self.wheel_radius[k])
            rows.append(np.einsum('ki,kij->kj', n_in, self.point_jacobian(self.wheel_jid[k], C, oR, op, oa)))
        return np.stack(rows, axis=1)

    def ground_point_jacobians(self, oR, op, oa):
        """(K,W,3,nv) Jacobians of the wheels' ground contact points and the points (K,W,3)."""
        c, a = self.wheel_geometry(oR, op, oa)
        down = np.broadcast_to(np.array([0.0, 0.0, -1.0]), c[:, 0].shape)
        Js, Ps = [], []
        for k, jid in enumerate(self.wheel_jid):
            P = self.contact_point(c[:, k], a[:, k], down, self.wheel_radius[k])
            Ps.append(P)
            Js.append(self.point_jacobian(jid, P, oR, op, oa))
        return np.stack(Js, axis=1), np.stack(Ps, axis=1)

    def rolling_velocity(self, speed: np.ndarray, heading: np.ndarray, oR, op, oa) -> np.ndarray:
        """(K,nv): base translating at ``speed`` along ``heading``, wheels rolling, joints still."""
        K = speed.shape[0]
        d = np.stack([np.cos(heading), np.sin(heading), np.zeros(K)], axis=1)
        v = np.zeros((K, self.nv))
        v[:, 0:3] = np.einsum('kji,kj->ki', oR[1], speed[:, None] * d)
        c, a = self.wheel_geometry(oR, op, oa)
        down = np.broadcast_to(np.array([0.0, 0.0, -1.0]), (K, 3))
        for k, jid in enumerate(self.wheel_jid):
            ax = a[:, k]
            lever = np.cross(ax, self.contact_point(c[:, k], ax, down, self.wheel_radius[k]) - c[:, k])
            denom = np.sum(lever * d, axis=1)
            v[:, self.idx_v[jid]] = np.where(np.abs(denom) > 1e-12, -speed / np.where(denom == 0, 1, denom), 0.0)
        return v

    def check_against_pinocchio(self, q: np.ndarray) -> float:
        """max |M_batch − M_crba| at one pinocchio configuration q (diagnostic)."""
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        jp = self.rm.joint_positions(q)
        theta = np.array([[jp[n] for n in self.names]])
        oR, op, oa = self.fk(R[None], q[None, 0:3], theta)
        return float(np.abs(self.mass_matrix(oR, op, oa)[0] - self.rm.mass_matrix(q)).max())


def _skew_batch(c: np.ndarray) -> np.ndarray:
    K = c.shape[0]
    S = np.zeros((K, 3, 3))
    S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -c[:, 2], c[:, 1], -c[:, 0]
    S[:, 1, 0], S[:, 2, 0], S[:, 2, 1] = c[:, 2], -c[:, 1], c[:, 0]
    return S


def mass_matrix_crba(tree: BatchTree, oR, op, oa) -> np.ndarray:
    """(K,nv,nv) M by the composite-rigid-body algorithm in world coordinates (spatial vectors [ω; v_O] at the
    world origin; body inertia [[I_c + m[c]ᵀ[c], m[c]], [m[c]ᵀ, m I₃]]); M_ij = S_iᵀ I^C_j S_j (i ancestor of j)."""
    K = oR[1].shape[0]
    nv = tree.nv
    body_I = {}
    for jid, m, lever, I in tree.bodies:
        c = op[jid] + np.einsum('kij,j->ki', oR[jid], lever)
        Cx = _skew_batch(c)
        Iw = oR[jid] @ I @ np.transpose(oR[jid], (0, 2, 1))
        X = np.empty((K, 6, 6))
        X[:, :3, :3] = Iw + m * np.transpose(Cx, (0, 2, 1)) @ Cx
        X[:, :3, 3:] = m * Cx
        X[:, 3:, :3] = m * np.transpose(Cx, (0, 2, 1))
        X[:, 3:, 3:] = m * np.eye(3)
        body_I[jid] = body_I.get(jid, 0.0) + X
    comp = {j: body_I.get(j, np.zeros((K, 6, 6))) for j in [1] + tree.jids}
    for j in reversed(tree.jids):                 # children after parents: accumulate upwards
        comp[tree.parent[j]] = comp[tree.parent[j]] + comp[j]
    S = {}
    for j in tree.jids:
        a = oa[j]
        s = np.zeros((K, 6))
        if tree.prismatic[j]:
            s[:, 3:] = a
        else:
            s[:, :3] = a
            s[:, 3:] = np.cross(op[j], a)
        S[j] = s
    Sb = np.zeros((K, 6, 6))                      # base columns: v local then ω local
    Rb, pb = oR[1], op[1]
    Sb[:, 3:, 0:3] = Rb
    Sb[:, :3, 3:6] = Rb
    Sb[:, 3:, 3:6] = np.cross(pb[:, None, :], np.transpose(Rb, (0, 2, 1))).transpose(0, 2, 1)
    M = np.zeros((K, nv, nv))
    M[:, 0:6, 0:6] = np.transpose(Sb, (0, 2, 1)) @ comp[1] @ Sb
    for j in tree.jids:
        F = np.einsum('kab,kb->ka', comp[j], S[j])
        cj = tree.idx_v[j]
        M[:, cj, cj] = np.einsum('ka,ka->k', S[j], F)
        Mb = np.einsum('kab,ka->kb', Sb, F)
        M[:, 0:6, cj] = Mb
        M[:, cj, 0:6] = Mb
        for i in tree.ancestors[j][:-1]:
            ci = tree.idx_v[i]
            val = np.einsum('ka,ka->k', S[i], F)
            M[:, ci, cj] = val
            M[:, cj, ci] = val
    return M
