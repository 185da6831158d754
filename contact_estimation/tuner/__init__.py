"""impedance_tuner: trusted contact estimates retune a ros2_controllers admittance_controller live.

Modules: ``admittance_params`` (the controller's parameter names, types, sizes and bounds, and the check
every request passes before it is sent), ``rule`` (the gain rule: admittance mass and damping ratio for a
target closed-loop bandwidth and damping ratio against the estimated environment), ``scheduler`` (the safety
layer: trust gate, bounds, slew limit, hysteresis, hold-last-good, revert on loss), ``config`` (ParamSpecs),
``node`` (ROS glue), ``offline`` (run-bag: the gain schedule it would have applied).
"""
