"""pkm_feedforward: actuator forces of the identified hexapod model along a desired strut trajectory.

``model`` (parameters for the feed-forward, F = Y(q, qd, qdd) theta and its sigma band, sampling of a
JointTrajectory), ``config`` (ParamSpecs), ``node`` (ROS glue). The model is pkm_identification.dynamics'
regressor; nothing of it is rewritten here.
"""
