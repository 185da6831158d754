"""3-D six-wheel rover loaded from any URDF with pinocchio, joint roles from a YAML file (spec §3.2, §7).

Coordinates (pinocchio free-flyer convention): q̇ = [v_base (base frame), ω_base (base frame), joint rates],
which is exactly nav_msgs/Odometry's twist (child frame) followed by JointState velocities. M(q) from
pinocchio's CRBA; the maximal-coordinate assembly M = Σ_i J_iᵀ blockdiag(m_i I₃, I_i^world) J_i (CoM
Jacobians) is the cross-check. Closing constraints are rows of our own Γ: locked joints (e_jᵀ), the
differential (Σ c_k θ̇_k = 0), and wheel-ground rows (normal, holonomic repeat, two no-slip rows, 5.26-5.29).
Units SI; world frame z up (REP-103), the obstacle normal in a gravity-levelled heading frame.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import yaml


class ModelError(ValueError):
    """A URDF or role map that cannot describe the rover (missing joints, bad radius, ...): says which."""


@dataclass
class Roles:
    """Joint roles of a rover URDF (see config/rover_*_roles.yaml)."""
    wheels: dict                      # name -> {'joint': str, 'radius': float}
    model_name: str = 'rover'
    base_link: str = 'base_link'
    rockers: list = field(default_factory=list)
    bogies: list = field(default_factory=list)
    steering: list = field(default_factory=list)
    passive_joints: list = field(default_factory=list)
    locked_joints: list = field(default_factory=list)
    differential: list = field(default_factory=list)
    posture_joints: list = field(default_factory=list)
    contact_wheels_default: list = field(default_factory=list)
    urdf: str = ''

    @classmethod
    def from_dict(cls, d: dict) -> 'Roles':
        if not isinstance(d, dict) or not isinstance(d.get('wheels'), dict) or not d['wheels']:
            raise ModelError("role map must have a non-empty 'wheels' mapping (name -> {joint, radius})")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ModelError(f"unknown role key(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        wheels = {}
        for name, w in d['wheels'].items():
            if not isinstance(w, dict) or 'joint' not in w:
                raise ModelError(f"wheel '{name}' needs a 'joint'")
            r = float(w.get('radius', 0.175))
            if not np.isfinite(r) or r <= 0:
                raise ModelError(f"wheel '{name}' radius {r} must be finite and > 0")
            wheels[name] = {'joint': str(w['joint']), 'radius': r}
        out = cls(**{**d, 'wheels': wheels})
        for w in out.contact_wheels_default:
            if w not in wheels:
                raise ModelError(f"contact_wheels_default: '{w}' is not a wheel ({', '.join(wheels)})")
        return out


def load_roles(path: str) -> tuple[Roles, str]:
    """Roles and the URDF text named in them (path relative to the YAML file)."""
    with open(path, encoding='utf-8') as f:
        d = yaml.safe_load(f) or {}
    roles = Roles.from_dict(d)
    if not roles.urdf:
        raise ModelError(f"{path}: no 'urdf' given (or pass the URDF text)")
    urdf = roles.urdf if os.path.isabs(roles.urdf) else os.path.join(os.path.dirname(os.path.abspath(path)), roles.urdf)
    with open(urdf, encoding='utf-8') as f:
        return roles, f.read()


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def _disk_point(centre, axle, direction, radius):
    """Point of a disk (centre, unit axle, radius) furthest along ``direction``: c + R·unit(d − (d·a)a)."""
    d = direction - (direction @ axle) * axle
    nd = np.linalg.norm(d)
    if nd < 1e-12:
        raise ModelError('contact direction is along the wheel axle: the rim does not touch')
    return centre + radius * d / nd


class RoverModel:
    """A floating-base rover tree (pinocchio) with its joint roles and constraint rows."""

    def __init__(self, urdf_xml: str, roles: Roles | dict):
        self.roles = roles if isinstance(roles, Roles) else Roles.from_dict(roles)
        try:
            self.model = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
        except Exception as exc:                      # pinocchio raises plain exceptions on bad XML
            raise ModelError(f'URDF could not be parsed: {exc}') from None
        self.data = self.model.createData()
        names = list(self.model.names)
        needed = [w['joint'] for w in self.roles.wheels.values()]
        for key in ('rockers', 'bogies', 'steering', 'passive_joints', 'locked_joints', 'posture_joints'):
            needed += list(getattr(self.roles, key))
        for d in self.roles.differential:
            needed += list(d.get('joints', []))
        missing = sorted({j for j in needed if j not in names})
        if missing:
            raise ModelError(f"URDF '{self.model.name}' has no joint(s) {', '.join(missing)} named in the role map "
                             f"(its joints: {', '.join(names[2:])})")
        self.joint_names = names[2:]                  # after universe and the free flyer
        self.nv = self.model.nv
        self.jid = {n: self.model.getJointId(n) for n in self.joint_names}
        for n in self.joint_names:
            if self.model.joints[self.jid[n]].nv != 1:
                raise ModelError(f"joint '{n}' has {self.model.joints[self.jid[n]].nv} DOF; only 1-DOF joints are supported")
        self.idx_v = {n: self.model.joints[self.jid[n]].idx_v for n in self.joint_names}
        self.wheel_names = list(self.roles.wheels)
        self.wheel_jid = [self.jid[self.roles.wheels[w]['joint']] for w in self.wheel_names]
        self.wheel_radius = np.array([self.roles.wheels[w]['radius'] for w in self.wheel_names])
        self.mass = float(sum(I.mass for I in self.model.inertias))
        self._mech = self._mech_rows()

    @classmethod
    def from_roles_file(cls, path: str, urdf_xml: str | None = None) -> 'RoverModel':
        roles, text = load_roles(path) if urdf_xml is None else (None, urdf_xml)
        if roles is None:
            with open(path, encoding='utf-8') as f:
                roles = Roles.from_dict(yaml.safe_load(f) or {})
        return cls(text, roles)

    # ---------------------------------------------------------------- state
    def configuration(self, joints: dict | None = None, base_xyz=(0.0, 0.0, 0.0),
                      base_quat_xyzw=(0.0, 0.0, 0.0, 1.0)) -> np.ndarray:
        """pinocchio q from a base pose and joint angles {name: rad or m} (others 0)."""
        q = pin.neutral(self.model)
        q[0:3] = base_xyz
        quat = np.asarray(base_quat_xyzw, float)
        q[3:7] = quat / np.linalg.norm(quat)
        for n, x in (joints or {}).items():
            j = self.model.joints[self.jid[n]]
            if j.nq == 2:
                q[j.idx_q:j.idx_q + 2] = (np.cos(x), np.sin(x))
            else:
                q[j.idx_q] = x
        return q

    def joint_positions(self, q: np.ndarray) -> dict:
        out = {}
        for n in self.joint_names:
            j = self.model.joints[self.jid[n]]
            out[n] = float(np.arctan2(q[j.idx_q + 1], q[j.idx_q])) if j.nq == 2 else float(q[j.idx_q])
        return out

    def velocity(self, v_base=(0, 0, 0), w_base=(0, 0, 0), rates: dict | None = None) -> np.ndarray:
        v = np.zeros(self.nv)
        v[0:3] = v_base
        v[3:6] = w_base
        for n, x in (rates or {}).items():
            v[self.idx_v[n]] = x
        return v

    # ---------------------------------------------------------------- dynamics
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) by CRBA [kg, kg·m, kg·m²]."""
        M = pin.crba(self.model, self.data, q)
        return np.triu(M) + np.triu(M, 1).T

    def _kin(self, q):
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)

    def joint_jacobian(self, jid: int) -> np.ndarray:
        """6×nv Jacobian of the joint frame origin, world-aligned (after _kin)."""
        return pin.getJointJacobian(self.model, self.data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)

    def point_jacobian(self, jid: int, point: np.ndarray) -> np.ndarray:
        """3×nv linear Jacobian of a world point fixed to joint jid's body (after _kin)."""
        J = self.joint_jacobian(jid)
        o = self.data.oMi[jid].translation
        return J[:3] - _skew(point - o) @ J[3:]

    def _bodies(self, q: np.ndarray):
        """(inertia, world placement oM, world CoM c, joint Jacobian J) of every body with mass, at q."""
        self._kin(q)
        for jid in range(1, self.model.njoints):
            I = self.model.inertias[jid]
            if I.mass <= 0:
                continue
            oM = self.data.oMi[jid]
            yield I, oM, oM.act(I.lever), self.joint_jacobian(jid)

    def mass_matrix_assembled(self, q: np.ndarray) -> np.ndarray:
        """Maximal-coordinate assembly Σ_i J_iᵀ blockdiag(m_i I₃, R_i I_i R_iᵀ) J_i (cross-check of CRBA)."""
        M = np.zeros((self.nv, self.nv))
        for I, oM, c, J in self._bodies(q):
            Jv = J[:3] - _skew(c - oM.translation) @ J[3:]
            Iw = oM.rotation @ I.inertia @ oM.rotation.T
            M += I.mass * Jv.T @ Jv + J[3:].T @ Iw @ J[3:]
        return 0.5 * (M + M.T)

    def body_blocks(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Maximal coordinates: stacked CoM Jacobians J (6N×nv, [v_G; ω] world) and block-diagonal M (6N×6N)."""
        Js, Ms = [], []
        for I, oM, c, J in self._bodies(q):
            Js.append(np.vstack([J[:3] - _skew(c - oM.translation) @ J[3:], J[3:]]))
            Mi = np.zeros((6, 6))
            Mi[:3, :3] = I.mass * np.eye(3)
            Mi[3:, 3:] = oM.rotation @ I.inertia @ oM.rotation.T
            Ms.append(Mi)
        from scipy.linalg import block_diag
        return np.vstack(Js), block_diag(*Ms)

    # ---------------------------------------------------------------- constraint rows
    def _mech_rows(self) -> np.ndarray:
        rows = []
        for n in self.roles.locked_joints:
            r = np.zeros(self.nv)
            r[self.idx_v[n]] = 1.0
            rows.append(r)
        for d in self.roles.differential:
            r = np.zeros(self.nv)
            for n, c in zip(d['joints'], d.get('coefficients', [1.0] * len(d['joints']))):
                r[self.idx_v[n]] = float(c)
            rows.append(r)
        return np.array(rows).reshape(-1, self.nv)

    def mech_rows(self, locked: bool = True) -> np.ndarray:
        """Γ_mech: lock rows (if ``locked``) then differential rows (constant in q)."""
        if locked:
            return self._mech.copy()
        return self._mech[len(self.roles.locked_joints):].copy()

    def wheel_geometry(self, q: np.ndarray, kin: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Wheel centres (W×3) and unit axles (W×3) in the world."""
        if kin:
            self._kin(q)
        c, a = [], []
        for jid in self.wheel_jid:
            oM = self.data.oMi[jid]
            axis = self._axis(jid)
            c.append(oM.translation.copy())
            a.append(oM.rotation @ axis)
        return np.array(c), np.array(a)

    def _axis(self, jid: int) -> np.ndarray:
        j = self.model.joints[jid]
        short = j.shortname()
        for key, ax in (('X', [1, 0, 0]), ('Y', [0, 1, 0]), ('Z', [0, 0, 1])):
            if short.endswith(key) and ('RevoluteUnaligned' not in short):
                return np.array(ax, float)
        return np.asarray(j.extract().axis if hasattr(j.extract(), 'axis') else j.axis, float)

    def heading(self, q: np.ndarray) -> float:
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        return float(np.arctan2(R[1, 0], R[0, 0]))

    def contact_rows(self, q: np.ndarray, wheels: list[str], n_in: np.ndarray, kin: bool = True) -> np.ndarray:
        """Λ: one row n_inᵀ J_v,C per impacting wheel, C the rim point furthest along n_in (5.17-5.21)."""
        if kin:
            self._kin(q)
        n_in = np.asarray(n_in, float)
        rows = []
        for w in wheels:
            k = self.wheel_names.index(w)
            jid = self.wheel_jid[k]
            centre, axle = self.data.oMi[jid].translation, self.data.oMi[jid].rotation @ self._axis(jid)
            C = _disk_point(centre, axle, n_in, self.wheel_radius[k])
            rows.append(n_in @ self.point_jacobian(jid, C))
        return np.array(rows).reshape(-1, self.nv)

    def ground_rows(self, q: np.ndarray, wheels: list[str], rolling: bool = True, kin: bool = True) -> np.ndarray:
        """4 rows per wheel on flat ground (n = +z): normal, holonomic repeat, and (``rolling``) the two
        horizontal no-slip rows of the contact point (5.27-5.29); normal rows only otherwise."""
        if kin:
            self._kin(q)
        up = np.array([0.0, 0.0, 1.0])
        rows = []
        for w in wheels:
            k = self.wheel_names.index(w)
            jid = self.wheel_jid[k]
            centre, axle = self.data.oMi[jid].translation, self.data.oMi[jid].rotation @ self._axis(jid)
            P = _disk_point(centre, axle, -up, self.wheel_radius[k])
            Jp = self.point_jacobian(jid, P)
            rows += [Jp[2], Jp[2]]
            if rolling:
                rows += [Jp[0], Jp[1]]
        return np.array(rows).reshape(-1, self.nv)

    def ground_normal_rows(self, q: np.ndarray, kin: bool = True) -> np.ndarray:
        """One upward normal-velocity row per wheel (activity test)."""
        return self.ground_rows(q, self.wheel_names, rolling=False, kin=kin)[0::2]

    def rolling_velocity(self, q: np.ndarray, speed: float, heading: float | None = None) -> np.ndarray:
        """q̇ for the base translating at ``speed`` along the heading, no joint motion, wheels rolling
        (contact point at rest: ω = v/R about the axle)."""
        self._kin(q)
        psi = self.heading(q) if heading is None else heading
        d = np.array([np.cos(psi), np.sin(psi), 0.0])
        R = self.data.oMi[1].rotation
        v = np.zeros(self.nv)
        v[0:3] = R.T @ (speed * d)
        up = np.array([0.0, 0.0, 1.0])
        for k, jid in enumerate(self.wheel_jid):
            axle = self.data.oMi[jid].rotation @ self._axis(jid)
            # contact point velocity v_c + ω a × (P − c) = 0 along d; P − c = −R e (e ⟂ a, in the up plane)
            e = up - (up @ axle) * axle
            e /= np.linalg.norm(e)
            lever = np.cross(axle, -self.wheel_radius[k] * e)
            denom = lever @ d
            v[self.model.joints[jid].idx_v] = -speed / denom if abs(denom) > 1e-12 else 0.0
        return v

    def com(self, q: np.ndarray) -> np.ndarray:
        return pin.centerOfMass(self.model, self.data, q).copy()
