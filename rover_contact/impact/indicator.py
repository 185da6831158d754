"""One impact-indicator evaluation on a 3-D rover model (spec §5.3 steps 3-6, §7.3 impact_indicator).

Pipeline: M(q) (CRBA) → project the measured q̇ onto the mechanism's admissible set (locks, differential)
in the M-metric, reporting the removed energy → Λ for the impacting wheels (n_in from β and the heading) →
T, T_c, T_a, M_eff, shares in the requested ground mode(s): ``free`` (no ground rows), ``rigid`` (4 rows
— normal, holonomic repeat, 2 no-slip — per wheel whose ground constraint the impulsive LCP finds active;
normal rows only with ``rolling=False``), ``both`` (score = the larger, conservative).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .activity import ground_activity
from .energy import DEFAULT_RANK_TOL, ImpactResult, cholesky_upper, impact, project_admissible
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


def evaluate(model, q: np.ndarray, qd: np.ndarray, beta: float, wheels: list[str], ground_mode: str = 'both',
             rolling: bool = True, rank_tol: float = DEFAULT_RANK_TOL, heading: float | None = None,
             project: bool = True) -> Indicator:
    """Impact indicator for an obstacle face at contact angle β [rad] ahead of the rover."""
    if ground_mode not in GROUND_MODES:
        raise ValueError(f"ground_mode '{ground_mode}' is not one of {', '.join(GROUND_MODES)}")
    unknown = [w for w in wheels if w not in model.wheel_names]
    if unknown or not wheels:
        raise ValueError(f"contact wheels {unknown or wheels} are not wheels of the model ({', '.join(model.wheel_names)})")
    if not np.all(np.isfinite(qd)) or not np.all(np.isfinite(q)):
        raise ValueError('configuration or velocity is not finite')
    M = model.mass_matrix(q)
    L = cholesky_upper(M)                         # one factorisation for the projection and both modes
    mech = model.mech_rows()
    residual = 0.0
    if project:
        qd, residual = project_admissible(M, mech, qd, rank_tol, L=L)
    psi = model.heading(q) if heading is None else heading
    lam = model.contact_rows(q, wheels, n_in_ros(beta, psi))
    warnings = []
    if not VALIDATED_BETA[0] - 1e-9 <= beta <= VALIDATED_BETA[1] + 1e-9:
        warnings.append(f'beta {np.rad2deg(beta):.1f} deg outside the validated range 10-90 deg')
    vc = lam @ qd
    if np.any(vc <= 0):
        warnings.append('a contact wheel is not approaching the obstacle (normal velocity <= 0)')
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
