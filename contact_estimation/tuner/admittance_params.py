"""The admittance parameters of ros2_controllers' ``admittance_controller`` and the check of a request.

Read from ros-controls/ros2_controllers, ``admittance_controller/src/admittance_controller_parameters.yaml``
(generate_parameter_library definition; the controller re-reads them at run time when
``enable_parameter_update_without_reactivation`` is true, its default):

==============================  ============  =====  =====================================
name                            type          size   validation
==============================  ============  =====  =====================================
``admittance.selected_axes``    bool_array    6      fixed_size 6
``admittance.mass``             double_array  6      fixed_size 6, element_bounds [1e-4, 1e6]
``admittance.damping_ratio``    double_array  6      fixed_size 6
``admittance.stiffness``        double_array  6      fixed_size 6, element_bounds [0, 1e8]
``admittance.joint_damping``    double        -      gt_eq 0 (default 5)
==============================  ============  =====  =====================================

Axes are x, y, z, rx, ry, rz of the controller's control frame. The controller's damping is
D = 2 zeta sqrt(M K) (its own definition of ``damping_ratio``), so an axis with stiffness 0 has no damping.

``check_request`` refuses, with a one-line reason, anything the controller would refuse or that would make it
unsafe, before a SetParameters request is sent: a missing name, a wrong type, a size other than 6, a
non-finite element or one outside the controller's bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

AXES = ('x', 'y', 'z', 'rx', 'ry', 'rz')
SIZE = 6

MASS = 'admittance.mass'
DAMPING_RATIO = 'admittance.damping_ratio'
STIFFNESS = 'admittance.stiffness'
SELECTED_AXES = 'admittance.selected_axes'
#: the three gains the tuner sets, in this order
GAINS = (MASS, DAMPING_RATIO, STIFFNESS)


@dataclass(frozen=True)
class ArraySpec:
    name: str
    kind: str                  # 'double_array' | 'bool_array'
    size: int
    low: float | None = None
    high: float | None = None


#: the controller's declared arrays (admittance_controller_parameters.yaml)
SPECS: dict[str, ArraySpec] = {
    SELECTED_AXES: ArraySpec(SELECTED_AXES, 'bool_array', SIZE),
    MASS: ArraySpec(MASS, 'double_array', SIZE, 1e-4, 1e6),
    DAMPING_RATIO: ArraySpec(DAMPING_RATIO, 'double_array', SIZE),
    STIFFNESS: ArraySpec(STIFFNESS, 'double_array', SIZE, 0.0, 1e8),
}


def check_array(name: str, value) -> str | None:
    """None when ``value`` is what the controller declares for ``name``, else the reason (one line)."""
    spec = SPECS.get(name)
    if spec is None:
        return f"'{name}' is not an admittance_controller array"
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
        return f"'{name}' must be a {spec.kind} of {spec.size} elements, got {type(value).__name__}"
    if len(value) != spec.size:
        return f"'{name}' must have {spec.size} elements (x y z rx ry rz), got {len(value)}"
    if spec.kind == 'bool_array':
        if not all(isinstance(v, bool) for v in value):
            return f"'{name}' must be a bool_array"
        return None
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
        return f"'{name}' must be a double_array"
    for i, v in enumerate(value):
        if not math.isfinite(v):
            return f"'{name}'[{AXES[i]}] is not finite"
        if spec.low is not None and v < spec.low:
            return f"'{name}'[{AXES[i]}] = {v:.6g} below the controller's bound {spec.low:g}"
        if spec.high is not None and v > spec.high:
            return f"'{name}'[{AXES[i]}] = {v:.6g} above the controller's bound {spec.high:g}"
    return None


def check_request(values: dict) -> str | None:
    """None when every array of ``values`` ({name: sequence}) passes ``check_array``, else the first
    reason."""
    for name, value in values.items():
        reason = check_array(name, value)
        if reason:
            return reason
    return None


def axis_index(axis: str) -> int:
    """Index of ``axis`` (x y z rx ry rz) in the controller's arrays; ValueError otherwise."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {' '.join(AXES)}, got {axis!r}")
    return AXES.index(axis)


def check_current(current: dict, index: int) -> str | None:
    """None when the arrays a controller reported ({name: value}) are admittance_controller's and its
    ``selected_axes`` (if reported) include axis ``index``; else the reason."""
    for name in GAINS:
        if name not in current:
            return f"the controller has no parameter '{name}'"
        reason = check_array(name, current[name])
        if reason:
            return f'controller reports {reason}'
    axes = current.get(SELECTED_AXES)
    if axes is not None:
        reason = check_array(SELECTED_AXES, axes)
        if reason:
            return f'controller reports {reason}'
        if not axes[index]:
            return f"axis {AXES[index]} is not in the controller's admittance.selected_axes"
    return None


def request_arrays(current: dict, index: int, gains) -> tuple[dict | None, str]:
    """(arrays to set, '') or (None, reason): the controller's arrays ``current`` ({name: sequence}, as read
    from it) with element ``index`` of mass, damping_ratio and stiffness replaced by ``gains`` (M, zeta, K).

    Refused when an array the controller reported is not what admittance_controller declares (a wrong size
    or type: another controller, or a misconfigured one), when ``selected_axes`` (if reported) excludes the
    axis, or when the new arrays fail ``check_request``."""
    reason = check_current(current, index)
    if reason:
        return None, reason
    out = {}
    for name, g in zip(GAINS, gains):
        arr = [float(v) for v in current[name]]
        arr[index] = float(g)
        out[name] = arr
    reason = check_request(out)
    return (None, reason) if reason else (out, '')


#: rcl_interfaces/msg/ParameterType.PARAMETER_DOUBLE_ARRAY
PARAMETER_DOUBLE_ARRAY = 8


def parameter_event(controller: str, arrays: dict, stamp_ns: int) -> dict:
    """rcl_interfaces/msg/ParameterEvent fields: the arrays set (or that would be set) on ``controller``."""
    return {'stamp': {'sec': int(stamp_ns // 1_000_000_000), 'nanosec': int(stamp_ns % 1_000_000_000)},
            'node': controller,
            'changed_parameters': [{'name': name, 'value': {'type': PARAMETER_DOUBLE_ARRAY,
                                                            'double_array_value': [float(v) for v in arr]}}
                                   for name, arr in arrays.items()]}
