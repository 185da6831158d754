"""Planar multibody models of the spec (x forward, y up, GMDL side view): model TB (two-body, §2.4/§3.5)
and model PR (RCP-like side view, §2.5), in minimal coordinates (tree: Σ J_iᵀ M_i J_i, i.e. CRBA) and in
maximal coordinates (3 per body, block-diagonal M, revolute rows Γ: 2 per joint) as the cross-check.

Minimal coordinates q̇ = [ẋ_0, ẏ_0, θ̇_0, φ̇_1 … φ̇_{N−1}]: planar velocity of the root body's CoM and its
angle rate, then each other body's angle rate relative to its parent. Units: m, kg, kg·m², rad.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PlanarBody:
    name: str
    mass: float
    inertia: float                       # I_zz about the CoM [kg·m²]
    com: tuple[float, float]             # CoM in the world at the reference configuration [m]
    parent: int = -1                     # index of the parent body (−1: floating root)
    joint: tuple[float, float] = (0.0, 0.0)   # revolute position in the world [m]
    radius: float = 0.0                  # wheel radius (0: not a wheel) [m]


def _perp(r: np.ndarray) -> np.ndarray:
    """e_z × r for planar r (last axis of length 2)."""
    return np.stack([-r[..., 1], r[..., 0]], axis=-1)


@dataclass
class PlanarTree:
    """A planar tree of rigid bodies at one configuration (the impact instant is frozen)."""
    bodies: list[PlanarBody]
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._index = {b.name: i for i, b in enumerate(self.bodies)}
        if self.bodies[0].parent != -1 or any(b.parent < 0 or b.parent >= i for i, b in enumerate(self.bodies) if i):
            raise ValueError('body 0 must be the root and parents must precede children')

    @property
    def n(self) -> int:
        return 2 + len(self.bodies)

    def index(self, name: str) -> int:
        return self._index[name]

    def ancestors(self, i: int) -> list[int]:
        """Non-root bodies on the path root→i, including i (their joints move body i)."""
        out = []
        while i > 0:
            out.append(i)
            i = self.bodies[i].parent
        return out[::-1]

    def body_jacobian(self, i: int) -> np.ndarray:
        """3×n map q̇ → [v_x, v_y, ω] of body i's CoM (world)."""
        J = np.zeros((3, self.n))
        c = np.asarray(self.bodies[i].com, float)
        c0 = np.asarray(self.bodies[0].com, float)
        J[0:2, 0:2] = np.eye(2)
        J[0:2, 2] = _perp(c - c0)
        J[2, 2] = 1.0
        for j in self.ancestors(i):
            J[0:2, 2 + j] = _perp(c - np.asarray(self.bodies[j].joint, float))
            J[2, 2 + j] = 1.0
        return J

    def jacobian_maximal(self) -> np.ndarray:
        """3N×n map minimal → maximal velocities (stacked body CoM velocities and angle rates)."""
        return np.vstack([self.body_jacobian(i) for i in range(len(self.bodies))])

    def mass_matrix(self) -> np.ndarray:
        """M = Σ_i J_iᵀ diag(m_i, m_i, I_i) J_i (the composite-rigid-body result) [n×n]."""
        M = np.zeros((self.n, self.n))
        for i, b in enumerate(self.bodies):
            J = self.body_jacobian(i)
            M += J.T @ np.diag([b.mass, b.mass, b.inertia]) @ J
        return M

    # ---------------------------------------------------------------- maximal coordinates
    def mass_matrix_maximal(self) -> np.ndarray:
        """Block-diagonal M of 3 coordinates (x_G, y_G, angle) per body [3N×3N]."""
        return np.diag(np.concatenate([[b.mass, b.mass, b.inertia] for b in self.bodies]))

    def gamma_maximal(self) -> np.ndarray:
        """Revolute rows (2 per joint): v_c + ω_c × (P − c_c) − v_p − ω_p × (P − c_p) = 0."""
        N = len(self.bodies)
        rows = []
        for i, b in enumerate(self.bodies[1:], start=1):
            p = self.bodies[b.parent]
            P = np.asarray(b.joint, float)
            row = np.zeros((2, 3 * N))
            row[:, 3 * i:3 * i + 2] = np.eye(2)
            row[:, 3 * i + 2] = _perp(P - np.asarray(b.com, float))
            row[:, 3 * b.parent:3 * b.parent + 2] = -np.eye(2)
            row[:, 3 * b.parent + 2] = -_perp(P - np.asarray(p.com, float))
            rows.append(row)
        return np.vstack(rows) if rows else np.zeros((0, 3 * N))

    def lock_row_minimal(self, i: int) -> np.ndarray:
        """Γ row e_jᵀ locking body i's joint (relative angle rate = 0)."""
        r = np.zeros(self.n)
        r[2 + i] = 1.0
        return r

    def lock_row_maximal(self, i: int) -> np.ndarray:
        """Γ row ω_i − ω_parent = 0 in maximal coordinates."""
        r = np.zeros(3 * len(self.bodies))
        r[3 * i + 2] = 1.0
        r[3 * self.bodies[i].parent + 2] = -1.0
        return r

    def point_rows(self, i: int, point=None, maximal: bool = False) -> np.ndarray:
        """2×n map q̇ → planar velocity of a point of body i (default its CoM)."""
        c = np.asarray(self.bodies[i].com, float)
        P = c if point is None else np.asarray(point, float)
        if maximal:
            J = np.zeros((2, 3 * len(self.bodies)))
            J[:, 3 * i:3 * i + 2] = np.eye(2)
            J[:, 3 * i + 2] = _perp(P - c)
            return J
        J = self.body_jacobian(i)
        return J[0:2] + np.outer(_perp(P - c), J[2])

    def normal_row(self, wheel: int, beta: float, maximal: bool = False) -> np.ndarray:
        """Λ row for a smooth wheel meeting a face at angle β: n_inᵀ v_C, n_in = (sin β, −cos β)
        (spec 3.25/5.17). Spin drops out because C = G_w + R n_in moves tangentially under spin."""
        b = self.bodies[wheel]
        n_in = np.array([np.sin(beta), -np.cos(beta)])
        C = np.asarray(b.com, float) + b.radius * n_in
        return n_in @ self.point_rows(wheel, C, maximal)

    def ground_rows(self, wheel: int, rolling: bool = True, maximal: bool = False) -> np.ndarray:
        """Wheel-ground rows on flat ground (planar form of 5.27-5.29): normal ẏ_G = 0, the holonomic
        rate (repeats it, rank 1) and, with ``rolling``, no slip ẋ_G + R ω_abs = 0."""
        b = self.bodies[wheel]
        J = self.body_jacobian(wheel) if not maximal else self.point_rows(wheel, None, True)
        if maximal:
            om = np.zeros(3 * len(self.bodies))
            om[3 * wheel + 2] = 1.0
        else:
            om = J[2]
        rows = [J[1], J[1].copy()]
        if rolling:
            rows.append(J[0] + b.radius * om)
        return np.vstack(rows)

    def ground_normal_row(self, wheel: int, maximal: bool = False) -> np.ndarray:
        """Upward normal velocity of the wheel's ground contact point (= ẏ_G)."""
        return self.point_rows(wheel, None, maximal)[1]

    def translation_velocity(self, v: float, spin: dict | None = None) -> np.ndarray:
        """Minimal q̇ for every body translating at v in +x with wheels rolling (ω_abs = −v/R)."""
        qd = np.zeros(self.n)
        qd[0] = v
        for i, b in enumerate(self.bodies):
            if b.radius > 0:
                qd[2 + i] = -v / b.radius        # relative = absolute because parents do not rotate
        return qd

    def com(self) -> np.ndarray:
        m = np.array([b.mass for b in self.bodies])
        c = np.array([b.com for b in self.bodies], float)
        return m @ c / m.sum()


