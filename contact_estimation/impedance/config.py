"""Parameters of the impedance profiler: one list used by the ROS node, by run-bag and by the docs."""
from __future__ import annotations

import math

from contact_dynamics_common.params import ParamSpec

NODE_NAME = 'impedance_profiler'


def _unit_vector(v) -> str | None:
    n = math.sqrt(sum(c * c for c in v))
    return None if abs(n - 1.0) < 1e-6 else f'must be a unit vector (norm {n:.6g})'


def _increasing(v) -> str | None:
    if v and (len(v) < 2 or any(b <= a for a, b in zip(v, v[1:]))):
        return 'must be empty or strictly increasing with at least 2 values'
    return None


PARAMS: list[ParamSpec] = [
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    # --- inputs ---
    ParamSpec('joint_states_topic', 'joint_states',
              'sensor_msgs/JointState input: position (and effort) of the joint.'),
    ParamSpec('joint_name', 'joint1', 'The 1-DOF joint whose position x (m, or rad for a rotary joint) is '
              'the impedance coordinate.', check=lambda v: None if v.strip() else 'must name a joint'),
    ParamSpec('force_source', 'wrench', "'wrench': F = (f - force_bias) . force_direction of a "
              "geometry_msgs/WrenchStamped (x interpolated at the wrench stamps); 'effort': "
              'F = effort_sign * effort of the joint in the same JointState.', choices=('wrench', 'effort')),
    ParamSpec('wrench_topic', 'wrench', 'geometry_msgs/WrenchStamped input (force_source=wrench): the force '
              'the device applies to the mechanism, compensated (tared, gravity removed).'),
    ParamSpec('force_direction', [1.0, 0.0, 0.0], 'Unit vector in the wrench frame along +x of the joint.',
              length=3, check=_unit_vector),
    ParamSpec('force_bias', [0.0, 0.0, 0.0], 'Force offset subtracted from the wrench before projection.',
              length=3, unit='N'),
    ParamSpec('effort_sign', 1.0, '+1 if a positive effort pushes the mechanism towards +x, -1 otherwise.',
              check=lambda v: None if v in (1.0, -1.0) else 'must be +1 or -1'),
    ParamSpec('acceleration_source', 'differentiate', "'differentiate': a from the filtered joint position; "
              "'imu': a = linear_acceleration . imu_axis of a sensor_msgs/Imu on the moving part (an "
              'impedance-head accelerometer), interpolated at the force stamps and filtered like x and F.',
              choices=('differentiate', 'imu')),
    ParamSpec('imu_topic', 'imu', 'sensor_msgs/Imu input (acceleration_source=imu).'),
    ParamSpec('imu_axis', [1.0, 0.0, 0.0], 'Unit vector in the IMU frame along +x of the joint.', length=3,
              check=_unit_vector),
    ParamSpec('sensor_timeout', 0.05, 'Position gaps longer than this are not bridged when pairing; an input '
              'silent for longer is reported stale.', low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_threshold', 1.0,
              'A stamp more than this before the last accepted one departs from the stream: dropped as '
              'stamp_outlier, unless the next samples continue from it (a looped bag, a restarted clock), '
              'then it resets the profile there; smaller steps back are dropped as out_of_order.', low=0.0,
              low_open=True, unit='s'),
    ParamSpec('input_queue_size', 4000, 'Depth of the sensor-data QoS input queues (4000 = 1 s at 4 kHz).',
              low=1, high=100000),
    ParamSpec('buffer_capacity', 40000, 'Samples buffered per input between two updates.', low=100,
              high=10000000),
    # --- segmentation ---
    ParamSpec('edges', [0.0], 'Segment edges x_1 < ... < x_{N+1} (m or rad); [] or one value: segments '
              'uniform segments on position_range. Segments are [x_j, x_{j+1}), the last one closed.',
              check=lambda v: None if len(v) <= 1 else _increasing(v)),
    ParamSpec('segments', 8, 'Number of uniform segments on position_range (when edges is not given).', low=1,
              high=1000),
    ParamSpec('position_range', [0.0, 0.024], 'Range [lo, hi] split into uniform segments.', length=2),
    # --- conditioning ---
    ParamSpec('cutoff_frequency', 50.0, '-3 dB cut-off of the Gaussian parallel-filter kernel applied to x, '
              'F (and a measured a) alike, whose derivatives give v and a (exact for the linear segment '
              'model); choose 3-4x the highest excitation frequency (B5). The output is delayed by two '
              'kernel half-lengths (5 widths each, width = 0.1325 / cutoff).', low=0.0, low_open=True,
              unit='Hz'),
    ParamSpec('sample_rate', 0.0, 'Nominal input rate for the filter design; 0 = measured from the first 21 '
              'samples.', low=0.0, unit='Hz'),
    # --- estimation ---
    ParamSpec('profile_mode', 'auto', "'dynamic': F = m a + b v + k x + c per bin; 'quasi_static': a force "
              'curve F = k x + c per bin (k, force offset, hysteresis width with sigma; m and b not '
              "identifiable), batch (impedance-profile) only; 'auto': impedance-profile uses quasi_static "
              'when the dynamic fit separates mass from stiffness in no bin (slow motion), the online node '
              'the dynamic model.', choices=('auto', 'dynamic', 'quasi_static')),
    ParamSpec('forgetting_factor', 0.999975, 'RLS forgetting factor per sample of a bin, lambda = 1 - 1/(f_s '
              'T_mem): 0.999975 is 10 s of memory at 4 kHz. 1 = no forgetting.', low=0.0, low_open=True,
              high=1.0),
    ParamSpec('initial_covariance', 1e5,
              'P0 = alpha I of every bin in scaled units (1 m/s^2, 1 cm/s, 1 mm, 1 N).',
              low=0.0, low_open=True),
    ParamSpec('min_velocity', 0.005, 'Velocity deadband: samples with |v| <= this are not used (friction is '
              'undefined at turn-around).', low=0.0, unit='m/s'),
    ParamSpec('reversal_holdoff', 0.0, 'Samples this long after a reversal of v are not used (optional: the '
              'friction transient column already models the filtered friction step of a reversal); '
              '0 = off.',
              low=0.0, high=1.0, unit='s'),
    ParamSpec('min_samples', 200, 'Effective samples a bin needs before its estimate is valid.', low=5,
              high=100000000),
    ParamSpec('min_unique_fraction', 0.01, 'A regressor whose part not explained by the others is below this '
              'share of its variance carries no information of its own: a single-tone excitation makes a '
              'proportional to x, so m and k are reported as not separable (NaN).', low=0.0, high=1.0),
    ParamSpec('max_condition', 1e6, 'Column-normalised condition number above which a bin is singular.',
              low=1.0),
    ParamSpec('publish_rate', 5.0, 'Profile update and publishing rate (timer on the node clock). The '
              'samples are fitted in blocks of 1 / publish_rate of data time (fixed boundaries of the data '
              'clock), so the profile at a data stamp does not depend on when the timer fired.', low=0.1,
              high=100.0, unit='Hz'),
    ParamSpec('save_path', '', 'File ~/save writes the current profile to (YAML, '
              'contact_estimation.impedance.store.load_profile reads it back for playback); empty = '
              '$ROS_HOME/impedance_profile.yaml (default ~/.ros).'),
    ParamSpec('frame_id', '', 'frame_id of the published profile; empty = the wrench frame, or joint_name.'),
]
