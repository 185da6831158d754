"""``contact-dynamics simulate rover-approach``: a rover driving at constant speed towards an obstacle, written
as a rosbag2 bag (sensor_msgs/JointState, nav_msgs/Odometry, contact_dynamics/ObstacleHypothesis) with its
ground truth (T_c free / rigid / ground mode at the bag's state, time of contact) in custom_data and truth.yaml.

The rover rolls on flat ground in its reference posture (every wheel on the ground, passive joints solved),
base at ``speed`` along +x of odom, wheels rolling; an optional ``--perturb`` adds a velocity in
range(M⁻¹Γᵀ) (it violates the mechanism constraints: the indicator removes it and reports its energy).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from ..impact.indicator import evaluate
from ..inputs import load_model


def approach_state(model, speed: float, posture: dict | None = None):
    """(q, q̇) of the rover rolling on flat ground in ``posture`` (passive joints and base pose solved)."""
    from ..posture.evaluate import Candidate, Obstacle, PostureEvaluator
    ev = PostureEvaluator(model, ground_mode='free', stability_margin=-1e9)
    res = ev.evaluate({}, [Candidate(posture or {}, speed)], Obstacle(np.pi / 2, model.wheel_names[:1]))
    q = ev.configuration(res, 0)
    return q, model.rolling_velocity(q, speed)


def constraint_perturbation(model, q, scale: float) -> np.ndarray:
    """δq̇ = M⁻¹ Γᵀ λ (a purely constraint-violating direction in the M-metric), λ = scale·1."""
    G = model.mech_rows()
    if G.shape[0] == 0:
        return np.zeros(model.nv)
    return np.linalg.solve(model.mass_matrix(q), G.T @ np.full(G.shape[0], scale))


def write_approach_bag(path, model_yaml: str = 'rover_pr3d_roles.yaml', speed: float = 0.07, beta_deg: float = 90.0,
                       distance: float = 0.3, rate: float = 50.0, duration: float = 3.0, perturb: float = 0.0,
                       ground_mode: str = 'both', overwrite: bool = True, contact_wheels: list | None = None,
                       wheel_contact: str = 'domed') -> dict:
    """Write the approach bag and its truth.yaml; ``contact_wheels`` (default: the role map's default) are written
    into every hypothesis and used for the truth; ``wheel_contact`` is the wheel model of the truth."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec
    model = load_model({'model_yaml': model_yaml, 'urdf_path': '', 'wheel_contact': wheel_contact})
    q, v = approach_state(model, speed)
    v_meas = v + constraint_perturbation(model, q, perturb)
    beta = np.deg2rad(beta_deg)
    wheels = list(contact_wheels or model.roles.contact_wheels_default or model.wheel_names[:2])
    ind = evaluate(model, q, v_meas, beta, wheels, ground_mode)
    truth = {'model': model.roles.model_name, 'beta_deg': beta_deg, 'speed': speed, 'contact_wheels': wheels,
             't_c_free': float(ind.free.t_c), 't_c_rigid': float(ind.rigid.t_c), 't_c': float(ind.primary.t_c),
             'ground_active': [w for w, a in zip(model.wheel_names, ind.ground_active) if a],
             'constraint_residual_energy': float(ind.residual_energy), 'time_of_contact': distance / speed,
             'start_distance': distance}
    names = model.joint_names
    jp = model.joint_positions(q)
    n = int(round(duration * rate))
    t0 = 1_000_000_000
    with BagWriter(path, custom_data={'ground_truth': truth}, overwrite=overwrite) as bag:
        for k in range(n):
            t_ns = t0 + int(round(k * 1e9 / rate))
            stamp = dict(zip(('sec', 'nanosec'), ns_to_sec_nanosec(t_ns)))
            x = speed * k / rate
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': stamp, 'frame_id': ''}, 'name': names,
                       'position': [jp[j] for j in names], 'velocity': [float(v_meas[model.idx_v[j]]) for j in names],
                       'effort': []}, t_ns)
            bag.write('/odom', 'nav_msgs/msg/Odometry',
                      {'header': {'stamp': stamp, 'frame_id': 'odom'}, 'child_frame_id': 'base_link',
                       'pose': {'pose': {'position': {'x': float(q[0] + x), 'y': float(q[1]), 'z': float(q[2])},
                                         'orientation': {'x': float(q[3]), 'y': float(q[4]), 'z': float(q[5]),
                                                         'w': float(q[6])}}},
                       'twist': {'twist': {'linear': dict(zip('xyz', map(float, v_meas[0:3]))),
                                           'angular': dict(zip('xyz', map(float, v_meas[3:6])))}}}, t_ns)
            if k % max(1, int(rate / 2)) == 0:
                obstacle = {'header': {'stamp': stamp, 'frame_id': 'odom'}, 'beta_rad': float(beta),
                            'distance_m': float(max(distance - x, 1e-6)), 'contact_wheels': wheels}
                for topic in ('/impact_indicator/obstacle', '/posture_evaluator/obstacle'):
                    bag.write(topic, 'contact_dynamics/msg/ObstacleHypothesis', obstacle, t_ns)
    with open(Path(path) / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(truth, f, sort_keys=False)
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics simulate rover-approach',
                                 description='a rover approaching an obstacle at constant speed, with the truth')
    ap.add_argument('--out', required=True)
    ap.add_argument('--model-yaml', default='rover_pr3d_roles.yaml')
    ap.add_argument('--speed', type=float, default=0.07)
    ap.add_argument('--beta-deg', type=float, default=90.0)
    ap.add_argument('--distance', type=float, default=0.3)
    ap.add_argument('--rate', type=float, default=50.0)
    ap.add_argument('--duration', type=float, default=3.0)
    ap.add_argument('--perturb', type=float, default=0.0, help='constraint-violating velocity scale (M⁻¹Γᵀλ)')
    ap.add_argument('--contact-wheels', nargs='+', default=None,
                    help="wheels named in the obstacle hypotheses (default: the role map's contact_wheels_default)")
    ap.add_argument('--wheel-contact', choices=('domed', 'disk'), default='domed', help='wheel model of the truth')
    a = ap.parse_args(argv)
    truth = write_approach_bag(a.out, a.model_yaml, a.speed, a.beta_deg, a.distance, a.rate, a.duration, a.perturb,
                               contact_wheels=a.contact_wheels, wheel_contact=a.wheel_contact)
    print(f"wrote {a.out}: T_c free {truth['t_c_free'] * 1e3:.4f} mJ, rigid {truth['t_c_rigid'] * 1e3:.4f} mJ")
    return 0
