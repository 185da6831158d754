"""Contact kinematics of a posed payload against a fixed environment (agar_contact.md §3.2, the CDT
``mindist`` replacement), batched over time and over every pair of convex parts in numpy.

Per pair of convex parts (payload part P, environment part E) at one instant:

- separating-axis test over the face normals of both parts and the cross products of their edge
  directions; the parts overlap when every axis overlaps; the axis of least overlap is the contact normal n,
  oriented from E into P (the direction of the normal force on the payload), the overlap is the
  interference δ = max_E(x·n) − min_P(x·n) > 0 (m);
- one contact per pair (a face pair at rest gives one point, so the ACU-like drop rests on 8): its point r
  is the depth-weighted centroid of the vertices of each part that lie inside the other (weights: their
  depth along n); when no vertex lies inside (edge-edge crossing), the midpoint of the two support vertices;
- point velocities v(r) = v + ω × (r − p) (payload) and 0 (environment, fixed);
  δ̇ = −v_rel·n (> 0 while penetration grows), v_t = v_rel − (v_rel·n) n, t = −v_t/|v_t| (against sliding);
  |v_t| < ``slide_eps`` sets t = 0 and ``sliding`` = False (sticking).

The lever arm of a contact is r − p_ref with p_ref the payload frame origin (the reference point of the
measured moment). The same function serves the simulator and the estimator, so a model-consistent
simulation is identified to numerical precision.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .polytope import ConvexPolytope

INSIDE_TOL = 1e-9          # m: a vertex within this of every face of the other part counts as inside


@dataclass
class ContactSet:
    """Contacts of a batch of instants, flattened: contact c belongs to instant ``k[c]`` and pair ``pair[c]``.

    r (m), n (unit, force direction on the payload), t (unit or 0, against sliding), delta (m, > 0),
    delta_dot (m/s), sliding (bool), lever = r − p_payload (m). ``count[k]``: contacts at instant k.
    """
    k: np.ndarray
    pair: np.ndarray
    r: np.ndarray
    n: np.ndarray
    t: np.ndarray
    delta: np.ndarray
    delta_dot: np.ndarray
    sliding: np.ndarray
    lever: np.ndarray
    count: np.ndarray
    v_t: np.ndarray

    def at(self, k: int) -> ContactSet:
        """The contacts of instant k (count has one element)."""
        m = self.k == k
        return ContactSet(np.zeros(int(m.sum()), int), self.pair[m], self.r[m], self.n[m], self.t[m],
                          self.delta[m], self.delta_dot[m], self.sliding[m], self.lever[m],
                          np.array([int(m.sum())]), self.v_t[m])

    def __len__(self) -> int:
        return len(self.k)

    def with_motion(self, v, w, slide_eps: float) -> ContactSet:
        """The same contacts (points, normals, interferences) under another payload twist v (T, 3), ω (T, 3)
        (world, m/s, rad/s): δ̇, v_t, t and sliding recomputed exactly as ``ContactKinematics.compute`` does."""
        kk = self.k
        vr = np.asarray(v, float).reshape(-1, 3)[kk] + np.cross(np.asarray(w, float).reshape(-1, 3)[kk], self.lever)
        vn = np.einsum('bi,bi->b', vr, self.n)
        vt = vr - vn[:, None] * self.n
        speed = np.linalg.norm(vt, axis=1)
        sliding = speed >= slide_eps
        t = np.where(sliding[:, None], -vt / np.where(sliding, speed, 1.0)[:, None], 0.0)
        return ContactSet(kk, self.pair, self.r, self.n, t, self.delta, -vn, sliding, self.lever, self.count, vt)

    def displaced(self, dx, dphi) -> ContactSet:
        """First-order interferences after moving the payload by dx (T, 3) m and a small rotation dphi (T, 3)
        rad about its origin (world axes): δ' = δ − (dx + dphi × lever)·n (same contacts, normals, points)."""
        kk = self.k
        du = np.asarray(dx, float).reshape(-1, 3)[kk] + np.cross(np.asarray(dphi, float).reshape(-1, 3)[kk], self.lever)
        delta = self.delta - np.einsum('bi,bi->b', du, self.n)
        return ContactSet(kk, self.pair, self.r, self.n, self.t, delta, self.delta_dot, self.sliding, self.lever,
                          self.count, self.v_t)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b over the last axis (broadcast), the products and differences ``np.cross`` forms, in its order."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


try:                        # np.einsum without optimize calls this C function with the same operands
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:         # pragma: no cover - another numpy layout
    _einsum = np.einsum


