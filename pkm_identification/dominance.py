"""Which dynamic effects dominate the actuator forces (spec sec. 2.4 / eq. 2.76-2.88, scenarios S12-S13), and
how sensitive the forces are to a COM offset (eq. 2.89, S14).

The force of each group is J^-1 times its generalised force, from the same Kane model:
  gravity          rhs(q, 0, 0) with g           (platform and struts)
  platform_inertia platform columns, qd = 0, g = 0 (m_p a_c + I_p alpha)
  strut_inertia    strut columns,    qd = 0, g = 0
  velocity         rhs(q, qd, 0) at g = 0: Coriolis-like + centripetal-like terms of every body
Metric per group: 100 mean_k |F_group,k| / mean_k |F_a,k| (and the peak variant with max_k), |.| the
Euclidean norm over the six struts.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import dynamics as D
from .geometry import Machine

GROUPS = ('gravity', 'platform_inertia', 'strut_inertia', 'velocity')
_PLATFORM = np.array([0, 0, 1, 1, 1, 1, 0, 0], float)


def group_forces(m: Machine, theta8, q, qd, qdd) -> dict[str, np.ndarray]:
    """Actuator forces (N, 6) of each group and the total (key 'total'); the groups sum to the total."""
    th = np.asarray(theta8, float)
    z = np.zeros_like(np.atleast_2d(qd))
    g0 = np.zeros(3)
    Yg = D.regressor(m, q, z, z)
    Ya = D.regressor(m, q, z, qdd, gravity=g0)
    Yv = D.regressor(m, q, qd, z, gravity=g0)
    out = {'gravity': Yg @ th, 'platform_inertia': Ya @ (th * _PLATFORM),
           'strut_inertia': Ya @ (th * (1 - _PLATFORM)), 'velocity': Yv @ th}
    out['total'] = D.regressor(m, q, qd, qdd) @ th
    return out


def dominance(m: Machine, theta8, q, qd, qdd) -> dict[str, dict[str, float]]:
    """{group: {'mean_pct': ..., 'peak_pct': ...}} relative to mean |F_a|."""
    f = group_forces(m, theta8, q, qd, qdd)
    ref = np.linalg.norm(f['total'], axis=1).mean()
    return {g: {'mean_pct': 100 * np.linalg.norm(f[g], axis=1).mean() / ref,
                'peak_pct': 100 * np.linalg.norm(f[g], axis=1).max() / ref} for g in GROUPS}


def com_sensitivity(m: Machine, theta12, q, qd, qdd, offset: float) -> np.ndarray:
    """S per axis (x, y, z of {P}) = (RMS dF / RMS F) / (relative offset), the COM moved by ``offset`` [m]
    from the assumed centre, relative offset = 1 % (eq. 2.89 with the dissertation's 1 % of x travel)."""
    from .records import com_motion
    F = D.inverse_dynamics(m, theta12, q, qd, qdd)
    rms = np.sqrt((F ** 2).mean())
    S = np.zeros(3)
    for axis in range(3):
        c = np.zeros(3)
        c[axis] = offset
        mt = replace(m, platform=m.platform - c)
        F2 = D.inverse_dynamics(mt, theta12, *com_motion(np.atleast_2d(q), np.atleast_2d(qd), np.atleast_2d(qdd), c))
        S[axis] = (np.sqrt(((F2 - F) ** 2).mean()) / rms) / 0.01
    return S
