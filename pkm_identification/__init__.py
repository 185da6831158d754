"""pkm_identification: online identification of the inertia and strut friction of parallel kinematic machines
(Stewart-Gough hexapods) with a parameter unscented Kalman filter (spec ../shared/specs/oh_pkm_ukf.md, Oh 2003).

ROS-free modules: geometry (machine YAML), kinematics, dynamics (13-body regressor, energy model, forward
dynamics), ukf, ls, identifiability, trajectories, records, estimation, excitation; the node pkm_identifier
(node.py) and its offline twin for run-bag (offline.py) share pipeline.py; report.py and simulate.py are the
`contact-dynamics pkm-identify` and `simulate pkm` commands.
"""
