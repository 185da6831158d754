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

    def motion(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """t, x, xdot, xddot (analytic)."""
        if not (self.duration > 0 and self.rate > 0):
            raise ValueError('duration and rate must be > 0')
        t = np.arange(int(round(self.duration * self.rate))) / self.rate
        w = 2 * np.pi * np.asarray(self.frequencies, dtype=float)[:, None]
        x = self.offset + self.amplitude * np.sin(w * t).sum(axis=0)
        xd = self.amplitude * (w * np.cos(w * t)).sum(axis=0)
        xdd = -self.amplitude * (w * w * np.sin(w * t)).sum(axis=0)
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
        stamps = EPOCH_NS + np.round(t * 1e9).astype(np.int64)
        return {'t': t, 'x': x, 'xd': xd, 'xdd': xdd, 'force': force, 'force_meas': force_meas, 'q': q,
                'stamp_ns': stamps}

    def truth(self) -> dict:
        model = 'kelvin_voigt_mass' if self.mass else 'kelvin_voigt'
        return {'scenario': 'contact-1dof', 'model': model, **asdict(self)}


def write_bag(sim: KelvinVoigt1Dof, path: str | Path, overwrite: bool = False, progress: bool = False) -> Path:
    """Write /wrench (WrenchStamped) and /joint_states (JointState) of the experiment; return the bag path."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec

    m = sim.measurements()
    truth = sim.truth()
    latency = int(sim.latency * 1e9)
    with BagWriter(path, custom_data={'ground_truth': truth}, overwrite=overwrite) as bag:
        bag.add_topic('/wrench', 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState', qos='sensor_data')
        for i in _progress(range(len(m['t'])), progress, 'simulate'):
            sec, nsec = ns_to_sec_nanosec(int(m['stamp_ns'][i]))
            stamp = {'sec': sec, 'nanosec': nsec}
            f = m['force_meas'][i]
            bag.write('/wrench', 'geometry_msgs/msg/WrenchStamped',
                      {'header': {'stamp': stamp, 'frame_id': sim.wrench_frame},
                       'wrench': {'force': {'x': f[0], 'y': f[1], 'z': f[2]},
                                  'torque': {'x': 0.0, 'y': 0.0, 'z': 0.0}}}, int(m['stamp_ns'][i]) + latency)
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': stamp, 'frame_id': ''}, 'name': [sim.joint_name],
                       'position': [float(m['q'][i])], 'velocity': [], 'effort': []},
                      int(m['stamp_ns'][i]) + latency)
    with open(Path(path) / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(truth, f, sort_keys=False)
    return Path(path)


def _progress(it, enabled: bool, desc: str):
    if not enabled:
        return it
    from tqdm import tqdm
    return tqdm(it, desc=desc, unit='sample', leave=False)


def main(argv: list[str] | None = None) -> int:
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
