"""Peg-in-hole contact geometry of Wahl, Grinshpun and Rossmann (wahl_colton.md Part A), closed form, batched
over many peg/hole pairs in numpy.

Peg ("CylSphere", a capsule): axis segment P0 -> P1 (the centres of its two hemispherical caps), radius r_p.
Hole ("CylSphereHole"): a box a × b × c with a capsule-shaped cavity open on its top face. Hole frame: z is the
cavity axis, the box bottom is z = 0, P0h = (0, 0, r_h) is the centre of the hemispherical bottom and
P1h = (0, 0, r_h + h) the centre of the opening, c = h + r_h (A2). Δ_r = r_h − r_p.

Contacts (A4, with the spec's errata applied): C on the hole surface, n the unit direction of the force on the
peg, δ ≥ 0 the penetration, ``s`` the peg axis parameter (0 at P0, 1 at P1), and a feature:

- CAP (endpoint below P0h, |P − P0h| > Δ_r): C = P0h + r_h u, u = (P − P0h)/|P − P0h|, δ = |P − P0h| + r_p − r_h, n = −u;
- BODY (endpoint between P0h and the opening, ρ = radial distance > Δ_r): C = P' + r_h w/ρ, δ = ρ + r_p − r_h,
  n = −w/ρ with w = P − P' (P' the foot on the axis: the errata of eqs 15/17);
- RIM_CAP0 / RIM_CAP1 (when an endpoint is above the opening plane): rim point R* nearest the endpoint,
  d < r_p: C = R*, δ = r_p − d, n = (P − R*)/d;
- RIM_BODY: rim point R* nearest the peg axis segment (s clamped to [0, 1]; a clamped s is the cap case and
  is dropped), |R* − R'| < r_p: C = R*, δ = r_p − |R* − R'|, n = (R' − R*)/|R' − R*|;
- TOP_FACE: an endpoint sphere below the top plane z = c, at least r_h from the axis and over the box:
  C = (P_x, P_y, c), δ = c − (P_z − r_p), n = +z.

The rim search is the paper's: 8 equidistant samples on the circle, then ``levels`` times 8 samples (ends
included) in [φ_{j*−1}, φ_{j*+1}] around the best one (angular step (π/4)(2/7)^L). ``levels`` = 6 by default.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEATURES = ('CAP', 'BODY', 'RIM_CAP0', 'RIM_CAP1', 'RIM_BODY', 'TOP_FACE', 'BOX')
CAP, BODY, RIM_CAP0, RIM_CAP1, RIM_BODY, TOP_FACE = range(6)


@dataclass(frozen=True)
class HoleGeometry:
    """Cavity radius r (m), cylinder height h (m), box sides a, b (m); box height c = h + r."""
    radius: float
    height: float
    a: float = 0.1
    b: float = 0.1

    @property
    def c(self) -> float:
        return self.height + self.radius


@dataclass
class ContactManifold:
    """Contacts of a batch of pairs, flattened: contact i belongs to pair ``pair[i]``. World frame."""
    pair: np.ndarray
    feature: np.ndarray        # index into FEATURES
    point: np.ndarray          # (C, 3) m
    normal: np.ndarray         # (C, 3) force direction on the peg
    depth: np.ndarray          # (C,) m
    s: np.ndarray              # (C,) peg axis parameter

    def labels(self) -> list[str]:
        return [FEATURES[f] for f in self.feature]

    def __len__(self) -> int:
        return len(self.pair)


def _rim_search(dist, n: int, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Minimise dist(phi (n, 8)) -> (n, 8) by the paper's interval refinement; returns (phi*, d*)."""
    phi = np.tile(np.arange(8) * (np.pi / 4), (n, 1))
    d = dist(phi)
    j = np.argmin(d, axis=1)
    step = np.full(n, np.pi / 4)
    best_phi = phi[np.arange(n), j]
    for _ in range(levels):
        lo = best_phi - step
        new_step = 2 * step / 7
        phi = lo[:, None] + np.arange(8) * new_step[:, None]
        d = dist(phi)
        j = np.argmin(d, axis=1)
        best_phi = phi[np.arange(n), j]
        step = new_step
    return best_phi, d[np.arange(n), j]


