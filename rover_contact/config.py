"""Parameters shared by the rover_contact nodes (impact_indicator, posture_evaluator); spec §7.5."""
from __future__ import annotations

from contact_dynamics_common.params import ParamSpec

from .impact.indicator import GROUND_MODES
from .models.rover3d import WHEEL_CONTACTS


def _nonempty(v) -> str | None:
    return None if str(v).strip() else 'must not be empty'


COMMON: list[ParamSpec] = [
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    ParamSpec('model_yaml', 'rover_pr3d_roles.yaml',
              'Joint-role map of the rover (wheels with radius, rockers, bogies, steering, passive/locked joints, '
              'differential rows, posture joints); its urdf key names the URDF. Relative paths are also looked up '
              "in the package's config/. Shipped: rover_pr3d_roles.yaml (spec model PR extruded to 3-D, "
              'RCP-like), rover_rcp_like_roles.yaml (28-body RCP layout), rover_osr_like_roles.yaml '
              '(Open-Source-Rover-like rocker-bogie). Masses of all three are synthetic.', check=_nonempty),
    ParamSpec('urdf_path', '', "URDF overriding the role map's urdf ('' = the role map's). A URDF that lacks a "
              'mapped joint stops the node with the joint names.'),
    ParamSpec('robot_description_topic', '', "std_msgs/String URDF topic (transient local), e.g. "
              "'/robot_description': when a description arrives the model is rebuilt from it with the role map of "
              "model_yaml (a description without the mapped joints is rejected with the reason and the previous "
              "model kept). '' = use the role map's URDF only."),
    ParamSpec('joint_states_topic', '/joint_states', 'sensor_msgs/JointState input: positions and velocities of '
              'every joint of the model (extra names are ignored and counted).'),
    ParamSpec('odom_topic', '/odom', 'nav_msgs/Odometry input: base pose in a gravity-levelled frame (z up) and '
              'twist in the base (child) frame.'),
    ParamSpec('obstacle_topic', '~/obstacle', 'contact_dynamics/ObstacleHypothesis input.'),
    ParamSpec('base_frame', 'base_link', 'Base (odometry child) frame: obstacle face normals given in it are '
              'rotated by the odometry orientation; other frames are taken as the odometry frame.'),
    ParamSpec('publish_rate', 20.0, 'Rate of the evaluation timer (spec rate_hz).', low=0.1, high=1000.0, unit='Hz'),
    ParamSpec('input_queue_size', 50, 'Subscription queue depth (sensor-data QoS).', low=1, high=100000),
    ParamSpec('max_state_age_s', 0.2, 'JointState/Odometry older than this (or this far apart) are stale: no '
              'evaluation, /diagnostics ERROR.', low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_s', 1.0, 'Ordering per input (the shared stamp gate): a JointState, Odometry or obstacle '
              'hypothesis stamped at or before the last accepted one of its input is dropped and counted '
              '(*_out_of_order), never made the current state; a step back of more than this is a time jump (a '
              'restarted or looped source): accepted as the new current sample and counted (*_time_jumps).',
              low=0.0, low_open=True, unit='s'),
    ParamSpec('wheel_contact', 'domed', "Wheel contact geometry, used by the obstacle contact row, the ground rows, "
              "the rolling velocity and the posture ground solve: 'domed' (MacMahon's model, spec 3.3-3.4: a "
              "sphere of the wheel radius about the wheel centre; obstacle contact C = G + R n_in, ground rows at "
              "the wheel centre, centre at height R) or 'disk' (a thin disk: the rim point furthest along the "
              "obstacle normal, ground rows at the lowest rim point). They agree while the axle is perpendicular "
              "to the normal; a steered or rolled wheel differs.", choices=WHEEL_CONTACTS),
    ParamSpec('ground_mode', 'both', "Ground constraints at impact: 'free' (none: compliant-ground limit), "
              "'rigid' (wheels the impulsive LCP finds active get normal + no-slip rows), 'both' (report both, "
              'the larger is the score).', choices=GROUND_MODES),
    ParamSpec('rolling_constraint', True, 'Active wheels in rigid mode get the no-slip rows too; false: normal rows '
              'only (when slip is high).'),
    ParamSpec('slip_warning', 0.3, 'Warn that the rolling constraint is inconsistent when the measured slip '
              '|(R w - v)/(R w)| exceeds this.', low=0.0),
    ParamSpec('rank_tol', 1e-10, 'Relative singular-value tolerance of the rank-revealing projections.',
              low=0.0, low_open=True, high=1e-3),
    ParamSpec('contact_wheels_default', [''], "Impacting wheels when the hypothesis names none ([''] = the role "
              "map's contact_wheels_default)."),
]
