"""13-body lumped-mass dynamics of the Stewart-Gough platform (spec sec. 3), vectorised over N samples.

Kane's equations with the partial velocities of sec. 3.2 give, per sample,
  J (F_a - F_f) = V_c^T m_p (a_c - g) + Omega_c^T (I_p^W alpha + omega x I_p^W omega)
                + sum_i [V_E,i^T m_e (a_E,i - g) + V_B,i^T m_b (a_B,i - g) + Omega_s,i^T (I_s alpha_s + w_s x I_s w_s)]
which is linear in the parameters: F_a = Y(q, qd, qdd) theta  [N]. The base (identifiable) set is
  theta = [m_e, m_b, m_p, Ixxp, Iyyp, Izzp, Ix_s = Ixxb + Ixxe, Iz_s = Izzb + Izze]   (kg, kg*m^2)
optionally followed by strut friction [fv_1, fc_1, ..., fv_6, fc_6] (N*s/m, N). ``inverse_dynamics`` is
the same model written with full inertia tensors (12-parameter form, no regressor): the check of S0d.
"""
from __future__ import annotations

import numpy as np

from .geometry import INERTIA_NAMES_12, Machine
from .kinematics import Pose, StrutMotion, pose, skew, strut_motion

BASE_NAMES = ('m_e', 'm_b', 'm_p', 'Ixxp', 'Iyyp', 'Izzp', 'Ix_s', 'Iz_s')
BASE_UNITS = ('kg', 'kg', 'kg') + ('kg*m^2',) * 5
FRICTION_NAMES = tuple(n for i in range(1, 7) for n in (f'fv_{i}', f'fc_{i}'))
FRICTION_UNITS = ('N*s/m', 'N') * 6
ALL_NAMES = BASE_NAMES + FRICTION_NAMES
ALL_UNITS = BASE_UNITS + FRICTION_UNITS
FRICTION_BAND = 0.002      # m/s, eq. 4.5


def base_from_12(theta12) -> np.ndarray:
    """12-parameter form (geometry.INERTIA_NAMES_12) -> the 8 base parameters."""
    t = dict(zip(INERTIA_NAMES_12, np.asarray(theta12, float)))
    return np.array([t['m_e'], t['m_b'], t['m_p'], t['Ixxp'], t['Iyyp'], t['Izzp'],
                     t['Ixxb'] + t['Ixxe'], t['Izzb'] + t['Izze']])


def map_12_to_8() -> np.ndarray:
    """T (8 x 12) with theta_8 = T theta_12 (Y_12 = Y_8 T)."""
    T = np.zeros((8, 12))
    idx = {n: i for i, n in enumerate(INERTIA_NAMES_12)}
    for r, n in enumerate(('m_e', 'm_b', 'm_p', 'Ixxp', 'Iyyp', 'Izzp')):
        T[r, idx[n]] = 1.0
    T[6, idx['Ixxb']] = T[6, idx['Ixxe']] = 1.0
    T[7, idx['Izzb']] = T[7, idx['Izze']] = 1.0
    return T


