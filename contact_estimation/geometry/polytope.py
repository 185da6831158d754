"""Convex polytopes: the plane-bounded convex sub-bodies of agar_contact.md §3.1 (CDT ``.cin`` files).

A polytope holds its half-spaces ``A x <= c`` (unit outward normals A, offsets c, m), its vertices (m) and its
unique edge directions, all in the frame of the body it belongs to. Constructors: ``box``, ``prism`` (an
extruded convex polygon), ``tent`` (a V-guide: a triangular prism, apex line down), ``from_vertices``,
``from_halfspaces``, ``from_mesh`` (convex hull of an STL/OBJ via trimesh). The perturbations of the
geometry-mismatch study (§3.9) are ``shifted``, ``rotated`` and ``enlarged``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import ConvexHull, HalfspaceIntersection

_PLANE_TOL = 1e-9


@dataclass(frozen=True)
class ConvexPolytope:
    """A convex polytope {x : normals @ x <= offsets} with its vertices and unique edge directions."""

    vertices: np.ndarray          # (V, 3) m
    normals: np.ndarray           # (F, 3) unit outward face normals
    offsets: np.ndarray           # (F,) m: normals @ x <= offsets inside
    edge_dirs: np.ndarray         # (E, 3) unit edge directions, one per parallel class
    name: str = ''
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def centroid(self) -> np.ndarray:
        """Mean of the vertices (an interior point), m."""
        return self.vertices.mean(axis=0)

    def contains(self, x, tol: float = 1e-12) -> np.ndarray:
        """(…, 3) points -> bool: inside or on the boundary (to ``tol`` m)."""
        x = np.asarray(x, float)
        return np.all(x @ self.normals.T <= self.offsets + tol, axis=-1)

    def transformed(self, R, p) -> ConvexPolytope:
        """The polytope moved by the rigid transform x -> R x + p."""
        R, p = np.asarray(R, float), np.asarray(p, float)
        normals = self.normals @ R.T
        return ConvexPolytope(self.vertices @ R.T + p, normals, self.offsets + normals @ p,
                              self.edge_dirs @ R.T, self.name, dict(self.meta))

    def shifted(self, d) -> ConvexPolytope:
        """Translated by d (m)."""
        return self.transformed(np.eye(3), d)

    def rotated(self, R, about=None) -> ConvexPolytope:
        """Rotated by R about the point ``about`` (default: its centroid)."""
        c = self.centroid if about is None else np.asarray(about, float)
        R = np.asarray(R, float)
        return self.transformed(R, c - R @ c)

    def enlarged(self, d: float) -> ConvexPolytope:
        """Every face moved outward by d (m): the 'size increase' of agar_contact.md §3.9."""
        return from_halfspaces(self.normals, self.offsets + d, name=self.name, interior=self.centroid)

    def volume(self) -> float:
        return float(ConvexHull(self.vertices).volume)


def _unique_rows(v: np.ndarray, tol: float, sign_free: bool = False) -> np.ndarray:
    out: list[np.ndarray] = []
    for row in v:
        if any(np.linalg.norm(row - u) < tol or (sign_free and np.linalg.norm(row + u) < tol) for u in out):
            continue
        out.append(row)
    return np.array(out).reshape(-1, v.shape[1])


def from_vertices(vertices, name: str = '') -> ConvexPolytope:
    """The convex hull of the given points (coplanar hull triangles merged into faces)."""
    pts = np.asarray(vertices, float)
    hull = ConvexHull(pts)
    verts = pts[hull.vertices]
    scale = max(float(np.ptp(verts, axis=0).max()), 1e-12)
    planes = hull.equations.copy()                     # n x + d <= 0, n unit
    planes[:, 3] /= scale
    planes = _unique_rows(planes, 1e-9)
    normals, offsets = planes[:, :3], -planes[:, 3] * scale
    return _assemble(verts, normals, offsets, name)


def from_halfspaces(normals, offsets, name: str = '', interior=None) -> ConvexPolytope:
    """{x : normals @ x <= offsets}; normals need not be unit. ``interior``: a strictly interior point."""
    A = np.asarray(normals, float)
    c = np.asarray(offsets, float)
    norm = np.linalg.norm(A, axis=1)
    A, c = A / norm[:, None], c / norm
    if interior is None:
        from scipy.optimize import linprog
        # Chebyshev centre: max r s.t. A x + r <= c
        res = linprog(np.r_[0, 0, 0, -1.0], A_ub=np.c_[A, np.ones(len(A))], b_ub=c,
                      bounds=[(None, None)] * 3 + [(0, None)])
        if not res.success or res.x[3] <= 0:
            raise ValueError('half-spaces have an empty interior')
        interior = res.x[:3]
    hs = HalfspaceIntersection(np.c_[A, -c], np.asarray(interior, float))
    verts = _unique_rows(hs.intersections, 1e-10 * max(1.0, float(np.abs(hs.intersections).max())))
    # keep only the faces that carry a facet (drop redundant half-spaces)
    on = np.abs(verts @ A.T - c) < 1e-9 * max(1.0, float(np.abs(c).max()))
    keep = on.sum(axis=0) >= 3
    return _assemble(verts, A[keep], c[keep], name)


def _assemble(verts: np.ndarray, normals: np.ndarray, offsets: np.ndarray, name: str) -> ConvexPolytope:
    tol = 1e-9 * max(1.0, float(np.abs(verts).max()))
    on = np.abs(verts @ normals.T - offsets) < tol           # (V, F) vertex on face
    dirs = []
    V = len(verts)
    for i in range(V):
        for j in range(i + 1, V):
            if np.count_nonzero(on[i] & on[j]) >= 2:            # two vertices sharing two faces: an edge
                d = verts[j] - verts[i]
                dirs.append(d / np.linalg.norm(d))
    edge_dirs = _unique_rows(np.array(dirs).reshape(-1, 3), 1e-9, sign_free=True)
    return ConvexPolytope(verts, normals, offsets, edge_dirs, name)


def box(size, name: str = '', center=(0.0, 0.0, 0.0)) -> ConvexPolytope:
    """An axis-aligned box of the given side lengths (m) centred at ``center``."""
    h = np.asarray(size, float) / 2
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
    return from_vertices(corners + np.asarray(center, float), name)


def prism(polygon_xz, length: float, name: str = '') -> ConvexPolytope:
    """A convex polygon in the (x, z) plane extruded along y over [-length/2, length/2] (m)."""
    poly = np.asarray(polygon_xz, float)
    pts = [[x, s * length / 2, z] for x, z in poly for s in (-1, 1)]
    return from_vertices(pts, name)


def tent(length: float, height: float, apex_angle_deg: float = 90.0, name: str = '') -> ConvexPolytope:
    """A V-guide 'tent': triangular prism, ridge (apex line) along x at z = -height, base in the plane z = 0.

    Its half-width at the base is height * tan(apex/2). ``length`` is the ridge length (m).
    """
    w = height * np.tan(np.radians(apex_angle_deg) / 2)
    pts = [[s * length / 2, y, z] for s in (-1, 1) for y, z in ((-w, 0.0), (w, 0.0), (0.0, -height))]
    return from_vertices(pts, name)


def from_mesh(path: str, name: str = '') -> ConvexPolytope:
    """The convex hull of a mesh file (STL, OBJ, PLY, … via trimesh), in the mesh's units (use metres)."""
    import trimesh
    mesh = trimesh.load(path, force='mesh')
    return from_vertices(np.asarray(mesh.convex_hull.vertices), name or str(path))
