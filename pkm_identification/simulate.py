"""`contact-dynamics simulate pkm`: a simulated hexapod written to a rosbag2 with its ground truth.

/joint_states (sensor_msgs/JointState, names: the machine's strut_names, strut_1..6 by default):
position = L_i [m], velocity = L_dot_i [m/s],
effort = F_a,i [N] from the 13-body model (prescribed x, y, z, xy, rot or 6-DOF multisine motion about home,
or free fall with F_a = 0). The truth (base parameters and friction, SI units) goes into the bag's
custom_data 'ground_truth' and into BAG/truth.yaml (with its units; the format read by ``pkm-identify``,
pkm_identification.report and doc/pkm_machines.md#truthyaml). ``--machine`` takes a name in
config/pkm_machines/ or a machine file path (doc/pkm_machines.md).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.bag import BagWriter
from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from . import dynamics as D
from . import records as RC
from .geometry import load_machine

TRAJECTORIES = ('x', 'y', 'z', 'xy', 'rot', 'multisine', 'freefall')


def make_record(machine: str = 'uf_like', trajectory: str = 'xy', duration: float = 4.0, rate: float = 1000.0,
                friction: bool = False, com_offset=None):
    m = load_machine(machine)
    if trajectory == 'freefall':
        return m, RC.free_fall(m, duration, rate)
    return m, RC.actuated(m, trajectory, duration, rate, friction=RC.FRICTION_TRUTH if friction else None,
                          com_offset=com_offset)


def truth_dict(rec) -> dict:
    names = D.ALL_NAMES if rec.friction is not None else D.BASE_NAMES
    return {n: float(v) for n, v in zip(names, rec.truth)}


def write_bag(path, rec, *, strut_names=tuple(f'strut_{i}' for i in range(1, 7)), start_ns: int = 1_000_000_000,
              sigma_length: float = 0.0, sigma_force: float = 0.0, velocity: bool = True, seed: int = 1,
              overwrite: bool = True, extra: dict | None = None) -> Path:
    rng = np.random.default_rng(seed)
    L = rec.L + rng.normal(0, sigma_length, rec.L.shape) if sigma_length else rec.L
    F = rec.F + rng.normal(0, sigma_force, rec.F.shape) if sigma_force else rec.F
    truth = truth_dict(rec)
    meta = {'ground_truth': truth, 'scenario': rec.name, 'sigma_length': sigma_length, 'sigma_force': sigma_force,
            **(extra or {})}
    path = Path(path)
    with BagWriter(path, custom_data=meta, overwrite=overwrite) as bag:
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState', 'sensor_data')
        for k, t in enumerate(rec.t):
            ns = start_ns + int(round(t * 1e9))
            sec, nanosec = ns_to_sec_nanosec(ns)
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': ''},
                       'name': list(strut_names), 'position': L[k].tolist(),
                       'velocity': rec.Ld[k].tolist() if velocity else [], 'effort': F[k].tolist()}, ns)
    doc = {'ground_truth': truth, 'units': {n: u for n, u in zip(D.ALL_NAMES, D.ALL_UNITS) if n in truth},
           'scenario': rec.name}
    if extra and 'machine' in extra:
        doc['machine'] = str(extra['machine'])
    with open(path / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics simulate pkm', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True, help='bag directory to write')
    ap.add_argument('--machine', default='uf_like')
    ap.add_argument('--trajectory', default='xy', choices=TRAJECTORIES)
    ap.add_argument('--duration', type=float, default=4.0, help='s')
    ap.add_argument('--rate', type=float, default=1000.0, help='Hz')
    ap.add_argument('--friction', action='store_true', help='add strut friction (spec 5.5 [A] values)')
    ap.add_argument('--com-offset', type=float, nargs=3, default=None, help='true COM - assumed centre in {P} [m]')
    ap.add_argument('--sigma-length', type=float, default=0.0, help='Gaussian noise on L [m]')
    ap.add_argument('--sigma-force', type=float, default=0.0, help='Gaussian noise on F_a [N]')
    ap.add_argument('--no-velocity', action='store_true', help='leave JointState.velocity empty')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    m, rec = make_record(a.machine, a.trajectory, a.duration, a.rate, a.friction, a.com_offset)
    write_bag(a.out, rec, strut_names=m.strut_names, sigma_length=a.sigma_length, sigma_force=a.sigma_force,
              velocity=not a.no_velocity,
              seed=a.seed, extra={'machine': a.machine, 'trajectory': a.trajectory})
    print(f'{a.out}: {len(rec.t)} JointState samples ({rec.name}, {a.machine}); truth in {a.out}/truth.yaml')
    return 0
