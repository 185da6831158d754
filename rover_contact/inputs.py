"""Rover inputs shared by both nodes (ROS-free): model loading, the latest JointState / Odometry / obstacle
hypothesis, their validation, and the synchronised state (q, q̇) in pinocchio's free-flyer convention.

Bad input never raises out of a push: it is counted by cause, the sample is dropped, and ``last_error`` says why
with sizes, never the payload (no or missing joint names, non-finite values, a zero quaternion, an obstacle behind
the rover, a sample older than the last accepted one of its input, a stray stamp). ``state()`` raises InputError when no consistent state exists
(missing input, stale odometry or joint state).
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pinocchio as pin

from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.paths import config_dir, resolve_config_file
from contact_dynamics_common.signal.stamps import GateCounts, StampGate

from .impact.geometry import beta_from_face_normal, beta_from_step
from .models.rover3d import ModelError, RoverModel, load_roles

NS = 1e-9

#: accepted Odometry samples kept to place an obstacle hypothesis's origin at its stamp (82 s at 50 Hz)
ODOM_TRACK = 4096


class InputError(RuntimeError):
    """No usable state: the reason is the message."""


def _rotate(q_xyzw: np.ndarray, v: np.ndarray) -> np.ndarray:
    """v rotated by the unit quaternion (x, y, z, w): v + 2w (u × v) + 2 u × (u × v), u = (x, y, z)."""
    u, w = q_xyzw[0:3], q_xyzw[3]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def resolve_config_path(path: str) -> Path:
    """An existing file: as given, else in the project's config/ (source tree, ament share or venv prefix)."""
    found = resolve_config_file(path)
    if found is None:
        raise ConfigError(f"file '{path}' not found (also looked in {config_dir()})")
    return found


def load_model(params: dict) -> RoverModel:
    """RoverModel from ``model_yaml`` (role map) and optionally ``urdf_path``; ConfigError with the reason."""
    try:
        roles_path = resolve_config_path(params['model_yaml'])
        roles, urdf = load_roles(str(roles_path))
        if params.get('urdf_path'):
            urdf = resolve_config_path(params['urdf_path']).read_text(encoding='utf-8')
        return RoverModel(urdf, roles, params.get('wheel_contact', 'domed'))
    except (ModelError, OSError) as exc:
        files = f"model_yaml '{params['model_yaml']}'" + (f", urdf_path '{params['urdf_path']}'"
                                                          if params.get('urdf_path') else '')
        raise ConfigError(f'rover model ({files}): {exc}') from None


def model_from_urdf(params: dict, urdf_xml: str) -> RoverModel:
    """RoverModel from a robot_description URDF text and the role map of ``model_yaml``; ConfigError if the
    URDF does not parse or lacks a mapped joint."""
    try:
        roles, _ = load_roles(str(resolve_config_path(params['model_yaml'])))
        return RoverModel(urdf_xml, roles, params.get('wheel_contact', 'domed'))
    except (ModelError, OSError) as exc:
        raise ConfigError(f'robot_description: {exc}') from None


@dataclass
class Hypothesis:
    """A validated obstacle hypothesis: contact angle β [rad], impacting wheels, distance [m] (NaN unknown)."""
    stamp_ns: int
    beta: float
    wheels: list
    distance: float = float('nan')
    k: float = 0.0
    p: float = 1.5
    e: float = 0.9
    contact_model: str = ''
    height: float = 0.0
    seq: int = 0
    origin: np.ndarray | None = None      # base position (world x, y) at ``stamp_ns``, from the odometry track
    origin_final: bool = False            # bracketed by odometry samples (or before the track): fixed from now on


