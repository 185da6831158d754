"""Geometry perturbations of the mismatch study (agar_contact.md §3.9), applied to a part in its own frame
(the ``position``/``rpy`` of its YAML description: for a V-guide tent, x along the ridge pointing away from the
payload centre, z up from the apex):

- ``back`` / ``forward``: shift along +x / −x of the part frame (away from / toward the centre), m;
- ``side``: shift along +y of the part frame, m;
- ``rotation``: rotation about the part frame's z axis through its origin, deg;
- ``size``: every face moved outward (enlargement), m.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .polytope import ConvexPolytope
from .rotations import axis_angle_matrix

KINDS = ('back', 'forward', 'side', 'rotation', 'size')


def perturb(part: ConvexPolytope, kind: str, amount: float) -> ConvexPolytope:
    """The part with one perturbation applied (see the module docstring for kinds and units)."""
    R, origin = part.meta.get('frame', (np.eye(3), part.centroid))
    if kind == 'back':
        out = part.shifted(R[:, 0] * amount)
    elif kind == 'forward':
        out = part.shifted(-R[:, 0] * amount)
    elif kind == 'side':
        out = part.shifted(R[:, 1] * amount)
    elif kind == 'rotation':
        out = part.rotated(axis_angle_matrix(R[:, 2], np.radians(amount)), about=origin)
    elif kind == 'size':
        out = part.enlarged(amount)
    else:
        raise ValueError(f'unknown perturbation {kind!r} (one of {", ".join(KINDS)})')
    return replace(out, name=part.name, meta=dict(part.meta))
