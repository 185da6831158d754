"""Parameters of the contact estimator: one list used by the ROS node, by ``run-bag`` and by the docs."""
from __future__ import annotations

import math

from contact_dynamics_common.params import ParamSpec

NODE_NAME = 'contact_estimator'
ALGORITHMS_ONLINE = ('rls', 'ils', 'ia', 'kalman', 'gls')


def _unit_vector(v) -> str | None:
    n = math.sqrt(sum(c * c for c in v))
    return None if abs(n - 1.0) < 1e-6 else f'must be a unit vector (norm {n:.6g})'


def _algorithms(v) -> str | None:
    if not v:
        return 'name at least one algorithm'
    if len(set(v)) != len(v):
        return 'names an algorithm twice'
    return None


PARAMS: list[ParamSpec] = [
    # --- node ---
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    # --- inputs ---
    ParamSpec('wrench_topic', 'wrench', 'geometry_msgs/WrenchStamped input (compensated: tared, gravity removed).'),
    ParamSpec('displacement_source', 'joint_state',
              'Where the contact deformation comes from: one joint of sensor_msgs/JointState (a 1-DOF '
              'device) or a geometry_msgs/PoseStamped end-effector pose projected on contact_normal.',
              choices=('joint_state', 'pose')),
    ParamSpec('joint_states_topic', 'joint_states', 'sensor_msgs/JointState input (displacement_source=joint_state).'),
    ParamSpec('joint_name', 'joint1', 'Joint whose position measures the deformation (displacement_source=joint_state).',
              check=lambda v: None if v.strip() else 'must name a joint'),
    ParamSpec('joint_sign', 1.0, '+1 if increasing joint position increases penetration, -1 otherwise.',
              check=lambda v: None if v in (1.0, -1.0) else 'must be +1 or -1'),
    ParamSpec('pose_topic', 'pose', 'geometry_msgs/PoseStamped input (displacement_source=pose).'),
    ParamSpec('contact_normal', [0.0, 0.0, 1.0],
              'Outward normal of the environment in the pose frame (unit vector); deformation '
              'x = datum - p . n (REP-103 frame of the pose).', length=3, check=_unit_vector),
    ParamSpec('force_direction', [0.0, 0.0, 1.0],
              'Unit vector in the wrench frame such that F_n = f . force_direction is the compressive '
              'contact force (> 0 in contact).', length=3, check=_unit_vector),
    ParamSpec('contact_type', 'prismatic',
              "'prismatic': the deformation x is a length (m) and F_n a force (N): k in N/m, b in N*s/m; "
              "'revolute': x is a joint angle (rad, displacement_source joint_state) and F_n a torque (N*m, "
              'force_source wrench_torque or joint_effort): k in N*m/rad, b in N*m*s/rad, m in kg*m^2. Every '
              'force/length parameter below is then read in N*m and rad.', choices=('prismatic', 'revolute')),
    ParamSpec('force_source', 'wrench_force',
              "F_n from: 'wrench_force' (f . force_direction), 'wrench_torque' (tau . torque_axis of the "
              "same WrenchStamped, revolute) or 'joint_effort' (joint_sign * effort of joint_name in the "
              'JointState that gives the position).', choices=('wrench_force', 'wrench_torque', 'joint_effort')),
    ParamSpec('torque_axis', [0.0, 0.0, 1.0],
              'Unit vector in the wrench frame such that T_n = tau . torque_axis is the torque loading the '
              'contact (> 0 in contact); force_source wrench_torque only.', length=3, check=_unit_vector),
    ParamSpec('force_bias', [0.0, 0.0, 0.0], 'Force offset subtracted from the wrench before projection (wrench '
              'frame; a torque in N*m with wrench_torque, [effort bias, 0, 0] with joint_effort); ~/tare '
              'sets it at run time from the latest out-of-contact samples.', length=3, unit='N'),
    ParamSpec('tare_samples', 100, 'Latest wrench samples ~/tare averages.', low=1, high=100000),
    ParamSpec('datum_mode', 'fixed',
              "'fixed': the contact datum is the 'datum' parameter; 'onset': the position at the first "
              'sample whose force reaches onset_force (re-armed when contact is lost).', choices=('fixed', 'onset')),
    ParamSpec('datum', 0.0, 'Joint position (rad or m) or p . n (m) at which contact begins (datum_mode=fixed).'),
    ParamSpec('onset_force', 2.0, 'Force that marks contact onset (datum_mode=onset).', low=0.0, low_open=True,
              unit='N'),
    ParamSpec('contact_force_threshold', 1.0,
              'Samples with F_n below this are out of contact and not used for estimation.', low=0.0, unit='N'),
    ParamSpec('differentiator_half_window', 0.005,
              'Half width of the centred local-linear-fit differentiator giving the deformation rate (and '
              'acceleration); adds this much latency. Velocity noise ~ sigma_x*sqrt(3/(M(M+1)(2M+1)))/dt.',
              low=0.0, low_open=True, high=1.0, unit='s'),
    ParamSpec('derivative_filter', 'local_fit',
              "How the regressors are built: 'local_fit' (F and x as measured, xdot/xddot from a local polynomial "
              "fit over +-differentiator_half_window: attenuated at the top of the band, so b and m are "
              "biased there; sigma covers it) or 'consistent_kernel' (F, x and its derivatives through one Gaussian "
              "kernel and its exact derivatives: F_f = k x_f + b xdot_f + m xddot_f holds exactly, no "
              "differentiator bias; its window is kernel_half_window).",
              choices=('local_fit', 'consistent_kernel')),
    ParamSpec('kernel_half_window', 0.02,
              "Half width of the consistent kernel's window (derivative_filter: consistent_kernel; at least 5 "
              'samples and differentiator_half_window): a Gaussian of width a fifth of it, cut-off 0.94 / '
              'kernel_half_window Hz; adds this much latency. Wider: less noise in the rate and acceleration '
              'regressors (their errors-in-variables bias), more delay.', low=0.0, low_open=True, high=1.0, unit='s'),
    ParamSpec('sensor_timeout', 0.5, 'An input silent for longer is reported stale in /diagnostics.',
              low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_threshold', 1.0,
              'A stamp more than this before the last accepted one departs from the stream: dropped as '
              'stamp_outlier, unless the next samples continue from it (a looped bag, a restarted clock), '
              'then it resets the estimators there; smaller steps back are dropped as out_of_order.', low=0.0, low_open=True, unit='s'),
    ParamSpec('input_queue_size', 1000, 'Depth of the sensor-data QoS input queues (1000 = 1 s at 1 kHz).', low=1,
              high=100000),
    ParamSpec('buffer_capacity', 20000, 'Samples buffered per input between two estimation updates; when full, the '
              'oldest unprocessed samples are overwritten (counted as dropped.overflow in /diagnostics). '
              'Also bounds the lag of the estimate under overload (buffer_capacity / input rate).',
              low=100, high=10000000),
    ParamSpec('max_samples_per_update', 5000, 'Live node: at most this many samples of each input are processed '
              'per estimation update, the rest in the next ones (a bounded update cost, about 1-3 us per sample; '
              'estimates are the same once the backlog is worked off). run-bag processes everything.',
              low=10, high=10000000),
    # --- estimation ---
    ParamSpec('model', 'kelvin_voigt', "Contact model: 'kelvin_voigt' F = k x + b xdot, or "
              "'kelvin_voigt_mass' F = k x + b xdot + m xddot (rls only).",
              choices=('kelvin_voigt', 'kelvin_voigt_mass')),
    ParamSpec('algorithms', ['rls', 'gls'], 'Estimators run side by side; one estimate topic each. The first '
              'is also published on ~/estimate. rls: recursive least squares with forgetting; ils: the same '
              'without the mass term; ia: indirect adaptive; kalman: Kalman filter with the parameters as '
              'states; gls: global least squares over a sliding window.', choices=ALGORITHMS_ONLINE,
              check=_algorithms),
    ParamSpec('publish_rate', 20.0, 'Estimation and publishing rate (timer on the node clock).', low=0.1,
              high=1000.0, unit='Hz'),
    ParamSpec('frame_id', '', 'frame_id of the published estimates; empty = the wrench frame.'),
    ParamSpec('robot_apparent_mass', 0.0, "Robot's apparent mass along the normal for the damping ratio "
              'zeta = b / (2 sqrt(k m)); 0 = not configured.', low=0.0, unit='kg', dynamic=True),
    ParamSpec('initial_stiffness', 1000.0, 'Initial stiffness guess of the recursive estimators.', low=0.0,
              unit='N/m'),
    ParamSpec('initial_damping', 10.0, 'Initial damping guess of the recursive estimators.', unit='N*s/m'),
    ParamSpec('initial_mass', 0.0, 'Initial environment-mass guess (kelvin_voigt_mass).', unit='kg'),
    ParamSpec('initial_covariance', 1e5, 'P0 = a I of the recursive estimators, in scaled units '
              '(regressors divided by 1 mm, 1 cm/s, 1 m/s^2).', low=0.0, low_open=True),
    ParamSpec('nonnegative', False, 'Report stiffness, damping and mass projected onto >= 0 (bound '
              'activity is flagged in extras), as the thesis did for RLS/ILS/GLS.'),
    ParamSpec('min_samples', 50, 'Samples an estimator needs before its estimate can be valid.', low=1,
              high=10000000),
    ParamSpec('max_condition', 1e8, 'Largest acceptable condition number of the (correlation-normalised) '
              'information matrix.', low=1.0),
    ParamSpec('min_excitation_velocity', 1e-3, 'RMS deformation rate (unique part) below which damping is '
              'reported as not identifiable.', low=0.0, unit='m/s'),
    ParamSpec('rls.forgetting_factor', 0.998, 'RLS/ILS forgetting factor lambda per sample; memory '
              '~1/(1-lambda) samples (0.998 at 1 kHz = 0.5 s).', low=0.0, low_open=True, high=1.0),
    ParamSpec('rls.max_covariance', 1e8, 'Bound on the RLS covariance (scaled units): no wind-up without '
              'excitation.', low=0.0, low_open=True),
    ParamSpec('gls.window', 10.0, 'Sliding window of the online global least squares.', low=0.0, low_open=True,
              unit='s'),
    ParamSpec('kalman.force_noise', 0.5, 'Kalman measurement noise sigma of the normal force.', low=0.0,
              low_open=True, unit='N'),
    ParamSpec('kalman.stiffness_drift', 0.0, 'Kalman random walk of the stiffness, std per sqrt(s) (0 = constant '
              'parameters, as in the thesis).', low=0.0, unit='N/m/sqrt(s)'),
    ParamSpec('kalman.damping_drift', 0.0, 'Kalman random walk of the damping, std per sqrt(s).', low=0.0,
              unit='N*s/m/sqrt(s)'),
    ParamSpec('ia.gain', [2e9, 2.5e3], 'Indirect adaptive gain Gamma = diag(stiffness, damping) (thesis values).',
              length=2, low=0.0, low_open=True),
    ParamSpec('ia.normalised', True, 'Normalise the indirect adaptive step by 1 + dt phi^T Gamma phi, stable for '
              'any gain; false is the thesis law, which diverges when dt Gamma x^2 > 2 (soft, fast contacts).'),
]
