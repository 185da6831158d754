"""One impact-indicator evaluation on a 3-D rover model (spec §5.3 steps 3-6, §7.3 impact_indicator).

Pipeline: M(q) (CRBA) → project the measured q̇ onto the mechanism's admissible set (locks, differential)
in the M-metric, reporting the removed energy → Λ for the impacting wheels (n_in from β and the heading) →
T, T_c, T_a, M_eff, shares in the requested ground mode(s): ``free`` (no ground rows), ``rigid`` (4 rows
— normal, holonomic repeat, 2 no-slip — per wheel whose ground constraint the impulsive LCP finds active;
normal rows only with ``rolling=False``), ``both`` (score = the larger, conservative).

Two implementations of the same numbers (issue 19): ``evaluate_reference`` composes ``project_admissible``,
``impact`` and ``ground_activity`` in the full coordinates; ``evaluate`` works in the mechanism's reduced
coordinates (``_evaluate_reduced``, equations there) and hands the call to the reference whenever one of its
decisions (a rank, an LCP sign, a singular block) is close enough to its tolerance that rounding could make
the two differ, so both return the same activity sets and values equal to rounding (test_speed_equality).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.lapack import dgesdd, dpotrf, dpotrs, dtrtri

from .activity import ground_activity
from .energy import DEFAULT_RANK_TOL, EnergyError, ImpactResult, cholesky_upper, impact, project_admissible
from .geometry import n_in_ros

GROUND_MODES = ('both', 'free', 'rigid')
VALIDATED_BETA = (np.deg2rad(10.0), np.deg2rad(90.0))


@dataclass
class Indicator:
    """Result of one evaluation; energies in J."""
    beta: float
    wheels: list
    free: ImpactResult | None
    rigid: ImpactResult | None
    ground_active: np.ndarray
    residual_energy: float
    ground_mode: str
    warnings: list = field(default_factory=list)

    @property
    def primary(self) -> ImpactResult:
        """The result the score uses: the mode asked for; in ``both`` the larger T_c."""
        if self.ground_mode == 'free':
            return self.free
        if self.ground_mode == 'rigid':
            return self.rigid
        return self.rigid if self.rigid.t_c >= self.free.t_c else self.free


def _check(model, q, qd, wheels, ground_mode):
    if ground_mode not in GROUND_MODES:
        raise ValueError(f"ground_mode '{ground_mode}' is not one of {', '.join(GROUND_MODES)}")
    unknown = [w for w in wheels if w not in model.wheel_names]
    if unknown or not wheels:
        raise ValueError(f"contact wheels {unknown or wheels} are not wheels of the model ({', '.join(model.wheel_names)})")
    if not np.all(np.isfinite(qd)) or not np.all(np.isfinite(q)):
        raise ValueError('configuration or velocity is not finite')


def _warnings(beta, vc) -> list:
    warnings = []
    if not VALIDATED_BETA[0] - 1e-9 <= beta <= VALIDATED_BETA[1] + 1e-9:
        warnings.append(f'beta {np.rad2deg(beta):.1f} deg outside the validated range 10-90 deg')
    if np.any(vc <= 0):
        warnings.append('a contact wheel is not approaching the obstacle (normal velocity <= 0)')
    return warnings


def evaluate(model, q: np.ndarray, qd: np.ndarray, beta: float, wheels: list[str], ground_mode: str = 'both',
             rolling: bool = True, rank_tol: float = DEFAULT_RANK_TOL, heading: float | None = None,
             project: bool = True) -> Indicator:
    """Impact indicator for an obstacle face at contact angle β [rad] ahead of the rover (the reduced-coordinate
    path when it applies — a 3-D model, the velocity projected — else ``evaluate_reference``)."""
    _check(model, q, qd, wheels, ground_mode)
    if project and hasattr(model, 'impact_rows'):
        out = _evaluate_reduced(model, np.asarray(q, float), np.asarray(qd, float), beta, list(wheels), ground_mode,
                                rolling, rank_tol, heading)
        if out is not None:
            return out
    return evaluate_reference(model, q, qd, beta, wheels, ground_mode, rolling, rank_tol, heading, project)


def evaluate_reference(model, q: np.ndarray, qd: np.ndarray, beta: float, wheels: list[str],
                       ground_mode: str = 'both', rolling: bool = True, rank_tol: float = DEFAULT_RANK_TOL,
                       heading: float | None = None, project: bool = True) -> Indicator:
    """The indicator composed from ``project_admissible``, ``impact`` and ``ground_activity`` in full coordinates."""
    _check(model, q, qd, wheels, ground_mode)
    M = model.mass_matrix(q)
    L = cholesky_upper(M)                         # one factorisation for the projection and both modes
    mech = model.mech_rows()
    residual = 0.0
    if project:
        qd, residual = project_admissible(M, mech, qd, rank_tol, L=L)
    psi = model.heading(q) if heading is None else heading
    lam = model.contact_rows(q, wheels, n_in_ros(beta, psi))
    warnings = _warnings(beta, lam @ qd)
    free = impact(M, mech, lam, qd, rank_tol, L=L) if ground_mode in ('free', 'both') else None
    rigid = None
    active = np.zeros(len(model.wheel_names), bool)
    if ground_mode in ('rigid', 'both'):
        per = 4 if rolling else 2                 # ground rows of every wheel once; G = their normal rows
        rows_all = model.ground_rows(q, model.wheel_names, rolling=rolling, kin=False).reshape(-1, per, model.nv)
        active = ground_activity(M, mech, lam, rows_all[:, 0], qd, rank_tol)
        rows = rows_all[active].reshape(-1, model.nv)
        rigid = impact(M, np.vstack([mech, rows]), lam, qd, rank_tol, L=L)
    return Indicator(beta=beta, wheels=list(wheels), free=free, rigid=rigid, ground_active=active,
                     residual_energy=residual, ground_mode=ground_mode, warnings=warnings)


# ------------------------------------------------------------------------------------ reduced coordinates
# Decisions closer than these factors to their tolerance go to evaluate_reference (rounding could decide them
# differently there): a rank (σ_i/σ_max within [rank_tol·1e-3, rank_tol·1e4]), an effective-mass matrix whose
# eigenvalue ratio is below _X_GUARD, an LCP whose matrix is not clearly positive definite (a Cholesky pivot²
# below _PIVOT_GUARD of the largest diagonal entry) or whose solution is not strictly complementary by
# _MARGIN times the reference's tolerances, or an effective mass or active ground-row set that amplifies
# rounding by more than _AMPLIFICATION (σ_ref²/λ_min(Λ M_c⁻¹ Λᵀ), σ_max/σ_min of the kept ground rows: the
# reference's own numbers carry that much of its rounding there).
_RANK_BAND = (1e-3, 1e4)
_X_GUARD = 1e-6
_AMPLIFICATION = 1e4                 # largest σ_ref²/λ_min(X) accepted: M_eff carries rounding × this
_PIVOT_GUARD = 1e-8
_MARGIN = 1e4
_LCP_TOL = 1e-12                     # activity.solve_lcp's tolerance


def _inverse_spd(X: np.ndarray, floor: float = 0.0) -> list | None:
    """X⁻¹ (nested lists) of a small SPD matrix (s ≤ 3: the contact wheels), None when λ_min/λ_max < _X_GUARD
    or λ_min ≤ ``floor`` (then ``_contact_part`` decides the ranks from the rows' singular values)."""
    s = X.shape[0]
    if s == 1:
        x = float(X[0, 0])
        return [[1.0 / x]] if x > floor else None
    if s == 2:
        (a, b), (_, c) = X.tolist()
        det = a * c - b * b
        lmax = 0.5 * (a + c) + math.hypot(0.5 * (a - c), b)
        if not (lmax > 0 and det > _X_GUARD * lmax * lmax and det > floor * lmax):
            return None
        return [[c / det, -b / det], [-b / det, a / det]]
    ev = np.linalg.eigvalsh(X)
    if not ev[-1] > 0 or ev[0] <= _X_GUARD * ev[-1] or ev[0] <= floor:
        return None
    return np.linalg.inv(X).tolist()


def _contact_part(Cc: np.ndarray, z: np.ndarray, s_ref: float, rank_tol: float):
    """The contact rows' part of ``impact`` from Ĉ restricted to the motions the other constraints leave
    (Cc, s×k) and the whitened velocity there (z, k): (M_eff as nested lists, ½‖Π_row(Cc) z‖² [J], the rank
    of Cc, deficient, X = Cc Ccᵀ), or None when a rank decision is within _RANK_BAND of its threshold.
    Well-conditioned X: M_eff = X⁻¹ and the energy ½ yᵀ X⁻¹ y, y = Cc z. Otherwise from the SVD Cc = U Σ Vᵀ
    as the reference decides: rank(J_c) counts σ_i > rank_tol·σ_ref (σ_ref: the largest singular value of
    the rows stacked with the others), and X is deficient when σ_min² ≤ rank_tol·σ_max², M_eff then the
    pseudo-inverse Σ σ_i⁻² u_i u_iᵀ over σ_i² > rank_tol·σ_max² (else X⁻¹)."""
    X = Cc @ Cc.T
    s = X.shape[0]
    floor = (rank_tol * _RANK_BAND[1]) ** 2 * s_ref * s_ref
    Xi = _inverse_spd(X, s_ref * s_ref / _AMPLIFICATION)
    if Xi is not None:
        return Xi, 0.5 * _quad(Xi, Cc @ z), s, False, X
    if Cc.shape[1] == 0:
        return None
    u, sv, vt, info = dgesdd(Cc, compute_uv=1, full_matrices=0)
    if info != 0 or not sv[0] > 0:
        return None
    k = _rank(sv, rank_tol, max(s_ref, float(sv[0])))          # rank of J_c: singular values vs the stack's
    kx = _rank(sv * sv, rank_tol, float(sv[0]) ** 2)             # X's own rank (pinv cut-off)
    if k is None or kx is None or kx > k:
        return None                                    # X's kept directions include rounding noise of J_c's
    if k < s and X.diagonal().min() <= floor:
        return None                                    # a contact fully held: its 1/X_ii inverts rounding noise
    if kx and sv[kx - 1] ** 2 * _AMPLIFICATION <= s_ref * s_ref:
        return None                                    # M_eff would amplify the rows' rounding past 1e-12
    w = vt[:k] @ z
    Meff = (u[:, :kx] / (sv[:kx] * sv[:kx])) @ u[:, :kx].T
    return Meff.tolist(), 0.5 * float(w @ w), k, kx < s, X


def _solve_spd(A: list, y: list) -> list:
    """x with A x = y for a small SPD A (nested lists): closed form for 1×1 and 2×2, else by Cholesky
    (LAPACK)."""
    k = len(y)
    if k == 1:
        return [y[0] / A[0][0]]
    if k == 2:
        (a, b), (c, d) = A
        det = a * d - b * c
        return [(d * y[0] - b * y[1]) / det, (a * y[1] - c * y[0]) / det]
    L, info = dpotrf(np.array(A), lower=1, clean=0)
    return dpotrs(L, np.array(y), lower=1)[0].tolist()


def _positive_definite(A: np.ndarray) -> np.ndarray | None:
    """A's lower Cholesky factor when it exists with every pivot² above _PIVOT_GUARD · max diagonal entry."""
    L, info = dpotrf(A, lower=1, clean=0)
    if info != 0:
        return None
    piv = L.diagonal()
    return L if (piv * piv).min() > _PIVOT_GUARD * A.diagonal().max() else None


def _solve_small(A: list, y: list) -> list | None:
    """x with A x = y by Gaussian elimination with partial pivoting in Python floats (k ≤ the wheel count);
    None when a pivot is below _PIVOT_GUARD of the block's largest entry."""
    k = len(y)
    big = max(abs(v) for row in A for v in row)
    A = [row[:] + [yi] for row, yi in zip(A, y)]
    for c in range(k):
        piv = max(range(c, k), key=lambda r: abs(A[r][c]))
        if not abs(A[piv][c]) > _PIVOT_GUARD * big:
            return None
        A[c], A[piv] = A[piv], A[c]
        pc = A[c]
        for r in range(c + 1, k):
            f = A[r][c] / pc[c]
            if f:
                ar = A[r]
                for j in range(c + 1, k + 1):
                    ar[j] -= f * pc[j]
    x = [0.0] * k
    for c in range(k - 1, -1, -1):
        row = A[c]
        x[c] = (row[k] - sum(row[j] * x[j] for j in range(c + 1, k))) / row[c]
    return x


def _lcp_active(A: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The active mask ``activity.solve_lcp`` returns, in Python floats. A positive definite A (the usual case)
    has one solution: it is found by block principal pivoting from the wheels b says are violated (every
    violated index flipped at once; one at a time, smallest first, once that stops shrinking the violations)
    and accepted when it is strictly complementary by _MARGIN times the reference's tolerances. Otherwise (a
    semi-definite A: dependent ground normals, several solutions) the reference's own path (Murty's, from the
    empty set, flipping the smallest violated index) is followed while every sign tested is more than _MARGIN
    times its tolerance from zero (the reference's A carries rounding of that order at exact zeros, e.g. two
    wheels with the same ground normal). None (the reference decides) when neither holds."""
    Al, bl = A.tolist(), b.tolist()
    m = len(bl)
    pd = _positive_definite(A) is not None
    solve = _solve_spd if pd else _solve_small
    scale = max(max(abs(v) for v in bl), 1e-300)
    tw = _LCP_TOL * scale
    tp = 10.0 * tw
    S = [v < 0 for v in bl] if pd else [False] * m
    best, stalled = m + 1, 0
    for _ in range(4 * 2 ** min(m, 10)):
        idx = [i for i in range(m) if S[i]]
        p = [0.0] * m
        if idx:
            x = solve([[Al[i][j] for j in idx] for i in idx], [-bl[i] for i in idx])
            if x is None:
                return None
            for i, v in zip(idx, x):
                p[i] = v
        bad, margin = [], True
        for i in range(m):
            if S[i]:
                v, t = p[i], tp
            else:
                row = Al[i]
                v, t = bl[i] + sum(row[j] * p[j] for j in idx), tw
            if v < -_MARGIN * t:
                bad.append(i)
                if not pd:
                    break
            elif v < -t / _MARGIN or (not pd and v <= _MARGIN * t):
                return None                            # too close to the tolerance to decide as the reference
            else:                                      # (semi-definite A: a zero may be its rounding's sign)
                margin = margin and v > _MARGIN * t
        if not bad:
            return np.array(S) if margin else None
        if pd and stalled < 3:
            stalled = stalled + 1 if len(bad) >= best else 0
            best = min(best, len(bad))
            for i in bad:
                S[i] = not S[i]
        else:
            S[bad[0]] = not S[bad[0]]
    return None


def _rank(sv: np.ndarray, rank_tol: float, top: float | None = None) -> int | None:
    """Number of σ_i > rank_tol·top (top: σ_max unless given), None when one is within _RANK_BAND of that
    threshold."""
    sv = sv.tolist()
    if not sv:
        return 0
    top = sv[0] if top is None else top
    if not top > 0:
        return None
    lo, hi, r = rank_tol * _RANK_BAND[0] * top, rank_tol * _RANK_BAND[1] * top, 0
    for x in sv:
        if lo < x < hi:
            return None
        r += x > hi
    return r


def _result(T: float, Tc: float, Xi: list, v_c: np.ndarray, X: np.ndarray, rank: int,
            deficient: bool = False) -> ImpactResult:
    """``impact``'s result from X = Λ M_c⁻¹ Λᵀ and M_eff (Xi, nested lists; symmetrised as there)."""
    Meff = np.array(Xi)
    if Meff.shape[0] > 2 or deficient:                 # the 1×1 and 2×2 inverses are symmetric as formed
        Meff = 0.5 * (Meff + Meff.T)
    m_app = np.array([1.0 / x if x > 0 else np.inf for x in X.diagonal().tolist()])
    return ImpactResult(t_total=T, t_c=Tc, t_a=T - Tc, m_eff=Meff, v_c=v_c, t_c_per_contact=0.5 * v_c * (Meff @ v_c),
                        m_apparent=m_app, rank_jc=rank, rank_deficient_contacts=deficient)