def strut_frames(s3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s2 = (x_W x s3)/|.|, s23 = s2 x s3 (sec. 2.1; singular only if a strut is parallel to X_W)."""
    s2 = np.cross(np.array([1.0, 0.0, 0.0]), s3)
    s2 /= np.linalg.norm(s2, axis=-1, keepdims=True)
    return s2, np.cross(s2, s3)


def _body_terms(m: Machine, p: Pose, sm: StrutMotion, g: np.ndarray):
    """Partial velocities (N,6,3,6) of E and B and the strut angular one, and body accelerations."""
    N = len(p.q)
    Vp = np.empty((N, 6, 3, 6))
    Vp[..., :3] = np.eye(3)
    Vp[..., 3:] = -np.einsum('nkij,njl->nkil', skew(p.r_pc), p.U)
    ss = p.s3[..., :, None] * p.s3[..., None, :]
    P = np.eye(3) - ss
    L = p.L[..., None, None]
    L_E = p.L - m.d_E
    V_E = np.einsum('nkij,nkjl->nkil', ss + (L_E[..., None, None] / L) * P, Vp)
    V_B = np.einsum('nkij,nkjl->nkil', (m.L_B / L) * P, Vp)
    Om_s = np.einsum('nkij,nkjl->nkil', skew(p.s3) / L, Vp)
    ws_x_s3 = np.cross(sm.w_s, p.s3)
    centrip = np.cross(sm.w_s, ws_x_s3)
    as_x_s3 = np.cross(sm.a_s, p.s3)
    a_E = (sm.Ldd[..., None] * p.s3 + 2 * sm.Ld[..., None] * ws_x_s3 + L_E[..., None] * (as_x_s3 + centrip))
    a_B = m.L_B * (as_x_s3 + centrip)
    return V_E, V_B, Om_s, a_E - g, a_B - g


def rhs_columns(m: Machine, q, qd, qdd, gravity: np.ndarray | None = None) -> tuple[np.ndarray, Pose, StrutMotion]:
    """Generalised forces per unit base parameter, (N, 6, 8), such that J (F_a - F_f) = rhs @ theta."""
    g = m.gravity if gravity is None else np.asarray(gravity, float)
    p = pose(m, q)
    sm = strut_motion(p, qd, qdd)
    qdd = np.atleast_2d(qdd)
    N = len(p.q)
    V_E, V_B, Om_s, aE, aB = _body_terms(m, p, sm, g)
    C = np.zeros((N, 6, 8))
    C[:, :, 0] = np.einsum('nkij,nki->nj', V_E, aE)
    C[:, :, 1] = np.einsum('nkij,nki->nj', V_B, aB)
    C[:, :3, 2] = qdd[:, :3] - g
    w, a = sm.omega, sm.alpha
    for j in range(3):                               # platform principal axes x_j = R e_j
        x = p.R[:, :, j]
        torque = x * np.einsum('ni,ni->n', x, a)[:, None] + np.einsum('ni,ni->n', x, w)[:, None] * np.cross(w, x)
        C[:, 3:, 3 + j] = np.einsum('nji,nj->ni', p.U, torque)
    s2, s23 = strut_frames(p.s3)
    for col, e in ((6, s2), (7, s23)):
        torque = (e * np.einsum('nki,nki->nk', e, sm.a_s)[..., None]
                  + np.einsum('nki,nki->nk', e, sm.w_s)[..., None] * np.cross(sm.w_s, e))
        C[:, :, col] = np.einsum('nkij,nki->nj', Om_s, torque)
    return C, p, sm


def friction_columns(Ld: np.ndarray, model: str = 'continuous', band: float = FRICTION_BAND) -> np.ndarray:
    """(N, 6, 12) with F_f = cols @ [fv_1, fc_1, ...] (eq. 4.5).

    Outside the band |L_dot| > band: F_f = fv L_dot + fc sign(L_dot). Inside: 'printed' F_f = (fc/band) L_dot
    (jumps by fv*band at the edge, as printed); 'continuous' F_f = (fv + fc/band) L_dot.
    """
    Ld = np.atleast_2d(Ld)
    out = np.zeros(Ld.shape + (12,))
    inside = np.abs(Ld) <= band
    k = np.arange(6)
    out[:, k, 2 * k] = np.where(inside & (model == 'printed'), 0.0, Ld)
    out[:, k, 2 * k + 1] = np.where(inside, Ld / band, np.sign(Ld))
    return out


def regressor(m: Machine, q, qd, qdd, friction: bool = False, friction_model: str = 'continuous',
              gravity: np.ndarray | None = None) -> np.ndarray:
    """Y (N, 6, 8 or 20) with F_a = Y theta [N]."""
    C, p, sm = rhs_columns(m, q, qd, qdd, gravity)
    Y = np.linalg.solve(p.J, C)
    if friction:
        Y = np.concatenate([Y, friction_columns(sm.Ld, friction_model)], axis=2)
    return Y


def inverse_dynamics(m: Machine, theta12, q, qd, qdd, friction=None, friction_model: str = 'continuous',
                     gravity: np.ndarray | None = None) -> np.ndarray:
    """Actuator forces F_a (N, 6) [N] from the full-tensor model (12 inertial parameters, sec. 3.3)."""
    t = dict(zip(INERTIA_NAMES_12, np.asarray(theta12, float)))
    g = m.gravity if gravity is None else np.asarray(gravity, float)
    p = pose(m, q)
    sm = strut_motion(p, qd, qdd)
    qdd = np.atleast_2d(qdd)
    V_E, V_B, Om_s, aE, aB = _body_terms(m, p, sm, g)
    rhs = t['m_e'] * np.einsum('nkij,nki->nj', V_E, aE) + t['m_b'] * np.einsum('nkij,nki->nj', V_B, aB)
    rhs[:, :3] += t['m_p'] * (qdd[:, :3] - g)
    Ip = np.einsum('nij,j,nkj->nik', p.R, [t['Ixxp'], t['Iyyp'], t['Izzp']], p.R)
    w, a = sm.omega, sm.alpha
    torque_p = np.einsum('nij,nj->ni', Ip, a) + np.cross(w, np.einsum('nij,nj->ni', Ip, w))
    rhs[:, 3:] += np.einsum('nji,nj->ni', p.U, torque_p)
    s2, s23 = strut_frames(p.s3)
    Is = ((t['Ixxb'] + t['Ixxe']) * s2[..., :, None] * s2[..., None, :]
          + (t['Iyyb'] + t['Iyye']) * p.s3[..., :, None] * p.s3[..., None, :]
          + (t['Izzb'] + t['Izze']) * s23[..., :, None] * s23[..., None, :])
    torque = np.einsum('nkij,nkj->nki', Is, sm.a_s) + np.cross(sm.w_s, np.einsum('nkij,nkj->nki', Is, sm.w_s))
    rhs += np.einsum('nkij,nki->nj', Om_s, torque)
    F = np.linalg.solve(p.J, rhs[..., None])[..., 0]
    if friction is not None:
        F += np.einsum('nkj,j->nk', friction_columns(sm.Ld, friction_model), np.asarray(friction, float))
    return F


def friction_force(Ld, friction, model: str = 'continuous') -> np.ndarray:
    return np.einsum('nkj,j->nk', friction_columns(Ld, model), np.asarray(friction, float))


# ------------------------------------------------------------------------------------------ energy

def energy_columns(m: Machine, q, qd, gravity: np.ndarray | None = None) -> np.ndarray:
    """h = T + V per unit base parameter, (N, 8) [J per unit]: h = energy_columns @ theta."""
    g = m.gravity if gravity is None else np.asarray(gravity, float)
    qd = np.atleast_2d(qd)
    p = pose(m, q)
    sm = strut_motion(p, qd, np.zeros_like(qd))
    ws_x_s3 = np.cross(sm.w_s, p.s3)
    L_E = p.L - m.d_E
    v_E = sm.Ld[..., None] * p.s3 + L_E[..., None] * ws_x_s3
    v_B = m.L_B * ws_x_s3
    r_E = m.base[None] + L_E[..., None] * p.s3
    r_B = m.base[None] + m.L_B * p.s3
    H = np.empty((len(p.q), 8))
    H[:, 0] = 0.5 * np.einsum('nki,nki->n', v_E, v_E) - np.einsum('nki,i->n', r_E, g)
    H[:, 1] = 0.5 * np.einsum('nki,nki->n', v_B, v_B) - np.einsum('nki,i->n', r_B, g)
    H[:, 2] = 0.5 * np.einsum('ni,ni->n', qd[:, :3], qd[:, :3]) - p.q[:, :3] @ g
    for j in range(3):
        H[:, 3 + j] = 0.5 * np.einsum('ni,ni->n', p.R[:, :, j], sm.omega) ** 2
    s2, s23 = strut_frames(p.s3)
    H[:, 6] = 0.5 * (np.einsum('nki,nki->nk', s2, sm.w_s) ** 2).sum(1)
    H[:, 7] = 0.5 * (np.einsum('nki,nki->nk', s23, sm.w_s) ** 2).sum(1)
    return H


def energy_regressor(m: Machine, q, qd, L, F, window: int = 1, friction: bool = False,
                     friction_model: str = 'continuous') -> tuple[np.ndarray, np.ndarray]:
    """Energy-based model over windows of ``window`` steps (sec. 3.6):
    sum_steps sum_i (F_a,i - F_f,i) dL_i = h(k+w) - h(k), with trapezoidal work.

    Returns (Phi (K, 1, n), d (K, 1)) so that d = Phi theta, one scalar measurement per window [J].
    """
    H = energy_columns(m, q, qd)
    F, L = np.atleast_2d(F), np.atleast_2d(L)
    work = (0.5 * (F[1:] + F[:-1]) * np.diff(L, axis=0)).sum(1)
    starts = np.arange(0, len(H) - window, window)
    cw = np.concatenate([[0.0], np.cumsum(work)])
    d = cw[starts + window] - cw[starts]
    Phi = H[starts + window] - H[starts]
    if friction:
        Ld = strut_motion(pose(m, q), qd, np.zeros_like(np.atleast_2d(qd))).Ld
        fc = friction_columns(Ld, friction_model)
        fw = np.einsum('nkj,nk->nj', 0.5 * (fc[1:] + fc[:-1]), np.diff(L, axis=0))
        cf = np.concatenate([np.zeros((1, 12)), np.cumsum(fw, axis=0)])
        Phi = np.concatenate([Phi, cf[starts + window] - cf[starts]], axis=1)
    return Phi[:, None, :], d[:, None]


# ------------------------------------------------------------------------------------ forward dynamics

def mass_matrix(m: Machine, theta8, q) -> np.ndarray:
    """M(q) (N, 6, 6) with T = 1/2 qd^T M qd: column j = rhs(q, 0, e_j) at g = 0."""
    q = np.atleast_2d(q)
    N = len(q)
    qq = np.repeat(q, 6, axis=0)
    E = np.tile(np.eye(6), (N, 1))
    C, _, _ = rhs_columns(m, qq, np.zeros_like(qq), E, gravity=np.zeros(3))
    return (C @ np.asarray(theta8, float)).reshape(N, 6, 6).transpose(0, 2, 1)


def forward_dynamics(m: Machine, theta8, q, qd, F_a, friction=None, friction_model: str = 'continuous') -> np.ndarray:
    """qdd from M qdd = J (F_a - F_f) - (h + Q_grav), with h + Q_grav = rhs(q, qd, 0) theta."""
    q, qd = np.atleast_2d(q), np.atleast_2d(qd)
    C, p, sm = rhs_columns(m, q, qd, np.zeros_like(qd))
    bias = C @ np.asarray(theta8, float)
    F = np.atleast_2d(F_a).astype(float)
    if friction is not None:
        F = F - friction_force(sm.Ld, friction, friction_model)
    rhs = np.einsum('nij,nj->ni', p.J, F) - bias
    return np.linalg.solve(mass_matrix(m, theta8, q), rhs[..., None])[..., 0]
