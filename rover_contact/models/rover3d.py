"""3-D six-wheel rover loaded from any URDF with pinocchio, joint roles from a YAML file (spec §3.2, §7).

Coordinates (pinocchio free-flyer convention): q̇ = [v_root (root frame), ω_root (root frame), joint rates].
The root is the URDF's root link; when the role map's ``base_link`` is another link rigidly attached to it
(fixed joints), the odometry pose and twist of ``base_link`` are carried to the root by the constant
placement between them (``state_from_base``). M(q) from pinocchio's CRBA; the maximal-coordinate assembly
M = Σ_i J_iᵀ blockdiag(m_i I₃, I_i^world) J_i (CoM Jacobians) is the cross-check. Closing constraints are
rows of our own Γ: locked joints (e_jᵀ), the differential (Σ c_k θ̇_k = 0), and wheel-ground rows (normal,
holonomic repeat, two no-slip rows, 5.26-5.29).

Wheel contact geometry (``wheel_contact``), used by the obstacle row, the ground rows, the rolling velocity
and the posture ground solve alike:
  ``domed`` (default, MacMahon's model, spec §3.3-3.4): the wheel touches like a sphere of radius R about its
    centre G: obstacle contact C = G + R n_in, ground contact P = G − R e_z (the ground rows are those of
    the wheel centre: n·v_G and the no-slip v_G + R n × ω), on flat ground the centre is at height R;
  ``disk``: a thin disk: the rim point furthest along the direction, C = G + R unit(n_in − (n_in·a)a), the
    ground contact is the lowest rim point, on flat ground the centre is at R·sqrt(1 − a_z²).
They agree whenever the axle a is perpendicular to the direction (level axle, unsteered wheel).
Units SI; world frame z up (REP-103), the obstacle normal in a gravity-levelled heading frame.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from io import StringIO

import numpy as np
import pinocchio as pin
import yaml

WHEEL_CONTACTS = ('domed', 'disk')


class ModelError(ValueError):
    """A URDF or role map that cannot describe the rover (missing joints, bad radius, ...): says which."""


def _listed(names, n: int = 12) -> str:
    """At most ``n`` names and how many more (messages stay one bounded line)."""
    names = list(names)
    return ', '.join(names[:n]) + (f', ... ({len(names) - n} more)' if len(names) > n else '')


def _names(v, key: str) -> list:
    if v is None:
        return []
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise ModelError(f"role map '{key}' must be a list of joint names")
    return list(v)


@dataclass
class Roles:
    """Joint roles of a rover URDF (see config/rover_*_roles.yaml and doc/rover_api.md).

    Every key has an effect: ``rockers`` and ``bogies`` are passive (free at impact, solved by the ground
    contact) unless also listed in ``locked_joints``; ``steering`` joints are locked during the approach unless
    also listed in ``passive_joints``; ``unfix`` turns fixed URDF joints into revolute ones (name list, or
    name -> {axis, lower, upper}); ``base_link`` is the odometry child frame (the URDF root or a link fixed
    to it). ``passive_joints`` / ``locked_joints`` below are the resolved lists (explicit + from the roles)."""
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
    unfix: dict = field(default_factory=dict)     # joint -> {'axis': [x,y,z] | None, 'lower', 'upper'}
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
            extra = sorted(set(w) - {'joint', 'radius'})
            if extra:
                raise ModelError(f"wheel '{name}': unknown key(s) {', '.join(extra)} (known: joint, radius)")
            r = float(w.get('radius', 0.175))
            if not np.isfinite(r) or r <= 0:
                raise ModelError(f"wheel '{name}' radius {r} must be finite and > 0")
            wheels[name] = {'joint': str(w['joint']), 'radius': r}
        lists = {k: _names(d.get(k), k) for k in ('rockers', 'bogies', 'steering', 'passive_joints',
                                                  'locked_joints', 'posture_joints', 'contact_wheels_default')}
        both = sorted(set(lists['passive_joints']) & set(lists['locked_joints']))
        if both:
            raise ModelError(f"joint(s) {', '.join(both)} listed both in passive_joints and locked_joints")
        roles_of: dict[str, list] = {}
        for key in ('rockers', 'bogies', 'steering'):
            for j in lists[key]:
                roles_of.setdefault(j, []).append(key)
        spin = {w['joint'] for w in wheels.values()}
        for j, keys in roles_of.items():
            if len(keys) > 1:
                raise ModelError(f"joint '{j}' has two roles ({' and '.join(keys)})")
            if j in spin:
                raise ModelError(f"joint '{j}' is a wheel spin joint and cannot be in {keys[0]}")
        passive = lists['passive_joints'] + [j for j in lists['rockers'] + lists['bogies']
                                             if j not in lists['locked_joints'] and j not in lists['passive_joints']]
        locked = lists['locked_joints'] + [j for j in lists['steering']
                                           if j not in lists['passive_joints'] and j not in lists['locked_joints']]
        diff = d.get('differential') or []
        if not isinstance(diff, list):
            raise ModelError("role map 'differential' must be a list of {joints: [...], coefficients: [...]}")
        for k, row in enumerate(diff):
            if not isinstance(row, dict) or not _names(row.get('joints'), f'differential[{k}].joints'):
                raise ModelError(f'differential[{k}] needs a non-empty joints list')
            extra = sorted(set(row) - {'joints', 'coefficients'})
            if extra:
                raise ModelError(f"differential[{k}]: unknown key(s) {', '.join(extra)} (known: joints, coefficients)")
            if 'coefficients' in row and len(row['coefficients']) != len(row['joints']):
                raise ModelError(f"differential[{k}]: {len(row['joints'])} joints but "
                                 f"{len(row['coefficients'])} coefficients")
        out = cls(wheels=wheels, model_name=str(d.get('model_name', 'rover')),
                  base_link=str(d.get('base_link', 'base_link')), rockers=lists['rockers'], bogies=lists['bogies'],
                  steering=lists['steering'], passive_joints=passive, locked_joints=locked, differential=list(diff),
                  posture_joints=lists['posture_joints'], contact_wheels_default=lists['contact_wheels_default'],
                  unfix=_unfix_spec(d.get('unfix')), urdf=str(d.get('urdf') or ''))
        for w in out.contact_wheels_default:
            if w not in wheels:
                raise ModelError(f"contact_wheels_default: '{w}' is not a wheel ({', '.join(wheels)})")
        return out


def _unfix_spec(v) -> dict:
    """``unfix`` as {joint: {'axis': array | None, 'lower': float | None, 'upper': float | None}}."""
    if v is None:
        return {}
    if isinstance(v, (list, tuple)):
        v = {str(j): {} for j in v}
    if not isinstance(v, dict):
        raise ModelError("role map 'unfix' must be a list of joint names or a mapping joint -> {axis, lower, upper}")
    out = {}
    for j, spec in v.items():
        spec = spec or {}
        if not isinstance(spec, dict):
            raise ModelError(f"unfix '{j}': expected {{axis: [x, y, z], lower: rad, upper: rad}}")
        extra = sorted(set(spec) - {'axis', 'lower', 'upper'})
        if extra:
            raise ModelError(f"unfix '{j}': unknown key(s) {', '.join(extra)} (known: axis, lower, upper)")
        axis = None
        if spec.get('axis') is not None:
            axis = np.asarray(spec['axis'], float)
            if axis.shape != (3,) or not np.all(np.isfinite(axis)) or np.linalg.norm(axis) < 1e-9:
                raise ModelError(f"unfix '{j}': axis must be 3 finite numbers, not all zero")
        lo, hi = spec.get('lower'), spec.get('upper')
        if (lo is None) != (hi is None):
            raise ModelError(f"unfix '{j}': give both lower and upper (or neither: a continuous joint)")
        if lo is not None and not float(lo) < float(hi):
            raise ModelError(f"unfix '{j}': lower {lo} must be < upper {hi}")
        out[str(j)] = {'axis': axis, 'lower': None if lo is None else float(lo),
                       'upper': None if hi is None else float(hi)}
    return out


def _parse_urdf(urdf_xml: str) -> ET.Element:
    for prefix, uri in {ns for _, ns in ET.iterparse(StringIO(urdf_xml), events=('start-ns',))}:
        ET.register_namespace(prefix, uri)
    return ET.fromstring(urdf_xml)


def urdf_joint_types(urdf_xml: str) -> dict:
    """{joint name: URDF type} of a URDF text ({} if it does not parse)."""
    try:
        root = _parse_urdf(urdf_xml)
    except ET.ParseError:
        return {}
    return {j.get('name'): j.get('type') for j in root.iter('joint')}


def unfix_joints(urdf_xml: str, unfix: dict) -> str:
    """The URDF text with the named fixed joints made revolute (limits given or in the URDF) or continuous
    (no limits), about the given axis or the URDF's own <axis>. ModelError naming the joint otherwise."""
    if not unfix:
        return urdf_xml
    try:
        root = _parse_urdf(urdf_xml)
    except ET.ParseError as exc:
        raise ModelError(f'URDF could not be parsed: {exc}') from None
    joints = {j.get('name'): j for j in root.iter('joint')}
    for name, spec in unfix.items():
        j = joints.get(name)
        if j is None:
            raise ModelError(f"unfix: the URDF has no joint '{name}'")
        if j.get('type') != 'fixed':
            raise ModelError(f"unfix: joint '{name}' is already {j.get('type')} in the URDF (remove it from unfix)")
        ax = j.find('axis')
        if spec['axis'] is not None:
            if ax is None:
                ax = ET.SubElement(j, 'axis')
            a = spec['axis'] / np.linalg.norm(spec['axis'])
            ax.set('xyz', ' '.join(f'{x:.17g}' for x in a))
        elif ax is None or not ax.get('xyz'):
            raise ModelError(f"unfix: fixed joint '{name}' has no <axis> in the URDF; give one: "
                             f"unfix: {{{name}: {{axis: [x, y, z], lower: rad, upper: rad}}}}")
        lim = j.find('limit')
        lo = spec['lower'] if spec['lower'] is not None else (float(lim.get('lower')) if lim is not None
                                                               and lim.get('lower') is not None else None)
        hi = spec['upper'] if spec['upper'] is not None else (float(lim.get('upper')) if lim is not None
                                                               and lim.get('upper') is not None else None)
        if lo is not None and hi is not None and lo < hi:
            j.set('type', 'revolute')
            if lim is None:
                lim = ET.SubElement(j, 'limit')
            lim.set('lower', f'{lo:.17g}')
            lim.set('upper', f'{hi:.17g}')
            lim.set('effort', lim.get('effort', '0'))
            lim.set('velocity', lim.get('velocity', '0'))
        else:
            j.set('type', 'continuous')
    return ET.tostring(root, encoding='unicode')


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