#: per input: the prefix of its count keys, the key of received samples, of accepted ones, and the causes a
#: sample is dropped for (each a count key; the stamp gate's causes are added as <prefix>_<cause>);
#: received = accepted + Σ dropped. ``<prefix>_time_jumps`` (accepted after a backward jump of more than
#: time_jump_s: a restarted or looped source) and ``joint_unknown_names`` are information only.
LEDGER = {
    'joint_states': ('joint', 'joint_states', 'joint_states_accepted',
                     ('joint_state_empty', 'joint_state_malformed', 'joint_missing', 'joint_nonfinite',
                      'joint_zero_stamp')),
    'odometry': ('odometry', 'odometry', 'odometry_accepted',
                 ('odometry_nonfinite', 'odometry_bad_quaternion', 'odometry_zero_stamp')),
    'obstacle': ('obstacle', 'obstacle', 'obstacle_accepted',
                 ('obstacle_rejected', 'obstacle_zero_stamp', 'obstacle_repeated')),
}
#: the stamp gate's drop causes (GateCounts fields but accepted / time_jumps), e.g. out_of_order
GATE_CAUSES = tuple(f.name for f in fields(GateCounts) if f.name not in ('accepted', 'time_jumps'))
#: drop causes that are not an input error (no last_error, no WARN): a hypothesis re-sent with the same stamp
QUIET_DROPS = ('obstacle_repeated',)


def _few(names, n: int = 3) -> str:
    """At most ``n`` names and how many more (log lines and diagnostics never carry a whole message)."""
    names = list(names)
    head = ', '.join(str(x)[:64] for x in names[:n])
    return head + (f', ... ({len(names) - n} more)' if len(names) > n else '')


