"""Stand-in for ros2_controllers' admittance_controller in tests: an rclpy node that declares the admittance
parameters as the real controller does (admittance_controller/src/admittance_controller_parameters.yaml of
ros-controls/ros2_controllers: names, types, fixed size 6, element bounds) and validates every set the way
generate_parameter_library's validators would (fixed_size<>: 6; element_bounds<>: mass [1e-4, 1e6],
stiffness [0, 1e8]; joint_damping gt_eq 0). Written for the tests, independently of the tuner's own check.

It prints one line per accepted set ('SET name [...]') and per rejected set ('REJECTED name: reason'), so a
test can prove that the tuner never sent what the controller would refuse. ``--mass-size N`` declares
admittance.mass with N elements (a misconfigured or different controller) and skips its declare-time check.

  python test/admittance_standin.py [--mass-size N] --ros-args -r __node:=admittance_controller
"""
from __future__ import annotations

import math
import sys

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node

BOUNDS = {'admittance.mass': (1e-4, 1e6), 'admittance.stiffness': (0.0, 1e8),
          'admittance.damping_ratio': None}


class StandinAdmittanceController(Node):
    def __init__(self, mass_size: int = 6):
        super().__init__('admittance_controller')
        self.declare_parameter('joints', ['j1', 'j2', 'j3', 'j4', 'j5', 'j6'],
                               ParameterDescriptor(read_only=True))
        self.declare_parameter('admittance.selected_axes', [True] * 6)
        self.declare_parameter('admittance.mass', [8.0, 8.0, 8.0, 1.0, 1.0, 1.0][:mass_size]
                               + [1.0] * max(mass_size - 6, 0))
        self.declare_parameter('admittance.damping_ratio', [1.5] * 6)
        self.declare_parameter('admittance.stiffness', [200.0, 200.0, 200.0, 50.0, 50.0, 50.0])
        self.declare_parameter('admittance.joint_damping', 5.0)
        self.declare_parameter('enable_parameter_update_without_reactivation', True)
        self.add_on_set_parameters_callback(self._validate)

    def _validate(self, params) -> SetParametersResult:
        for p in params:
            reason = self._problem(p.name, p.value)
            if reason:
                print(f'REJECTED {p.name}: {reason}', flush=True)
                return SetParametersResult(successful=False, reason=reason)
        for p in params:
            print(f'SET {p.name} {list(p.value) if hasattr(p.value, "__len__") else p.value}', flush=True)
        return SetParametersResult(successful=True)

    @staticmethod
    def _problem(name: str, value) -> str | None:
        if name == 'admittance.selected_axes':
            return None if len(value) == 6 else 'fixed_size 6'
        if name == 'admittance.joint_damping':
            return None if value >= 0.0 else 'gt_eq 0'
        if name not in BOUNDS:
            return None
        if len(value) != 6:
            return f'Length of parameter {name!r} is {len(value)} but must be equal to 6'
        bounds = BOUNDS[name]
        if any(not math.isfinite(v) for v in value):
            return 'not finite'
        if bounds and any(not bounds[0] <= v <= bounds[1] for v in value):
            return f'element_bounds {bounds}'
        return None


def main() -> None:
    args = sys.argv[1:]
    size = 6
    if '--mass-size' in args:
        size = int(args[args.index('--mass-size') + 1])
    rclpy.init(args=sys.argv)
    node = StandinAdmittanceController(size)
    print('READY', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
