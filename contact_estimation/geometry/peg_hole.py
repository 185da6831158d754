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

import math
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

    def __post_init__(self):
        for name in ('radius', 'height', 'a', 'b'):
            v = getattr(self, name)
            try:
                f = float(v)
            except (TypeError, ValueError):
                f = math.nan
            if not (math.isfinite(f) and (f > 0 or (name == 'height' and f == 0))):
                raise ValueError(f'hole {name} must be a finite positive length in m (got {v!r})')
        if 2 * self.radius > min(self.a, self.b):
            raise ValueError(f'hole cavity diameter {2 * self.radius} m does not fit the {self.a} x {self.b} m box')

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


_LEVELS: dict = {}
_BLOCK = 1024         # segments per array rim search
_SCALAR_MAX = 4        # up to this many segments the rim search runs on Python floats (faster than ~150 array ops)


def _level_offsets(levels: int) -> list:
    """[(step, offsets·new_step)] of the rim search's refinement levels (independent of the data: computed once,
    with the same arithmetic as the search would)."""
    if levels not in _LEVELS:
        out, step, offsets = [], np.pi / 4, np.arange(8.0)
        for _ in range(levels):
            new_step = 2 * step / 7
            out.append((step, offsets * new_step))
            step = new_step
        _LEVELS[levels] = out
    return _LEVELS[levels]


_PHI0 = np.arange(8) * (np.pi / 4)
_PHI0_LIST = _PHI0.tolist()