def _norm(x: np.ndarray, axis: int, keepdims: bool = False) -> np.ndarray:
    """np.linalg.norm(x, axis=axis) of a real array by the reduction it runs, sqrt(add.reduce(x·x)), without its
    argument handling (the same numbers)."""
    return np.sqrt(np.add.reduce(x * x, axis=axis, keepdims=keepdims))


def _pad(arrs: list[np.ndarray], size: int) -> np.ndarray:
    """Stack (n_i, 3) arrays padded to ``size`` rows by repeating the first row (harmless for min/max)."""
    out = np.empty((len(arrs), size, 3))
    for i, a in enumerate(arrs):
        out[i, :len(a)] = a
        out[i, len(a):] = a[0]
    return out


class ContactKinematics:
    """Contact kinematics of a payload (convex parts in its body frame) against a fixed environment
    (convex parts in the world frame, or in the environment frame with ``env_pose``).

    ``pairs``: (payload index, environment index) pairs to test; default every combination.
    """

    def __init__(self, payload_parts: list[ConvexPolytope], env_parts: list[ConvexPolytope],
                 pairs: list[tuple[int, int]] | None = None, env_pose=None, slide_eps: float = 1e-4):
        if env_pose is not None:
            R, p = env_pose
            env_parts = [e.transformed(R, p) for e in env_parts]
        self.payload_parts, self.env_parts = list(payload_parts), list(env_parts)
        if pairs is None:
            pairs = [(i, j) for i in range(len(payload_parts)) for j in range(len(env_parts))]
        self.pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        self.slide_eps = float(slide_eps)
        P = [payload_parts[i] for i in self.pairs[:, 0]]
        E = [env_parts[j] for j in self.pairs[:, 1]]
        nv_p = max(len(p.vertices) for p in P)
        nv_e = max(len(e.vertices) for e in E)
        nf_p = max(len(p.normals) for p in P)
        nf_e = max(len(e.normals) for e in E)
        ne_p = max(len(p.edge_dirs) for p in P)
        ne_e = max(len(e.edge_dirs) for e in E)
        self.PV = _pad([p.vertices for p in P], nv_p)
        self.PN = _pad([p.normals for p in P], nf_p)
        self.PE = _pad([p.edge_dirs for p in P], ne_p)
        self.EV = _pad([e.vertices for e in E], nv_e)
        self.EN = _pad([e.normals for e in E], nf_e)
        self.EE = _pad([e.edge_dirs for e in E], ne_e)
        # offsets padded with the first face's (duplicates of a face are harmless in inside tests)
        self.Pc = np.array([np.r_[p.offsets, np.full(nf_p - len(p.offsets), p.offsets[0])] for p in P])
        self.Ec = np.array([np.r_[e.offsets, np.full(nf_e - len(e.offsets), e.offsets[0])] for e in E])
        self.PVmask = np.array([[i < len(p.vertices) for i in range(nv_p)] for p in P])
        self.EVmask = np.array([[i < len(e.vertices) for i in range(nv_e)] for e in E])
        # environment edge x ... crosses are recomputed per pose (payload edges rotate)
        # broad phase: axis-aligned boxes (payload part boxes rotate: world half-extents |R| h)
        lo, hi = np.array([p.vertices.min(0) for p in P]), np.array([p.vertices.max(0) for p in P])
        self.p_center, self.p_half = (lo + hi) / 2, (hi - lo) / 2
        self.e_lo = np.array([e.vertices.min(0) for e in E]) - 1e-9
        self.e_hi = np.array([e.vertices.max(0) for e in E]) + 1e-9

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    def compute(self, R, p, v=None, w=None) -> ContactSet:
        """Contacts for payload poses R (T,3,3) or (3,3), positions p (T,3), velocities v (T,3) and world
        angular velocities w (T,3) (m/s, rad/s; None = at rest)."""
        R = np.asarray(R, float).reshape(-1, 3, 3)
        p = np.asarray(p, float).reshape(-1, 3)
        T = len(p)
        v = np.zeros((T, 3)) if v is None else np.asarray(v, float).reshape(-1, 3)
        w = np.zeros((T, 3)) if w is None else np.asarray(w, float).reshape(-1, 3)
        # broad phase over (T, pairs)
        pc = _einsum('tij,pj->tpi', R, self.p_center) + p[:, None, :]
        ph = _einsum('tij,pj->tpi', np.abs(R), self.p_half)
        near = ((pc + ph >= self.e_lo) & (pc - ph <= self.e_hi)).all(2)
        tk, pk = near.nonzero()
        if len(tk) == 0:
            return _empty(T)
        Rk, pp = R[tk], p[tk]
        PV = _einsum('bij,bvj->bvi', Rk, self.PV[pk]) + pp[:, None, :]
        PN = _einsum('bij,bvj->bvi', Rk, self.PN[pk])
        EV, EN = self.EV[pk], self.EN[pk]
        # separating axes in two stages: the face normals of both parts for every near pair, then the edge
        # crosses only for the pairs no face normal separates (the same numbers, element by element, as all
        # axes at once; the axis order — P faces, E faces, crosses — is kept for the least-overlap argmin)
        faces = np.concatenate([PN, EN], axis=1)                          # (B, F, 3)
        fp = _einsum('bai,bvi->vba', faces, PV)                          # vertices first: fast min/max
        fe = _einsum('bai,bvi->vba', faces, EV)
        o1f, o2f = fe.max(0) - fp.min(0), fp.max(0) - fe.min(0)
        c = (np.minimum(o1f, o2f) > 0.0).all(1).nonzero()[0]
        if len(c) == 0:
            return _empty(T)
        tk, pk, pp, PV, PN, EV, EN = tk[c], pk[c], pp[c], PV[c], PN[c], EV[c], EN[c]
        PE = _einsum('bij,bvj->bvi', Rk[c], self.PE[pk])
        Pc = self.Pc[pk] + _einsum('bfi,bi->bf', PN, pp)
        EE, Ec = self.EE[pk], self.Ec[pk]
        cross = _cross(PE[:, :, None, :], EE[:, None, :, :]).reshape(len(tk), -1, 3)
        norm = _norm(cross, 2, True)
        good = norm > 1e-9
        cross = np.where(good, cross / np.where(good, norm, 1.0), PN[:, :1, :])
        axes = np.concatenate([faces[c], cross], axis=1)                  # (B, A, 3)
        cp_ = _einsum('bai,bvi->vba', cross, PV)
        ce_ = _einsum('bai,bvi->vba', cross, EV)
        o1 = np.concatenate([o1f[c], ce_.max(0) - cp_.min(0)], axis=1)     # P on the + side of E along the axis
        o2 = np.concatenate([o2f[c], cp_.max(0) - ce_.min(0)], axis=1)     # ... on the − side
        overlap = np.minimum(o1, o2)
        hit = (overlap > 0.0).all(1)
        if not hit.any():
            return _empty(T)
        b = hit.nonzero()[0]
        a = np.argmin(overlap[b], axis=1)
        sign = np.where(o1[b, a] <= o2[b, a], 1.0, -1.0)
        n = axes[b, a] * sign[:, None]
        delta = overlap[b, a]
        PVb, EVb = PV[b], EV[b]
        pn = _einsum('bvi,bi->bv', PVb, n)
        en = _einsum('bvi,bi->bv', EVb, n)
        pmin_n, emax_n = pn.min(1), en.max(1)
        pkb = pk[b]
        # vertices of each part inside the other, weighted by their depth along n
        p_in = (_einsum('bvi,bfi->fbv', PVb, EN[b]) <= (Ec[b] + INSIDE_TOL).T[:, :, None]).all(0) \
            & self.PVmask[pkb]
        e_in = (_einsum('bvi,bfi->fbv', EVb, PN[b]) <= (Pc[b] + INSIDE_TOL).T[:, :, None]).all(0) \
            & self.EVmask[pkb]
        wp = np.where(p_in, np.maximum(emax_n[:, None] - pn, 0.0), 0.0)
        we = np.where(e_in, np.maximum(en - pmin_n[:, None], 0.0), 0.0)
        wsum = wp.sum(1) + we.sum(1)
        r_in = (_einsum('bv,bvi->bi', wp, PVb) + _einsum('bv,bvi->bi', we, EVb)) / \
            np.where(wsum > 0, wsum, 1.0)[:, None]
        r_sup = 0.5 * (PVb[np.arange(len(b)), pn.argmin(1)] + EVb[np.arange(len(b)), en.argmax(1)])
        r = np.where((wsum > 0)[:, None], r_in, r_sup)
        kk = tk[b]
        lever = r - p[kk]
        vr = v[kk] + _cross(w[kk], lever)
        vn = _einsum('bi,bi->b', vr, n)
        vt = vr - vn[:, None] * n
        speed = _norm(vt, 1)
        sliding = speed >= self.slide_eps
        t = np.where(sliding[:, None], -vt / np.where(sliding, speed, 1.0)[:, None], 0.0)
        count = np.bincount(kk, minlength=T)
        return ContactSet(kk, self.pairs_index(pkb), r, n, t, delta, -vn, sliding, lever, count, vt)

    def pairs_index(self, idx: np.ndarray) -> np.ndarray:
        return idx


def _empty(T: int) -> ContactSet:
    z3 = np.zeros((0, 3))
    z = np.zeros(0)
    return ContactSet(np.zeros(0, int), np.zeros(0, int), z3, z3, z3, z, z, np.zeros(0, bool), z3,
                      np.zeros(T, int), z3)
