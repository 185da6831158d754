"""The ACU-like surrogate geometry of agar_contact.md §6.2 (M2): a 9.2 kg box with four V-guide tents into a
fixed receptacle with four matching V-grooves.

Payload frame: origin at the box centre (= centre of mass), x along the 0.3378 m side, z up. The tents (90°
apex, 15 mm high, 60 mm long) hang under the bottom face near the corners with their ridges radial (local +x
of a tent points away from the ACU centre, so "forward" = toward the centre = local −x). V-guide numbering,
seen from below (thesis Fig. 5-9 is not reproducible; ours): vg1 at (+x, +y), vg2 at (−x, +y), vg3 at
(−x, −y), vg4 at (+x, −y).

Receptacle (environment frame = world; at the nominal seated pose the payload origin is at the world
origin and every tent face just touches its groove wall): per guide two groove walls (convex prisms under
the 45° flanks, 3 mm below the box so the box never touches) that run ``groove_extra`` = 40 mm further
outward than the tent (back shifts keep the same mating), and an end stop ``end_gap`` = 0.55 mm in front
of the tent's inner end (forward shifts beyond that hit it). Rest: 8 contacts, two per guide.
"""
from __future__ import annotations

import math

import numpy as np

from contact_estimation.geometry.body import CompoundBody, body_from_spec

SIZE = (0.3378, 0.1915, 0.3157)
MASS = 9.2
TENT_LENGTH, TENT_HEIGHT, APEX_DEG = 0.060, 0.015, 90.0
INSET = (0.045, 0.040)          # tent centre from the box edges (x, y), m
GROOVE_EXTRA = 0.040            # groove longer than the tent, outward, m
END_GAP = 0.55e-3               # tent inner end to the groove end stop, m
WALL_TOP_GAP = 0.003            # groove walls end this far below the box bottom, m
WALL_WIDTH, WALL_DEPTH = 0.030, 0.020
GUIDE_SIGNS = ((1, 1), (-1, 1), (-1, -1), (1, -1))   # vg1..vg4 (x, y) signs


def box_inertia(mass: float, size) -> list[float]:
    a, b, c = size
    return [mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12]


def guide_frames() -> list[tuple[np.ndarray, float]]:
    """(tent base centre in the payload frame, yaw of its ridge) of vg1..vg4."""
    hx, hy, hz = (s / 2 for s in SIZE)
    out = []
    for sx, sy in GUIDE_SIGNS:
        c = np.array([sx * (hx - INSET[0]), sy * (hy - INSET[1]), -hz])
        out.append((c, math.atan2(c[1], c[0])))
    return out


def payload_spec() -> dict:
    parts: list[dict] = [{'name': 'box', 'type': 'box', 'size': list(SIZE), 'position': [0.0, 0.0, 0.0]}]
    for i, (c, yaw) in enumerate(guide_frames(), start=1):
        parts.append({'name': f'vg{i}', 'type': 'tent', 'length': TENT_LENGTH, 'height': TENT_HEIGHT,
                      'apex_angle_deg': APEX_DEG, 'position': [float(v) for v in c], 'rpy': [0.0, 0.0, yaw]})
    return {'name': 'acu', 'mass': MASS, 'com': [0.0, 0.0, 0.0], 'inertia': box_inertia(MASS, SIZE),
            'parts': parts}


def _to_frame(c: np.ndarray, yaw: float, pts: np.ndarray) -> list[list[float]]:
    R = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]])
    return (pts @ R.T + c).tolist()