def _quad(Xi: list, y: np.ndarray) -> float:
    """yᵀ Xi y."""
    y = y.tolist()
    return sum(y[i] * sum(r * yj for r, yj in zip(row, y)) for i, row in enumerate(Xi))


def _evaluate_reduced(model, q, qd, beta, wheels, ground_mode, rolling, rank_tol, heading) -> Indicator | None:
    """The indicator in the mechanism's reduced coordinates, or None (then ``evaluate_reference`` decides).

    N (n×d) spans null(Γ_mech) and P (n×r) its row space (constant: one SVD per model). With M_N = Nᵀ M N =
    L_Nᵀ L_N (L_N upper), an admissible q̇ = N z has T = ½‖ζ‖², ζ = L_N z, and any rows J act on it as
    Ĵ = J N L_N⁻¹ on ζ. Then (the reference's equations, Γ_mech eliminated exactly):
      projection:  δ = P c − N M_N⁻¹ Nᵀ M P c, c = Pᵀ q̇;  q̇_adm = q̇ − δ;  removed energy ½ δᵀ M δ
      free:        X = Ĉ Ĉᵀ (= Λ M_c⁻¹ Λᵀ), M_eff = X⁻¹, T_c = ½ yᵀ M_eff y, y = Ĉ ζ (= Λ q̇_adm)
                   (``_contact_part``: by the SVD of Ĉ when X is not well conditioned)
      activity:    Ĝ⊥ = Ĝ (I − Ĉᵀ X⁻¹ Ĉ) for the wheels' ground normals, LCP A = Ĝ⊥ Ĝ⊥ᵀ, b = Ĝ⊥ ζ
      rigid:       [V; V⊥] (d×d) from the SVD of the active wheels' ground rows Ĝ_r, V (r_g×d) their row
                   basis (the repeated normal row adds no rank), C⊥ = Ĉ V⊥ᵀ, X_r = C⊥ C⊥ᵀ (= Λ M_c,r⁻¹ Λᵀ),
                   T_c = ½‖V ζ‖² + ½ y_rᵀ X_r⁻¹ y_r with y_r = C⊥ V⊥ ζ (X_r⁺ and the rank of C⊥ by
                   ``_contact_part`` when the ground rows fix some contact motion); X_r = 0 when r_g = d
    with rank(J_c) = r + the ranks above. Shares ½ v_c (M_eff v_c) with v_c = Λ q̇_adm, as ``impact``.
    Energies in J."""
    M = model.mass_matrix(q)
    if not np.isfinite(M).all():
        raise EnergyError('mass matrix has non-finite entries')
    if dpotrf(M, lower=0, clean=0)[1] != 0:            # the reference's check of M itself (EnergyError)
        raise EnergyError('mass matrix is not positive definite')
    N, P = model.mech_split(rank_tol)
    r, d = P.shape[1], N.shape[1]
    MN = N.T @ M @ N
    LN, info = dpotrf(MN, lower=0, clean=1)
    if info != 0:
        return None
    Ri, info = dtrtri(LN, lower=0)                     # L_N⁻¹ (upper triangular)
    if info != 0:
        return None
    residual = 0.0
    if r:
        Pc = P @ (P.T @ qd)
        delta = Pc - (N @ Ri) @ (Ri.T @ (N.T @ (M @ Pc)))
        residual = 0.5 * float(delta @ (M @ delta))
        qd = qd - delta
    zeta = LN @ (N.T @ qd)
    T = 0.5 * float(zeta @ zeta)
    psi = model.heading(q) if heading is None else heading
    lam, Gp = model.impact_rows(q, wheels, n_in_ros(beta, psi))
    W, s = Gp.shape[0], lam.shape[0]
    NRi = N @ Ri
    C = lam @ NRi                                      # Ĉ (s×d)
    part = _contact_part(C, zeta, float(np.abs(C).max()), rank_tol)
    if part is None or part[3]:
        return None                                    # contacts dependent through the mechanism: reference
    Xi, Tc, k, _, X = part
    v_c = lam @ qd
    free = _result(T, Tc, Xi, v_c, X, r + k)
    active = np.zeros(W, bool)
    rigid = None
    if ground_mode != 'free':
        G = (Gp.reshape(3 * W, -1) @ NRi).reshape(W, 3, -1)     # ground rows x, y, z of every wheel (Ĝ)
        Gz = G[:, 2]
        Gperp = Gz - ((Gz @ C.T) @ np.array(Xi)) @ C
        active = _lcp_active(Gperp @ Gperp.T, Gperp @ zeta)
        if active is None:
            return None
        if not active.any():
            rigid = _result(T, free.t_c, Xi, v_c.copy(), X, r + s)
        else:
            Gr = (G[active] if rolling else G[active][:, 2]).reshape(-1, d)
            _, sv, vt, info = dgesdd(Gr, compute_uv=1, full_matrices=1)
            if info != 0:
                return None
            rg = _rank(sv, rank_tol)
            if rg is None or sv[rg - 1] * _AMPLIFICATION < sv[0]:
                return None                            # a near-dependent active set: rounding × σ_max/σ_min
            if rg >= d:                                # the active ground rows lock every admissible motion
                rigid = _result(T, T, np.zeros((s, s)).tolist(), v_c, np.zeros((s, s)), r + d)
                rigid.rank_deficient_contacts = True
            else:
                V, Vn = vt[:rg], vt[rg:]
                part = _contact_part(C @ Vn.T, Vn @ zeta, max(float(sv[0]), float(np.abs(C).max())), rank_tol)
                if part is None:
                    return None
                Xri, Tc, k, deficient, Xr = part
                w = V @ zeta
                rigid = _result(T, 0.5 * float(w @ w) + Tc, Xri, v_c, Xr, r + rg + k, deficient)
    if ground_mode == 'rigid':
        free = None
    return Indicator(beta=beta, wheels=list(wheels), free=free, rigid=rigid, ground_active=active,
                     residual_energy=residual, ground_mode=ground_mode, warnings=_warnings(beta, v_c))
