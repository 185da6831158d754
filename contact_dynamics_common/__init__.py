"""contact_dynamics_common: the one home of what the three packages share: parameters, ring buffers,
time-stamp hygiene, signal conditioning, message conversion, rosbag2 MCAP I/O, bag playback, offline
replay, reports, the trust checks every estimator's verdict uses (``trust``), the ROS node base and the
``contact-dynamics`` command line."""
