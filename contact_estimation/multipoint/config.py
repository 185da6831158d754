"""Parameters of the multi-point contact estimator: one list for the ROS node, run-bag and the docs."""
from __future__ import annotations

from contact_dynamics_common.params import ParamSpec

NODE_NAME = 'multipoint_contact_estimator'

PARAMS: list[ParamSpec] = [
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    # --- inputs ---
    ParamSpec('wrench_topic', 'payload/wrench', 'geometry_msgs/WrenchStamped: the resultant contact wrench on the '
              'payload (compensated: tared, gravity and inertia removed), about the payload frame origin.'),
    ParamSpec('wrench_expressed_in', 'payload', "Axes of the wrench: 'payload' (a wrist F/T sensor at the payload "
              "origin) or 'world' (the pose frame, e.g. a force plate resolved there).",
              choices=('payload', 'world')),
    ParamSpec('pose_source', 'odometry', "'odometry': nav_msgs/Odometry with the twist in the child frame "
              "(REP-105); 'pose': geometry_msgs/PoseStamped, the twist by local-line fits of the poses (see "
              "pose_derivative_half_window).",
              choices=('odometry', 'pose')),
    ParamSpec('odom_topic', 'payload/odom', 'nav_msgs/Odometry input of the payload frame (pose_source=odometry).'),
    ParamSpec('pose_topic', 'payload/pose', 'geometry_msgs/PoseStamped input of the payload frame '
              '(pose_source=pose).'),
    ParamSpec('geometry_file', 'multipoint_acu_geometry.yaml',
              'Geometry YAML (payload and environment convex parts, see the file for the format). A relative '
              "path is looked up in the working directory, then in the package's config/.",
              check=lambda v: None if v.strip() else 'must name a geometry file'),
    ParamSpec('pose_derivative_half_window', 1, "pose_source=pose: the twist is the slope of a centred local line "
              "over +-M pose samples (M = this; the online delay is M + 1 pose samples: the conditioning term's "
              "second twist uses +-(M + 1)). 1 = central differences, the widest band: the wrench is not filtered, "
              "so a wider window only attenuates the contact's fast motion more (the bandwidth term measures it).",
              low=1, high=50),
    ParamSpec('max_pose_gap', 0.05, 'Wrench samples are paired with the pose interpolated between two pose samples '
              'at most this far apart; others are dropped (counted).', low=0.0, low_open=True, unit='s'),
    ParamSpec('sensor_timeout', 0.5, 'An input silent for longer is reported stale in /diagnostics.',
              low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_threshold', 1.0, 'A stamp this much earlier than the last one (a looped bag) resets the '
              'estimator; smaller steps back are dropped as out-of-order.', low=0.0, low_open=True, unit='s'),
    ParamSpec('input_queue_size', 1000, 'Depth of the sensor-data QoS input queues.', low=1, high=100000),
    # --- model and estimation ---
    ParamSpec('formulation', 'force', "Rows of the regression: 'force' (3 per instant, the thesis's choice), "
              "'moment' or 'force_moment' (moments divided by moment_scale).",
              choices=('force', 'moment', 'force_moment')),
    ParamSpec('moment_scale', 0.1, 'Reference length L_ref dividing the moment rows so that they are in N.',
              low=0.0, low_open=True, unit='m'),
    ParamSpec('slide_speed_threshold', 1e-4, 'Contact points slipping slower than this are sticking: no friction '
              'column (t = 0).', low=0.0, unit='m/s'),
    ParamSpec('window', 0.0, 'Estimation window (newest samples); 0 = every sample since start or reset.',
              low=0.0, unit='s'),
    ParamSpec('max_samples', 200000, 'Most instants kept for the global solve (oldest dropped).', low=10,
              high=100000000),
    ParamSpec('publish_rate', 10.0, 'Estimation and publishing rate (timer on the node clock).', low=0.1,
              high=1000.0, unit='Hz'),
    ParamSpec('frame_id', '', 'frame_id of the published estimates and contact points; empty = the pose frame.'),
    # --- verdict ---
    ParamSpec('max_condition', 1e6, 'Largest acceptable condition number of the column-scaled regressor.',
              low=1.0),
    ParamSpec('min_excitation', 1e-3, 'A parameter whose scaled regressor column is explained by the others to '
              'within this fraction is not identifiable.', low=0.0, high=1.0),
    ParamSpec('max_residual_fraction', 0.2, 'Residual RMS / wrench RMS above which the model does not explain the '
              'data and the estimate is invalid.', low=0.0, low_open=True),
    ParamSpec('significance', 3.0, 'Each parameter must exceed this many standard deviations.', low=0.0),
]