_DOWN = np.array([0.0, 0.0, -1.0])


def _skew_batch(r: np.ndarray) -> np.ndarray:
    """[r]ₓ for K vectors (K×3 → K×3×3)."""
    S = np.zeros((r.shape[0], 3, 3))
    S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    S[:, 1, 0], S[:, 2, 0], S[:, 2, 1] = r[:, 2], -r[:, 1], r[:, 0]
    return S


def wheel_point(centre, axle, direction, radius, wheel_contact: str = 'domed'):
    """Contact point of a wheel (centre G, unit axle a, radius R) with a surface whose inward unit normal is
    ``direction`` (from the wheel into the surface): domed G + R d; disk G + R unit(d − (d·a)a)."""
    if wheel_contact == 'domed':
        return centre + radius * direction
    d = direction - (direction @ axle) * axle
    nd = np.linalg.norm(d)
    if nd < 1e-12:
        raise ModelError('contact direction is along the wheel axle: the rim does not touch')
    return centre + radius * d / nd
class RoverModel:
    """A floating-base rover tree (pinocchio) with its joint roles, wheel contact geometry and constraint rows."""

    def __init__(self, urdf_xml: str, roles: Roles | dict, wheel_contact: str = 'domed'):
        self.roles = roles if isinstance(roles, Roles) else Roles.from_dict(roles)
        if wheel_contact not in WHEEL_CONTACTS:
            raise ModelError(f"wheel_contact '{wheel_contact}' is not one of {', '.join(WHEEL_CONTACTS)}")
        self.wheel_contact = wheel_contact
        urdf_xml = unfix_joints(urdf_xml, self.roles.unfix)
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
            types = urdf_joint_types(urdf_xml)
            fixed = [j for j in missing if types.get(j) == 'fixed']
            absent = [j for j in missing if j not in fixed]
            parts = []
            fixed = fixed[:12] + (['...'] if len(fixed) > 12 else [])
            if absent:
                parts.append(f"has no joint(s) {_listed(absent)} named in the role map (its movable joints: "
                             f"{_listed(names[2:]) or 'none'})")
            if fixed:
                parts.append(f"has {', '.join(fixed)} as fixed joint(s): add them to the role map's unfix list "
                             f"(unfix: [{', '.join(fixed)}], or unfix: {{name: {{axis: [x, y, z], lower: rad, "
                             f"upper: rad}}}} when the URDF gives no axis or limits)")
            raise ModelError(f"URDF '{self.model.name}' " + '; '.join(parts))
        self.joint_names = names[2:]                  # after universe and the free flyer
        self.nv = self.model.nv
        self.jid = {n: self.model.getJointId(n) for n in self.joint_names}
        for n in self.joint_names:
            if self.model.joints[self.jid[n]].nv != 1:
                raise ModelError(f"joint '{n}' has {self.model.joints[self.jid[n]].nv} DOF; only 1-DOF joints are supported")
        self.idx_v = {n: self.model.joints[self.jid[n]].idx_v for n in self.joint_names}
        self._axes = self._joint_axes()
        self.wheel_names = list(self.roles.wheels)
        self.wheel_jid = [self.jid[self.roles.wheels[w]['joint']] for w in self.wheel_names]
        self.wheel_radius = np.array([self.roles.wheels[w]['radius'] for w in self.wheel_names])
        self.mass = float(sum(I.mass for I in self.model.inertias))
        self.root_T_base = self._base_placement()
        self._mech = self._mech_rows()
        self._upper = np.triu(np.ones((self.nv, self.nv), bool))
        self._base_aligned = bool(np.array_equal(self.root_T_base.rotation, np.eye(3)))
        self._mech_split = {}

    def _base_placement(self) -> pin.SE3:
        """Placement of the role map's base_link in the root (free-flyer) frame: identity when it is the root,
        constant when it is fixed to the root; ModelError when it is missing or moves relative to the root."""
        base = self.roles.base_link
        links = [f for f in self.model.frames if f.type == pin.FrameType.BODY]
        root = links[0].name if links else ''
        match = [f for f in links if f.name == base]
        if not match:
            raise ModelError(f"base_link '{base}' is not a link of the URDF (links: "
                             f"{', '.join(f.name for f in links[:8])}{', ...' if len(links) > 8 else ''})")
        f = match[0]
        if f.parentJoint != 1:
            raise ModelError(f"base_link '{base}' moves relative to the URDF root '{root}' (it follows joint "
                             f"'{self.model.names[f.parentJoint]}'): the odometry pose can only be applied to the "
                             f"root or a link fixed to it")
        return f.placement.copy()

    @classmethod
    def from_roles_file(cls, path: str, urdf_xml: str | None = None, wheel_contact: str = 'domed') -> 'RoverModel':
        roles, text = load_roles(path) if urdf_xml is None else (None, urdf_xml)
        if roles is None:
            with open(path, encoding='utf-8') as f:
                roles = Roles.from_dict(yaml.safe_load(f) or {})
        return cls(text, roles, wheel_contact)

    # ---------------------------------------------------------------- state
    def configuration(self, joints: dict | None = None, base_xyz=(0.0, 0.0, 0.0),
                      base_quat_xyzw=(0.0, 0.0, 0.0, 1.0)) -> np.ndarray:
        """pinocchio q from the root (free-flyer) pose and joint angles {name: rad or m} (others 0). For a pose
        of the role map's base_link (odometry) use ``state_from_base``."""
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

    def state_from_base(self, joints: dict, base_xyz, base_quat_xyzw, v_base, w_base, rates: dict
                        ) -> tuple[np.ndarray, np.ndarray]:
        """(q, q̇) from base_link's pose in the world and its twist in base_link (nav_msgs/Odometry: pose of
        the child frame, twist in the child frame) and the joint positions / rates. The root's pose is
        T_w,root = T_w,base T_root,base⁻¹ and its twist the same rigid-body twist expressed at the root."""
        quat = np.asarray(base_quat_xyzw, float)
        quat = quat / np.linalg.norm(quat)
        T_wb = pin.SE3(pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix(),
                       np.asarray(base_xyz, float))
        T_wr = T_wb * self.root_T_base.inverse()
        qr = pin.Quaternion(T_wr.rotation)
        q = self.configuration(joints, T_wr.translation, (qr.x, qr.y, qr.z, qr.w))
        tw = self.root_T_base.act(pin.Motion(np.asarray(v_base, float), np.asarray(w_base, float)))
        return q, self.velocity(tw.linear, tw.angular, rates)

    def joint_positions(self, q: np.ndarray) -> dict:
        out = {}
        for n in self.joint_names:
            j = self.model.joints[self.jid[n]]
            out[n] = float(np.arctan2(q[j.idx_q + 1], q[j.idx_q])) if j.nq == 2 else float(q[j.idx_q])
        return out

    def velocity(self, v_base=(0, 0, 0), w_base=(0, 0, 0), rates: dict | None = None) -> np.ndarray:
        """q̇ from the root's twist (root frame) and joint rates."""
        v = np.zeros(self.nv)
        v[0:3] = v_base
        v[3:6] = w_base
        for n, x in (rates or {}).items():
            v[self.idx_v[n]] = x
        return v

    # ---------------------------------------------------------------- dynamics
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) by CRBA [kg, kg·m, kg·m²] (pinocchio fills the upper triangle; it is mirrored, bit for bit)."""
        M = pin.crba(self.model, self.data, q)
        return np.where(self._upper, M, M.T)

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

    def mech_split(self, rank_tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
        """(N, P): orthonormal bases of null(Γ_mech) (nv×d, the columns ``energy.null_space_basis`` gives) and
        of Γ_mech's row space (nv×r), from one SVD of the constant Γ_mech (kept per rank tolerance)."""
        out = self._mech_split.get(rank_tol)
        if out is None:
            G = self._mech
            if G.shape[0] == 0:
                out = (np.eye(self.nv), np.zeros((self.nv, 0)))
            else:
                _, s, vt = np.linalg.svd(G, full_matrices=True)
                r = int(np.sum(s > rank_tol * s[0])) if s.size and s[0] > 0 else 0
                out = (np.ascontiguousarray(vt[r:].T), np.ascontiguousarray(vt[:r].T))
            self._mech_split[rank_tol] = out
        return out

    def impact_rows(self, q: np.ndarray, wheels: list[str], n_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One kinematics pass for the impact indicator: Λ (len(wheels)×nv, the rows of ``contact_rows``) and the
        linear Jacobians J_v,P (W×3×nv, rows x, y, z) of every wheel's ground contact point P (``ground_rows``
        takes its rows [z, z, x, y] from them). Each is J_v,o − [p − o]ₓ J_ω from the wheel joint's
        world-aligned Jacobian at its origin o, as ``point_jacobian`` forms it (the same numbers), the wheels
        stacked."""
        self._kin(q)
        n_in = np.asarray(n_in, float)
        model, data, lwa = self.model, self.data, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        J = np.array([pin.getJointJacobian(model, data, jid, lwa) for jid in self.wheel_jid])
        oMi = data.oMi
        centre = np.array([oMi[jid].translation for jid in self.wheel_jid])
        rad = self.wheel_radius
        widx = [self.wheel_names.index(w) for w in wheels]
        if self.wheel_contact == 'domed':                                    # (G + R d) − G as wheel_point gives it
            r_ground = (centre + rad[:, None] * _DOWN) - centre
            cw = centre[widx]
            r_c = (cw + rad[widx, None] * n_in) - cw
        else:
            axle = np.array([oMi[jid].rotation @ self._axes[jid] for jid in self.wheel_jid])
            r_ground = np.array([wheel_point(centre[k], axle[k], _DOWN, rad[k], 'disk')
                                 for k in range(len(centre))]) - centre
            r_c = np.array([wheel_point(centre[k], axle[k], n_in, rad[k], 'disk') for k in widx]).reshape(-1, 3) \
                - centre[widx]
        W = len(centre)
        J = J[list(range(W)) + widx]
        Jv = J[:, :3] - _skew_batch(np.concatenate([r_ground, r_c])) @ J[:, 3:]  # J_v,P (W), then J_v,C (s)
        return n_in @ Jv[W:], Jv[:W]

    def wheel_geometry(self, q: np.ndarray, kin: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Wheel centres (W×3) and unit axles (W×3) in the world."""
        if kin:
            self._kin(q)
        c, a = [], []
        for jid in self.wheel_jid:
            oM = self.data.oMi[jid]
            axis = self.joint_axis(jid)
            c.append(oM.translation.copy())
            a.append(oM.rotation @ axis)
        return np.array(c), np.array(a)

    def joint_axis(self, jid: int) -> np.ndarray:
        """Unit axis of a 1-DOF joint in its own frame (rotation axis, or translation for a prismatic joint)."""
        return self._axes[jid].copy()

    def _joint_axes(self) -> dict:
        """{jid: axis}: the joint's motion subspace S (its own LOCAL Jacobian column at the neutral
        configuration), angular part for revolute joints, linear part for prismatic ones (any axis, aligned or
        not, bounded or not)."""
        data = self.model.createData()
        pin.computeJointJacobians(self.model, data, pin.neutral(self.model))
        out = {}
        for n in self.joint_names:
            jid = self.jid[n]
            col = pin.getJointJacobian(self.model, data, jid, pin.ReferenceFrame.LOCAL)[:, self.idx_v[n]]
            ax = col[:3] if np.linalg.norm(col[3:]) < 1e-12 else col[3:]
            out[jid] = ax / np.linalg.norm(ax)
        return out

    def heading(self, q: np.ndarray) -> float:
        """Yaw ψ of base_link in the world [rad]: atan2(R₁₀, R₀₀) of R = R(q_root) R_root,base."""
        if self._base_aligned:                          # R₀₀, R₁₀ of the root quaternion, as Eigen forms them
            x, y, z, w = (float(v) for v in q[3:7])
            ty, tz = 2.0 * y, 2.0 * z
            return float(np.arctan2(ty * x + tz * w, 1.0 - (ty * y + tz * z)))
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix() @ self.root_T_base.rotation
        return float(np.arctan2(R[1, 0], R[0, 0]))

    def wheel_points(self, q: np.ndarray, wheels: list[str], direction: np.ndarray, kin: bool = True
                     ) -> np.ndarray:
        """Contact points (len(wheels)×3) of the wheels with a surface of inward unit normal ``direction``
        (``wheel_contact`` geometry)."""
        if kin:
            self._kin(q)
        out = []
        for w in wheels:
            k = self.wheel_names.index(w)
            jid = self.wheel_jid[k]
            centre, axle = self.data.oMi[jid].translation, self.data.oMi[jid].rotation @ self.joint_axis(jid)
            out.append(wheel_point(centre, axle, np.asarray(direction, float), self.wheel_radius[k],
                                   self.wheel_contact))
        return np.array(out).reshape(-1, 3)

    def contact_rows(self, q: np.ndarray, wheels: list[str], n_in: np.ndarray, kin: bool = True) -> np.ndarray:
        """Λ: one row n_inᵀ J_v,C per impacting wheel, C its contact point with the face (``wheel_contact``:
        domed C = G + R n_in, disk the rim point furthest along n_in) (5.17-5.21)."""
        if kin:
            self._kin(q)
        n_in = np.asarray(n_in, float)
        points = self.wheel_points(q, wheels, n_in, kin=False)
        rows = [n_in @ self.point_jacobian(self.wheel_jid[self.wheel_names.index(w)], C)
                for w, C in zip(wheels, points)]
        return np.array(rows).reshape(-1, self.nv)

    def ground_rows(self, q: np.ndarray, wheels: list[str], rolling: bool = True, kin: bool = True) -> np.ndarray:
        """4 rows per wheel on flat ground (n = +z): normal, holonomic repeat, and (``rolling``) the two
        horizontal no-slip rows of the ground contact point P (5.27-5.29; domed P = G − R e_z, whose normal
        row is the wheel centre's; disk the lowest rim point); normal rows only otherwise."""
        if kin:
            self._kin(q)
        down = np.array([0.0, 0.0, -1.0])
        rows = []
        for w, P in zip(wheels, self.wheel_points(q, wheels, down, kin=False)):
            Jp = self.point_jacobian(self.wheel_jid[self.wheel_names.index(w)], P)
            rows += [Jp[2], Jp[2]]
            if rolling:
                rows += [Jp[0], Jp[1]]
        return np.array(rows).reshape(-1, self.nv)

    def ground_normal_rows(self, q: np.ndarray, kin: bool = True) -> np.ndarray:
        """One upward normal-velocity row per wheel (activity test)."""
        return self.ground_rows(q, self.wheel_names, rolling=False, kin=kin)[0::2]

    def rolling_velocity(self, q: np.ndarray, speed: float, heading: float | None = None) -> np.ndarray:
        """q̇ for the base translating at ``speed`` along the heading, no joint motion, wheels rolling
        (ground contact point P at rest along the heading: ω = −v / ((a × (P − G))·d) about the axle)."""
        self._kin(q)
        psi = self.heading(q) if heading is None else heading
        d = np.array([np.cos(psi), np.sin(psi), 0.0])
        R = self.data.oMi[1].rotation
        v = np.zeros(self.nv)
        v[0:3] = R.T @ (speed * d)
        down = np.array([0.0, 0.0, -1.0])
        for k, jid in enumerate(self.wheel_jid):
            centre, axle = self.data.oMi[jid].translation, self.data.oMi[jid].rotation @ self.joint_axis(jid)
            P = wheel_point(centre, axle, down, self.wheel_radius[k], self.wheel_contact)
            lever = np.cross(axle, P - centre)
            denom = lever @ d
            v[self.model.joints[jid].idx_v] = -speed / denom if abs(denom) > 1e-12 else 0.0
        return v

    def com(self, q: np.ndarray) -> np.ndarray:
        return pin.centerOfMass(self.model, self.data, q).copy()
