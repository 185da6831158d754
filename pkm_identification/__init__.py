"""pkm_identification: online identification of inertia and friction of parallel kinematic machines
(Stewart-Gough hexapods) with an unscented Kalman filter (spec ../shared/specs/oh_pkm_ukf.md).

Not implemented yet: its issue comes after the Foundation; it will reuse contact_dynamics_common (node
base, bag replay) and publish contact_dynamics/ParameterEstimate.
"""
