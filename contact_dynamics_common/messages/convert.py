"""Conversions between ROS messages and plain tuples / numpy columns, shared by live nodes and replay.

Everything here uses attribute access only, so it works on rclpy message instances and on the objects
mcap_ros2 decodes alike. Stamps are exact integer nanoseconds.

Column dicts (``columns_from_messages`` and ``BagReader.columns``) hold ``log_ns`` and ``stamp_ns``
(int64[N]) plus the type's columns from ``COLUMN_SPECS``; ``stamp_ns`` is the header stamp, the clock
value for ``rosgraph_msgs/msg/Clock`` and the log time for types without a stamp.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

NS_PER_S = 1_000_000_000


def stamp_to_ns(stamp: Any) -> int:
    """builtin_interfaces/Time -> integer nanoseconds."""
    return stamp.sec * NS_PER_S + stamp.nanosec


def ns_to_sec_nanosec(ns: int) -> tuple[int, int]:
    """Integer nanoseconds -> (sec, nanosec) with 0 <= nanosec < 1e9 (floor division for negatives)."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return sec, nanosec


def ns_to_stamp(ns: int, stamp_type: type) -> Any:
    """Integer nanoseconds -> an instance of ``stamp_type`` (e.g. ``builtin_interfaces.msg.Time``)."""
    sec, nanosec = ns_to_sec_nanosec(ns)
    return stamp_type(sec=sec, nanosec=nanosec)


# ---- row extractors for subscription callbacks -------------------------------------------------------

def wrench_row(msg: Any) -> tuple[int, float, float, float, float, float, float]:
    """WrenchStamped -> (stamp_ns, fx, fy, fz, tx, ty, tz)."""
    s, f, t = msg.header.stamp, msg.wrench.force, msg.wrench.torque
    return s.sec * NS_PER_S + s.nanosec, f.x, f.y, f.z, t.x, t.y, t.z


def joint_state_row(msg: Any) -> tuple[int, tuple[str, ...], tuple[float, ...], tuple[float, ...],
                                       tuple[float, ...]]:
    """JointState -> (stamp_ns, names, positions, velocities, efforts); absent arrays are ()."""
    s = msg.header.stamp
    return (s.sec * NS_PER_S + s.nanosec, tuple(msg.name), tuple(msg.position), tuple(msg.velocity),
            tuple(msg.effort))


def pose_row(msg: Any) -> tuple[int, float, float, float, float, float, float, float]:
    """PoseStamped -> (stamp_ns, px, py, pz, qx, qy, qz, qw)."""
    s, p, q = msg.header.stamp, msg.pose.position, msg.pose.orientation
    return s.sec * NS_PER_S + s.nanosec, p.x, p.y, p.z, q.x, q.y, q.z, q.w


def odometry_row(msg: Any) -> tuple[int, float, float, float, float, float, float, float,
                                    float, float, float, float, float, float]:
    """Odometry -> (stamp_ns, px, py, pz, qx, qy, qz, qw, vx, vy, vz, wx, wy, wz); covariances omitted."""
    s, p, q = msg.header.stamp, msg.pose.pose.position, msg.pose.pose.orientation
    v, w = msg.twist.twist.linear, msg.twist.twist.angular
    return (s.sec * NS_PER_S + s.nanosec, p.x, p.y, p.z, q.x, q.y, q.z, q.w,
            v.x, v.y, v.z, w.x, w.y, w.z)


# ---- column specifications ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FloatColumn:
    """A float64[N, width] column made of float64 fields / fixed float64 arrays, side by side."""

    name: str
    paths: tuple[str, ...]
    width: int


@dataclass(frozen=True)
class ColumnSpec:
    """How a message type maps to columns; paths are dotted attribute paths."""

    stamp: str | None                          # builtin_interfaces/Time field; None: use the log time
    strings: tuple[tuple[str, str], ...] = ()  # (column, string field)
    floats: tuple[FloatColumn, ...] = ()
    joint_arrays: tuple[str, ...] = ()         # float64[] fields indexed by the string[] field 'name'
    string_arrays: tuple[tuple[str, str], ...] = ()  # (column, string[] field): one tuple of strings per row


def _xyz(prefix: str) -> tuple[str, ...]:
    return tuple(f'{prefix}.{a}' for a in 'xyz')


def _xyzw(prefix: str) -> tuple[str, ...]:
    return tuple(f'{prefix}.{a}' for a in 'xyzw')


