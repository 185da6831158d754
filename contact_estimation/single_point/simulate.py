"""Simulated single-point contact experiments written as rosbag2 bags with their ground truth.

``contact-1dof``: a 1-DOF prismatic device (joint ``slider``) pressing on a Kelvin-Voigt wall,
F = k x + b xdot (+ m xddot), with multisine motion x(t) = x0 + sum_j A sin(2 pi f_j t) (spec S1),
seeded Gaussian noise on the force (sigma_F) and on the joint position (sigma_x). The joint position is
q = datum + x, the wrench is the compressive force along +z of frame ``ft_sensor``. The truth goes into
the bag's metadata (custom_data) and into ``truth.yaml`` beside metadata.yaml.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import yaml

from .scenarios import multisine

#: bag epoch of simulated experiments (2025-10-09T09:46:40Z); any positive time works
EPOCH_NS = 1_760_000_000 * 10**9


@dataclass
class KelvinVoigt1Dof:
    stiffness: float = 4800.0
    damping: float = 200.0
    mass: float = 0.0
    duration: float = 20.0
    rate: float = 1000.0
    offset: float = 0.010
    amplitude: float = 0.002
    frequencies: list = field(default_factory=lambda: [0.5, 1.0, 2.0, 5.0])
    sigma_force: float = 0.5
    sigma_position: float = 1e-5
    datum: float = 0.0
    seed: int = 1
    joint_name: str = 'slider'
    wrench_frame: str = 'ft_sensor'
    latency: float = 1e-4
    start_offset: float = 0.0     # s after the bag epoch at which the record starts

    def motion(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """t, x, xdot, xddot (analytic)."""
        if not (self.duration > 0 and self.rate > 0):
            raise ValueError('duration and rate must be > 0')
        t = np.arange(int(round(self.duration * self.rate))) / self.rate
        x, xd, xdd = multisine(t, self.offset, self.amplitude, self.frequencies)
        if x.min() <= 0:
            raise ValueError(f'motion leaves the contact (min x = {x.min():.4g} m): raise offset')
        return t, x, xd, xdd

    def measurements(self) -> dict:
        """Noisy measurements and the noise-free signals, as arrays."""
        t, x, xd, xdd = self.motion()
        force = self.stiffness * x + self.damping * xd + self.mass * xdd
        rng = np.random.default_rng(self.seed)
        force_meas = np.zeros((len(t), 3))
        force_meas[:, 2] = force
        force_meas += rng.normal(0.0, self.sigma_force, force_meas.shape)
        q = self.datum + x + rng.normal(0.0, self.sigma_position, len(t))
        stamps = EPOCH_NS + np.round((t + self.start_offset) * 1e9).astype(np.int64)
        return {'t': t, 'x': x, 'xd': xd, 'xdd': xdd, 'force': force, 'force_meas': force_meas, 'q': q,
                'stamp_ns': stamps}

    def truth(self) -> dict:
        model = 'kelvin_voigt_mass' if self.mass else 'kelvin_voigt'
        return {'scenario': 'contact-1dof', 'model': model, **asdict(self)}


def write_bag(sim: KelvinVoigt1Dof, path: str | Path, overwrite: bool = False, progress: bool = False) -> Path:
    """Write /wrench (WrenchStamped) and /joint_states (JointState) of the experiment; return the bag path."""
    m = sim.measurements()
    return write_contact_bag(path, m['stamp_ns'], m['force_meas'], m['q'], sim.truth(), joint_name=sim.joint_name,
                             wrench_frame=sim.wrench_frame, latency=sim.latency, overwrite=overwrite,
                             progress=progress)


def write_scenario_bag(scenario, path: str | Path, *, datum: float = 0.0, overwrite: bool = False,
                       progress: bool = False) -> Path:
    """A spec scenario (contact_estimation.single_point.scenarios) as a bag: force along +z, joint 'slider' at datum + x."""
    force = np.zeros((len(scenario.t), 3))
    force[:, 2] = scenario.force
    truth = {'scenario': scenario.name, 'datum': datum, 'rate': scenario.rate_hz, 'notes': scenario.notes,
             **{k: _plain(v) for k, v in scenario.truth.items()}}
    if len(scenario.level_loads):
        truth['level_loads'] = _plain(scenario.level_loads)
        truth['ideal_secant'] = _plain(scenario.ideal_secant)
    stamps = EPOCH_NS + np.round(scenario.t * 1e9).astype(np.int64)
    return write_contact_bag(path, stamps, force, datum + scenario.x, truth, overwrite=overwrite, progress=progress)


def write_contact_bag(path: str | Path, stamps_ns: np.ndarray, force: np.ndarray, q: np.ndarray, truth: dict, *,
                      joint_name: str = 'slider', wrench_frame: str = 'ft_sensor', latency: float = 1e-4,
                      overwrite: bool = False, progress: bool = False) -> Path:
    """/wrench and /joint_states of a 1-DOF contact experiment, logged ``latency`` s after their stamps;
    the ground truth goes into custom_data and ``truth.yaml``."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec

    lat = int(latency * 1e9)
    with BagWriter(path, custom_data={'ground_truth': truth}, overwrite=overwrite) as bag:
        bag.add_topic('/wrench', 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState', qos='sensor_data')
        for i in _progress(range(len(stamps_ns)), progress, 'write bag'):
            sec, nsec = ns_to_sec_nanosec(int(stamps_ns[i]))
            stamp = {'sec': sec, 'nanosec': nsec}
            f = force[i]
            bag.write('/wrench', 'geometry_msgs/msg/WrenchStamped',
                      {'header': {'stamp': stamp, 'frame_id': wrench_frame},
                       'wrench': {'force': {'x': f[0], 'y': f[1], 'z': f[2]},
                                  'torque': {'x': 0.0, 'y': 0.0, 'z': 0.0}}}, int(stamps_ns[i]) + lat)
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': stamp, 'frame_id': ''}, 'name': [joint_name],
                       'position': [float(q[i])], 'velocity': [], 'effort': []}, int(stamps_ns[i]) + lat)
    with open(Path(path) / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(truth, f, sort_keys=False)
    return Path(path)


def _plain(v):
    """numpy values to plain Python for YAML/JSON."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def _progress(it, enabled: bool, desc: str):
    if not enabled:
        return it
    from tqdm import tqdm
    return tqdm(it, desc=desc, unit='sample', leave=False)


SCENARIOS = ('S1', 'S2', 'S5', 'S6', 'S7', 'S8', 'S9')


def main(argv: list[str] | None = None) -> int:
    """contact-dynamics simulate {contact-1dof | scenario NAME} --out BAG [...]"""
    argv = list(argv or [])
    if argv[:1] == ['scenario']:
        return scenario_main(argv[1:])
    parser = argparse.ArgumentParser(prog='contact-dynamics simulate contact-1dof', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    d = KelvinVoigt1Dof()
    parser.add_argument('--out', required=True, help='bag directory to write')
    parser.add_argument('--overwrite', action='store_true')
    for name in ('stiffness', 'damping', 'mass', 'duration', 'rate', 'offset', 'amplitude', 'sigma_force',
                 'sigma_position', 'datum', 'latency'):
        parser.add_argument('--' + name.replace('_', '-'), type=float, default=getattr(d, name))
    parser.add_argument('--frequencies', type=float, nargs='+', default=d.frequencies)
    parser.add_argument('--seed', type=int, default=d.seed)
    parser.add_argument('--joint-name', default=d.joint_name)
    args = vars(parser.parse_args(argv))
    out, overwrite = args.pop('out'), args.pop('overwrite')
    sim = KelvinVoigt1Dof(**args)
    write_bag(sim, out, overwrite=overwrite, progress=True)
    print(f'wrote {out}: {sim.duration:g} s at {sim.rate:g} Hz, k = {sim.stiffness:g} N/m, b = {sim.damping:g} N*s/m')
    return 0


def scenario_main(argv: list[str]) -> int:
    from . import scenarios as sc

    parser = argparse.ArgumentParser(prog='contact-dynamics simulate scenario',
                                     description='Write one of the spec scenarios (agar_contact.md §6.1) as a bag '
                                     'with its ground truth (joint slider = datum + x, force along +z).')
    parser.add_argument('name', choices=SCENARIOS)
    parser.add_argument('--out', required=True)
    parser.add_argument('--overwrite', action='store_true')
    parser.add_argument('--rate', type=float, default=1000.0, help='sample rate (Hz)')
    parser.add_argument('--payload', default='pl_half_sphere', choices=sorted(sc.POWER_LAWS),
                        help='S2/S6/S7 payload (Table 3-5 power law)')
    parser.add_argument('--sigma-force', type=float, default=0.0)
    parser.add_argument('--sigma-position', type=float, default=0.0)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    noise = dict(sigma_f=args.sigma_force, sigma_x=args.sigma_position, seed=args.seed)
    make = {
        'S1': lambda: sc.s1_kelvin_voigt(args.rate, noise=bool(args.sigma_force or args.sigma_position),
                                         sigma_f=args.sigma_force, sigma_x=args.sigma_position, seed=args.seed),
        'S2': lambda: sc.s2_staircase(args.payload, args.rate, **noise),
        'S5': lambda: sc.s5_onset(2000.0, 5e-3, args.rate, **noise),
        'S6': lambda: sc.s6_creep(args.payload, args.rate, **noise),
        'S7': lambda: sc.s7_zero_damping(args.payload, args.rate),
        'S8': lambda: sc.s8_instron('al', np.inf, args.rate),
        'S9': lambda: sc.s9_hertz('al', args.rate),
    }
    scenario = make[args.name]()
    write_scenario_bag(scenario, args.out, overwrite=args.overwrite, progress=True)
    print(f'wrote {args.out}: {scenario.name}, {scenario.t[-1] - scenario.t[0]:.1f} s at {scenario.rate_hz:g} Hz')
    return 0
