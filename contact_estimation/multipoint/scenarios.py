"""Multi-point scenarios of agar_contact.md §6.2 with their ground truth, and their bags.

- ``gravity_drop`` (M2/M3): the ACU-like surrogate falls from 5 mm (0.2 mm / 0.1 mm off centre, so the
  V-guides have something to centre) into the receptacle, 0.4 s, 1 kHz output. M2: the estimator's own
  laws (kv + sliding); M3: CDT-like mismatch, F_n = max(0, kδ + bδ̇) with F_t = μ F_n (``coulomb``) or a
  regularised Coulomb law.
- ``slow_insertion`` (M5): a compliant fixture lowers the ACU at 2 mm/s into the receptacle and presses it,
  with a realistic k = 1.7e6 N/m, then the record is corrupted as a real one is: pose bias and noise 0.2 mm,
  force noise 0.5 N, receptacle really 0.5 mm / 0.2° off its modelled pose.

Bag topics: ``/payload/odom`` (nav_msgs/Odometry, frame ``world``, child ``payload``, twist in the child
frame as nav_msgs specifies), ``/payload/pose`` (geometry_msgs/PoseStamped, frame ``world``) and
``/payload/wrench`` (geometry_msgs/WrenchStamped, frame ``payload``: the contact wrench on the payload, in
payload axes, about the payload origin, as a wrist F/T sensor compensated for gravity and inertia gives it).
``BAG/geometry.yaml`` is the geometry the estimator should use (nominal), ``BAG/truth.yaml`` the truth.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from contact_estimation.geometry.body import body_from_spec, geometry_document
from contact_estimation.geometry.rotations import quat_to_matrix

from .acu import MASS, environment_spec, payload_spec
from .simulate import ContactLaw, Fixture, RigidBodySim, Trajectory

EPOCH_NS = 1_760_000_000 * 10**9
TRUTH = {'stiffness': 1e5, 'damping': 38.37, 'friction': 0.1}      # §3.8 (b = 2·0.02·sqrt(1e5·9.2))


@dataclass
class Record:
    """A simulated record: the trajectory as measured, the truth and the geometry the estimator is given."""
    trajectory: Trajectory          # as measured (noise/bias applied)
    truth: dict
    geometry_yaml: str
    exact: Trajectory | None = None  # noise-free


def drop_initial_pose(height: float = 5e-3):
    """5 mm above the seat, 0.2 mm / -0.1 mm off centre (the V-guides centre it), level."""
    return np.array([0.2e-3, -0.1e-3, height]), np.array([0.0, 0.0, 0.0, 1.0])


def gravity_drop(model: str = 'M2', duration: float = 0.4, dt: float = 1e-4, rate: float = 1000.0,
                 stiffness: float = TRUTH['stiffness'], damping: float = TRUTH['damping'],
                 friction: float = TRUTH['friction'], friction_law: str | None = None) -> Record:
    """M2 (model-consistent) or M3 (CDT-like mismatch) gravity drop of the ACU surrogate."""
    if model == 'M2':
        law = ContactLaw(stiffness, damping, friction, normal='kv', friction_law=friction_law or 'sliding')
    elif model == 'M3':
        law = ContactLaw(stiffness, damping, friction, normal='kv_clipped', friction_law=friction_law or 'coulomb')
    else:
        raise ValueError("model must be 'M2' or 'M3'")
    ps, es = payload_spec(), environment_spec()
    sim = RigidBodySim(body_from_spec(ps, 'acu'), body_from_spec(es, 'receptacle'), law)
    p0, q0 = drop_initial_pose()
    tr = sim.run(p0, q0, duration=duration, dt=dt, rate=rate)
    truth = {'scenario': f'gravity_drop_{model}', 'stiffness': stiffness, 'damping': damping, 'friction': friction,
             'normal_law': law.normal, 'friction_law': law.friction_law, 'mass': MASS, 'dt': dt, 'rate': rate}
    return Record(tr, truth, geometry_document(ps, es), tr)


def slow_insertion(duration: float = 1.0, dt: float = 1e-4, rate: float = 1000.0, stiffness: float = 1.7e6,
                   damping: float | None = None, friction: float = 0.1, start_height: float = 1e-3,
                   speed: float = 2e-3, press: float = 100.0, sigma_position: float = 0.2e-3,
                   position_bias=(0.2e-3, 0.0, 0.0), sigma_force: float = 0.5, sigma_velocity: float = 2e-3,
                   receptacle_offset=(0.5e-3, 0.0, 0.0), receptacle_rotation_deg: float = 0.2,
                   seed: int = 5) -> Record:
    """M5: scripted 2 mm/s insertion with a stiff contact and realistic sensing errors (see module doc)."""
    if damping is None:
        damping = 2 * 0.02 * np.sqrt(stiffness * MASS)
    ps, es = payload_spec(), environment_spec()
    env_true = dict(es, position=list(map(float, receptacle_offset)), rpy=[0.0, 0.0, np.radians(receptacle_rotation_deg)])
    law = ContactLaw(stiffness, damping, friction, normal='kv_clipped', friction_law='regularised')
    k_fix = 2e4
    z_end = -(MASS * 9.81 + press) / k_fix            # set-point low enough to press with `press` N

    def setpoint(t):
        return np.array([0.0, 0.0, max(start_height - speed * t, z_end)])

    fixture = Fixture(setpoint, stiffness=k_fix, damping=2 * 0.7 * np.sqrt(k_fix * MASS))
    sim = RigidBodySim(body_from_spec(ps, 'acu'), body_from_spec(env_true, 'receptacle'), law, fixture=fixture)
    p0 = np.array([0.0, 0.0, start_height - MASS * 9.81 / k_fix])
    exact = sim.run(p0, [0, 0, 0, 1.0], duration=duration, dt=dt, rate=rate)
    rng = np.random.default_rng(seed)
    n = len(exact.t)
    meas = Trajectory(exact.t, exact.p + np.asarray(position_bias) + rng.normal(0, sigma_position, (n, 3)),
                      exact.q, exact.v + rng.normal(0, sigma_velocity, (n, 3)), exact.w,
                      exact.force + rng.normal(0, sigma_force, (n, 3)), exact.moment + rng.normal(0, sigma_force * 0.1, (n, 3)),
                      exact.count)
    truth = {'scenario': 'slow_insertion_M5', 'stiffness': stiffness, 'damping': float(damping), 'friction': friction,
             'normal_law': law.normal, 'friction_law': law.friction_law, 'sigma_position': sigma_position,
             'position_bias': list(map(float, position_bias)), 'sigma_force': sigma_force,
             'receptacle_offset': list(map(float, receptacle_offset)),
             'receptacle_rotation_deg': receptacle_rotation_deg}
    return Record(meas, truth, geometry_document(ps, es), exact)


def write_bag(record: Record, path: str | Path, overwrite: bool = False, latency: float = 1e-4) -> Path:
    """/payload/odom, /payload/pose and /payload/wrench of a record; geometry.yaml and truth.yaml beside."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec

    tr = record.trajectory
    R = quat_to_matrix(tr.q)
    v_body = np.einsum('nji,nj->ni', R, tr.v)
    w_body = np.einsum('nji,nj->ni', R, tr.w)
    f_body = np.einsum('nji,nj->ni', R, tr.force)
    m_body = np.einsum('nji,nj->ni', R, tr.moment)
    stamps = EPOCH_NS + np.round(tr.t * 1e9).astype(np.int64)
    lat = int(latency * 1e9)
    xyz = lambda a: {'x': float(a[0]), 'y': float(a[1]), 'z': float(a[2])}
    zero36 = [0.0] * 36
    with BagWriter(path, custom_data={'ground_truth': record.truth}, overwrite=overwrite) as bag:
        bag.add_topic('/payload/odom', 'nav_msgs/msg/Odometry', qos='sensor_data')
        bag.add_topic('/payload/pose', 'geometry_msgs/msg/PoseStamped', qos='sensor_data')
        bag.add_topic('/payload/wrench', 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        for i in range(len(stamps)):
            sec, nsec = ns_to_sec_nanosec(int(stamps[i]))
            stamp = {'sec': sec, 'nanosec': nsec}
            pose = {'position': xyz(tr.p[i]), 'orientation': {'x': float(tr.q[i, 0]), 'y': float(tr.q[i, 1]),
                                                               'z': float(tr.q[i, 2]), 'w': float(tr.q[i, 3])}}
            log = int(stamps[i]) + lat
            bag.write('/payload/odom', 'nav_msgs/msg/Odometry',
                      {'header': {'stamp': stamp, 'frame_id': 'world'}, 'child_frame_id': 'payload',
                       'pose': {'pose': pose, 'covariance': zero36},
                       'twist': {'twist': {'linear': xyz(v_body[i]), 'angular': xyz(w_body[i])},
                                 'covariance': zero36}}, log)
            bag.write('/payload/pose', 'geometry_msgs/msg/PoseStamped',
                      {'header': {'stamp': stamp, 'frame_id': 'world'}, 'pose': pose}, log)
            bag.write('/payload/wrench', 'geometry_msgs/msg/WrenchStamped',
                      {'header': {'stamp': stamp, 'frame_id': 'payload'},
                       'wrench': {'force': xyz(f_body[i]), 'torque': xyz(m_body[i])}}, log)
    path = Path(path)
    (path / 'geometry.yaml').write_text(record.geometry_yaml, encoding='utf-8')
    with open(path / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(record.truth, f, sort_keys=False)
    return path


SCENARIOS = {'M2': lambda a: gravity_drop('M2'), 'M3': lambda a: gravity_drop('M3'),
             'M3-regularised': lambda a: gravity_drop('M3', friction_law='regularised'),
             'M5': lambda a: slow_insertion()}


def main(argv: list[str] | None = None) -> int:
    """contact-dynamics simulate multipoint {M2,M3,M3-regularised,M5} --out BAG"""
    parser = argparse.ArgumentParser(prog='contact-dynamics simulate multipoint',
                                     description='ACU-like multi-point contact scenarios (agar_contact.md §6.2) '
                                     'as bags with geometry.yaml and truth.yaml')
    parser.add_argument('scenario', choices=sorted(SCENARIOS))
    parser.add_argument('--out', required=True)
    parser.add_argument('--overwrite', action='store_true')
    args = parser.parse_args(argv)
    rec = SCENARIOS[args.scenario](args)
    write_bag(rec, args.out, overwrite=args.overwrite)
    print(f'wrote {args.out}: {rec.truth["scenario"]}, {len(rec.trajectory.t)} samples, '
          f'{int(rec.trajectory.count[-1])} contacts at the end')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