COLUMN_SPECS: dict[str, ColumnSpec] = {
    'geometry_msgs/msg/WrenchStamped': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'),),
        (FloatColumn('force', _xyz('wrench.force'), 3), FloatColumn('torque', _xyz('wrench.torque'), 3))),
    'sensor_msgs/msg/JointState': ColumnSpec(
        'header.stamp', joint_arrays=('position', 'velocity', 'effort')),
    'geometry_msgs/msg/PoseStamped': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'),),
        (FloatColumn('position', _xyz('pose.position'), 3),
         FloatColumn('orientation', _xyzw('pose.orientation'), 4))),
    'nav_msgs/msg/Odometry': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'), ('child_frame_id', 'child_frame_id')),
        (FloatColumn('position', _xyz('pose.pose.position'), 3),
         FloatColumn('orientation', _xyzw('pose.pose.orientation'), 4),
         FloatColumn('pose_covariance', ('pose.covariance',), 36),
         FloatColumn('linear', _xyz('twist.twist.linear'), 3),
         FloatColumn('angular', _xyz('twist.twist.angular'), 3),
         FloatColumn('twist_covariance', ('twist.covariance',), 36))),
    'rosgraph_msgs/msg/Clock': ColumnSpec('clock'),
    'sensor_msgs/msg/Imu': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'),),
        (FloatColumn('orientation', _xyzw('orientation'), 4),
         FloatColumn('angular_velocity', _xyz('angular_velocity'), 3),
         FloatColumn('linear_acceleration', _xyz('linear_acceleration'), 3))),
    # contact_estimation's estimate (low rate; read by impedance_tuner's run-bag)
    'contact_dynamics/msg/ContactEstimate': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'), ('status', 'status')),
        (FloatColumn('kbm', ('stiffness', 'damping', 'mass'), 3),
         FloatColumn('flags', ('valid', 'damping_identifiable'), 2))),
    # rover_contact's obstacle hypothesis (low rate)
    'contact_dynamics/msg/ObstacleHypothesis': ColumnSpec(
        'header.stamp', (('frame_id', 'header.frame_id'), ('contact_model', 'contact_model')),
        (FloatColumn('face_normal_out', _xyz('face_normal_out'), 3),
         FloatColumn('scalars', ('beta_rad', 'height_m', 'distance_m', 'mu', 'k', 'p', 'e_restitution'), 7),
         FloatColumn('step_edge', ('step_edge',), 1)),
        string_arrays=(('contact_wheels', 'contact_wheels'),)),
}


def column_spec(type_name: str) -> ColumnSpec:
    """The ColumnSpec of a type, or NotImplementedError naming the supported types."""
    spec = COLUMN_SPECS.get(type_name)
    if spec is None:
        raise NotImplementedError(f'no column conversion for {type_name!r}; supported: '
                                  f'{", ".join(COLUMN_SPECS)} (use messages() for other types)')
    return spec


def add_string_column(cols: dict[str, Any], name: str, values: Sequence[str]) -> None:
    """``cols[name]`` = first value ('' when empty); ``cols[name + 's']`` = all values if they differ."""
    cols[name] = values[0] if len(values) else ''
    if len(set(values)) > 1:
        cols[name + 's'] = list(values)


def joint_names(name_lists: Sequence[Sequence[str]]) -> list[str]:
    """Union of joint names in order of first appearance."""
    return list(dict.fromkeys(n for names in dict.fromkeys(map(tuple, name_lists)) for n in names))


# ---- column builders from decoded messages (fallback path of the bag reader) -------------------------

def columns_from_messages(type_name: str, msgs: Sequence[Any], log_ns: Sequence[int] | np.ndarray
                          ) -> dict[str, Any]:
    """Column dict (see module docstring) of decoded messages of one type, in the given order."""
    spec = column_spec(type_name)
    n = len(msgs)
    cols: dict[str, Any] = {'log_ns': np.asarray(log_ns, dtype=np.int64).reshape(n)}
    if spec.stamp is None:
        cols['stamp_ns'] = cols['log_ns'].copy()
    else:
        get = attrgetter(spec.stamp)
        cols['stamp_ns'] = np.fromiter((stamp_to_ns(get(m)) for m in msgs), dtype=np.int64, count=n)
    for name, path in spec.strings:
        add_string_column(cols, name, [str(v) for v in map(attrgetter(path), msgs)])
    for name, path in spec.string_arrays:
        cols[name] = [tuple(str(x) for x in v) for v in map(attrgetter(path), msgs)]
    for fc in spec.floats:
        cols[fc.name] = (np.hstack([np.asarray([get(m) for m in msgs], dtype=np.float64).reshape(n, -1)
                                    for get in map(attrgetter, fc.paths)]) if n else np.empty((0, fc.width)))
    if spec.joint_arrays:
        cols.update(_joint_columns(msgs, spec.joint_arrays))
    return cols


def _joint_columns(msgs: Sequence[Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Map float64[] fields by joint name over the union of names; NaN where a value is missing."""
    name_lists = [tuple(m.name) for m in msgs]
    names = joint_names(name_lists)
    column_of = {name: j for j, name in enumerate(names)}
    out: dict[str, Any] = {'name': names}
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, key in enumerate(name_lists):
        groups.setdefault(key, []).append(i)
    for field in fields:
        col = np.full((len(msgs), len(names)), np.nan)
        for key, rows in groups.items():
            idx = np.fromiter((column_of[k] for k in key), dtype=np.intp, count=len(key))
            values = [getattr(msgs[i], field) for i in rows]
            full = [r for r, v in zip(rows, values) if len(v) == len(key)]
            if full and len(key):
                col[np.ix_(full, idx)] = np.asarray([v for v in values if len(v) == len(key)],
                                                    dtype=np.float64)
            for r, v in zip(rows, values):
                if 0 < len(v) != len(key):     # malformed: fill the joints that have a value
                    m = min(len(v), len(key))
                    col[r, idx[:m]] = np.asarray(v[:m], dtype=np.float64)
        out[field] = col
    return out
