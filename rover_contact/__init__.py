"""rover_contact: effective kinetic energy of impact and effective mass of a rover, and ranking of
candidate postures before it meets an obstacle (spec ../shared/specs/macmahon_rover.md).

Not implemented yet: its issue comes after the Foundation; it will reuse contact_dynamics_common (node
base, bag replay, Odometry conversion) and publish contact_dynamics/ParameterEstimate.
"""
