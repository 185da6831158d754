"""The chosen posture as a joint trajectory for a joint_trajectory_controller (ROS-free).

``posture_trajectory`` moves every posture joint from its current position to the target along one
synchronised minimum-jerk profile

    q_j(t) = q0_j + (q1_j - q0_j) s(t / T),   s(u) = 10 u^3 - 15 u^4 + 6 u^5,   max |s'| = 15/8 at u = 1/2

so the peak velocity of joint j is 15/8 |q1_j - q0_j| / T; the duration

    T = max(min_duration, max_j 15/8 |q1_j - q0_j| / (speed_scale * v_limit_j))        [s]

keeps every joint within speed_scale times its URDF velocity limit. The trajectory's points carry positions,
velocities and accelerations of that profile, so the quintic joint_trajectory_controller interpolates between
them is the profile itself (the same quintic through the same boundary values).

``PostureCommander`` decides when to send one: only when enabled, only for a feasible best candidate, and
never while the previous command is still executing unless the choice changed; the same choice already
reached is not sent again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PEAK = 15.0 / 8.0


def velocity_limits(model, joints) -> dict:
    """{joint: URDF velocity limit} (rad/s or m/s) of the pinocchio model of a RoverModel; ValueError naming a
    joint without a positive finite limit."""
    pm = model.model
    out = {}
    for j in joints:
        jid = pm.getJointId(j)
        if jid >= pm.njoints:
            raise ValueError(f"joint '{j}' is not in the URDF")
        v = float(pm.velocityLimit[pm.joints[jid].idx_v])
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"joint '{j}' has no velocity limit in the URDF")
        out[j] = v
    return out


@dataclass
class PostureTrajectory:
    joint_names: list
    times: np.ndarray            # (P,) s from start
    positions: np.ndarray        # (P, n)
    velocities: np.ndarray
    accelerations: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.times[-1])


def posture_trajectory(current: dict, target: dict, limits: dict, speed_scale: float = 1.0,
                       min_duration: float = 0.5, points: int = 10) -> PostureTrajectory:
    """The synchronised minimum-jerk move from ``current`` to ``target`` ({joint: position}) within
    ``speed_scale`` x ``limits`` (module docstring)."""
    names = list(target)
    q0 = np.array([float(current.get(j, target[j])) for j in names])
    q1 = np.array([float(target[j]) for j in names])
    v = np.array([speed_scale * limits[j] for j in names])
    T = max(min_duration, float(np.max(PEAK * np.abs(q1 - q0) / v)) if names else 0.0)
    u = np.linspace(0.0, 1.0, max(points, 2))
    s = 10 * u ** 3 - 15 * u ** 4 + 6 * u ** 5
    sd = (30 * u ** 2 - 60 * u ** 3 + 30 * u ** 4) / T
    sdd = (60 * u - 180 * u ** 2 + 120 * u ** 3) / T ** 2
    d = q1 - q0
    return PostureTrajectory(names, u * T, q0 + s[:, None] * d, sd[:, None] * d, sdd[:, None] * d)


@dataclass
class Command:
    target: dict
    label: str
    start_s: float
    duration_s: float


class PostureCommander:
    """When to send the chosen posture (module docstring); ``counts`` and ``last_reason`` for /diagnostics."""

    def __init__(self, tolerance: float = 1e-6):
        self.enabled = False
        self.tolerance = tolerance
        self.last: Command | None = None
        self.counts = {'sent': 0, 'not_enabled': 0, 'infeasible': 0, 'executing': 0, 'already_there': 0,
                       'no_state': 0}
        self.last_reason = 'no evaluation yet'

    def _same(self, a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= self.tolerance for k in a)

    def decide(self, best: dict | None, current: dict, now_s: float) -> bool:
        """True when ``best`` ({joint: position} of the feasible best candidate, None: none feasible)
        should be sent now; the reason is in ``last_reason``."""
        if not self.enabled:
            return self.refuse('not_enabled', 'command disabled')
        if best is None:
            return self.refuse('infeasible', 'no feasible candidate')
        if self.last is not None and self._same(best, self.last.target):
            if now_s < self.last.start_s + self.last.duration_s:
                return self.refuse('executing', 'previous command executing (same choice)')
            if all(abs(current.get(j, math.inf) - q) <= max(self.tolerance, 1e-3) for j, q in best.items()):
                return self.refuse('already_there', 'the chosen posture is reached')
        return True

    def sent(self, best: dict, label: str, now_s: float, duration_s: float) -> None:
        self.last = Command(dict(best), label, now_s, duration_s)
        self.counts['sent'] += 1
        self.last_reason = f"sent '{label}' ({duration_s:.3g} s)"

    def refuse(self, key: str, reason: str) -> bool:
        self.counts[key] += 1
        self.last_reason = reason
        return False
