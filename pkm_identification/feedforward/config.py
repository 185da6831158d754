"""Parameters of pkm_feedforward: one list used by the ROS node and the docs."""
from __future__ import annotations

from contact_dynamics_common.ros.params import ParamSpec

NODE_NAME = 'pkm_feedforward'


def _distinct(v) -> str | None:
    return None if len(set(v)) == len(v) and all(s.strip() for s in v) else 'must be six distinct names'


PARAMS: list[ParamSpec] = [
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    ParamSpec('machine', 'uf_like', 'Machine description (as pkm_identifier\'s): a name in '
              'config/pkm_machines/ '
              'or a path.'),
    ParamSpec('joint_names', [f'strut_{i}' for i in range(1, 7)], 'The six strut joints, in the order of the '
              'machine file and of the command array.', length=6, check=_distinct),
    ParamSpec('trajectory_topic', '~/joint_trajectory', 'trajectory_msgs/JointTrajectory input: the desired '
              'strut lengths (positions, and velocities / accelerations when given) of the six struts.'),
    ParamSpec('parameters_topic', 'pkm_identifier/parameters', 'contact_dynamics/ParameterEstimate input: '
              'pkm_identifier\'s estimate (values, covariance, flags).'),
    ParamSpec('command_topic', 'effort_controller/commands', 'std_msgs/Float64MultiArray output: the six '
              'actuator forces (N) in joint_names order, what a forward_command_controller / '
              'effort_controllers/JointGroupEffortController reads on <controller>/commands.'),
    ParamSpec('sigma_topic', '~/force_sigma', 'std_msgs/Float64MultiArray output: 1-sigma of each force (N) '
              'from the parameters\' covariance.'),
    ParamSpec('publish_rate', 100.0, 'Command rate while a trajectory executes.', low=0.1, high=2000.0,
              unit='Hz'),
    ParamSpec('theta_configured', [0.0] * 8, 'Values of [m_e, m_b, m_p, Ixxp, Iyyp, Izzp, Ix_s, Iz_s] (kg, '
              'kg*m^2) used for every parameter the estimate does not identify; 0: the machine file (CAD) '
              'value x prior_scale.', length=8, low=0.0),
    ParamSpec('prior_scale', 1.0, 'Scale of the CAD values where theta_configured is 0.', low=0.0,
              low_open=True),
    ParamSpec('friction_configured', [200.0, 15.0] * 6, 'Values of [fv_1, fc_1, ..., fv_6, fc_6] (N*s/m, N) '
              'for unidentified friction parameters (used when the estimate carries friction).', length=12,
              low=0.0),
    ParamSpec('friction_model', 'continuous', "pkm_identifier's friction_model (when its estimate carries "
              "friction): 'continuous' or 'printed'.", choices=('continuous', 'printed')),
    ParamSpec('configured_rel_std', 0.5, 'Relative 1-sigma of a configured (not identified) parameter in the '
              'force band.', low=0.0, high=10.0),
]
