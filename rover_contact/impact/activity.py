"""Ground-contact activity at impact from a small frictionless impulsive LCP (spec §5.3 step 4).

M Δq̇ = Eᵀ λ + Gᵀ p,  E Δq̇ = e (equalities: mechanism rows = 0, obstacle normals Λ Δq̇ = −v_c, plastic),
w = G (q̇ + Δq̇) ≥ 0, p ≥ 0, wᵀp = 0 with G the upward ground-normal rows of the wheels (normal rows only:
the rolling rows are not used for the activity test, spec [D]). Eliminating λ gives the LCP
w = A p + b, A = G M_E⁻¹ Gᵀ (M_E⁻¹ = M⁻¹ restricted to null(E) in the M-metric). A is positive
semi-definite; it is solved by Murty's principal pivoting (finite for P-matrices) with an enumeration
fallback, so the answer is the unique activity set whenever A is positive definite.
"""
from __future__ import annotations

import itertools

import numpy as np


def lcp_matrices(M: np.ndarray, E: np.ndarray, e: np.ndarray, G: np.ndarray, qd: np.ndarray,
                 rank_tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """(A, b) of w = A p + b. b = G(q̇ + Δq̇₀), Δq̇₀ the impulse response to the equalities alone."""
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + Minv.T)
    EMi = E @ Minv
    S = EMi @ E.T
    S_pinv = np.linalg.pinv(S, rcond=rank_tol, hermitian=True)
    W = Minv - EMi.T @ S_pinv @ EMi                 # constrained inverse inertia for impulses
    dq0 = EMi.T @ (S_pinv @ e)
    A = G @ W @ G.T
    b = G @ (qd + dq0)
    return 0.5 * (A + A.T), b


def _solve_set(A, b, S):
    """p_S from A_SS p_S = −b_S (others 0), and w = A p + b."""
    p = np.zeros_like(b)
    if S:
        idx = list(S)
        p[idx] = np.linalg.lstsq(A[np.ix_(idx, idx)], -b[idx], rcond=None)[0]
    return p, A @ p + b


def solve_lcp(A: np.ndarray, b: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Active mask, impulses p ≥ 0 and velocities w ≥ 0 with wᵀp = 0 (Murty, then enumeration)."""
    m = b.size
    scale = max(np.abs(b).max(initial=0.0), 1e-300)
    S: set[int] = set()
    for _ in range(4 * 2 ** min(m, 10)):
        p, w = _solve_set(A, b, S)
        bad = [i for i in range(m) if (i in S and p[i] < -tol * scale * 10) or (i not in S and w[i] < -tol * scale)]
        if not bad:
            return np.array([i in S for i in range(m)]), np.maximum(p, 0.0), np.maximum(w, 0.0)
        i = min(bad)
        S.symmetric_difference_update({i})
    best = None
    for r in range(m + 1):
        for S in itertools.combinations(range(m), r):
            p, w = _solve_set(A, b, set(S))
            viol = max(-p.min(initial=0.0), -w.min(initial=0.0))
            if best is None or viol < best[0]:
                best = (viol, set(S), p, w)
    _, S, p, w = best
    return np.array([i in S for i in range(m)]), np.maximum(p, 0.0), np.maximum(w, 0.0)


def ground_activity(M: np.ndarray, mech_rows: np.ndarray, Lam: np.ndarray, G: np.ndarray,
                    qd: np.ndarray, rank_tol: float = 1e-10) -> np.ndarray:
    """Boolean mask over the rows of G (one per wheel): ground constraint active at the impact."""
    n = M.shape[0]
    mech_rows = np.asarray(mech_rows, float).reshape(-1, n)
    Lam = np.atleast_2d(Lam)
    E = np.vstack([mech_rows, Lam])
    e = np.concatenate([np.zeros(mech_rows.shape[0]), -(Lam @ qd)])
    A, b = lcp_matrices(M, E, e, np.atleast_2d(G), qd, rank_tol)
    active, _, _ = solve_lcp(A, b)
    return active
