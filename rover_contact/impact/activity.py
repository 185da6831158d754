"""Ground-contact activity at impact from a small frictionless impulsive LCP (spec §5.3 step 4).

M Δq̇ = Eᵀ λ + Gᵀ p,  E Δq̇ = e (equalities: mechanism rows = 0, obstacle normals Λ Δq̇ = −v_c, plastic),
w = G (q̇ + Δq̇) ≥ 0, p ≥ 0, wᵀp = 0 with G the upward ground-normal rows of the wheels (normal rows only:
the rolling rows are not used for the activity test, spec [D]). Eliminating λ gives the LCP
w = A p + b, A = G M_E⁻¹ Gᵀ (M_E⁻¹ = M⁻¹ restricted to null(E) in the M-metric). A is positive
semi-definite; it is solved by Murty's principal pivoting (each set's block by LU) (finite for P-matrices) with an enumeration
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
    """p_S from A_SS p_S = −b_S (others 0), and w = A p + b (LU solve; lstsq, the minimum-norm solution, when
    A_SS is singular)."""
    p = np.zeros_like(b)
    if S:
        idx = np.array(sorted(S))
        Ass = A[idx][:, idx]
        try:
            x = np.linalg.solve(Ass, -b[idx])
            if not np.all(np.isfinite(x)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            x = np.linalg.lstsq(Ass, -b[idx], rcond=None)[0]
        p[idx] = x
    return p, A @ p + b


def solve_lcp(A: np.ndarray, b: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Active mask, impulses p ≥ 0 and velocities w ≥ 0 with wᵀp = 0 (Murty, then enumeration)."""
    m = b.size
    scale = max(np.abs(b).max(initial=0.0), 1e-300)
    S = np.zeros(m, bool)
    for _ in range(4 * 2 ** min(m, 10)):
        p, w = _solve_set(A, b, set(np.flatnonzero(S).tolist()))
        bad = np.flatnonzero((S & (p < -tol * scale * 10)) | (~S & (w < -tol * scale)))
        if bad.size == 0:
            return S, np.maximum(p, 0.0), np.maximum(w, 0.0)
        S[bad[0]] ^= True
    best = None
    for r in range(m + 1):
        for Sc in itertools.combinations(range(m), r):
            p, w = _solve_set(A, b, set(Sc))
            viol = max(-p.min(initial=0.0), -w.min(initial=0.0))
            if best is None or viol < best[0]:
                best = (viol, set(Sc), p, w)
    _, Sc, p, w = best
    return np.array([i in Sc for i in range(m)]), np.maximum(p, 0.0), np.maximum(w, 0.0)


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


# ---------------------------------------------------------------------------------------------- batched
def lcp_matrices_batch(M: np.ndarray, E: np.ndarray, e: np.ndarray, G: np.ndarray, qd: np.ndarray,
                       rank_tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """``lcp_matrices`` for K problems at once: M (K,n,n), E (K,m,n), e (K,m), G (K,W,n), q̇ (K,n) →
    A (K,W,W), b (K,W). The same operations on stacked arrays (LAPACK per matrix), so the same numbers."""
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + np.swapaxes(Minv, 1, 2))
    EMi = E @ Minv
    S = EMi @ np.swapaxes(E, 1, 2)
    S_pinv = np.linalg.pinv(S, rcond=rank_tol, hermitian=True)
    EMiT = np.swapaxes(EMi, 1, 2)
    W = Minv - EMiT @ S_pinv @ EMi
    dq0 = (EMiT @ (S_pinv @ e[:, :, None]))[:, :, 0]
    A = G @ W @ np.swapaxes(G, 1, 2)
    b = (G @ (qd + dq0)[:, :, None])[:, :, 0]
    return 0.5 * (A + np.swapaxes(A, 1, 2)), b


def solve_lcp_batch(A: np.ndarray, b: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """Active masks (K,m) of K LCPs w = A p + b by the same Murty pivoting as ``solve_lcp`` (start from the empty
    set, flip the smallest violating index), all problems stepped together; each step solves every distinct
    active set once for all problems holding it. A problem Murty does not finish goes to ``solve_lcp``."""
    K, m = b.shape
    scale = np.maximum(np.abs(b).max(axis=1, initial=0.0), 1e-300)
    S = np.zeros((K, m), bool)
    done = np.zeros(K, bool)
    weights = 1 << np.arange(m)
    for _ in range(4 * 2 ** min(m, 10)):
        todo = np.nonzero(~done)[0]
        if todo.size == 0:
            break
        p = np.zeros((todo.size, m))
        Sa = S[todo]
        code = Sa @ weights
        for c in np.unique(code):
            if c == 0:
                continue
            sel = np.nonzero(code == c)[0]
            idx = np.nonzero(Sa[sel[0]])[0]
            k = todo[sel]
            Ass = A[k][:, idx][:, :, idx]
            p[np.ix_(sel, idx)] = _lstsq_batch(Ass, -b[k][:, idx])
        w = np.einsum('kij,kj->ki', A[todo], p) + b[todo]
        bad = (Sa & (p < -tol * scale[todo, None] * 10)) | (~Sa & (w < -tol * scale[todo, None]))
        anybad = bad.any(axis=1)
        done[todo[~anybad]] = True
        flip = todo[anybad]
        S[flip, np.argmax(bad[anybad], axis=1)] ^= True
    for k in np.nonzero(~done)[0]:
        S[k] = solve_lcp(A[k], b[k], tol)[0]
    return S


def _lstsq_batch(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Solutions of K small systems A_k x = y_k: one batched LU solve (the same solution as ``solve_lcp``'s lstsq
    up to rounding, ~1e-16 relative, which moves only the tolerance tests of degenerate sets); a singular block
    falls back to lstsq per system (the minimum-norm solution, as ``solve_lcp``)."""
    try:
        x = np.linalg.solve(A, y[:, :, None])[:, :, 0]
        if np.all(np.isfinite(x)):
            return x
    except np.linalg.LinAlgError:
        pass
    return np.stack([np.linalg.lstsq(a, v, rcond=None)[0] for a, v in zip(A, y)])


def ground_activity_batch(M: np.ndarray, mech_rows: np.ndarray, Lam: np.ndarray, G: np.ndarray,
                          qd: np.ndarray, rank_tol: float = 1e-10) -> np.ndarray:
    """``ground_activity`` for K configurations: M (K,n,n), Γ_mech (r,n), Λ (K,s,n), G (K,W,n), q̇ (K,n) →
    (K,W) masks."""
    K, n = qd.shape
    mech = np.broadcast_to(np.asarray(mech_rows, float).reshape(-1, n), (K, len(mech_rows), n))
    E = np.concatenate([mech, Lam], axis=1)
    e = np.concatenate([np.zeros((K, mech.shape[1])), -np.einsum('ksi,ki->ks', Lam, qd)], axis=1)
    A, b = lcp_matrices_batch(M, E, e, G, qd, rank_tol)
    return solve_lcp_batch(A, b)
