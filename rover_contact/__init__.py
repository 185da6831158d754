"""rover_contact: effective kinetic energy of impact T_c and effective mass of a rover, and ranking of
candidate postures before it meets an obstacle (MacMahon 2016; spec ../shared/specs/macmahon_rover.md).

Sub-packages: ``models`` (planar two-body and rover models, 3-D rover from any URDF with a joint-role map,
batched kinematics), ``impact`` (T_c, effective mass, projectors, ground activity, the impact_indicator node),
``posture`` (candidate evaluation and ranking, the posture_evaluator node), ``validation`` (contact laws,
impact simulations, rover-approach simulator, rover-sweep). Shared: ``inputs`` (state synchronisation and
validation), ``config`` (common parameters), ``ros_io`` (message conversion).
"""
