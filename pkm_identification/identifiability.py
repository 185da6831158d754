"""Which parameters a motion identifies (spec sec. 3.8, 6.3).

Base-parameter analysis of the stacked regressor (rank, null space) with columns scaled by the nominal
parameter magnitudes, a running information matrix A = sum Y_k^T R_e^-1 Y_k, and per-parameter flags:
  never_identifiable : zero column for every motion the model allows (structural; e.g. the axial strut
                       inertias and the B/E split in the 12-parameter form)
  not_excited        : the data carry (almost) no information on it: posterior variance with the prior,
                       (P0^-1 + A)^-1_jj >= 0.81 P0_jj (sigma >= 0.9 sigma_prior)
  identified         : excited and sigma/|theta| below the convergence threshold
  converging         : excited, not yet below the threshold
  prior_only         : held fixed (not in the active set)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IDENTIFIED, CONVERGING, NOT_EXCITED, NEVER, PRIOR_ONLY = ('identified', 'converging', 'not_excited',
                                                         'never_identifiable', 'prior_only')


@dataclass
class RankReport:
    rank: int
    singular_values: np.ndarray        # of the scaled stacked regressor
    null_space: np.ndarray             # (n, n - rank) in parameter units (columns)
    condition_number: float            # of the identifiable part
    excited: np.ndarray                # (n,) bool: not (numerically) in the null space


def stacked_rank(Y: np.ndarray, scale: np.ndarray, rtol: float = 1e-9) -> RankReport:
    """Rank and null space of Y (N, m, n) stacked to (N m, n), columns scaled by ``scale`` (nominal |theta|)."""
    A = Y.reshape(-1, Y.shape[-1]) * scale
    A = A[np.isfinite(A).all(axis=1)]
    _, s, Vt = np.linalg.svd(A, full_matrices=False) if len(A) >= A.shape[1] else np.linalg.svd(A, full_matrices=True)
    s_full = np.zeros(Y.shape[-1])
    s_full[:len(s)] = s
    tol = rtol * (s_full[0] if s_full[0] > 0 else 1.0)
    rank = int((s_full > tol).sum())
    null = (Vt[rank:].T * scale[:, None]) if rank < len(scale) else np.zeros((len(scale), 0))
    Vn = Vt[rank:]
    excited = (np.abs(Vn) < 1e-6).all(axis=0) if len(Vn) else np.ones(len(scale), bool)
    cond = float(s_full[0] / s_full[rank - 1]) if rank else float('inf')
    return RankReport(rank, s_full, null, cond, excited)


class InformationMatrix:
    """Running A = sum Y^T R^-1 Y (n x n) with the prior P0 for per-parameter excitation figures."""

    def __init__(self, n: int, R_e: np.ndarray):
        self.n = n
        R_e = np.asarray(R_e, float)
        self.Rinv = np.linalg.inv(np.diag(R_e) if R_e.ndim == 1 else R_e)
        self.A = np.zeros((n, n))
        self.samples = 0
        self.force_sq = 0.0          # sum |F|^2 of the measurements, for the free-fall (F = 0) warning
        self.model_sq = 0.0          # sum |Y theta_prior|^2

    def add(self, Y: np.ndarray, F: np.ndarray | None = None, theta_ref: np.ndarray | None = None) -> None:
        """Add samples Y (N, m, n) (rows with non-finite values are skipped)."""
        ok = np.isfinite(Y).all(axis=(1, 2))
        if F is not None:
            ok &= np.isfinite(F).all(axis=1)
        Y = Y[ok]
        self.A += np.einsum('kmi,mj,kjl->il', Y, self.Rinv, Y)
        self.samples += int(ok.sum())
        if F is not None and theta_ref is not None:
            self.force_sq += float((F[ok] ** 2).sum())
            self.model_sq += float(((Y @ theta_ref) ** 2).sum())

    def excitation(self, P0: np.ndarray) -> np.ndarray:
        """Per parameter 1 - (P0^-1 + A)^-1_jj / P0_jj in [0, 1] (0: no information, 1: fully determined)."""
        P0 = np.diag(P0) if np.ndim(P0) == 1 else np.asarray(P0)
        d = np.sqrt(np.diag(P0))
        # scale to unit prior for conditioning: (I + D A D)^-1
        M = np.eye(self.n) + (d[:, None] * self.A * d[None, :])
        post = np.linalg.inv(M)
        return np.clip(1.0 - np.diag(post), 0.0, 1.0)

    def condition(self, scale: np.ndarray) -> tuple[float, float]:
        """(condition number, smallest eigenvalue) of the scaled information matrix D A D."""
        lam = np.linalg.eigvalsh(scale[:, None] * self.A * scale[None, :])
        top = lam[-1]
        return (float(top / lam[0]) if lam[0] > 0 else float('inf')), float(lam[0])

    def scale_ambiguous(self, ratio: float = 1e-3) -> bool:
        """True when the measured forces are ~0 next to the model's (free fall, F_a = 0): Y theta = 0 is
        homogeneous, so only parameter ratios can be identified."""
        return self.samples > 0 and self.force_sq <= (ratio ** 2) * max(self.model_sq, 1e-300)


def flags(names, theta, std, excitation, active, never=None, converged_rel: float = 0.02,
          excited_min: float = 0.19) -> list[str]:
    """Per-parameter flag (see module docstring). ``excitation`` from InformationMatrix.excitation or
    1 - (sigma / sigma_prior)^2 from the filter."""
    out = []
    for j in range(len(names)):
        if never is not None and never[j]:
            out.append(NEVER)
        elif not active[j]:
            out.append(PRIOR_ONLY)
        elif excitation[j] < excited_min:
            out.append(NOT_EXCITED)
        elif std[j] <= converged_rel * max(abs(theta[j]), 1e-12):
            out.append(IDENTIFIED)
        else:
            out.append(CONVERGING)
    return out


def twelve_parameter_form(cad12, names, values, flags_) -> dict:
    """The estimate mapped back to the dissertation's 12 parameters (spec 3.8 implementation rule).

    Axial strut inertias (Iyyb, Iyye) never enter the forces and keep their CAD values; the B/E split of the
    transverse strut inertias is not observable, so Ix_s and Iz_s are split in the CAD proportion. Those are
    flagged ``never_identifiable`` (their sums carry the flag of Ix_s / Iz_s).
    """
    from .geometry import INERTIA_NAMES_12
    cad = dict(zip(INERTIA_NAMES_12, np.asarray(cad12, float)))
    v = dict(zip(names, values))
    f = dict(zip(names, flags_))
    out = {}
    for n in ('m_e', 'm_b', 'm_p', 'Ixxp', 'Iyyp', 'Izzp'):
        out[n] = {'value': float(v[n]), 'flag': f[n]}
    for axis, total in (('xx', 'Ix_s'), ('zz', 'Iz_s')):
        b, e = cad[f'I{axis}b'], cad[f'I{axis}e']
        note = f'split of {total} ({f[total]}) in the CAD proportion'
        out[f'I{axis}b'] = {'value': float(v[total] * b / (b + e)), 'flag': NEVER, 'note': note}
        out[f'I{axis}e'] = {'value': float(v[total] * e / (b + e)), 'flag': NEVER, 'note': note}
    for n in ('Iyyb', 'Iyye'):
        out[n] = {'value': float(cad[n]), 'flag': NEVER,
                  'note': 'axial strut inertia: zero regressor column (no strut spin); CAD value'}
    return {n: out[n] for n in INERTIA_NAMES_12}