def _rim_search(w0: np.ndarray, A: np.ndarray, r: float, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimise, over the rim R(φ) = P1h + r (cos φ, sin φ, 0) (hole frame), the distance from R to the point
    X = A0 + s A nearest to R on a segment (s clamped to [0, 1]), for F segments at once by the paper's refinement.
    ``w0`` = P1h − A0 (F, 3). Returns φ*, d*, s* (F,). Blocks of ``_BLOCK`` segments (the (F, 8) temporaries stay
    in cache: 10 000 segments at once ran 3x slower per segment)."""
    if len(w0) > _BLOCK:
        parts = [_rim_search(w0[a:a + _BLOCK], A[a:a + _BLOCK], r, levels) for a in range(0, len(w0), _BLOCK)]
        return tuple(np.concatenate(x) for x in zip(*parts))
    W = np.einsum('fi,fi->f', w0, w0)[:, None] + r * r
    AA = np.einsum('fi,fi->f', A, A)
    inv_AA = (1.0 / np.where(AA > 0, AA, 1.0))[:, None]
    AA = AA[:, None]
    wA = np.einsum('fi,fi->f', w0, A)[:, None]
    wx, wy = 2 * r * w0[:, 0:1], 2 * r * w0[:, 1:2]
    ax, ay = r * A[:, 0:1], r * A[:, 1:2]

    def dist2(phi):
        c, sn = np.cos(phi), np.sin(phi)
        D = wA + c * ax + sn * ay
        s = np.minimum(np.maximum(D * inv_AA, 0.0), 1.0)
        return W + c * wx + sn * wy + s * (s * AA - 2 * D), s

    rows = np.arange(0, 8 * len(w0), 8)
    d2, s = dist2(_PHI0)
    best = _PHI0[np.argmin(d2, axis=1)][:, None]
    for step, off in _level_offsets(levels):
        phi = (best - step) + off
        d2, s = dist2(phi)
        j = rows + np.argmin(d2, axis=1)
        best = phi.reshape(-1)[j][:, None]
    if not levels:
        j = rows + np.argmin(d2, axis=1)
    return best[:, 0], np.sqrt(np.maximum(d2.reshape(-1)[j], 0.0)), s.reshape(-1)[j]


def _rim_search_points(w0: np.ndarray, r: float, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """``_rim_search`` for points (A = 0: D = 0, s = 0, so d² = W + cos φ·wx + sin φ·wy, the same numbers with
    fewer operations). Returns φ*, d* (F,)."""
    if len(w0) > _BLOCK:
        parts = [_rim_search_points(w0[a:a + _BLOCK], r, levels) for a in range(0, len(w0), _BLOCK)]
        return tuple(np.concatenate(x) for x in zip(*parts))
    W = np.einsum('fi,fi->f', w0, w0)[:, None] + r * r
    wx, wy = 2 * r * w0[:, 0:1], 2 * r * w0[:, 1:2]
    rows = np.arange(0, 8 * len(w0), 8)
    d2 = W + np.cos(_PHI0) * wx + np.sin(_PHI0) * wy
    j = rows + np.argmin(d2, axis=1)
    best = _PHI0[j - rows][:, None]
    for step, off in _level_offsets(levels):
        phi = (best - step) + off
        d2 = W + np.cos(phi) * wx + np.sin(phi) * wy
        j = rows + np.argmin(d2, axis=1)
        best = phi.reshape(-1)[j][:, None]
    return best[:, 0], np.sqrt(np.maximum(d2.reshape(-1)[j], 0.0))


def _dot3(a, b) -> float:
    """a·b of two 3-tuples summed as numpy's einsum sums three terms, (a₀b₀ + a₂b₂) + a₁b₁ (so the Python-float
    rim search equals the array one bit for bit; test_speed_equality checks it)."""
    return (a[0] * b[0] + a[2] * b[2]) + a[1] * b[1]


_OFFSETS_LISTS: dict = {}


_PHI0_C = [math.cos(ph) for ph in _PHI0_LIST]       # the first level's samples, computed once
_PHI0_S = [math.sin(ph) for ph in _PHI0_LIST]
_TRIG: dict = {}            # (level, φ_{j*} − step) -> the level's samples (φ, cos φ, sin φ) as three lists
_TRIG_MAX = 4096            # entries kept (~2 MB); levels 1-3 need at most 8 + 64 + 512 of them


def _level_samples(lev: int, b0: float, off: list) -> tuple[list, list, list]:
    """The samples b0 + offsets of refinement level ``lev`` and their cos / sin (the same math functions on the
    same floats, so the same numbers whether computed now or remembered: the tree of sample sets is fixed by
    the levels' constants, only the path down it depends on the data)."""
    key = (lev, b0)
    t = _TRIG.get(key)
    if t is None:
        if len(_TRIG) >= _TRIG_MAX:
            _TRIG.clear()
        phs = [b0 + o for o in off]
        t = _TRIG[key] = (phs, list(map(math.cos, phs)), list(map(math.sin, phs)))
    return t


def _rim_one(w0, A, r: float, levels: int) -> tuple[float, float, float]:
    """``_rim_search`` for one segment (w0, A 3-tuples) in plain Python floats: the same samples, the same
    operations in the same order, argmin the first of equal minima. Returns φ*, d*, s*.

    d²(φ) = W + cos φ·wx + sin φ·wy + s(s·AA − 2D), D = wA + cos φ·ax + sin φ·ay, s = clamp(D/AA, 0, 1) with
    W = |w0|² + r², wx, wy = 2r·w0_xy, ax, ay = r·A_xy, AA = |A|², wA = w0·A. For a point (A = 0) D and s are
    ±0, so d² = W + cos φ·wx + sin φ·wy exactly (fewer operations, the same numbers)."""
    offs = _OFFSETS_LISTS.get(levels)
    if offs is None:
        offs = _OFFSETS_LISTS[levels] = [(step, off.tolist()) for step, off in _level_offsets(levels)]
    W, AA, wA = _dot3(w0, w0) + r * r, _dot3(A, A), _dot3(w0, A)
    inv = 1.0 / (AA if AA > 0 else 1.0)
    wx, wy = 2 * r * w0[0], 2 * r * w0[1]
    ax, ay = r * A[0], r * A[1]
    point = A[0] == 0.0 and A[1] == 0.0 and A[2] == 0.0
    phs, cs, ss = _PHI0_LIST, _PHI0_C, _PHI0_S
    lev = 0
    while True:
        if point:
            d2s = [W + c * wx + sn * wy for c, sn in zip(cs, ss)]
            bd = min(d2s)
            j = d2s.index(bd)
        else:
            bd, j, i = math.inf, 0, 0
            for c, sn in zip(cs, ss):
                D = wA + c * ax + sn * ay
                sv = D * inv
                if sv < 0.0:
                    sv = 0.0
                elif sv > 1.0:
                    sv = 1.0
                d2 = W + c * wx + sn * wy + sv * (sv * AA - 2 * D)
                if d2 < bd:                          # argmin: the first of equal minima
                    bd, j = d2, i
                i += 1
        if lev == levels:
            break
        step, off = offs[lev]
        lev += 1
        phs, cs, ss = _level_samples(lev, phs[j] - step, off)
    D = wA + cs[j] * ax + ss[j] * ay
    sv = D * inv
    sv = 0.0 if sv < 0.0 else (1.0 if sv > 1.0 else sv)
    if not bd < math.inf:                            # no finite sample (overflow): sample 0's d², as argmin
        bd = W + cs[j] * wx + ss[j] * wy + (0.0 if point else sv * (sv * AA - 2 * D))
    return phs[j], math.sqrt(bd if bd > 0.0 else 0.0), sv


def _rim_search_scalar(w0: np.ndarray, A: np.ndarray, r: float, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_rim_search`` for a few segments (F ≲ 8) by ``_rim_one``: the same numbers without the fixed cost of
    ~150 small array operations."""
    out = np.array([_rim_one(a, b, r, levels) for a, b in zip(w0.tolist(), A.tolist())]).reshape(-1, 3)
    return out[:, 0], out[:, 1], out[:, 2]


_UNIT_Z = np.array([0.0, 0.0, 1.0])


def detect(peg_p0, peg_p1, peg_radius, hole: HoleGeometry, hole_rotation=None, hole_position=None,
           levels: int = 6, dedup_tol: float = 1e-6) -> ContactManifold:
    """Contact manifold of N peg/hole pairs (peg endpoints (N, 3) in the world; one hole geometry, hole poses
    (N, 3, 3)/(N, 3) or identity).

    Cost: a fixed number of small array operations (most of them the rim search's levels, run for pairs with an
    endpoint above the opening plane; an endpoint further than r_p from the rim circle is not searched) plus
    the per-pair arithmetic.

    A peg at least as wide as the hole (Δ_r ≤ 0) rests on the rim or the top face; an endpoint of such a peg
    exactly on the hole axis inside the cavity touches the wall all around, with no single normal: that cap or
    wall contact is not reported (it gave NaN before); likewise a rim contact whose point lies on the rim circle
    itself (distance 0, no normal). Raises ``ValueError`` (one line) for a peg radius that is
    not a positive finite length, endpoints of other shapes than (N, 3), or non-finite endpoints / poses."""
    if hole_rotation is None and hole_position is None:
        # one pose as a controller passes it (two 3-vectors, a scalar radius, the hole frame): straight to floats
        e0, e1, rp1 = _triple(peg_p0), _triple(peg_p1), _scalar(peg_radius)
        if e0 is not None and e1 is not None and rp1 is not None and rp1 > 0.0 and math.isfinite(rp1) \
                and all(map(math.isfinite, e0 + e1)):
            return _manifold_one(_detect_one(e0, e1, rp1, hole, levels), None, None, dedup_tol)
    P0w = np.atleast_2d(np.asarray(peg_p0, float))
    P1w = np.atleast_2d(np.asarray(peg_p1, float))
    N = len(P0w)
    if P0w.ndim != 2 or P0w.shape[1:] != (3,) or P1w.shape != P0w.shape:
        raise ValueError(f'peg endpoints must be two (N, 3) arrays of one shape (got {P0w.shape} and {P1w.shape})')
    rp = np.broadcast_to(np.asarray(peg_radius, float), (N,))
    r, h = hole.radius, hole.height
    lo, hi = (float(rp[0]), float(rp[0])) if N == 1 else (float(rp.min()), float(rp.max())) if N else (1.0, 1.0)
    if N and not (lo > 0.0 and math.isfinite(hi)):
        raise ValueError(f'peg radius must be a positive finite length in m (got {lo}..{hi} m)')
    z0, z1, c = r, r + h, hole.c
    # into the hole frame (an identity pose is skipped: the same numbers)
    if hole_rotation is None and hole_position is None:
        if N == 1 and rp.size == 1:                      # one pair: plain floats from here on
            e0, e1 = P0w[0].tolist(), P1w[0].tolist()
            if all(map(math.isfinite, e0 + e1)):
                rows = _detect_one(e0, e1, float(rp[0]), hole, levels)
                if rows is not None:
                    return _manifold_one(rows, None, None, dedup_tol)
        E = np.stack([P0w, P1w], axis=1)                 # (N, 2, 3) endpoints
        Rh = ph = None
    else:
        Rh = np.broadcast_to(np.eye(3), (N, 3, 3)) if hole_rotation is None else \
            np.broadcast_to(np.asarray(hole_rotation, float), (N, 3, 3))
        ph = np.zeros((N, 3)) if hole_position is None else np.broadcast_to(np.asarray(hole_position, float), (N, 3))
        E = np.stack([np.einsum('nji,nj->ni', Rh, P0w - ph), np.einsum('nji,nj->ni', Rh, P1w - ph)], axis=1)
    if not np.isfinite(E).all():
        raise ValueError('peg endpoints and hole poses must be finite (a NaN or inf was given)')
    if N == 1:
        rows = _detect_one(E[0, 0].tolist(), E[0, 1].tolist(), float(rp[0]), hole, levels)
        if rows is not None:
            return _manifold_one(rows, Rh, ph, dedup_tol)
    dr = (r - rp)[:, None]
    rp2 = rp[:, None]
    ez = E[..., 2]
    out = []                                              # (pair, s index or s, feature, C, n, delta)
    # case 1: bottom cap
    u = E - np.array([0.0, 0.0, z0])
    du = np.linalg.norm(u, axis=2)
    m = (ez <= z0) & (du > dr) & (du > 0.0)
    if m.any():
        pi, ei = np.nonzero(m)
        un = u[pi, ei] / du[pi, ei][:, None]
        out.append((pi, ei.astype(float), CAP, np.array([0.0, 0.0, z0]) + r * un, -un, du[pi, ei] + rp[pi] - r))
    # case 2: cylindrical wall
    w = E.copy()
    w[..., 2] = 0.0
    rho = np.linalg.norm(w, axis=2)
    m = (ez > z0) & (ez < z1) & (rho > dr) & (rho > 0.0)
    if m.any():
        pi, ei = np.nonzero(m)
        wn = w[pi, ei] / rho[pi, ei][:, None]
        C = E[pi, ei].copy()
        C[:, :2] = r * wn[:, :2]
        out.append((pi, ei.astype(float), BODY, C, -wn, rho[pi, ei] + rp[pi] - r))
    # case 3: rim, for pairs with an endpoint above the opening plane
    above = np.any(ez >= z1, axis=1)
    if above.any():
        idx = np.nonzero(above)[0]
        _rim(E[idx], idx, rp[idx], rho[idx], r, z1, levels, out)
    # case 4: top face
    m = (ez - rp2 < c) & (ez > c - rp2 - 0.0) & (rho >= r) & \
        (np.abs(E[..., 0]) <= hole.a / 2) & (np.abs(E[..., 1]) <= hole.b / 2)
    if m.any():
        pi, ei = np.nonzero(m)
        C = E[pi, ei].copy()
        C[:, 2] = c
        out.append((pi, ei.astype(float), TOP_FACE, C, np.tile(_UNIT_Z, (pi.size, 1)), c - (ez[pi, ei] - rp[pi])))
    if not out:
        z = np.zeros((0, 3))
        return ContactManifold(np.zeros(0, int), np.zeros(0, int), z, z, np.zeros(0), np.zeros(0))
    if len(out) == 1:
        pair, s, f, C, nrm, dep = out[0]
        feat = np.full(pair.size, f)
    else:
        pair = np.concatenate([o[0] for o in out])
        s = np.concatenate([o[1] for o in out])
        feat = np.concatenate([np.full(o[0].size, o[2]) for o in out])
        C = np.concatenate([o[3] for o in out])
        nrm = np.concatenate([o[4] for o in out])
        dep = np.concatenate([o[5] for o in out])
    if pair.size > 1:
        order = np.lexsort((feat, pair))
        pair, feat, C, nrm, dep, s = pair[order], feat[order], C[order], nrm[order], dep[order], s[order]
    # back to the world frame
    if Rh is not None:
        C = np.einsum('nij,nj->ni', Rh[pair], C) + ph[pair]
        nrm = np.einsum('nij,nj->ni', Rh[pair], nrm)
    if pair.size < 2:
        return ContactManifold(pair, feat, C, nrm, dep, s)
    keep = _dedup(pair, s, C, dedup_tol)
    return ContactManifold(pair[keep], feat[keep], C[keep], nrm[keep], dep[keep], s[keep])


def _triple(v) -> list | None:
    """Three Python floats from a 3-vector (list, tuple, (3,) or (1, 3) array of reals); None for anything else
    (the array path then checks it and says what is wrong)."""
    if type(v) in (list, tuple):
        if len(v) == 1 and type(v[0]) in (list, tuple, np.ndarray):
            return _triple(v[0])
        if len(v) == 3 and all(type(x) in (float, int) for x in v):
            return [float(x) for x in v]
        return None
    if type(v) is np.ndarray and v.size == 3 and v.shape in ((3,), (1, 3)) and v.dtype.kind in 'fiu':
        if v.dtype.char == 'd':                               # float64: its floats as they are
            return v.reshape(3).tolist()
        return v.astype(float, copy=False).reshape(3).tolist()
    return None


def _scalar(v) -> float | None:
    """A Python float from a real scalar (float, int, numpy scalar or 0-d / one-element array), else None."""
    if type(v) in (float, int):
        return float(v)
    if isinstance(v, (np.floating, np.integer)):
        return float(v)
    if type(v) is np.ndarray and v.size == 1 and v.ndim <= 1 and v.dtype.kind in 'fiu':
        return float(v.reshape(-1)[0])
    return None


def _detect_one(E0: list, E1: list, rp: float, hole: HoleGeometry, levels: int):
    """The contacts of one pair (endpoints in the hole frame) in plain Python floats: ``detect``'s cases with the
    same operations in the same order (norms summed as numpy sums three terms), so the same numbers without the
    fixed cost of the array path. Rows (feature, s, C, n, δ) in ``detect``'s order; a contact whose normal would
    be 0/0 (an endpoint on the hole axis or on the rim circle itself) is left out, as in the array path."""
    r = hole.radius
    z0, z1, c = r, r + hole.height, hole.height + r
    dr = r - rp
    x0, y0, q0 = E0
    x1, y1, q1 = E1
    rho0 = math.sqrt((x0 * x0 + y0 * y0) + 0.0)
    rho1 = math.sqrt((x1 * x1 + y1 * y1) + 0.0)
    ends = ((0.0, x0, y0, q0, rho0), (1.0, x1, y1, q1, rho1))
    rows = []
    if q0 <= z0 or q1 <= z0:                                    # case 1: bottom cap
        for e, x, y, z, rho in ends:
            if z <= z0:
                uz = z - z0
                du = math.sqrt((x * x + y * y) + uz * uz)
                if du > dr and du > 0.0:
                    ux, uy, uz = x / du, y / du, uz / du
                    rows.append((CAP, e, (0.0 + r * ux, 0.0 + r * uy, z0 + r * uz), (-ux, -uy, -uz), du + rp - r))
    for e, x, y, z, rho in ends:                                # case 2: cylindrical wall
        if z0 < z < z1 and rho > dr and rho > 0.0:
            wx, wy = x / rho, y / rho
            rows.append((BODY, e, (r * wx, r * wy, z), (-wx, -wy, -0.0), rho + rp - r))
    if q0 >= z1 or q1 >= z1:                                    # case 3: rim
        for e, x, y, z, rho in ends:
            lb = math.sqrt((rho - r) * (rho - r) + (z - z1) * (z - z1))
            if lb < rp * (1 + 1e-9) + 1e-12:
                phi, d, _ = _rim_one((0.0 - x, 0.0 - y, z1 - z), _ZERO3, r, levels)
                if 0.0 < d < rp:
                    R = (r * math.cos(phi), r * math.sin(phi), z1)
                    rows.append((RIM_CAP0 + int(e), e, R, ((x - R[0]) / d, (y - R[1]) / d, (z - R[2]) / d), rp - d))
        A = (x1 - x0, y1 - y0, q1 - q0)
        phi, d, sb = _rim_one((0.0 - x0, 0.0 - y0, z1 - q0), A, r, levels)
        if 0.0 < d < rp and 0.0 < sb < 1.0:
            R = (r * math.cos(phi), r * math.sin(phi), z1)
            Rp = (x0 + sb * A[0], y0 + sb * A[1], q0 + sb * A[2])
            rows.append((RIM_BODY, sb, R, ((Rp[0] - R[0]) / d, (Rp[1] - R[1]) / d, (Rp[2] - R[2]) / d), rp - d))
    if q0 > c - rp or q1 > c - rp:                              # case 4: top face
        ha, hb = hole.a / 2, hole.b / 2
        for e, x, y, z, rho in ends:
            if z - rp < c and z > c - rp - 0.0 and rho >= r and abs(x) <= ha and abs(y) <= hb:
                rows.append((TOP_FACE, e, (x, y, c), (0.0, 0.0, 1.0), c - (z - rp)))
    return rows


_ZERO3 = (0.0, 0.0, 0.0)


def _rim(Ea, idx, rpi, rho, r, z1, levels, out) -> None:
    """Rim contacts (RIM_CAP0, RIM_CAP1, RIM_BODY) of the pairs ``idx`` (endpoints Ea (n, 2, 3), hole frame),
    appended to ``out``. A feature is searched only when it can hit: an endpoint's exact distance to the rim
    circle sqrt((ρ − r)² + (z − z1)²) is a lower bound of the searched d*, so an endpoint at least r_p (plus a 1e-9
    relative margin for the search's rounding) from the circle is not searched; the axis (RIM_BODY) always is."""
    ring = lambda phi: np.stack([r * np.cos(phi), r * np.sin(phi), np.full(phi.shape, z1)], axis=-1)
    top = np.array([0.0, 0.0, z1])
    lb = np.sqrt((rho - r) ** 2 + (Ea[..., 2] - z1) ** 2)
    near = lb < rpi[:, None] * (1 + 1e-9) + 1e-12
    for f, feat in ((0, RIM_CAP0), (1, RIM_CAP1)):
        k = np.nonzero(near[:, f])[0]
        if k.size == 0:
            continue
        if k.size <= _SCALAR_MAX:
            phi, d, _ = _rim_search_scalar(top - Ea[k, f], np.zeros((k.size, 3)), r, levels)
        else:
            phi, d = _rim_search_points(top - Ea[k, f], r, levels)
        hit = (d < rpi[k]) & (d > 0.0)
        if hit.any():
            R = ring(phi[hit])
            P = Ea[k[hit], f]
            out.append((idx[k[hit]], np.full(hit.sum(), float(f)), feat, R, (P - R) / d[hit][:, None],
                        rpi[k[hit]] - d[hit]))
    A0, A = Ea[:, 0], Ea[:, 1] - Ea[:, 0]
    phi, d, s_b = (_rim_search_scalar if len(A) <= _SCALAR_MAX else _rim_search)(top - A0, A, r, levels)
    hit = (d < rpi) & (d > 0.0) & (s_b > 0.0) & (s_b < 1.0)
    if hit.any():
        R = ring(phi[hit])
        Rp = A0[hit] + s_b[hit][:, None] * A[hit]
        out.append((idx[hit], s_b[hit], RIM_BODY, R, (Rp - R) / d[hit][:, None], rpi[hit] - d[hit]))


def _manifold_one(rows: list, Rh, ph, dedup_tol: float) -> ContactManifold:
    """ContactManifold of one pair's rows (``_detect_one``), moved to the world as ``detect`` does.

    ``_dedup`` for one pair in floats, before any array is built: rows in a stable order by s, a row dropped when
    its predecessor has the same s (to 1e-12) and a point within dedup_tol (the norm summed as numpy sums three
    terms along an axis); the world move of a hole pose is linear and leaves it to the array form."""
    n = len(rows)
    if n == 0:
        z = np.zeros((0, 3))
        return ContactManifold(np.zeros(0, int), np.zeros(0, int), z, z, np.zeros(0), np.zeros(0))
    if n > 1:
        if Rh is None:
            order = sorted(range(n), key=lambda i: rows[i][1])
            drop = set()
            for i, j in zip(order[:-1], order[1:]):
                ci, cj = rows[i][2], rows[j][2]
                dx, dy, dz = cj[0] - ci[0], cj[1] - ci[1], cj[2] - ci[2]
                if abs(rows[j][1] - rows[i][1]) < 1e-12 and math.sqrt((dx * dx + dy * dy) + dz * dz) < dedup_tol:
                    drop.add(j)
            if drop:
                rows = [row for i, row in enumerate(rows) if i not in drop]
                n = len(rows)
    data = np.array([(s_, *C_, *n_, d_) for _, s_, C_, n_, d_ in rows])      # one array: (s, C, n, δ)
    pair, feat = np.zeros(n, int), np.array([row[0] for row in rows])
    s, C, nrm, dep = data[:, 0], data[:, 1:4], data[:, 4:7], data[:, 7]
    if Rh is not None:
        C = np.einsum('nij,nj->ni', Rh[pair], C) + ph[pair]
        nrm = np.einsum('nij,nj->ni', Rh[pair], nrm)
        if n > 1:
            keep = _dedup(pair, s, C, dedup_tol)
            if not keep.all():
                return ContactManifold(pair[keep], feat[keep], C[keep], nrm[keep], dep[keep], s[keep])
    return ContactManifold(pair, feat, C, nrm, dep, s)


def _dedup(pair, s, C, tol) -> np.ndarray:
    """Drop a contact within ``tol`` of another one of the same pair and peg feature (same s): contacts sorted
    by (pair, s) so that candidates are neighbours; linear in the number of contacts."""
    keep = np.ones(len(pair), bool)
    if len(pair) < 2:
        return keep
    order = np.lexsort((s, pair))
    ps, ss, cs = pair[order], s[order], C[order]
    dup = (ps[1:] == ps[:-1]) & (np.abs(ss[1:] - ss[:-1]) < 1e-12) & (np.linalg.norm(cs[1:] - cs[:-1], axis=1) < tol)
    keep[order[1:][dup]] = False
    return keep


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