def detect(peg_p0, peg_p1, peg_radius, hole: HoleGeometry, hole_rotation=None, hole_position=None,
           levels: int = 6, dedup_tol: float = 1e-6) -> ContactManifold:
    """Contact manifold of N peg/hole pairs (peg endpoints (N, 3) in the world; one hole geometry, hole poses
    (N, 3, 3)/(N, 3) or identity)."""
    P0w = np.atleast_2d(np.asarray(peg_p0, float))
    P1w = np.atleast_2d(np.asarray(peg_p1, float))
    N = len(P0w)
    rp = np.broadcast_to(np.asarray(peg_radius, float), (N,))
    Rh = np.broadcast_to(np.eye(3), (N, 3, 3)) if hole_rotation is None else \
        np.broadcast_to(np.asarray(hole_rotation, float), (N, 3, 3))
    ph = np.zeros((N, 3)) if hole_position is None else np.broadcast_to(np.asarray(hole_position, float), (N, 3))
    # into the hole frame
    P0 = np.einsum('nji,nj->ni', Rh, P0w - ph)
    P1 = np.einsum('nji,nj->ni', Rh, P1w - ph)
    r, h = hole.radius, hole.height
    z0, z1, c = r, r + h, hole.c
    dr = r - rp
    E = np.stack([P0, P1], axis=1)                       # (N, 2, 3) endpoints
    ez = E[..., 2]
    out = []                                              # (pair, feature, C, n, delta, s)
    pairs2 = np.repeat(np.arange(N)[:, None], 2, axis=1)
    s2 = np.broadcast_to(np.array([0.0, 1.0]), (N, 2))
    # case 1: bottom cap
    u = E - np.array([0.0, 0.0, z0])
    du = np.linalg.norm(u, axis=2)
    m = (ez <= z0) & (du > dr[:, None])
    if m.any():
        un = u[m] / du[m][:, None]
        C = np.array([0.0, 0.0, z0]) + r * un
        out.append((pairs2[m], np.full(m.sum(), CAP), C, -un, du[m] + rp[pairs2[m]] - r, s2[m]))
    # case 2: cylindrical wall
    w = E.copy()
    w[..., 2] = 0.0
    rho = np.linalg.norm(w, axis=2)
    m = (ez > z0) & (ez < z1) & (rho > dr[:, None])
    if m.any():
        wn = w[m] / rho[m][:, None]
        C = E[m].copy()
        C[:, :2] = r * wn[:, :2]
        out.append((pairs2[m], np.full(m.sum(), BODY), C, -wn, rho[m] + rp[pairs2[m]] - r, s2[m]))
    # case 3: rim, for pairs with an endpoint above the opening plane
    above = np.any(ez >= z1, axis=1)
    if above.any():
        idx = np.nonzero(above)[0]
        n = len(idx)
        Ea = E[idx]
        ring = lambda phi: np.stack([r * np.cos(phi), r * np.sin(phi), np.full(phi.shape, z1)], axis=-1)
        for e, feat in ((0, RIM_CAP0), (1, RIM_CAP1)):
            P = Ea[:, e]
            phi, d = _rim_search(lambda ph_: np.linalg.norm(ring(ph_) - P[:, None, :], axis=2), n, levels)
            hit = d < rp[idx]
            if hit.any():
                R = ring(phi[hit])
                nrm = (P[hit] - R) / d[hit][:, None]
                out.append((idx[hit], np.full(hit.sum(), feat), R, nrm, rp[idx][hit] - d[hit],
                            np.full(hit.sum(), float(e))))
        A0, A = Ea[:, 0], Ea[:, 1] - Ea[:, 0]
        AA = np.einsum('ni,ni->n', A, A)

        def body_dist(ph_):
            R = ring(ph_)
            s = np.clip(np.einsum('nki,ni->nk', R - A0[:, None, :], A) / AA[:, None], 0.0, 1.0)
            return np.linalg.norm(R - (A0[:, None, :] + s[..., None] * A[:, None, :]), axis=2)

        phi, d = _rim_search(body_dist, n, levels)
        R = ring(phi)
        s = np.einsum('ni,ni->n', R - A0, A) / AA
        hit = (d < rp[idx]) & (s > 0.0) & (s < 1.0)
        if hit.any():
            Rp = A0[hit] + s[hit][:, None] * A[hit]
            nrm = (Rp - R[hit]) / d[hit][:, None]
            out.append((idx[hit], np.full(hit.sum(), RIM_BODY), R[hit], nrm, rp[idx][hit] - d[hit], s[hit]))
    # case 4: top face
    m = (ez - rp[:, None] < c) & (ez > c - rp[:, None] - 0.0) & (rho >= r) & \
        (np.abs(E[..., 0]) <= hole.a / 2) & (np.abs(E[..., 1]) <= hole.b / 2)
    if m.any():
        C = E[m].copy()
        C[:, 2] = c
        out.append((pairs2[m], np.full(m.sum(), TOP_FACE), C, np.tile([0.0, 0.0, 1.0], (m.sum(), 1)),
                    c - (ez[m] - rp[pairs2[m]]), s2[m]))
    if not out:
        z = np.zeros((0, 3))
        return ContactManifold(np.zeros(0, int), np.zeros(0, int), z, z, np.zeros(0), np.zeros(0))
    pair = np.concatenate([o[0] for o in out])
    feat = np.concatenate([o[1] for o in out])
    C = np.concatenate([o[2] for o in out])
    nrm = np.concatenate([o[3] for o in out])
    dep = np.concatenate([o[4] for o in out])
    s = np.concatenate([o[5] for o in out])
    order = np.lexsort((feat, pair))
    pair, feat, C, nrm, dep, s = pair[order], feat[order], C[order], nrm[order], dep[order], s[order]
    # back to the world frame
    Cw = np.einsum('nij,nj->ni', Rh[pair], C) + ph[pair]
    nw = np.einsum('nij,nj->ni', Rh[pair], nrm)
    keep = _dedup(pair, s, Cw, dedup_tol)
    return ContactManifold(pair[keep], feat[keep], Cw[keep], nw[keep], dep[keep], s[keep])


