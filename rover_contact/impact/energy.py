"""Effective kinetic energy of impact T_c, effective mass and the SCM/SAM projectors (spec §4).

T_c = ½ q̇ᵀ J_cᵀ (J_c M⁻¹ J_cᵀ)⁻¹ J_c q̇ (3.27) is computed in the Cholesky-weighted form (3.29-3.30),
which survives redundant (rank-deficient) rows: with M = Lᵀ L (L upper triangular), u = L q̇ and
A = J_c L⁻¹, T_c = ½ ‖A⁺A u‖² (the orthogonal projector onto the row space of A, by SVD with the
rank tolerance tol = rank_tol·σ_max). Energies in J, velocities in the model's units (m/s, rad/s).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

DEFAULT_RANK_TOL = 1e-10


class EnergyError(ValueError):
    """A mass matrix that is not symmetric positive definite, or non-finite input."""


# Triangular solves use np.linalg.solve: scipy's solve_triangular goes through a threaded BLAS path that
# costs ~0.4 ms per call for these small matrices on a loaded machine (15x numpy's).


def cholesky_upper(M: np.ndarray) -> np.ndarray:
    """L upper triangular with M = Lᵀ L; EnergyError if M is not SPD or not finite."""
    M = np.asarray(M, float)
    if not np.all(np.isfinite(M)):
        raise EnergyError('mass matrix has non-finite entries')
    try:
        return np.linalg.cholesky(0.5 * (M + M.T)).T
    except np.linalg.LinAlgError:
        raise EnergyError('mass matrix is not positive definite') from None


def row_basis(A: np.ndarray, rank_tol: float = DEFAULT_RANK_TOL) -> tuple[np.ndarray, int]:
    """Orthonormal basis V_r (n×r) of the row space of A and its rank r (σ_i > rank_tol·σ_max)."""
    A = np.atleast_2d(np.asarray(A, float))
    if A.shape[0] == 0:
        return np.zeros((A.shape[1], 0)), 0
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return np.zeros((A.shape[1], 0)), 0
    r = int(np.sum(s > rank_tol * s[0]))
    return vt[:r].T, r


def kinetic_energy(M: np.ndarray, qd: np.ndarray) -> float:
    """T = ½ q̇ᵀ M q̇ [J]."""
    qd = np.asarray(qd, float)
    return 0.5 * float(qd @ M @ qd)


def t_c(M: np.ndarray, Jc: np.ndarray, qd: np.ndarray, rank_tol: float = DEFAULT_RANK_TOL) -> float:
    """Effective kinetic energy of impact T_c = ½ ‖Π_row(J_c L⁻¹) L q̇‖² [J] (3.29-3.30)."""
    L = cholesky_upper(M)
    A = np.linalg.solve(L.T, np.atleast_2d(Jc).T).T   # J_c L⁻¹
    V, _ = row_basis(A, rank_tol)
    w = V.T @ (L @ np.asarray(qd, float))
    return 0.5 * float(w @ w)


def projector_328(M: np.ndarray, Jc: np.ndarray) -> np.ndarray:
    """P_c = M⁻¹ J_cᵀ (J_c M⁻¹ J_cᵀ)⁻¹ J_c (3.28); needs full-row-rank J_c."""
    Minv_JT = np.linalg.solve(M, Jc.T)
    return Minv_JT @ np.linalg.solve(Jc @ Minv_JT, Jc)


def projector_329(M: np.ndarray, Jc: np.ndarray, rank_tol: float = DEFAULT_RANK_TOL) -> np.ndarray:
    """P_c = L⁻¹ (J_c L⁻¹)⁺ J_c (3.29), M = LᵀL; robust to redundant rows."""
    L = cholesky_upper(M)
    A = np.linalg.solve(L.T, np.atleast_2d(Jc).T).T
    V, _ = row_basis(A, rank_tol)
    return np.linalg.solve(L, V @ (V.T @ L))


def null_space_basis(G: np.ndarray, n: int, rank_tol: float = DEFAULT_RANK_TOL) -> np.ndarray:
    """Columns spanning null(G) (n×(n−r)); identity when G has no rows. The last few answers are kept (keyed by
    G's bytes), so a constant Γ (the mechanism rows) is decomposed once."""
    G = np.ascontiguousarray(G, float).reshape(-1, n)
    if G.shape[0] == 0:
        return np.eye(n)
    return _null_space_cached(G.tobytes(), G.shape, rank_tol).copy()


@lru_cache(maxsize=16)
def _null_space_cached(data: bytes, shape: tuple, rank_tol: float) -> np.ndarray:
    G = np.frombuffer(data, float).reshape(shape)
    _, s, vt = np.linalg.svd(G, full_matrices=True)
    r = int(np.sum(s > rank_tol * s[0])) if s.size and s[0] > 0 else 0
    return vt[r:].T


def constrained_inverse_inertia(M: np.ndarray, Gamma: np.ndarray, rank_tol: float = DEFAULT_RANK_TOL):
    """M_c⁻¹ = N (Nᵀ M N)⁻¹ Nᵀ with the columns of N spanning null(Γ) [m/kg-type units]."""
    n = M.shape[0]
    N = null_space_basis(Gamma, n, rank_tol)
    if N.shape[1] == 0:
        return np.zeros((n, n))
    return N @ np.linalg.solve(N.T @ M @ N, N.T)


@dataclass
class ImpactResult:
    """Energies [J], effective mass matrix (s×s, kg or kg·m²), normal velocities v_c = Λ q̇ [m/s]."""
    t_total: float
    t_c: float
    t_a: float
    m_eff: np.ndarray
    v_c: np.ndarray
    t_c_per_contact: np.ndarray
    m_apparent: np.ndarray            # 1/(Λ_i M_c⁻¹ Λ_iᵀ) per contact
    rank_jc: int
    rank_deficient_contacts: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def impact_fraction(self) -> float:
        return self.t_c / self.t_total if self.t_total > 0 else 0.0


def impact(M: np.ndarray, Gamma: np.ndarray | None, Lam: np.ndarray, qd: np.ndarray,
           rank_tol: float = DEFAULT_RANK_TOL, L: np.ndarray | None = None) -> ImpactResult:
    """T, T_c with J_c = [Γ; Λ], T_a = T − T_c, M_eff = (Λ M_c⁻¹ Λᵀ)⁻¹ (B.12), shares
    T_c,i = ½ v_c,i (M_eff v_c)_i, apparent masses. q̇ is taken as given (project it first). ``L``: M's
    ``cholesky_upper`` when the caller has it (one factorisation for several calls on the same M)."""
    M = np.asarray(M, float)
    n = M.shape[0]
    qd = np.asarray(qd, float)
    Lam = np.atleast_2d(np.asarray(Lam, float)).reshape(-1, n)
    G = np.zeros((0, n)) if Gamma is None else np.asarray(Gamma, float).reshape(-1, n)
    if not np.all(np.isfinite(qd)):
        raise EnergyError('velocity has non-finite entries')
    Jc = np.vstack([G, Lam])
    L = cholesky_upper(M) if L is None else L
    A = np.linalg.solve(L.T, Jc.T).T
    V, r = row_basis(A, rank_tol)
    u = L @ qd
    w = V.T @ u
    T = 0.5 * float(u @ u)
    Tc = 0.5 * float(w @ w)
    Mc_inv = constrained_inverse_inertia(M, G, rank_tol)
    X = Lam @ Mc_inv @ Lam.T                      # Λ M_c⁻¹ Λᵀ (inverse effective mass)
    v_c = Lam @ qd
    deficient = False
    try:
        s = np.linalg.svd(X, compute_uv=False)
        if s.size and (s[-1] <= rank_tol * max(s[0], 1e-300)):
            raise np.linalg.LinAlgError
        Meff = np.linalg.inv(X)
    except np.linalg.LinAlgError:
        Meff = np.linalg.pinv(X, rcond=rank_tol)
        deficient = True
    Meff = 0.5 * (Meff + Meff.T)
    shares = 0.5 * v_c * (Meff @ v_c)
    diag = np.diag(X)
    m_app = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), np.inf)
    return ImpactResult(t_total=T, t_c=Tc, t_a=T - Tc, m_eff=Meff, v_c=v_c, t_c_per_contact=shares,
                        m_apparent=m_app, rank_jc=r, rank_deficient_contacts=deficient)