@dataclass
class RoverInputs:
    """The latest accepted JointState, Odometry and obstacle hypothesis, each input behind its own stamp gate
    (contact_dynamics_common.signal.stamps.StampGate): a sample stamped at or before the last accepted one of
    its input is dropped and counted (``*_out_of_order``), never made the current state; a backward jump of
    more than ``time_jump_s`` is the gate's time jump (a restarted or looped source): accepted and counted once
    the input continues from the new time (the gate's evidence rule; an isolated stray stamp is dropped,
    ``*_stamp_outlier``)."""
    model: RoverModel
    max_age_s: float = 0.2
    default_wheels: list = field(default_factory=list)
    time_jump_s: float = 1.0
    counts: Counter = field(default_factory=Counter)
    last_error: str = ''
    last_cause: str = ''
    joint_stamp: int | None = None
    odom_stamp: int | None = None
    obstacle: Hypothesis | None = None
    _obstacle_seq: int = 0

    def __post_init__(self):
        m = self.model
        self.names = m.joint_names
        self.jpos = np.zeros(len(self.names))
        self.jvel = np.zeros(len(self.names))
        self.pose = np.array([0, 0, 0, 0, 0, 0, 1.0])
        self.twist = np.zeros(6)
        # accepted odometry in stamp order: (stamp_ns, x, y, world vx, world vy) — where the base was at a stamp
        self._track: deque = deque(maxlen=ODOM_TRACK)
        self.default_wheels = list(self.default_wheels or m.roles.contact_wheels_default or m.wheel_names[:2])
        bad = [w for w in self.default_wheels if w not in m.wheel_names]
        if bad:
            raise ConfigError(f"contact_wheels_default {bad} are not wheels of the model ({', '.join(m.wheel_names)})")
        # obstacle hypotheses are sporadic (sent while an obstacle is seen): a long pause is no forward departure
        self.gates = {k: StampGate(jump_threshold_s=self.time_jump_s,
                                   forward_intervals=float('inf') if k == 'obstacle' else 100.0) for k in LEDGER}

    def _error(self, key: str, text: str) -> None:
        self.counts[key] += 1
        self.last_cause = key
        if key not in QUIET_DROPS:
            self.last_error = text

    def _ordered(self, kind: str, stamp_ns: int, prefix: str, what: str) -> bool:
        """The stamp gate of input ``kind``: True if ``stamp_ns`` is accepted (later than the last accepted
        sample, or a time jump, counted ``<prefix>_time_jumps``); else the sample is dropped and counted under the
        gate's own cause, ``<prefix>_<cause>`` (``out_of_order``, or any cause a later gate adds)."""
        gate = self.gates[kind]
        last = gate.last_ns
        before = gate.counts.as_dict()
        segments = gate.filter(np.array([stamp_ns], dtype=np.int64))
        after = gate.counts.as_dict()
        if not any(seg.index.size for seg in segments):
            cause = next((k for k in GATE_CAUSES if after.get(k, 0) > before.get(k, 0)), 'out_of_order')
            ago = f'{(last - stamp_ns) * NS:.3f} s before the last accepted one' if last is not None else 'early'
            self._error(f'{prefix}_{cause}', f'{what} stamped {ago}: sample dropped ({cause.replace("_", " ")})')
            return False
        if segments[0].reset_before or after.get('time_jumps', 0) > before.get('time_jumps', 0):
            self.counts[f'{prefix}_time_jumps'] += 1
        return True

    def ledger(self) -> dict:
        """Per input: {'received', 'accepted', 'dropped': {cause: n}} (received = accepted + Σ dropped)."""
        out = {}
        for kind, (prefix, received, accepted, causes) in LEDGER.items():
            names = list(dict.fromkeys(list(causes) + [f'{prefix}_{c}' for c in GATE_CAUSES]))
            out[kind] = {'received': self.counts[received], 'accepted': self.counts[accepted],
                         'dropped': {c: self.counts[c] for c in names if self.counts[c]}}
        return out

    def rejected_total(self) -> int:
        """Samples dropped for a reason (every input, every cause; re-sent hypotheses not included)."""
        return sum(n for v in self.ledger().values() for c, n in v['dropped'].items() if c not in QUIET_DROPS)

    def status_values(self) -> dict:
        """/diagnostics values of the inputs: per input ``<input>.received``, ``.accepted``, ``.dropped.<cause>``;
        ``rejected_total`` (every dropped sample but re-sent hypotheses), ``time_jumps``, ``unknown_names``
        (JointStates with extra names, accepted) and ``stale`` (evaluations refused for stale state)."""
        out = {}
        for kind, v in self.ledger().items():
            out[f'{kind}.received'] = v['received']
            out[f'{kind}.accepted'] = v['accepted']
            for cause, n in v['dropped'].items():
                out[f'{kind}.dropped.{cause}'] = n
        out['rejected_total'] = self.rejected_total()
        out['time_jumps'] = sum(self.counts[f'{p}_time_jumps'] for p, *_ in LEDGER.values())
        out['unknown_names'] = self.counts['joint_unknown_names']
        out['stale'] = self.counts['stale']
        return out

    def data_stamp_ns(self) -> int:
        """Data time of an output: the latest stamp of the accepted JointState and Odometry (the obstacle
        hypothesis's when neither has arrived yet; 0 with no input)."""
        stamps = [s for s in (self.joint_stamp, self.odom_stamp) if s is not None]
        if stamps:
            return max(stamps)
        return self.obstacle.stamp_ns if self.obstacle is not None else 0

    # ---------------------------------------------------------------- pushes
    def push_joint_state(self, stamp_ns: int, names, positions, velocities) -> bool:
        self.counts['joint_states'] += 1
        names = list(names)
        pos, vel = np.asarray(positions, float), np.asarray(velocities, float)
        if not names:
            self._error('joint_state_empty', f'JointState has no joint names ({len(pos)} positions, {len(vel)} '
                        'velocities): sample dropped')
            return False
        if len(pos) != len(names) or len(vel) != len(names):
            self._error('joint_state_malformed', f'JointState has {len(names)} names, {len(pos)} positions, '
                        f'{len(vel)} velocities (velocities are required)')
            return False
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.names if n not in index]
        if missing:
            self._error('joint_missing', f"JointState lacks joint(s) {_few(missing)} ({len(missing)} of the "
                        f"{len(self.names)} of model '{self.model.roles.model_name}'); it has {len(names)} names")
            return False
        if len(index) != len(names):
            self._error('joint_state_malformed', f'JointState repeats joint names ({len(names)} names, '
                        f'{len(index)} distinct)')
            return False
        unknown = len(names) - len(self.names)
        if unknown:
            self.counts['joint_unknown_names'] += 1
        sel = [index[n] for n in self.names]
        if not (np.all(np.isfinite(pos[sel])) and np.all(np.isfinite(vel[sel]))):
            self._error('joint_nonfinite', 'JointState has NaN/inf positions or velocities: sample dropped')
            return False
        if stamp_ns <= 0:
            self._error('joint_zero_stamp', 'JointState has a zero stamp: sample dropped')
            return False
        if not self._ordered('joint_states', stamp_ns, 'joint', 'JointState'):
            return False
        self.jpos, self.jvel, self.joint_stamp = pos[sel], vel[sel], int(stamp_ns)
        self.counts['joint_states_accepted'] += 1
        return True

    def push_odometry(self, stamp_ns: int, position, orientation_xyzw, linear, angular) -> bool:
        self.counts['odometry'] += 1
        vals = np.concatenate([np.asarray(position, float).ravel(), np.asarray(orientation_xyzw, float).ravel(),
                               np.asarray(linear, float).ravel(), np.asarray(angular, float).ravel()])
        if vals.size != 13 or not np.all(np.isfinite(vals)):
            self._error('odometry_nonfinite', 'Odometry has NaN/inf values: sample dropped')
            return False
        qn = np.linalg.norm(vals[3:7])
        if qn < 1e-9:
            self._error('odometry_bad_quaternion', 'Odometry orientation is a zero quaternion: sample dropped')
            return False
        if stamp_ns <= 0:
            self._error('odometry_zero_stamp', 'Odometry has a zero stamp: sample dropped')
            return False
        if not self._ordered('odometry', stamp_ns, 'odometry', 'Odometry'):
            return False
        self.pose = np.concatenate([vals[0:3], vals[3:7] / qn])
        self.twist = vals[7:13]
        self.odom_stamp = int(stamp_ns)
        if self._track and stamp_ns <= self._track[-1][0]:
            self._track.clear()                  # the gate accepted a time jump: a new timeline
        v_world = _rotate(self.pose[3:7], self.twist[0:3])
        self._track.append((int(stamp_ns), self.pose[0], self.pose[1], v_world[0], v_world[1]))
        if self.obstacle is not None and not self.obstacle.origin_final:
            self._place_origin(self.obstacle)
        self.counts['odometry_accepted'] += 1
        return True

    def _place_origin(self, h: Hypothesis) -> None:
        """The base position (world x, y) at the hypothesis's stamp t_h, from the odometry track (data time only, so
        the same whichever of the hypothesis and the odometry arrived first, live or in run-bag):
        p(t_h) = p_a + (p_b − p_a)(t_h − t_a)/(t_b − t_a) between the samples a (last at or before t_h) and b (first
        after): final; with a only, p_a + v_a (t_h − t_a) (v_a its world velocity): refined when b arrives; with b
        only (t_h before the track), p_b: final. No odometry yet: no origin (nothing driven)."""
        if not self._track:
            return
        a = b = None
        for sample in reversed(self._track):
            if sample[0] > h.stamp_ns:
                b = sample
            else:
                a = sample
                break
        if a is not None and b is not None:
            w = (h.stamp_ns - a[0]) / (b[0] - a[0])
            h.origin = np.array([a[1] + w * (b[1] - a[1]), a[2] + w * (b[2] - a[2])])
            h.origin_final = True
        elif a is not None:
            dt = (h.stamp_ns - a[0]) * NS
            h.origin = np.array([a[1] + a[3] * dt, a[2] + a[4] * dt])
        else:
            h.origin = np.array([b[1], b[2]])
            h.origin_final = True

    def hypothesis(self, stamp_ns: int, frame_id: str, face_normal_out, beta: float, height: float,
                   distance: float, wheels, step_edge: bool, k: float = 0.0, p: float = 1.5, e: float = 0.9,
                   contact_model: str = '', base_frame: str = 'base_link') -> Hypothesis:
        """A validated hypothesis (ValueError with the reason): β from the face normal (rotated from the base
        frame by the odometry orientation when given in it) or beta_rad, step-edge mapping, wheels known,
        face towards the heading, distance ≥ 0."""
        wheels = list(wheels) or list(self.default_wheels)
        bad = [w for w in wheels if w not in self.model.wheel_names]
        if bad:
            raise ValueError(f"unknown contact wheel(s) {', '.join(bad)} (wheels: {', '.join(self.model.wheel_names)})")
        n = np.asarray(face_normal_out, float)
        if not np.all(np.isfinite(n)) or not all(np.isfinite([beta, height])):
            raise ValueError('non-finite obstacle geometry')
        if np.linalg.norm(n) > 0:
            R, heading = self._attitude()
            if frame_id == base_frame:
                n = R @ n                       # to the odometry (world) frame
            n_in = -n / np.linalg.norm(n)
            if n_in[:2] @ heading <= 1e-9 and abs(n_in[2]) < 1 - 1e-9:
                raise ValueError('obstacle behind the rover (its face does not face the heading)')
            b = beta_from_face_normal(n)
        else:
            b = float(beta)
        if step_edge and height > 0:
            R_w = min(self.model.wheel_radius[self.model.wheel_names.index(w)] for w in wheels)
            b = beta_from_step(height, R_w, b if b > 0 else np.pi / 2)
        if not 0.0 < b <= np.pi / 2 + 1e-12:
            raise ValueError(f'contact angle beta = {b:.4g} rad is outside (0, pi/2]')
        if np.isfinite(distance) and distance < 0:
            raise ValueError(f'obstacle behind the rover (distance {distance:.3g} m < 0)')
        return Hypothesis(int(stamp_ns), float(b), wheels, float(distance) if distance > 0 else float('nan'),
                          float(k), float(p) if p > 0 else 1.5, float(e) if 0 < e <= 1 else 0.9,
                          contact_model, float(height))

    def push_obstacle(self, stamp_ns: int, *args, received_ns: int | None = None, **kwargs) -> bool:
        """Validate and keep an obstacle hypothesis (arguments of ``hypothesis``); a bad one, one stamped before
        the hypothesis in use, or a re-sent one (same stamp: ``obstacle_repeated``) is dropped and counted.
        Hypotheses are sporadic, so their own gate has no forward limit; instead one stamped more than
        time_jump_s after ``received_ns`` (when it arrived: the node's clock at the drain live, the bag's log time
        offline; None: not judged) is a stamp outlier (``obstacle_stamp_outlier``): a stamp cannot be later than
        its arrival beyond clock skew, and a single future-stamped hypothesis would otherwise stay in use (it
        never times out) and make the next good ones look like a jump back. (Data time is no reference: the
        posture evaluator takes hypotheses while the joint states have stopped.)"""
        self.counts['obstacle'] += 1
        if stamp_ns <= 0:
            self._error('obstacle_zero_stamp', 'obstacle hypothesis has a zero stamp: dropped')
            return False
        if self.obstacle is not None and stamp_ns == self.obstacle.stamp_ns:
            self._error('obstacle_repeated', 'obstacle hypothesis re-sent with the same stamp: ignored')
            return False
        try:
            h = self.hypothesis(stamp_ns, *args, **kwargs)
        except ValueError as exc:
            self._error('obstacle_rejected', f'obstacle rejected: {exc}')
            return False
        if received_ns is not None and received_ns > 0 and stamp_ns - received_ns > self.time_jump_s * 1e9:
            self._error('obstacle_stamp_outlier', f'obstacle hypothesis stamped {(stamp_ns - received_ns) * NS:.3g} s '
                        f'after it arrived (> time_jump_s {self.time_jump_s:g} s): dropped (stamp outlier)')
            return False
        if not self._ordered('obstacle', stamp_ns, 'obstacle', 'obstacle hypothesis'):
            return False
        self._obstacle_seq += 1
        h.seq = self._obstacle_seq
        self._place_origin(h)                    # base position at the hypothesis's stamp
        self.obstacle = h
        self.counts['obstacle_accepted'] += 1
        return True

    # ---------------------------------------------------------------- state
    def state(self, now_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """(q, q̇) of the latest joint state and odometry; InputError if missing or stale."""
        if self.joint_stamp is None:
            raise InputError('no valid JointState yet' + (f' ({self.last_error})' if self.last_error else ''))
        if self.odom_stamp is None:
            raise InputError('no valid Odometry yet')
        for name, st in (('Odometry', self.odom_stamp), ('JointState', self.joint_stamp)):
            age = (now_ns - st) * NS
            if age > self.max_age_s:
                self.counts['stale'] += 1
                raise InputError(f'stale {name}: {age:.3f} s old > max_state_age_s {self.max_age_s:g} s')
        skew = abs(self.odom_stamp - self.joint_stamp) * NS
        if skew > self.max_age_s:
            self.counts['stale'] += 1
            raise InputError(f'JointState and Odometry are {skew:.3f} s apart > max_state_age_s')
        m = self.model
        return m.state_from_base(dict(zip(self.names, self.jpos)), self.pose[0:3], self.pose[3:7], self.twist[0:3],
                                 self.twist[3:6], dict(zip(self.names, self.jvel)))

    def _attitude(self) -> tuple[np.ndarray, np.ndarray]:
        """Base rotation R (world <- base) of the latest odometry and its horizontal heading (cos ψ, sin ψ),
        ψ = atan2(R₁₀, R₀₀)."""
        x, y, z, w = self.pose[3:7]
        R = pin.Quaternion(w, x, y, z).toRotationMatrix()
        psi = np.arctan2(R[1, 0], R[0, 0])
        return R, np.array([np.cos(psi), np.sin(psi)])

    def forward_speed(self) -> float:
        """Base speed along its heading in the world [m/s]."""
        R, heading = self._attitude()
        return float((R @ self.twist[0:3])[0:2] @ heading)

    def time_to_contact(self) -> float:
        """Time to contact at the output's data stamp t_out (``data_stamp_ns``) [s]: (distance_m − distance driven
        along the heading from the hypothesis's stamp t_h to t_out) / forward speed (the
        ImpactIndicator.time_to_contact field documents the same). The base position at t_h is placed on the
        odometry track (``_place_origin``); the one at t_out is the latest odometry's, carried forward with its
        world velocity when the JointState is newer (t_out > its stamp). So the figure depends on data time only,
        never on the order in which the hypothesis, the odometry and the joint states arrived (live == run-bag).
        inf when the distance is unknown or the rover does not approach, 0 once the face is reached."""
        if self.obstacle is None or not np.isfinite(self.obstacle.distance):
            return float('inf')
        v = self.forward_speed()
        if v <= 1e-9:
            return float('inf')
        driven = 0.0
        if self.obstacle.origin is not None:
            here = self.pose[0:2]
            if self.odom_stamp is not None:
                ahead = (self.data_stamp_ns() - self.odom_stamp) * NS
                here = here + _rotate(self.pose[3:7], self.twist[0:3])[0:2] * ahead
            driven = float((here - self.obstacle.origin) @ self._attitude()[1])
        return max(self.obstacle.distance - driven, 0.0) / v

    def slip(self) -> float:
        """Largest |s| = |(R ω − v)/(R ω)| over the wheels (0 when not moving)."""
        v = self.forward_speed()
        worst = 0.0
        for k, w in enumerate(self.model.wheel_names):
            n = self.model.roles.wheels[w]['joint']
            Rw = self.model.wheel_radius[k] * self.jvel[self.names.index(n)]
            if abs(Rw) > 1e-6:
                worst = max(worst, abs((abs(Rw) - v) / abs(Rw)))
        return worst