def environment_spec() -> dict:
    """The receptacle's convex parts, as 'vertices' parts in the world frame."""
    h, L = TENT_HEIGHT, TENT_LENGTH
    tan_half = math.tan(math.radians(APEX_DEG) / 2)
    z_top = -WALL_TOP_GAP
    y_top = (z_top + h) * tan_half                 # flank at the wall top
    x0, x1 = -L / 2 - END_GAP, L / 2 + GROOVE_EXTRA
    parts = []
    for i, (c, yaw) in enumerate(guide_frames(), start=1):
        for side, s in (('left', -1.0), ('right', 1.0)):
            # cross-section (y, z) of the wall under the flank z = -h + |y| / tan_half
            sec = [(0.0, -h), (s * y_top, z_top), (s * WALL_WIDTH, z_top), (s * WALL_WIDTH, -h - WALL_DEPTH),
                   (0.0, -h - WALL_DEPTH)]
            pts = np.array([[x, y, z] for x in (x0, x1) for y, z in sec])
            parts.append({'name': f'vg{i}_{side}', 'group': f'vg{i}', 'type': 'vertices',
                          'vertices': _to_frame(c, yaw, pts)})
        stop = np.array([[x, y, z] for x in (x0 - 0.02, x0) for y in (-WALL_WIDTH, WALL_WIDTH)
                         for z in (z_top, -h - WALL_DEPTH)])
        parts.append({'name': f'vg{i}_stop', 'group': f'vg{i}', 'type': 'vertices', 'vertices': _to_frame(c, yaw, stop)})
    return {'name': 'receptacle', 'position': [0.0, 0.0, 0.0], 'rpy': [0.0, 0.0, 0.0], 'parts': parts}


def acu_geometry() -> tuple[CompoundBody, CompoundBody]:
    """(payload, environment) of the surrogate."""
    return body_from_spec(payload_spec(), 'acu'), body_from_spec(environment_spec(), 'receptacle')


def candidate_pairs(payload: CompoundBody, env: CompoundBody) -> list[tuple[int, int]]:
    """Every payload part against every environment part (the broad phase prunes distant pairs)."""
    return [(i, j) for i in range(len(payload.parts)) for j in range(len(env.parts))]


GEOMETRY_HEADER = """\
# Geometry of the ACU-like surrogate (agar_contact.md §6.2 M2) for multipoint_contact_estimator and the
# multi-point tools. Generated by `python -m contact_estimation.multipoint.acu config/multipoint_acu_geometry.yaml`
# from contact_estimation/multipoint/acu.py: edit there, then regenerate (a test checks the two agree).
#
# Format (SI units: m, kg, kg*m^2, rad; REP-103 frames):
#   payload:      the moving body; its frame is the frame of the measured pose (payload/odom or payload/pose)
#     mass, com, inertia   (principal moments about the com along the payload axes, or a 3x3 list)
#     parts:      convex sub-bodies in the payload frame, each {name, type, ..., position, rpy}:
#                 box {size}; tent {length, height, apex_angle_deg} (V-guide: ridge along x at z = -height,
#                 base in z = 0); prism {polygon_xz, length} (extruded along y); vertices {vertices} (convex
#                 hull); halfspaces {halfspaces: [[a, b, c, d], ...]} (a x + b y + c z <= d); mesh {file}
#                 (convex hull of an STL/OBJ, relative to this file)
#   environment:  fixed; position/rpy = pose of its frame in the pose frame (world); parts as above, in its
#                 frame; 'group' names the feature a part belongs to (the sensitivity tool reports by group).
# Layout: tents vg1 (+x,+y), vg2 (-x,+y), vg3 (-x,-y), vg4 (+x,-y) seen from below, ridges radial; each mates
# with two groove walls (vgN_left/right, 40 mm longer outward) and an end stop 0.55 mm in front of its inner end.
"""


def geometry_yaml() -> str:
    from contact_estimation.geometry.body import geometry_document
    return GEOMETRY_HEADER + geometry_document(payload_spec(), environment_spec())


def main(argv=None) -> int:
    import sys
    from pathlib import Path
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print('usage: python -m contact_estimation.multipoint.acu OUT.yaml', file=sys.stderr)
        return 2
    Path(argv[0]).write_text(geometry_yaml(), encoding='utf-8')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