def project_admissible(M: np.ndarray, Gamma: np.ndarray | None, qd: np.ndarray,
                       rank_tol: float = DEFAULT_RANK_TOL, L: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """q̇ ← q̇ − M⁻¹Γᵀ(ΓM⁻¹Γᵀ)⁺Γq̇ (M-orthogonal projection onto null(Γ)) and the removed energy [J]
    (``L``: M's ``cholesky_upper`` if the caller has it)."""
    qd = np.asarray(qd, float)
    if Gamma is None or np.size(Gamma) == 0:
        return qd.copy(), 0.0
    n = M.shape[0]
    L = cholesky_upper(M) if L is None else L
    B = np.linalg.solve(L.T, np.asarray(Gamma, float).reshape(-1, n).T).T
    V, _ = row_basis(B, rank_tol)
    u = L @ qd
    w = V.T @ u
    u_adm = u - V @ w
    return np.linalg.solve(L, u_adm), 0.5 * float(w @ w)


def impact_batch(M: np.ndarray, Gamma: np.ndarray, Lam: np.ndarray, qd: np.ndarray,
                 rank_tol: float = DEFAULT_RANK_TOL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """T, T_c [J] and the shares T_c,i [J] of ``impact`` for K problems with the same row counts: M (K,n,n),
    Γ (K,g,n), Λ (K,s,n), q̇ (K,n). The same factorisations on stacked arrays (LAPACK per matrix); the ranks
    (of J_c L⁻¹ and of Γ) are decided per problem with the same tolerance, so each problem's numbers are
    ``impact``'s to rounding of the final sums."""
    M = np.asarray(M, float)
    K, n = qd.shape
    if not np.all(np.isfinite(M)):
        raise EnergyError('mass matrix has non-finite entries')
    if not np.all(np.isfinite(qd)):
        raise EnergyError('velocity has non-finite entries')
    try:
        L = np.swapaxes(np.linalg.cholesky(0.5 * (M + np.swapaxes(M, 1, 2))), 1, 2)
    except np.linalg.LinAlgError:
        raise EnergyError('mass matrix is not positive definite') from None
    Jc = np.concatenate([Gamma, Lam], axis=1)
    A = np.swapaxes(np.linalg.solve(np.swapaxes(L, 1, 2), np.swapaxes(Jc, 1, 2)), 1, 2)
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    keep = s > rank_tol * s[:, :1]
    u = (L @ qd[:, :, None])[:, :, 0]
    w = np.where(keep, (vt @ u[:, :, None])[:, :, 0], 0.0)
    T = 0.5 * np.einsum('ki,ki->k', u, u)
    Tc = 0.5 * np.einsum('ki,ki->k', w, w)
    # M_c⁻¹ = N (Nᵀ M N)⁻¹ Nᵀ, N spanning null(Γ): rank of Γ per problem, grouped
    g = Gamma.shape[1]
    X = np.empty((K, Lam.shape[1], Lam.shape[1]))
    if g == 0:
        X[:] = Lam @ np.linalg.solve(M, np.broadcast_to(np.eye(n), M.shape)) @ np.swapaxes(Lam, 1, 2)
    else:
        _, sg, vtg = np.linalg.svd(Gamma, full_matrices=True)
        rg = np.where(sg[:, 0] > 0, np.sum(sg > rank_tol * sg[:, :1], axis=1), 0)
        for r in np.unique(rg):
            k = np.nonzero(rg == r)[0]
            if r >= n:
                X[k] = 0.0
                continue
            N = np.swapaxes(vtg[k, r:, :], 1, 2)
            NT = np.swapaxes(N, 1, 2)
            Mc_inv = N @ np.linalg.solve(NT @ M[k] @ N, NT)
            X[k] = Lam[k] @ Mc_inv @ np.swapaxes(Lam[k], 1, 2)
    v_c = np.einsum('ksi,ki->ks', Lam, qd)
    sx = np.linalg.svd(X, compute_uv=False)
    deficient = sx[:, -1] <= rank_tol * np.maximum(sx[:, 0], 1e-300)
    Meff = np.empty_like(X)
    ok = np.nonzero(~deficient)[0]
    if ok.size:
        try:
            Meff[ok] = np.linalg.inv(X[ok])
        except np.linalg.LinAlgError:
            deficient[ok] = True
    bad = np.nonzero(deficient)[0]
    if bad.size:
        Meff[bad] = np.linalg.pinv(X[bad], rcond=rank_tol)
    Meff = 0.5 * (Meff + np.swapaxes(Meff, 1, 2))
    shares = 0.5 * v_c * np.einsum('kst,kt->ks', Meff, v_c)
    return T, Tc, shares
