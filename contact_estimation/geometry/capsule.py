"""Capsules (a segment P0 -> P1 swept by a sphere of radius r) against convex polytopes, through python-fcl
(GJK/EPA), for bodies that are not the peg/hole pair of ``peg_hole`` (which has its own closed form).

``capsule_polytope_contacts`` returns fcl's contacts with the normal turned into the direction of the force on
the capsule (from the polytope into the capsule) and the penetration depth δ > 0 (m). fcl reports a single
point for a line contact (a capsule lying on a face); EPA depths agree with the exact ones to ~1e-7 m.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull

from .polytope import ConvexPolytope


@dataclass(frozen=True)
class Capsule:
    p0: np.ndarray
    p1: np.ndarray
    radius: float


def _fcl_convex(poly: ConvexPolytope):
    import fcl
    hull = ConvexHull(poly.vertices)
    faces = np.c_[np.full(len(hull.simplices), 3), hull.simplices].ravel()
    return fcl.Convex(poly.vertices, len(hull.simplices), faces)


def _capsule_transform(c: Capsule):
    import fcl
    p0, p1 = np.asarray(c.p0, float), np.asarray(c.p1, float)
    axis = p1 - p0
    length = float(np.linalg.norm(axis))
    z = axis / length
    x = np.cross(z, [1.0, 0, 0]) if abs(z[0]) < 0.9 else np.cross(z, [0, 1.0, 0])
    x /= np.linalg.norm(x)
    R = np.c_[x, np.cross(z, x), z]
    return fcl.Capsule(c.radius, length), fcl.Transform(R, (p0 + p1) / 2)


def capsule_polytope_contacts(capsule: Capsule, poly: ConvexPolytope, max_contacts: int = 4):
    """(points (C, 3), normals (C, 3) into the capsule, depths (C,)) of a capsule against a convex polytope."""
    import fcl
    shape, tf = _capsule_transform(capsule)
    o1 = fcl.CollisionObject(shape, tf)
    o2 = fcl.CollisionObject(_fcl_convex(poly), fcl.Transform())
    res = fcl.CollisionResult()
    fcl.collide(o1, o2, fcl.CollisionRequest(num_max_contacts=max_contacts, enable_contact=True), res)
    if not res.contacts:
        z = np.zeros((0, 3))
        return z, z, np.zeros(0)
    pts = np.array([c.pos for c in res.contacts], float)
    nrm = -np.array([c.normal for c in res.contacts], float)
    dep = np.array([c.penetration_depth for c in res.contacts], float)
    return pts, nrm / np.linalg.norm(nrm, axis=1, keepdims=True), dep
