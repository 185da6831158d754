"""Compound rigid bodies (named convex parts + mass properties) and the YAML geometry file.

Geometry file (the reference: doc/multipoint_contact_estimator.md#geometry-file-format). SI units: m, kg,
kg*m^2, rad; REP-103 frames (x forward, y left, z up, right-handed)::

    payload:                       # the moving body; its frame IS the frame of the measured pose
      name: acu                    #   (Odometry child frame / PoseStamped pose); no position/rpy here
      mass: 9.2                    # kg        } used by the simulator only (it needs com = 0);
      com: [0, 0, 0]               # m         } the estimator identifies k, b, mu from the
      inertia: [ixx, iyy, izz]     # kg*m^2    } compensated wrench and ignores them
      parts:                       # convex sub-bodies, each placed in the payload frame by position/rpy
        - {name: box, type: box, size: [0.3378, 0.1915, 0.3157], position: [0, 0, 0], rpy: [0, 0, 0]}
        - {name: vg1, type: tent, length: 0.06, height: 0.015, apex_angle_deg: 90,
           position: [x, y, z], rpy: [0, 0, yaw]}
        - {name: p, type: prism, polygon_xz: [[x, z], ...], length: 0.1}       # extruded along y
        - {name: q, type: vertices, vertices: [[x, y, z], ...]}               # convex hull
        - {name: h, type: halfspaces, halfspaces: [[a, b, c, d], ...]}        # a x + b y + c z <= d
        - {name: m, type: mesh, file: part.stl}                              # convex hull, metres
    environment:                   # fixed
      name: receptacle
      position: [0, 0, 0]          # pose of the environment frame in the pose's frame (world/odom), m
      rpy: [0, 0, 0]               # rad
      parts: [...]                 # as above, in the environment frame

Where a part's own shape sits in its part frame (before position/rpy move it):
``box``: centred on the origin, sides along the axes; ``tent``: ridge along x from -length/2 to +length/2 at
z = -height, base rectangle in the plane z = 0 centred on the origin (half-width height * tan(apex/2));
``prism``: the polygon's (x, z) coordinates as written, extruded over y in [-length/2, length/2];
``vertices``, ``halfspaces``, ``mesh``: the coordinates as written (nothing is re-centred).
Placement: x_body = R(rpy) x_part + position, R(rpy) = Rz(yaw) Ry(pitch) Rx(roll): roll about x, then pitch
about y, then yaw about z, all about the FIXED axes of the parent frame (as URDF ``rpy``; scipy
``Rotation.from_euler('xyz', rpy)``), rotating about the part frame's origin. The environment's position/rpy
place all its parts the same way in the world. A part's ``group`` (default: its name) names the feature it
belongs to, e.g. every wall of groove 1 has ``group: vg1``; the sensitivity tool perturbs payload parts by name.
``load_geometry`` refuses unknown keys (a misspelt ``postion`` would otherwise leave a part at the origin) and
a payload ``position``/``rpy`` (the payload frame is the pose frame: place the parts instead).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import yaml

from . import polytope as poly
from .rotations import rpy_to_matrix


@dataclass
class CompoundBody:
    """A rigid body made of convex parts (in its own frame) with its mass properties."""

    name: str
    parts: list[poly.ConvexPolytope]
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))     # pose in the world (environment)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    specs: list[dict] = field(default_factory=list)                        # the part descriptions, for YAML

    def part(self, name: str) -> poly.ConvexPolytope:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"no part '{name}' in body '{self.name}' (parts: {', '.join(self.names)})")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parts]

    def world_parts(self) -> list[poly.ConvexPolytope]:
        """Parts moved by this body's (fixed) pose."""
        return [p.transformed(self.rotation, self.position) for p in self.parts]


def part_from_spec(spec: dict) -> poly.ConvexPolytope:
    """One convex part from its YAML description (see the module docstring)."""
    kind = spec.get('type')
    name = str(spec.get('name', kind))
    try:
        if kind == 'box':
            shape = poly.box(spec['size'], name)
        elif kind == 'tent':
            shape = poly.tent(float(spec['length']), float(spec['height']), float(spec.get('apex_angle_deg', 90.0)),
                              name)
        elif kind == 'prism':
            shape = poly.prism(spec['polygon_xz'], float(spec['length']), name)
        elif kind == 'vertices':
            shape = poly.from_vertices(spec['vertices'], name)
        elif kind == 'halfspaces':
            h = np.asarray(spec['halfspaces'], float)
            shape = poly.from_halfspaces(h[:, :3], h[:, 3], name)
        elif kind == 'mesh':
            shape = poly.from_mesh(str(spec['file']), name)
        else:
            raise ValueError(f"unknown part type {kind!r} (box, tent, prism, vertices, halfspaces, mesh)")
    except KeyError as exc:
        raise ValueError(f"part '{name}' ({kind}) lacks {exc}") from None
    R = rpy_to_matrix(spec.get('rpy', [0.0, 0.0, 0.0]))
    pos = np.asarray(spec.get('position', [0.0, 0.0, 0.0]), float)
    shape = shape.transformed(R, pos)
    return replace(shape, meta={'group': str(spec.get('group', name)), 'frame': (R, pos)})