def _dedup(pair, s, C, tol) -> np.ndarray:
    """Drop a contact within ``tol`` of an earlier one of the same pair and peg feature (same s)."""
    keep = np.ones(len(pair), bool)
    if len(pair) < 2:
        return keep
    same = (pair[:, None] == pair[None]) & (np.abs(s[:, None] - s[None]) < 1e-12) & \
        (np.linalg.norm(C[:, None] - C[None], axis=2) < tol)
    dup = np.triu(same, 1).any(axis=0)
    return ~dup


def rim_point_closed_form(P, hole: HoleGeometry) -> np.ndarray:
    """Test reference: the rim point nearest a point P (hole frame); degenerate on the axis."""
    P = np.asarray(P, float)
    q = P.copy()
    q[..., 2] = 0.0
    out = hole.radius * q / np.linalg.norm(q, axis=-1, keepdims=True)
    out[..., 2] = hole.height + hole.radius
    return out


def csh_mass_properties(hole: HoleGeometry, density: float) -> tuple[float, float, np.ndarray]:
    """Mass (kg), centre-of-mass height above the box bottom (m) and the principal inertia diag(Θx, Θy, Θz)
    (kg·m², about the centre of mass) of the CSH: box minus cylinder minus hemisphere (A3, eqs 1-10)."""
    a, b, r, h = hole.a, hole.b, hole.radius, hole.height
    c = hole.c
    m_box = density * a * b * c
    m_cyl = density * np.pi * r * r * h
    m_cap = 2.0 / 3.0 * density * np.pi * r ** 3
    m = m_box - m_cyl - m_cap
    z_box, z_cyl, z_cap = c / 2, r + h / 2, r - 3 * r / 8
    zc = (m_box * z_box - m_cyl * z_cyl - m_cap * z_cap) / m
    box_i = np.array([m_box * (b * b + c * c) / 12, m_box * (a * a + c * c) / 12, m_box * (a * a + b * b) / 12])
    cyl_i = np.array([m_cyl * r * r / 4 + m_cyl * h * h / 12] * 2 + [m_cyl * r * r / 2])
    m_sph = 2 * m_cap
    cap_xy = (2 / 5 * m_sph * r * r) / 2 - 0.5 * (9 / 64) * m_sph * r * r
    cap_i = np.array([cap_xy, cap_xy, (2 / 5 * m_sph * r * r) / 2])

    def shifted(i, mass, z):
        d2 = (zc - z) ** 2
        return i + np.array([mass * d2, mass * d2, 0.0])

    inertia = shifted(box_i, m_box, z_box) - shifted(cyl_i, m_cyl, z_cyl) - shifted(cap_i, m_cap, z_cap)
    return float(m), float(zc), inertia


def contact_wrench(manifold: ContactManifold, stiffness: float, n_pairs: int, reference=None):
    """Kelvin–Voigt force probe (W3): F = Σ k δ n per pair and its moment about ``reference`` (N, N·m)."""
    f = (stiffness * manifold.depth)[:, None] * manifold.normal
    F = np.zeros((n_pairs, 3))
    np.add.at(F, manifold.pair, f)
    ref = np.zeros((n_pairs, 3)) if reference is None else np.broadcast_to(np.asarray(reference, float), (n_pairs, 3))
    M = np.zeros((n_pairs, 3))
    np.add.at(M, manifold.pair, np.cross(manifold.point - ref[manifold.pair], f))
    return F, M
