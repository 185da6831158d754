"""``contact-dynamics simulate impedance-plant``: the Colton test plant (mass, dashpot, hardening spring)
under closed-loop multisine or sine excitation, written as a rosbag2 bag with its ground truth.

Topics: /joint_states (sensor_msgs/JointState, joint ``slider``: quantised position; effort = measured
force), /wrench (geometry_msgs/WrenchStamped, frame ``impedance_head``: the measured force along +x) and
with --imu /imu (sensor_msgs/Imu: the accelerometer's linear_acceleration.x).
The truth (plant, motion, oracle per-segment fit of the noise-free signals, kink segment) goes into the
bag's custom_data ``ground_truth`` and into ``BAG/truth.yaml``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from .plant import MeasurementModel, plant_dict
from .scenarios import SCENARIOS, Record, simulate

EPOCH_NS = 1_760_000_000 * 10**9


def write_bag(rec: Record, path: str | Path, *, overwrite: bool = False, joint_name: str = 'slider',
              frame_id: str = 'impedance_head', latency: float = 1e-4, wrench: bool = True,
              imu: bool = False) -> Path:
    from contact_dynamics_common.bag import BagWriter
    truth = rec.truth()
    truth['plant'] = plant_dict(rec.plant)
    stamps = EPOCH_NS + np.round(rec.t * 1e9).astype(np.int64)
    lat = int(latency * 1e9)
    with BagWriter(path, custom_data={'ground_truth': truth}, overwrite=overwrite) as bag:
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState', qos='sensor_data')
        if wrench:
            bag.add_topic('/wrench', 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        if imu:
            bag.add_topic('/imu', 'sensor_msgs/msg/Imu', qos='sensor_data')
        zero3 = {'x': 0.0, 'y': 0.0, 'z': 0.0}
        cov9 = [0.0] * 9
        for i in range(len(stamps)):
            sec, nsec = ns_to_sec_nanosec(stamps[i])
            stamp = {'sec': sec, 'nanosec': nsec}
            f = float(rec.F_meas[i])
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': stamp, 'frame_id': ''}, 'name': [joint_name],
                       'position': [float(rec.x_meas[i])], 'velocity': [], 'effort': [f]},
                      int(stamps[i]) + lat)
            if wrench:
                bag.write('/wrench', 'geometry_msgs/msg/WrenchStamped',
                          {'header': {'stamp': stamp, 'frame_id': frame_id},
                           'wrench': {'force': {'x': f, 'y': 0.0, 'z': 0.0},
                                      'torque': {'x': 0.0, 'y': 0.0, 'z': 0.0}}},
                          int(stamps[i]) + lat)
            if imu:
                bag.write('/imu', 'sensor_msgs/msg/Imu',
                          {'header': {'stamp': stamp, 'frame_id': frame_id},
                           'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0},
                           'orientation_covariance': cov9,
                           'angular_velocity': zero3, 'angular_velocity_covariance': cov9,
                           'linear_acceleration': {'x': float(rec.a_meas[i]), 'y': 0.0, 'z': 0.0},
                           'linear_acceleration_covariance': cov9}, int(stamps[i]) + lat)
    with open(Path(path) / 'truth.yaml', 'w', encoding='utf-8') as fh:
        yaml.safe_dump(truth, fh, sort_keys=False)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics simulate impedance-plant', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True, help='bag directory to write')
    ap.add_argument('--scenario', default='S2', choices=sorted(SCENARIOS),
                    help='S1 single 1.5 Hz sine, S2-S5 multisine, S7 b- = 15 kg/s (wahl_colton.md B8)')
    ap.add_argument('--duration', type=float, default=100.0)
    ap.add_argument('--rate', type=float, default=4000.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--open-loop', action='store_true', help='perfect tracking instead of the PID loop')
    ap.add_argument('--quantum', type=float, default=5e-6, help='encoder resolution (m)')
    ap.add_argument('--sigma-force', type=float, default=0.02)
    ap.add_argument('--sigma-accel', type=float, default=0.05)
    ap.add_argument('--no-wrench', action='store_true', help='force only as the joint effort')
    ap.add_argument('--imu', action='store_true', help='also the accelerometer as /imu (sensor_msgs/Imu, +x)')
    ap.add_argument('--overwrite', action='store_true')
    a = ap.parse_args(argv)
    mm = MeasurementModel(quantum=a.quantum, sigma_a=a.sigma_accel, sigma_f=a.sigma_force, seed=a.seed)
    rec = simulate(a.scenario, a.duration, a.rate, a.seed, closed_loop=not a.open_loop, measurement=mm)
    write_bag(rec, a.out, overwrite=a.overwrite, wrench=not a.no_wrench, imu=a.imu)
    print(f'wrote {a.out}: {a.scenario}, {a.duration:g} s at {a.rate:g} Hz (joint slider, /joint_states'
          f"{'' if a.no_wrench else ' + /wrench'}); truth in {a.out}/truth.yaml")
    return 0