# ---------------------------------------------------------------------------- model TB
@dataclass(frozen=True)
class TwoBodyParams:
    """Model TB (spec §2.5): chassis (m1, I1) and wheel (m2, I2, R) joined at the wheel centre G2, l = |G1G2|."""
    m1: float = 100.0
    I1: float = 10.0
    m2: float = 5.0
    I2: float = 0.08
    l: float = 0.6
    R: float = 0.175
    theta1: float = np.deg2rad(-20.0)


def two_body_mass_matrix(p: TwoBodyParams) -> np.ndarray:
    """M of §3.5 (A.3-A.9), q = [x1, y1, θ1, θ2] (θ2 relative)."""
    s, c = np.sin(p.theta1), np.cos(p.theta1)
    m = p.m1 + p.m2
    return np.array([[m, 0.0, -p.m2 * p.l * s, 0.0],
                     [0.0, m, p.m2 * p.l * c, 0.0],
                     [-p.m2 * p.l * s, p.m2 * p.l * c, p.I1 + p.I2 + p.m2 * p.l ** 2, p.I2],
                     [0.0, 0.0, p.I2, p.I2]])


def two_body_jc(p: TwoBodyParams, beta: float) -> np.ndarray:
    """J_c = [sin β, −cos β, −l cos(β − θ1), 0] (3.25); J_c q̇ > 0 means approach."""
    return np.array([np.sin(beta), -np.cos(beta), -p.l * np.cos(beta - p.theta1), 0.0])


