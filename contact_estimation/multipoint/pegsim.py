"""Peg-in-hole penalty-contact simulation with the closed-form detector (wahl_colton.md A5, A6, A10 W3/W4).

The peg is a free 3-DOF translational body (orientation locked, axis vertical, m = 1 kg) under a Cartesian
stiffness controller F = K (x_d − x) − D ẋ (K = 2000 N/m, ζ = 0.7, gravity compensated by the controller,
so neither appears), x = the centre of its tip sphere. Contacts from ``peg_hole.detect`` each give
F_n = max(0, k_c δ + d_c δ̇) (Kelvin–Voigt; k_c = 1e5 N/m, d_c = 300 N·s/m) along n, δ̇ = −v·n, and friction:
regularised Coulomb −μ F_n v_t / sqrt(|v_t|² + ε_v²) or stick-slip (a tangential spring per persistent
contact, keyed by its feature, capped at μ F_n). Semi-implicit Euler with ``dt`` substeps.

W4 script (A10): hold the tip z_c(d) + 30 mm above the opening plane, offset +d, until 20 s; descend at
10 mm/s (touch at 23.0 s), reverse at 24.5 s, return; shift to −d during 29–32 s; descend from 33 s
(touch at 36.0 s), reverse at 37.5 s. z_c(d) = sqrt(r_p² − (r_h − d)²) is the first-touch height.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from contact_estimation.geometry.peg_hole import FEATURES, HoleGeometry, detect


@dataclass
class PegScenario:
    peg_radius: float = 0.0170
    hole: HoleGeometry = HoleGeometry(0.0175, 0.050)
    peg_length: float = 0.080
    offset: float = 0.005           # lateral offset d, m
    mass: float = 1.0
    k_ctrl: float = 2000.0
    zeta: float = 0.7
    k_c: float = 1e5
    d_c: float = 300.0
    mu: float = 0.5
    friction_law: str = 'regularised'     # or 'stick_slip'
    eps_v: float = 1e-3
    speed: float = 0.010

    @property
    def z_touch(self) -> float:
        """First-touch height of the tip-sphere centre above the opening plane (A10 W4, d < r_h)."""
        return float(np.sqrt(self.peg_radius ** 2 - (self.hole.radius - self.offset) ** 2))

    def setpoint(self, t: float) -> np.ndarray:
        z1 = self.hole.radius + self.hole.height
        hold = z1 + self.z_touch + 0.030
        d, v = self.offset, self.speed
        if t < 29.0:
            x = d
        elif t < 32.0:
            x = d - 2 * d * (t - 29.0) / 3.0
        else:
            x = -d
        z = hold
        for t0, t_rev in ((20.0, 24.5), (33.0, 37.5)):
            if t0 <= t < t_rev:
                z = hold - v * (t - t0)
            elif t_rev <= t < t_rev + (t_rev - t0):
                z = hold - v * (t_rev - t0) + v * (t - t_rev)
        return np.array([x, 0.0, z])


@dataclass
class PegRecord:
    t: np.ndarray
    x: np.ndarray            # tip-sphere centre, m
    v: np.ndarray
    force: np.ndarray        # contact force on the peg, N
    count: np.ndarray
    normal_force: np.ndarray  # Σ F_n
    features: list


def simulate(sc: PegScenario, t0: float = 20.0, t1: float = 27.0, dt: float = 1e-3, rate: float = 100.0
             ) -> PegRecord:
    """Run the W4 script from t0 (at rest on the set-point) to t1; record at ``rate``."""
    K, m = sc.k_ctrl, sc.mass
    D = 2 * sc.zeta * np.sqrt(K * m)
    x, v = sc.setpoint(t0).copy(), np.zeros(3)
    every = int(round(1 / (rate * dt)))
    axis = np.array([0.0, 0.0, sc.peg_length])
    top = sc.hole.c
    anchors: dict = {}
    rec = {k: [] for k in ('t', 'x', 'v', 'F', 'n', 'Fn', 'feat')}
    steps = int(round((t1 - t0) / dt))
    for i in range(steps + 1):
        t = t0 + i * dt
        F = np.zeros(3)
        fn_sum, feats = 0.0, []
        if x[2] - sc.peg_radius < top + 1e-4:
            man = detect(x[None], (x + axis)[None], sc.peg_radius, sc.hole)
            seen = set()
            for j in range(len(man)):
                n, depth = man.normal[j], man.depth[j]
                vn = float(v @ n)
                fn = max(0.0, sc.k_c * depth - sc.d_c * vn)
                vt = v - vn * n
                key = int(man.feature[j])
                seen.add(key)
                if sc.friction_law == 'stick_slip':
                    s = anchors.get(key, np.zeros(3))
                    s = s - (s @ n) * n + vt * dt
                    ft = -sc.k_c * s - sc.d_c * vt
                    cap = sc.mu * fn
                    mag = np.linalg.norm(ft)
                    if mag > cap:
                        ft = ft * (cap / mag)
                        s = -(ft + sc.d_c * vt) / sc.k_c
                    anchors[key] = s
                else:
                    ft = -sc.mu * fn * vt / np.sqrt(vt @ vt + sc.eps_v ** 2)
                F += fn * n + ft
                fn_sum += fn
                feats.append(FEATURES[key])
            for key in list(anchors):
                if key not in seen:
                    del anchors[key]
        else:
            anchors.clear()
        if i % every == 0:
            rec['t'].append(t)
            rec['x'].append(x.copy())
            rec['v'].append(v.copy())
            rec['F'].append(F.copy())
            rec['n'].append(len(feats))
            rec['Fn'].append(fn_sum)
            rec['feat'].append(feats)
        acc = (K * (sc.setpoint(t) - x) - D * v + F) / m
        v = v + dt * acc
        x = x + dt * v
    return PegRecord(np.array(rec['t']), np.array(rec['x']), np.array(rec['v']), np.array(rec['F']),
                     np.array(rec['n']), np.array(rec['Fn']), rec['feat'])


def contact_windows(rec: PegRecord) -> list[tuple[float, float]]:
    """(onset, lift-off) times of the contact episodes."""
    on = rec.count > 0
    edges = np.diff(on.astype(int))
    starts = list(rec.t[1:][edges == 1])
    ends = list(rec.t[1:][edges == -1])
    if on[0]:
        starts.insert(0, rec.t[0])
    if len(ends) < len(starts):
        ends.append(rec.t[-1])
    return list(zip(starts, ends))


def write_bag(sc: PegScenario, rec: PegRecord, path: str | Path, overwrite: bool = False) -> Path:
    """/peg/pose (PoseStamped, tip-sphere centre, frame hole) and /peg/wrench (contact force on the peg)."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec
    from .scenarios import EPOCH_NS

    truth = {'scenario': 'peg_hole_W4', 'stiffness': sc.k_c, 'damping': sc.d_c, 'friction': sc.mu,
             'friction_law': sc.friction_law, 'peg_radius': sc.peg_radius, 'hole_radius': sc.hole.radius,
             'hole_height': sc.hole.height, 'offset': sc.offset,
             'contact_windows': [[float(a), float(b)] for a, b in contact_windows(rec)]}
    stamps = EPOCH_NS + np.round(rec.t * 1e9).astype(np.int64)
    xyz = lambda a: {'x': float(a[0]), 'y': float(a[1]), 'z': float(a[2])}
    with BagWriter(path, custom_data={'ground_truth': truth}, overwrite=overwrite) as bag:
        for i in range(len(stamps)):
            sec, nsec = ns_to_sec_nanosec(int(stamps[i]))
            hdr = {'stamp': {'sec': sec, 'nanosec': nsec}, 'frame_id': 'hole'}
            bag.write('/peg/pose', 'geometry_msgs/msg/PoseStamped',
                      {'header': hdr, 'pose': {'position': xyz(rec.x[i]),
                                               'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}},
                      int(stamps[i]))
            bag.write('/peg/wrench', 'geometry_msgs/msg/WrenchStamped',
                      {'header': hdr, 'wrench': {'force': xyz(rec.force[i]), 'torque': xyz([0, 0, 0])}},
                      int(stamps[i]))
    with open(Path(path) / 'truth.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump(truth, f, sort_keys=False)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    """contact-dynamics simulate peg-hole --out BAG [--mu 0.5 --peg-radius 0.017 --friction-law regularised]"""
    parser = argparse.ArgumentParser(prog='contact-dynamics simulate peg-hole', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', required=True)
    parser.add_argument('--overwrite', action='store_true')
    parser.add_argument('--mu', type=float, default=0.5)
    parser.add_argument('--peg-radius', type=float, default=0.0170)
    parser.add_argument('--friction-law', default='regularised', choices=('regularised', 'stick_slip'))
    parser.add_argument('--start', type=float, default=20.0)
    parser.add_argument('--end', type=float, default=40.0)
    args = parser.parse_args(argv)
    sc = PegScenario(peg_radius=args.peg_radius, mu=args.mu, friction_law=args.friction_law)
    rec = simulate(sc, args.start, args.end)
    write_bag(sc, rec, args.out, overwrite=args.overwrite)
    print(f'wrote {args.out}: contact windows ' +
          ', '.join(f'{a:.2f}-{b:.2f} s' for a, b in contact_windows(rec)))
    return 0
