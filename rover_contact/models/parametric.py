"""Parametric RCP-like rover (spec §2.2, Table 4-1 right column), GMDL axes (x forward, y up, z lateral).

Inputs: walking angle θ [rad], wheel base wb, wheel track wt (outer faces), wheel width w, wheel radius r,
arm width a, bogie-joint height by, body height bh, leg length l [m]. Returns body CoMs (starboard half).
"""
from __future__ import annotations

import numpy as np


def parametric_coms(theta: float = 0.0, wb: float = 1.0698, wt: float = 1.0, w: float = 0.0896, r: float = 0.175,
                    a: float = 0.1, by: float = 0.4711, bh: float = 0.7070, l: float = 0.1) -> dict[str, np.ndarray]:
    """CoM (x, y, z) of wheels, legs, steers, arms, side/rear bogie and main body (Table 4-1 expressions)."""
    s, c = np.sin(theta), np.cos(theta)
    zc = (wt - w) / 2.0
    out = {'fw': np.array([wb / 2 + l * s, r, zc]), 'mw': np.array([-l * s, r, zc]),
           'rw': np.array([-wb / 2 - l * s, r, zc])}
    out['fl'] = out['fw'] + np.array([-(l / 2) * s, (l / 2) * c, 0.0])
    out['ml'] = out['mw'] + np.array([(l / 2) * s, (l / 2) * c, 0.0])
    out['rl'] = out['rw'] + np.array([(l / 2) * s, (l / 2) * c, 0.0])
    out['fs'] = np.array([out['fl'][0] - l * s, by, out['fl'][2]])
    out['ms'] = np.array([out['ml'][0] + l * s, by, out['ml'][2]])
    out['rs'] = np.array([out['rl'][0] + l * s, by, out['rl'][2]])
    out['fa'] = np.array([out['fs'][0], by, out['fs'][2] + (a - w) / 2])
    out['ma'] = np.array([out['ms'][0], by, out['ms'][2] + (a - w) / 2])
    out['ra'] = np.array([out['rs'][0], by, out['rs'][2] + (a - w) / 2])
    out['sb'] = np.array([(out['fa'][0] + out['ma'][0]) / 2, by, out['mw'][2]])
    out['rb'] = np.array([out['ra'][0], by, 0.0])
    out['mb'] = np.array([out['mw'][0] + (l / 2) * s, by + bh / 2, 0.0])
    return out


# Table 4-1, RCP starboard wheels (GMDL, m)
RCP_WHEELS = {'fw': (0.5349, 0.175, 0.4552), 'mw': (0.0, 0.175, 0.4552), 'rw': (-0.5381, 0.175, 0.4552)}