def two_body_meff_closed(p: TwoBodyParams, beta) -> np.ndarray:
    """1/m_eff = 1/m + (m1 l/m)² cos²(β − θ1)/I_G, I_G = I1 + m1 m2 l²/m (§4.4) [kg]."""
    m = p.m1 + p.m2
    IG = p.I1 + p.m1 * p.m2 * p.l ** 2 / m
    return 1.0 / (1.0 / m + (p.m1 * p.l / m) ** 2 * np.cos(np.asarray(beta) - p.theta1) ** 2 / IG)


def two_body_velocity(p: TwoBodyParams, v: float = 0.07) -> np.ndarray:
    """q̇ = [v, 0, 0, −v/R] (spec §2.5)."""
    return np.array([v, 0.0, 0.0, -v / p.R])


def two_body_tree(p: TwoBodyParams = TwoBodyParams()) -> PlanarTree:
    """Model TB as a planar tree: chassis CoM at the origin, wheel centre at l(cos θ1, sin θ1)."""
    G2 = (p.l * np.cos(p.theta1), p.l * np.sin(p.theta1))
    return PlanarTree([PlanarBody('chassis', p.m1, p.I1, (0.0, 0.0)),
                       PlanarBody('wheel', p.m2, p.I2, G2, parent=0, joint=G2, radius=p.R)])


# ---------------------------------------------------------------------------- model PR
PR_WHEEL_RADIUS = 0.175
PR_PIVOT = (0.2671, 0.4499)


def model_pr(y_body: float = 0.75) -> PlanarTree:
    """Model PR (spec §2.5), main-body CoM height ``y_body`` (T7 sweeps it; 0.75 m nominal)."""
    R = PR_WHEEL_RADIUS
    return PlanarTree([
        PlanarBody('main_body', 90.0, 10.0, (-0.05, y_body)),
        PlanarBody('side_bogie', 20.0, 1.6, (0.2671, 0.40), parent=0, joint=PR_PIVOT),
        PlanarBody('front_wheel', 6.0, 0.09, (0.5349, R), parent=1, joint=(0.5349, R), radius=R),
        PlanarBody('middle_wheel', 6.0, 0.09, (0.0, R), parent=1, joint=(0.0, R), radius=R),
        PlanarBody('rear_wheel', 6.0, 0.09, (-0.5381, R), parent=0, joint=(-0.5381, R), radius=R),
    ])


def remove_coordinate(M: np.ndarray, rows: np.ndarray, qd: np.ndarray, k: int):
    """Delete coordinate k (a locked joint) from M, the rows and q̇."""
    keep = [i for i in range(M.shape[0]) if i != k]
    return M[np.ix_(keep, keep)], np.atleast_2d(rows)[:, keep], np.asarray(qd)[keep]