def body_from_spec(doc: dict, default_name: str) -> CompoundBody:
    parts = doc.get('parts') or []
    if not parts:
        raise ValueError(f'{default_name}: no parts')
    inertia = np.asarray(doc.get('inertia', [0.0, 0.0, 0.0]), float)
    if inertia.shape == (3,):
        inertia = np.diag(inertia)
    return CompoundBody(name=str(doc.get('name', default_name)), parts=[part_from_spec(p) for p in parts],
                        mass=float(doc.get('mass', 0.0)), com=np.asarray(doc.get('com', [0, 0, 0]), float),
                        inertia=inertia, position=np.asarray(doc.get('position', [0, 0, 0]), float),
                        rotation=rpy_to_matrix(doc.get('rpy', [0.0, 0.0, 0.0])), specs=list(parts))


def load_geometry(path: str | Path) -> tuple[CompoundBody, CompoundBody]:
    """(payload, environment) from a geometry YAML file; ValueError naming what is wrong."""
    path = Path(path)
    with open(path, encoding='utf-8') as f:
        doc = yaml.safe_load(f) or {}
    check_document(doc, path)
    base = path.parent
    for section in ('payload', 'environment'):
        for p in doc[section].get('parts') or []:
            if p.get('type') == 'mesh' and not Path(str(p.get('file', ''))).is_absolute():
                p['file'] = str(base / p['file'])
    return body_from_spec(doc['payload'], 'payload'), body_from_spec(doc['environment'], 'environment')


#: keys a geometry file may hold: per section, common to every part, and per part type
SECTION_KEYS = {'payload': {'name', 'mass', 'com', 'inertia', 'parts'},
                'environment': {'name', 'position', 'rpy', 'parts'}}
PART_KEYS = {'name', 'type', 'group', 'position', 'rpy'}
TYPE_KEYS = {'box': {'size'}, 'tent': {'length', 'height', 'apex_angle_deg'}, 'prism': {'polygon_xz', 'length'},
             'vertices': {'vertices'}, 'halfspaces': {'halfspaces'}, 'mesh': {'file'}}


def check_document(doc, path) -> None:
    """ValueError naming the first thing a geometry document has that the format does not (see the module
    docstring): a missing section, a section or part that is not a mapping, an unknown key or part type."""
    if not isinstance(doc, dict):
        raise ValueError(f'{path}: not a geometry file (a mapping with payload and environment sections)')
    for key in ('payload', 'environment'):
        if key not in doc:
            raise ValueError(f'{path}: no {key!r} section')
    extra = sorted(set(map(str, doc)) - set(SECTION_KEYS))
    if extra:
        raise ValueError(f"{path}: unknown top-level key(s) {', '.join(extra)} (payload, environment)")
    for section, allowed in SECTION_KEYS.items():
        sec = doc[section]
        if not isinstance(sec, dict):
            raise ValueError(f'{path}: {section} must be a mapping')
        if section == 'payload' and ({'position', 'rpy'} & set(sec)):
            raise ValueError(f'{path}: payload position/rpy: the payload frame is the measured pose frame; '
                             'place its parts with their own position/rpy')
        extra = sorted(set(map(str, sec)) - allowed)
        if extra:
            raise ValueError(f"{path}: {section}: unknown key(s) {', '.join(extra)} ({', '.join(sorted(allowed))})")
        parts = sec.get('parts')
        if not isinstance(parts, list) or not parts:
            raise ValueError(f'{path}: {section}: parts must be a non-empty list')
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                raise ValueError(f'{path}: {section} part {i + 1} is not a mapping')
            name, kind = part.get('name', f'#{i + 1}'), part.get('type')
            if kind not in TYPE_KEYS:
                raise ValueError(f"{path}: {section} part '{name}': unknown type {kind!r} "
                                 f"({', '.join(TYPE_KEYS)})")
            extra = sorted(set(map(str, part)) - PART_KEYS - TYPE_KEYS[kind])
            if extra:
                raise ValueError(f"{path}: {section} part '{name}' ({kind}): unknown key(s) {', '.join(extra)} "
                                 f"({', '.join(sorted(PART_KEYS | TYPE_KEYS[kind]))})")


def geometry_document(payload: dict, environment: dict) -> str:
    """YAML text of a geometry file from the two section dicts."""
    return yaml.safe_dump({'payload': payload, 'environment': environment}, sort_keys=False,
                          default_flow_style=None, width=110)
