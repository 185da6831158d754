"""What a single-point contact's coordinate and generalised force are: prismatic or revolute.

A prismatic contact deforms along a line, x in m, and pushes back with a force F_n in N; a revolute one
(a torsional spring, a joint against a stop, a finger about its axis) deflects by an angle, x in rad, and
pushes back with a torque T_n in N*m. The model is the same, F_n = k x + b xdot (+ m xddot), so the
pipeline (datum, differentiator, estimators, verdict) is the same; only the inputs and the units differ:

=============  ==================  =======================
               prismatic           revolute
=============  ==================  =======================
x              m                   rad
F_n            N                   N*m
k              N/m                 N*m/rad
b              N*s/m               N*m*s/rad
m              kg                  kg*m^2
=============  ==================  =======================

Where F_n comes from (``force_source``):

* ``wrench_force``: F_n = (f - force_bias) . force_direction of geometry_msgs/WrenchStamped (prismatic);
* ``wrench_torque``: T_n = (tau - force_bias) . torque_axis of the same message (revolute);
* ``joint_effort``: F_n = joint_sign (effort[joint_name] - force_bias[0]) of the sensor_msgs/JointState that
  also gives the position: the effort is the generalised force conjugate to the joint position, so it
  changes sign with it (N on a prismatic joint, N*m on a revolute one).

The pipeline reads every force source as rows of 3 and projects them on ``force_projection(params)``
(joint effort: rows (effort, 0, 0) projected on (joint_sign, 0, 0)). A two-sided spring is two contacts:
flip ``joint_sign`` with ``torque_axis`` (wrench_torque) or ``joint_sign`` alone (joint_effort).
"""
from __future__ import annotations

import numpy as np

FORCE_SOURCES = ('wrench_force', 'wrench_torque', 'joint_effort')
CONTACT_TYPES = ('prismatic', 'revolute')
DEFAULT_AXIS = [0.0, 0.0, 1.0]

#: SI units of every quantity of an estimate, per contact type
UNITS = {
    'prismatic': {'displacement': 'm', 'velocity': 'm/s', 'force': 'N', 'stiffness': 'N/m',
                  'damping': 'N*s/m', 'mass': 'kg'},
    'revolute': {'displacement': 'rad', 'velocity': 'rad/s', 'force': 'N*m', 'stiffness': 'N*m/rad',
                 'damping': 'N*m*s/rad', 'mass': 'kg*m^2'},
}


def contact_units(params: dict | None) -> dict[str, str]:
    """Units of x, xdot, F_n, k, b, m for the configured ``contact_type`` (prismatic without params)."""
    return dict(UNITS[(params or {}).get('contact_type', 'prismatic')])


def unit_extras(params: dict | None) -> dict[str, str]:
    """The ContactEstimate extras that name the contact type and the unit of every published number."""
    out = {'contact_type': (params or {}).get('contact_type', 'prismatic')}
    out.update({f'units.{k}': v for k, v in contact_units(params).items()})
    return out


def contact_inputs_problem(params: dict) -> str | None:
    """One-line reason why the contact type, force source and displacement source do not fit together."""
    kind, source = params.get('contact_type', 'prismatic'), params.get('force_source', 'wrench_force')
    disp = params['displacement_source']
    if kind == 'revolute' and disp != 'joint_state':
        return ('contact_type revolute measures its deflection at a joint: set displacement_source '
                f"joint_state (not '{disp}')")
    if kind == 'revolute' and source == 'wrench_force':
        return ('contact_type revolute needs a torque: set force_source wrench_torque (about torque_axis) '
                'or joint_effort')
    if kind == 'prismatic' and source == 'wrench_torque':
        return 'force_source wrench_torque gives a torque (N*m): set contact_type revolute'
    if source == 'joint_effort' and disp != 'joint_state':
        return "force_source joint_effort reads the effort of joint_name: set displacement_source joint_state"
    if source != 'wrench_force' and list(params['force_direction']) != DEFAULT_AXIS:
        return (f'force_direction applies to force_source wrench_force only (here {source}: '
                + ('set torque_axis)' if source == 'wrench_torque' else 'the sign is joint_sign)'))
    if source != 'wrench_torque' and list(params.get('torque_axis', DEFAULT_AXIS)) != DEFAULT_AXIS:
        return f'torque_axis applies to force_source wrench_torque only (here {source})'
    if source == 'joint_effort' and any(params['force_bias'][1:]):
        return ('with force_source joint_effort only force_bias[0] (the effort bias) applies; '
                'set the others to 0')
    return None


def force_projection(params: dict) -> np.ndarray:
    """The vector the pipeline projects its force rows on: F_n = (row - force_bias) . projection."""
    source = params.get('force_source', 'wrench_force')
    if source == 'wrench_torque':
        return np.asarray(params['torque_axis'], dtype=np.float64)
    if source == 'joint_effort':
        return np.array([params['joint_sign'], 0.0, 0.0])
    return np.asarray(params['force_direction'], dtype=np.float64)


def force_topic(params: dict) -> tuple[str, str]:
    """(topic parameter value, message type) of the force input: the wrench, or the JointState for efforts."""
    if params.get('force_source', 'wrench_force') == 'joint_effort':
        return params['joint_states_topic'], 'sensor_msgs/msg/JointState'
    return params['wrench_topic'], 'geometry_msgs/msg/WrenchStamped'


def force_rows(columns: dict, params: dict) -> np.ndarray | None:
    """(N, 3) force rows of the force topic's bag columns (force, torque or (effort, 0, 0)); None when the
    JointState has no ``joint_name`` (the position stream counts that)."""
    source = params.get('force_source', 'wrench_force')
    if source == 'wrench_force':
        return columns['force']
    if source == 'wrench_torque':
        return columns['torque']
    names = list(columns['name'])
    if params['joint_name'] not in names:
        return None
    effort = np.asarray(columns['effort'], dtype=np.float64)
    j = names.index(params['joint_name'])
    rows = np.zeros((len(effort), 3))
    rows[:, 0] = effort[:, j] if effort.ndim == 2 and effort.shape[1] > j else np.nan
    return rows


def effort_row(names, positions, effort, joint_name: str) -> tuple[float, float, float] | None:
    """One JointState message's force row (effort, 0, 0); NaN effort (counted as non-finite by the stamp gate)
    when the message carries no effort for the joint; None when the joint or its position is absent (the
    position stream counts those: joint_missing, joint_state_empty, joint_state_malformed)."""
    try:
        j = list(names).index(joint_name)
    except ValueError:
        return None
    if j >= len(positions):
        return None
    return (float(effort[j]) if j < len(effort) else float('nan'), 0.0, 0.0)
