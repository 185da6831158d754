"""Structural checks of the input messages, in one place: what makes a message unusable before any of its
values is looked at (issue 16 item 3).

* ``sensor_msgs/JointState``: no names (``joint_state_empty``); a position / velocity / effort array that is
  neither empty nor as long as ``name``, a required array empty, repeated names (``joint_state_malformed``);
  a configured joint absent (``joint_missing``). Extra, unknown names are allowed.
* ``geometry_msgs/PoseStamped``, ``nav_msgs/Odometry``: orientation not finite (``nonfinite``) or its norm
  off 1 by more than ``QUATERNION_TOLERANCE`` (``bad_quaternion``: a zero quaternion, an unnormalised one).
* ``geometry_msgs/WrenchStamped``, ``sensor_msgs/Imu``: fixed-size; their values' finiteness is judged where
  they are used (the stamp gate's ``nonfinite``), so a NaN in a field a node ignores does not drop the sample.

A check returns None for a usable message, else a ``Problem``: a cause (the ledger's ``dropped.<cause>``) and
a one-line text that names the sizes, never the payload (a 100 000-name JointState gives a short line).
ROS-free: attribute access only, so the checks work on rclpy messages and on decoded bag messages alike.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: |‖q‖ - 1| above this is a bad quaternion (a unit quaternion sent as float32 is within 1e-6)
QUATERNION_TOLERANCE = 0.1
#: at most this many names in a text
FEW = 6


@dataclass(frozen=True)
class Problem:
    """Why a message is unusable: ``cause`` (a ledger key) and a short text with sizes, never the payload."""

    cause: str
    text: str


def few(names: Sequence[Any], n: int = FEW) -> str:
    """At most ``n`` names (each cut to 64 characters) and how many more."""
    head = ', '.join(repr(str(x)[:64]) for x in list(names[:n]))
    return head + (f', ... ({len(names) - n} more)' if len(names) > n else '')


def joint_state_problem(msg: Any, joints: Sequence[str] = (), required: Sequence[str] = ('position',)
                        ) -> Problem | None:
    """A JointState's structure: names present, each of position / velocity / effort empty or one value per
    name, the ``required`` arrays non-empty, names distinct, every one of ``joints`` present."""
    names = msg.name
    n = len(names)
    if n == 0:
        return Problem('joint_state_empty', 'JointState has no joint names')
    sizes = {f: len(getattr(msg, f)) for f in ('position', 'velocity', 'effort')}
    shape = f'{n} names, {sizes["position"]} positions, {sizes["velocity"]} velocities, {sizes["effort"]} efforts'
    bad = [f for f, k in sizes.items() if k not in (0, n)]
    if bad:
        return Problem('joint_state_malformed', f'JointState has {shape} ({", ".join(bad)}: one value per name)')
    lacking = [f for f in required if sizes[f] == 0]
    if lacking:
        return Problem('joint_state_malformed', f'JointState has {shape} ({", ".join(lacking)} required)')
    present = set(names)
    if len(present) != n:
        return Problem('joint_state_malformed', f'JointState repeats joint names ({n} names, '
                                                f'{len(present)} distinct)')
    missing = [j for j in joints if j not in present]
    if missing:
        one = len(missing) == 1
        return Problem('joint_missing', f"joint{'' if one else 's'} {few(missing)} {'is' if one else 'are'} not in "
                                        f'the JointState names [{few(names)}] ({n} names)')
    return None


def quaternion_problem(q: Any, what: str) -> Problem | None:
    """An orientation (x, y, z, w attributes) that is not finite or not of unit norm (within the tolerance)."""
    v = (q.x, q.y, q.z, q.w)
    if not all(map(math.isfinite, v)):
        return Problem('nonfinite', f'{what} orientation is not finite')
    norm = math.sqrt(sum(c * c for c in v))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        return Problem('bad_quaternion', f'{what} orientation has norm {norm:.3g} (unit quaternion expected)')
    return None


def pose_problem(msg: Any) -> Problem | None:
    """geometry_msgs/PoseStamped: its orientation (see ``quaternion_problem``)."""
    return quaternion_problem(msg.pose.orientation, 'PoseStamped')


def odometry_problem(msg: Any) -> Problem | None:
    """nav_msgs/Odometry: its pose's orientation (see ``quaternion_problem``)."""
    return quaternion_problem(msg.pose.pose.orientation, 'Odometry')
