"""Parameters of the multi-point contact estimator: one list for the ROS node, run-bag, multipoint-estimate and
the docs; and the one rule by which every one of them picks its geometry file (``geometry_source``):

1. ``geometry_file`` when set (node parameter, params file, launch argument, or ``--geometry`` of
   multipoint-estimate): a relative name is looked up beside the params file that set it, then in the
   working directory, then in the package's ``config/``;
2. else (empty, the default) the bag's own ``geometry.yaml`` (run-bag, multipoint-estimate: ``BAG/geometry.yaml``);
3. else the packaged default ``config/multipoint_acu_geometry.yaml`` (the ACU-like surrogate).

Every tool prints (the node logs) one line naming the file, which rule chose it and its input topics
(``describe_sources``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contact_dynamics_common.params import ConfigError, ParamSpec

NODE_NAME = 'multipoint_contact_estimator'
#: the packaged default geometry (config/), used when neither geometry_file nor the bag names one
PACKAGED_GEOMETRY = 'multipoint_acu_geometry.yaml'

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
    ParamSpec('geometry_file', '',
              'Geometry YAML (payload and environment convex parts; format: doc/multipoint_contact_estimator.md '
              '#geometry-file-format). A relative path is looked up beside the params file, then in the working '
              "directory, then in the package's config/. Empty: the bag's own geometry.yaml (run-bag, "
              'multipoint-estimate), else the packaged config/multipoint_acu_geometry.yaml (the ACU surrogate); '
              'the node and the tools print which file they used.'),
    ParamSpec('pose_derivative_half_window', 1, "pose_source=pose: the twist is the slope of a centred local line "
              "over +-M pose samples (M = this; the online delay is M + 1 pose samples: the conditioning term's "
              "second twist uses +-(M + 1)). 1 = central differences, the widest band: the wrench is not filtered, "
              "so a wider window only attenuates the contact's fast motion more (the bandwidth term measures it).",
              low=1, high=50),
    ParamSpec('max_pose_gap', 0.05, 'Wrench samples are paired with the pose interpolated between two pose samples '
              'at most this far apart; others are dropped (counted).', low=0.0, low_open=True, unit='s'),
    ParamSpec('sensor_timeout', 0.5, 'An input silent for longer is reported stale in /diagnostics.',
              low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_threshold', 1.0,
              'A stamp more than this before the last accepted one departs from the stream: dropped as '
              'stamp_outlier, unless the next samples continue from it (a looped bag, a restarted clock), '
              'then it resets the estimator there; smaller steps back are dropped as out_of_order.', low=0.0, low_open=True, unit='s'),
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


@dataclass(frozen=True)
class GeometrySource:
    """The geometry a tool uses: the loaded (payload, environment), the file and why it was chosen."""
    payload: object
    environment: object
    path: Path
    rule: str            # which step of the rule chose it (words for the one-line report)


def geometry_source(geometry_file: str = '', bag: str | Path | None = None,
                    params_dir: str | Path | None = None) -> GeometrySource:
    """The geometry by the rule of the module docstring; ConfigError (one line naming the file and what is
    wrong) when the chosen file is missing or not a geometry file."""
    import yaml

    from contact_dynamics_common.paths import config_dir
    from contact_estimation.geometry.body import load_geometry

    name = str(geometry_file or '').strip()
    if name:
        p = Path(name).expanduser()
        candidates = [p] if p.is_absolute() else [*([Path(params_dir) / p] if params_dir else []), p,
                                                  config_dir() / p]
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            where = 'as given' if p.is_absolute() else (
                ('beside the params file, ' if params_dir else '') + 'working directory or config/')
            raise ConfigError(f"geometry_file '{name}' not found ({where})")
        rule = 'set by geometry_file'
    elif bag is not None and (Path(bag) / 'geometry.yaml').is_file():
        path, rule = Path(bag) / 'geometry.yaml', "the bag's own, geometry_file being empty"
    else:
        path = config_dir() / PACKAGED_GEOMETRY
        rule = 'the packaged default, geometry_file being empty' + (
            ' and no geometry.yaml beside the bag' if bag is not None else '')
    try:
        payload, env = load_geometry(path)
    except (OSError, ValueError, TypeError, AttributeError, KeyError, yaml.YAMLError) as exc:
        msg = str(exc).replace('\n', ' ')
        raise ConfigError(f"geometry_file '{path}': {msg}") from None
    return GeometrySource(payload, env, path, rule)


def describe_sources(src: GeometrySource, topics: dict[str, str]) -> str:
    """The one line every tool prints: geometry file, rule, part counts and input topics."""
    ins = ', '.join(f'{role} {topic}' for role, topic in topics.items())
    return (f'{NODE_NAME}: geometry {src.path} [{src.rule}], {len(src.payload.parts)} payload and '
            f'{len(src.environment.parts)} environment parts; inputs: {ins}')
