"""Rigid-body penalty-contact simulator: one free payload (6 DOF) against a fixed environment, contact
kinematics from ``contact_estimation.geometry.contacts`` (the estimator's own module).

Per contact (δ, δ̇, n, t, v_t from the kinematics):
- normal law ``kv``: F_n = k δ + b δ̇ (may pull: the estimator's model exactly, M2); ``kv_clipped``:
  max(0, k δ + b δ̇); ``hunt_crossley``: max(0, k δ^p + λ δ^p δ̇) with λ = ``damping`` (N·s/m^(p+1)).
- friction ``sliding``: μ k δ t (eq. 4.4, t = 0 below the slip speed: the estimator's model);
  ``coulomb``: μ F_n t (damping in the friction, the CDT-like mismatch of M3); ``regularised``:
  −μ F_n v_t / sqrt(|v_t|² + ε_v²); ``stick_slip``: a tangential spring k_t to an anchor per persistent
  contact pair, F_t = −k_t s − d_t v_t, capped at μ F_n (slip moves the anchor).
Dynamics: semi-implicit Euler, v += dt (F/m + g), ω += dt I_w⁻¹(τ − ω × I_w ω), p += dt v,
q ← exp(ω dt/2) ⊗ q. An optional fixture (Cartesian spring-damper to a scripted set-point) drives slow
insertions. At every output sample the recorded wrench is the contact wrench at exactly the recorded state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contact_estimation.geometry.body import CompoundBody
from contact_estimation.geometry.contacts import ContactKinematics
from contact_estimation.geometry.rotations import integrate_quat, quat_multiply, quat_to_matrix

NORMAL_LAWS = ('kv', 'kv_clipped', 'hunt_crossley')
FRICTION_LAWS = ('sliding', 'coulomb', 'regularised', 'stick_slip')


@dataclass
class ContactLaw:
    stiffness: float = 1e5
    damping: float = 38.37
    friction: float = 0.1
    normal: str = 'kv'
    friction_law: str = 'sliding'
    exponent: float = 1.5               # Hunt-Crossley p
    eps_v: float = 1e-3                 # regularised Coulomb, m/s
    tangential_stiffness: float | None = None   # stick-slip k_t (default k)
    tangential_damping: float | None = None     # stick-slip d_t (default b)

    def __post_init__(self):
        if self.normal not in NORMAL_LAWS:
            raise ValueError(f'normal law must be one of {NORMAL_LAWS}')
        if self.friction_law not in FRICTION_LAWS:
            raise ValueError(f'friction law must be one of {FRICTION_LAWS}')


@dataclass
class Fixture:
    """Cartesian spring-damper from the payload origin to a set-point p_d(t) (orientation held at q_d)."""
    setpoint: callable                       # t -> (3,) position, m
    orientation: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))
    stiffness: float = 2e4                   # N/m
    damping: float = 2e3                     # N*s/m
    rot_stiffness: float = 2e3               # N*m/rad
    rot_damping: float = 50.0                # N*m*s/rad

    def wrench(self, t, p, q, v, w):
        F = self.stiffness * (self.setpoint(t) - p) - self.damping * v
        e = quat_multiply(self.orientation, q * [-1.0, -1.0, -1.0, 1.0])      # q_d ⊗ q⁻¹
        e = e if e[3] >= 0 else -e
        err = 2.0 * e[:3]                                                      # small-angle rotation vector
        return F, self.rot_stiffness * err - self.rot_damping * w


@dataclass
class Trajectory:
    """Recorded samples: t (s), position p (m), quaternion q (x, y, z, w), world velocity v, world angular
    velocity w, contact force F and moment M on the payload about its origin (world axes), contact count."""
    t: np.ndarray
    p: np.ndarray
    q: np.ndarray
    v: np.ndarray
    w: np.ndarray
    force: np.ndarray
    moment: np.ndarray
    count: np.ndarray


class RigidBodySim:
    def __init__(self, payload: CompoundBody, environment: CompoundBody, law: ContactLaw,
                 gravity=(0.0, 0.0, -9.81), slide_eps: float = 1e-4, fixture: Fixture | None = None):
        self.payload, self.env, self.law = payload, environment, law
        self.kin = ContactKinematics(payload.parts, environment.world_parts(), slide_eps=slide_eps)
        self.g = np.asarray(gravity, float)
        self.fixture = fixture
        self.anchor = np.zeros((self.kin.n_pairs, 3))     # stick-slip spring extension per pair
        self.anchor_on = np.zeros(self.kin.n_pairs, bool)

    def contact_wrench(self, R, p, v, w, dt: float = 0.0):
        """Contact force and moment about the payload origin (world axes) and the contact count."""
        cs = self.kin.compute(R, p, v, w)
        law = self.law
        d, dd = cs.delta, cs.delta_dot
        if law.normal == 'kv':
            fn = law.stiffness * d + law.damping * dd
        elif law.normal == 'kv_clipped':
            fn = np.maximum(law.stiffness * d + law.damping * dd, 0.0)
        else:
            dp = d ** law.exponent
            fn = np.maximum(law.stiffness * dp + law.damping * dp * dd, 0.0)
        if law.friction_law == 'sliding':
            ft = (law.friction * law.stiffness * d)[:, None] * cs.t
        elif law.friction_law == 'coulomb':
            ft = (law.friction * fn)[:, None] * cs.t
        elif law.friction_law == 'regularised':
            speed = np.linalg.norm(cs.v_t, axis=1)
            ft = -(law.friction * fn / np.sqrt(speed ** 2 + law.eps_v ** 2))[:, None] * cs.v_t
        else:
            ft = self._stick_slip(cs, fn, dt)
        f = fn[:, None] * cs.n + ft
        return f.sum(axis=0), np.cross(cs.lever, f).sum(axis=0), len(cs)

    def _stick_slip(self, cs, fn, dt):
        law = self.law
        kt = law.tangential_stiffness or law.stiffness
        dt_ = law.tangential_damping if law.tangential_damping is not None else law.damping
        on = np.zeros(self.kin.n_pairs, bool)
        on[cs.pair] = True
        self.anchor[~on] = 0.0
        s = self.anchor[cs.pair]
        s = s - np.einsum('ci,ci->c', s, cs.n)[:, None] * cs.n + cs.v_t * dt      # keep s in the tangent plane
        ft = -kt * s - dt_ * cs.v_t
        mag = np.linalg.norm(ft, axis=1)
        cap = law.friction * np.maximum(fn, 0.0)
        slip = mag > cap
        scale = np.where(slip, cap / np.where(mag > 0, mag, 1.0), 1.0)
        ft = ft * scale[:, None]
        s = np.where(slip[:, None], -(ft + dt_ * cs.v_t) / kt, s)
        self.anchor[cs.pair] = s
        return ft

    def run(self, p0, q0, v0=(0, 0, 0), w0=(0, 0, 0), duration: float = 0.4, dt: float = 5e-5,
            rate: float = 1000.0) -> Trajectory:
        m = self.payload.mass
        Ib = self.payload.inertia
        if m <= 0 or np.any(np.linalg.eigvalsh(Ib) <= 0):
            raise ValueError('the payload needs a positive mass and inertia')
        Ib_inv = np.linalg.inv(Ib)
        if np.linalg.norm(self.payload.com) > 1e-12:
            raise ValueError('the simulator needs the payload frame origin at the centre of mass')
        p, q = np.array(p0, float), np.array(q0, float) / np.linalg.norm(q0)
        v, w = np.array(v0, float), np.array(w0, float)
        every = int(round(1.0 / (rate * dt)))
        if abs(every * dt * rate - 1.0) > 1e-9:
            raise ValueError('1/rate must be a multiple of dt')
        n_out = int(round(duration * rate)) + 1
        rec = {k: np.zeros((n_out, 3)) for k in ('p', 'v', 'w', 'F', 'M')}
        rec['q'] = np.zeros((n_out, 4))
        count = np.zeros(n_out, int)
        for i in range(n_out * every):
            t = i * dt
            R = quat_to_matrix(q)
            F, M, nc = self.contact_wrench(R, p, v, w, dt)
            if i % every == 0:
                j = i // every
                rec['p'][j], rec['q'][j], rec['v'][j], rec['w'][j] = p, q, v, w
                rec['F'][j], rec['M'][j], count[j] = F, M, nc
                if j == n_out - 1:
                    break
            tau = M
            Ftot = F + m * self.g
            if self.fixture is not None:
                Ff, Mf = self.fixture.wrench(t, p, q, v, w)
                Ftot = Ftot + Ff
                tau = tau + Mf
            Iw = R @ Ib @ R.T
            Iw_inv = R @ Ib_inv @ R.T
            v = v + dt * Ftot / m
            w = w + dt * (Iw_inv @ (tau - np.cross(w, Iw @ w)))
            p = p + dt * v
            q = integrate_quat(q, w, dt)
        return Trajectory(np.arange(n_out) / rate, rec['p'], rec['q'], rec['v'], rec['w'], rec['F'], rec['M'], count)
