"""Parameters of impedance_tuner: one list used by the ROS node, by run-bag and by the docs."""
from __future__ import annotations

from contact_dynamics_common.ros.params import ParamSpec

from .admittance_params import AXES

NODE_NAME = 'impedance_tuner'


def _pair(v) -> str | None:
    return None if v[0] <= v[1] else 'must be [low, high] with low <= high'


PARAMS: list[ParamSpec] = [
    ParamSpec('autostart', True, 'Configure and activate the (lifecycle) node at start; false: wait for a '
              'lifecycle manager (~/change_state).'),
    ParamSpec('estimate_topic', 'contact_estimator/estimate',
              'contact_dynamics/ContactEstimate input (the estimator\'s trusted estimate).'),
    ParamSpec('estimate_frame', '', "The contact frame the estimates must name (header.frame_id); another "
              "frame counts as an untrusted estimate ('': any)."),
    ParamSpec('controller_name', 'admittance_controller', 'The admittance_controller node whose '
              'parameters are set (its <name>/set_parameters and <name>/get_parameters services).',
              check=lambda v: None if v.strip() else 'must name a node'),
    ParamSpec('axis', 'z', 'The contact axis of the controller\'s control frame that the estimate describes '
              '(its frame_id\'s normal); only this element of the six-element arrays is changed.',
              choices=AXES),
    ParamSpec('enabled', True, 'Apply gains; false: observe and publish what it would do but set nothing '
              '(also ~/enable, std_srvs/SetBool).', dynamic=True),
    ParamSpec('dry_run', False, 'Never call the controller: publish on ~/gains what would be set.',
              dynamic=True),
    ParamSpec('publish_rate', 10.0, 'Decision rate (ticks of the scheduler).', low=0.1, high=1000.0,
              unit='Hz'),
    # --- rule ---
    ParamSpec('bandwidth_hz', 2.0, 'Target closed-loop natural frequency f_c of the admittance against the '
              'environment: M = (K + k_e) / (2 pi f_c)^2.', low=0.0, low_open=True, high=1000.0, unit='Hz'),
    ParamSpec('target_damping_ratio', 1.0, 'Target closed-loop damping ratio zeta_c of the coupled axis.',
              low=0.0, low_open=True, high=10.0),
    ParamSpec('admittance_stiffness', 200.0, 'Admittance stiffness K of the contact axis (> 0: the '
              'controller\'s damping is 2 zeta sqrt(M K)).', low=0.0, low_open=True, high=1e8, unit='N/m'),
    ParamSpec('robot_apparent_mass', 0.0, 'Robot apparent mass m_r along the axis; the admittance mass is '
              'never below it (0: not configured).', low=0.0, high=1e6, unit='kg'),
    # --- bounds (inside the controller's own: mass [1e-4, 1e6], stiffness [0, 1e8]) ---
    ParamSpec('mass_bounds', [0.5, 200.0], 'Bounds of the admittance mass set on the axis.', length=2,
              low=1e-4, high=1e6, unit='kg', check=_pair),
    ParamSpec('damping_ratio_bounds', [0.3, 20.0], 'Bounds of the controller damping ratio set on the axis.',
              length=2, low=0.0, high=1000.0, check=_pair),
    ParamSpec('stiffness_bounds', [1.0, 10000.0], 'Bounds of the admittance stiffness set on the axis.',
              length=2, low=0.0, high=1e8, unit='N/m', check=_pair),
    # --- safety ---
    ParamSpec('safe_mass', 10.0, 'Safe admittance mass, set when the estimate is lost.', low=1e-4, high=1e6,
              unit='kg'),
    ParamSpec('safe_damping_ratio', 2.0, 'Safe controller damping ratio, set when the estimate is lost.',
              low=0.0, high=1000.0),
    ParamSpec('safe_stiffness', 200.0, 'Safe admittance stiffness, set when the estimate is lost.', low=0.0,
              high=1e8, unit='N/m'),
    ParamSpec('slew_rate', 0.5, 'Largest relative change of a gain per second (|dg/dt| <= rate |g|).',
              low=0.0, low_open=True, high=100.0, unit='1/s'),
    ParamSpec('hysteresis', 0.05, 'A move starts only when a target gain differs from the applied one by '
              'more than this fraction.', low=0.0, high=1.0),
    ParamSpec('loss_timeout', 1.0, 'No estimate for this long: revert to the safe gains.', low=0.0,
              low_open=True, unit='s'),
    ParamSpec('invalid_timeout', 5.0, 'Only untrusted estimates for this long: revert to the safe gains '
              '(0: hold the last good gains indefinitely).', low=0.0, unit='s'),
    ParamSpec('resync_period', 1.0, 'Every this long the controller\'s gains are read back; a value '
              'changed by someone else becomes the start of the slew limit (counted resynced).', low=0.0,
              low_open=True,
              unit='s'),
    ParamSpec('service_timeout', 1.0, 'Time allowed to a controller service call before it counts as failed.',
              low=0.0, low_open=True, unit='s'),
    # --- controller arrays where the controller cannot be read (run-bag, dry run without a controller) ---
    ParamSpec('offline_mass', [10.0, 10.0, 10.0, 10.0, 10.0, 10.0], 'admittance.mass assumed for the other '
              'axes when the controller is not read (run-bag, dry run without a controller).', length=6,
              low=1e-4, high=1e6, unit='kg'),
    ParamSpec('offline_damping_ratio', [2.0, 2.0, 2.0, 2.0, 2.0, 2.0], 'admittance.damping_ratio assumed for '
              'the other axes when the controller is not read.', length=6, low=0.0, high=1000.0),
    ParamSpec('offline_stiffness', [200.0, 200.0, 200.0, 50.0, 50.0, 50.0], 'admittance.stiffness assumed '
              'for the other axes when the controller is not read.', length=6, low=0.0, high=1e8, unit='N/m'),
]
