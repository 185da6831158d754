"""Parameters of pkm_identifier: one list used by the ROS node, by ``run-bag`` and by the documented config."""
from __future__ import annotations

from contact_dynamics_common.params import ParamSpec

NODE_NAME = 'pkm_identifier'
ACTIVE_PRESETS = ('inertial', 'friction', 'all')


def _distinct(v) -> str | None:
    return None if len(set(v)) == len(v) and all(s.strip() for s in v) else 'must be 6 distinct non-empty names'


def _nonneg(v) -> str | None:
    return None if all(x >= 0 for x in v) else 'values must be >= 0'


PARAMS: list[ParamSpec] = [
    # --- node ---
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    ParamSpec('machine', 'uf_like', 'Machine description: a name in config/pkm_machines/ (uf_like, hexel_like, '
              'ford_like) or a YAML file path (joints, strut COM distances, gravity, home, CAD inertia). '
              'Architecture-singular layouts are refused.'),
    ParamSpec('frame_id', 'base', 'Frame {W} of the machine (origin at the base centre, z up); header of the outputs.'),
    ParamSpec('platform_frame', 'platform', 'Frame {P} of the platform principal axes at its COM (InertiaStamped).'),
    # --- inputs ---
    ParamSpec('joint_states_topic', 'joint_states', 'sensor_msgs/JointState input: position = strut length '
              'L_i [m], velocity = L_dot_i [m/s] (optional), effort = actuator force F_a,i [N] along the strut.'),
    ParamSpec('joint_names', [f'strut_{i}' for i in range(1, 7)], 'The six strut joints, in the order of the '
              "machine's struts.", length=6, check=_distinct),
    ParamSpec('use_measured_velocity', False, 'Use JointState.velocity as L_dot when present (L_ddot always comes '
              'from the strut positions: differentiating a noisy velocity channel once more drives the estimate '
              'into errors-in-variables divergence). False: L_dot from the local polynomial of L as well.'),
    ParamSpec('derivative_half_window', 3, 'Half width M (samples) of the centred local polynomial fit of L that '
              'gives L_dot and L_ddot on the real stamps (contact_dynamics_common.signal.conditioning.'
              'local_polynomial_weights); adds M samples of latency.', low=1, high=200),
    ParamSpec('derivative_order', 6, 'Degree of that local polynomial (>= 2, < 2 M + 1). Degree 6 over +-3 '
              'samples is exact for polynomials up to degree 6: no differentiator bias on tones up to ~20 Hz at '
              '1 kHz (the +-1 sample quadratic attenuates L_ddot of a 20 Hz tone by 0.13 %).', low=2, high=12),
    ParamSpec('parallel_filter_hz', 25.0, 'Parallel filtering: the built regressor rows Y and the forces F go '
              'through the same Gaussian kernel (-3 dB at this frequency, real stamps, no window across a hole; '
              'contact_dynamics_common.signal.conditioning.kernel_filter), so filtered F = filtered(Y) theta '
              'stays exact while the differentiation noise of L_ddot (quantisation, encoder noise) is removed: '
              'no errors-in-variables attenuation. Adds ~0.94 / cut-off s of delay. 0: off (needed for '
              'state_noise_std.*).', low=0.0, unit='Hz'),
    ParamSpec('input_queue_size', 1000, 'Depth of the sensor-data QoS input queue (1000 = 1 s at 1 kHz).',
              low=1, high=100000),
    ParamSpec('buffer_capacity', 20000, 'JointState samples buffered between two estimation updates.',
              low=100, high=10000000),
    ParamSpec('sensor_timeout', 0.5, 'An input silent for longer is reported stale; a gap this long restarts '
              'the differentiation window.', low=0.0, low_open=True, unit='s'),
    ParamSpec('time_jump_threshold', 1.0,
              'A stamp more than this before the last accepted one departs from the stream: dropped as '
              'stamp_outlier, unless the next samples continue from it (a looped bag, a restarted clock), '
              'then it resets the identification there; smaller steps back are dropped as out_of_order.', low=0.0, low_open=True, unit='s'),
    ParamSpec('min_sin_theta', 0.05, 'Samples with |sin theta| (z-x-z Euler singularity) below this are '
              'rejected.', low=0.0, high=1.0),
    # --- model ---
    ParamSpec('estimate_friction', False, 'Append the 12 strut friction coefficients [fv_i N*s/m, fc_i N] to the '
              '8 base inertial parameters (20 in all).'),
    ParamSpec('friction_model', 'continuous', "Friction inside the +/-2 mm/s band: 'continuous' (fv + fc/band) "
              "L_dot, or 'printed' (fc/band) L_dot as eq. 4.5 (jumps at the band edge).",
              choices=('continuous', 'printed')),
    # --- prior ---
    ParamSpec('prior_scale', 0.8, 'theta_0 = prior_scale x the machine file values (CAD) where theta0 is 0. '
              '0.8 starts 20 % below CAD, so that a parameter the motion identifies visibly moves to its value '
              'and one it does not stays at 0.8 x CAD, flagged not_excited; 1.0 starts at the CAD values.',
              low=0.0, low_open=True),
    ParamSpec('theta0', [0.0] * 8, 'Initial guess of [m_e, m_b, m_p, Ixxp, Iyyp, Izzp, Ix_s, Iz_s] (kg, kg*m^2); '
              '0 = from the machine file x prior_scale.', length=8, check=_nonneg),
    ParamSpec('friction0', [200.0, 15.0] * 6, 'Initial guess of [fv_1, fc_1, ..., fv_6, fc_6] (N*s/m, N).',
              length=12, check=_nonneg),
    ParamSpec('prior_rel_std', 0.5, 'P_0 = diag((prior_rel_std x theta_0)^2).', low=0.0, low_open=True),
    ParamSpec('measurement_std', 0.01, 'R^e = measurement_std^2 I: actuator force noise per strut (R_F of the '
              'errors-in-variables covariance when state_noise_std is set). It sets the UKF gain only (the '
              'published sigma comes from the residuals): 0.01 N keeps the prior pull small (S11 multisine, 4 s: '
              '-0.0007 % on the platform inertias).', low=0.0, low_open=True, unit='N'),
    ParamSpec('state_noise_std.position', [0.0] * 6, 'Noise std of the pose q = [x_c, y_c, z_c, phi, theta, psi] '
              'seen by the estimator; any value > 0 turns on the errors-in-variables weighting: each sample gets '
              'R_k = measurement_std^2 I + G_k diag(sigma^2) G_k^T, G_k = d(Y theta)/d(q, qd, qdd) at theta_0 '
              '(pkm_identification.eiv). All state_noise_std 0: off (scalar R^e).', length=6, low=0.0,
              unit='m (x, y, z), rad (angles)'),
    ParamSpec('state_noise_std.velocity', [0.0] * 6, 'Noise std of the pose rates qd (same weighting).', length=6,
              low=0.0, unit='m/s, rad/s'),
    ParamSpec('state_noise_std.acceleration', [0.0] * 6, 'Noise std of the pose accelerations qdd (same '
              'weighting; include the differentiation noise of L_ddot).', length=6, low=0.0, unit='m/s^2, rad/s^2'),
    # --- UKF ---
    ParamSpec('alpha', 1e-3, 'Scaled unscented transform spread.', low=0.0, low_open=True, high=1.0),
    ParamSpec('beta', 2.0, 'Prior distribution factor (2: Gaussian).', low=0.0),
    ParamSpec('kappa', 0.0, 'Secondary scaling (L + lambda must stay > 0).', low=-100.0, high=100.0),
    ParamSpec('process_noise', 'fixed', "R^r: 'fixed' diag((process_noise_rel theta_0)^2), 'robbins_monro' "
              "(eq. 2.75, a_rm) or 'forgetting' (R^r = (1/forgetting - 1) P).",
              choices=('fixed', 'robbins_monro', 'forgetting')),
    ParamSpec('process_noise_rel', 0.0, "Relative random-walk std per update ('fixed').", low=0.0, high=1.0),
    ParamSpec('a_rm', 1e-4, "Robbins-Monro gain ('robbins_monro').", low=0.0, high=1.0),
    ParamSpec('forgetting', 1.0, "Forgetting factor ('forgetting').", low=0.0, low_open=True, high=1.0),
    ParamSpec('decimation', 1, "Use every n-th sample ('spread').", low=1, high=1000),
    ParamSpec('active_set', 'all', "Parameters updated at start: 'inertial', 'friction' (needs estimate_friction) "
              "or 'all'; ~/set_active_set changes it (staged estimation).", choices=ACTIVE_PRESETS),
    # --- monitoring and output ---
    ParamSpec('converged_rel_std', 0.02, "A parameter is 'identified' when sigma/|theta| falls below this.",
              low=0.0, low_open=True, high=1.0),
    ParamSpec('nis_window', 1000, 'Updates over which the mean NIS is reported (diagnostic; the published sigma '
              'comes from the residuals, not from measurement_std).', low=10, high=1000000),
    ParamSpec('trust_block', 50, 'Samples per block of the honest-sigma statistics (batch-means HAC covariance of '
              'the scores, errors-in-variables signal moment) and per convergence snapshot; counted in used '
              'samples, so the verdict depends on the data only, never on when the timer fired.', low=10,
              high=100000),
    ParamSpec('history_window', 40, 'Convergence snapshots (one every trust_block samples) over which the '
              'convergence (drift, oscillation) is judged.', low=8, high=100000),
    ParamSpec('save_path', 'pkm_estimate.yaml', '~/save writes the estimate (values, sigma, covariance, flags, '
              'machine, model) to this YAML file.'),
    ParamSpec('update_block', 50, 'Samples per processing block: the pipeline (derivatives, kinematics, parallel '
              'filter, UKF) runs on fixed blocks of this many samples counted in the data, and an estimate is '
              'published at every block boundary, so its values at a data stamp never depend on how the '
              'samples fell into timer ticks (live node == run-bag to the last bit); adds up to one block of '
              'latency (50 = 50 ms at 1 kHz).', low=1, high=100000),
    ParamSpec('publish_rate', 20.0, 'Rate of the timer that runs the completed blocks and publishes their '
              'estimates (node clock).', low=0.1, high=1000.0, unit='Hz'),
]
