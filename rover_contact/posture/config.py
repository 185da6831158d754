"""Parameters of the posture_evaluator node (one list for the node, run-bag and config/posture_evaluator.yaml)."""
from __future__ import annotations

from contact_dynamics_common.params import ParamSpec

from ..config import COMMON

NODE_NAME = 'posture_evaluator'

PARAMS: list[ParamSpec] = COMMON + [
    ParamSpec('candidates_topic', '~/candidates', 'contact_dynamics/PostureCandidateArray input: when received, '
              'these candidates replace the parameter grid.'),
    ParamSpec('posture_joints', [''], "Posture joints of the grid ([''] = the role map's posture_joints)."),
    ParamSpec('posture_grid_min', [0.0], 'Grid lower bound per posture joint (one value: all joints).', unit='rad or m'),
    ParamSpec('posture_grid_max', [0.0], 'Grid upper bound per posture joint (one value: all joints).', unit='rad or m'),
    ParamSpec('posture_grid_steps', [1], 'Grid points per posture joint (one value: all joints).', low=1, high=1000),
    ParamSpec('speed_grid', [0.07], 'Approach speeds of the grid.', low=0.0, low_open=True, unit='m/s'),
    ParamSpec('energy_budget_j', 0.0, 'Allowed T_c; v_max = sqrt(budget / T_c(unit speed)) per candidate '
              '(0: no speed advice, v_max NaN).', low=0.0, unit='J'),
    ParamSpec('stability_margin_m', 0.05, 'Reject candidates whose CoM projection is closer than this to the '
              'support polygon edge.', unit='m'),
    ParamSpec('candidates_per_update', 50, 'At most this many candidates are evaluated per timer tick; a longer '
              'list is evaluated across ticks and published (stamped with the data time at its start) when '
              'complete, so one update stays within the period (the /diagnostics timing status says when it does '
              'not). The service evaluates its request at once.', low=1, high=100000),
    # --- the posture command bridge (issue 18; doc/bridges.md) ---
    ParamSpec('command_enabled', False, 'Publish the chosen (feasible, best) posture as a trajectory_msgs/'
              'JointTrajectory on command_topic and its largest approach speed on speed_limit_topic (also '
              '~/enable_command, std_srvs/SetBool).', dynamic=True),
    ParamSpec('command_topic', 'posture_controller/joint_trajectory', 'trajectory_msgs/JointTrajectory '
              "output for a joint_trajectory_controller (its '<controller>/joint_trajectory' input)."),
    ParamSpec('speed_limit_topic', '~/approach_speed_limit', 'std_msgs/Float64 output: the chosen '
              'candidate\'s v_max (m/s), the largest approach speed within energy_budget_j (published when '
              'finite).'),
    ParamSpec('command_speed_scale', 0.5, 'Fraction of each posture joint\'s URDF velocity limit the '
              'trajectory may reach.', low=0.0, low_open=True, high=1.0),
    ParamSpec('command_min_duration_s', 0.5, 'Shortest posture trajectory.', low=0.0, low_open=True,
              unit='s'),
    ParamSpec('command_points', 10, 'Points of the posture trajectory (positions, velocities, '
              'accelerations).',
              low=2, high=1000),
    ParamSpec('horizon_s', 5.0, 'Re-evaluate at every tick while the time to contact is below this (and once '
              'per new obstacle hypothesis).', low=0.0, unit='s'),
]
