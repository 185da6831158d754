"""Platform trajectories about home with analytic q, qd, qdd (spec sec. 5.1, Table 4.3, S11).

Each is a sum of sinusoids per coordinate: q_j(t) = home_j + sum A sin(w t + phase). Names:
  x, z, xy      : A = 0.0254 m at 4 pi rad/s (Table 4.3; xy: x = y = A sin wt)
  rot           : theta, psi 5 deg at 4 pi rad/s (Table 2.2 case 5)
  multisine     : x, y, z 0.0254 m; phi, theta, psi 5 deg; w = pi {1.3, 2.1, 3.7, 1.7, 2.9, 3.3} rad/s (S11)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

A_TRANS = 0.0254
A_ROT = np.radians(5.0)
W_TABLE = 4 * np.pi
W_MULTI = np.pi * np.array([1.3, 2.1, 3.7, 1.7, 2.9, 3.3])
NAMES = ('x', 'y', 'z', 'xy', 'rot', 'multisine')


@dataclass
class Trajectory:
    name: str
    amplitude: np.ndarray      # (6,) per coordinate
    omega: np.ndarray          # (6,) rad/s
    phase: np.ndarray          # (6,)

    def sample(self, home_q: np.ndarray, t: np.ndarray):
        """(q, qd, qdd) at times t (N,) [s]."""
        t = np.asarray(t, float)[:, None]
        arg = self.omega * t + self.phase
        s, c = np.sin(arg), np.cos(arg)
        base = self.amplitude * np.sin(self.phase)       # start exactly at home: subtract q(0) offset
        q = home_q + self.amplitude * s - base
        qd = self.amplitude * self.omega * c
        qdd = -self.amplitude * self.omega ** 2 * s
        return q, qd, qdd


def make(name: str, scale: float = 1.0, omega: float = W_TABLE) -> Trajectory:
    a = np.zeros(6)
    w = np.full(6, omega)
    ph = np.zeros(6)
    if name == 'x':
        a[0] = A_TRANS
    elif name == 'y':
        a[1] = A_TRANS
    elif name == 'z':
        a[2] = A_TRANS
    elif name == 'xy':
        a[:2] = A_TRANS
    elif name == 'rot':
        a[4] = a[5] = A_ROT
    elif name == 'multisine':
        a[:3], a[3:] = A_TRANS, A_ROT
        w = W_MULTI.copy()
    else:
        raise ValueError(f"unknown trajectory '{name}' (known: {', '.join(NAMES)})")
    return Trajectory(name, a * scale, w, ph)
