"""Offline identification runs on a record: force- or energy-based UKF, sample ordering, epochs, staged
estimation (friction first, then inertia, then all; spec sec. 5.4), flags and warnings.

Defaults [A] (spec 4.3, 5.5): alpha = 1e-3, beta = 2, kappa = 0, theta_0 = 0.8 theta_true when a truth is
given, P_0 = diag((0.5 theta_0)^2), R^e = (0.1 N)^2 I, lower bounds 0 for masses and inertias.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contact_dynamics_common.signal import zero_phase_lowpass

from . import dynamics as D
from .geometry import Machine
from .identifiability import InformationMatrix, flags as make_flags
from .records import Record
from .ukf import ParameterUKF

RATIO_ONLY = 'ratio_only'
SCALE_WARNING = ('scale ambiguity: the measured actuator forces are ~0 (free fall?), so Y theta = 0 is '
                 'homogeneous and only parameter ratios are identifiable; absolute values are not')


@dataclass
class Result:
    names: tuple
    theta: np.ndarray
    std: np.ndarray
    P: np.ndarray
    flags: list
    excitation: np.ndarray
    counts: dict
    warnings: list = field(default_factory=list)
    history_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    history: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    history_std: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    nis: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def error_pct(self, truth) -> np.ndarray:
        return 100.0 * (self.theta / np.asarray(truth, float) - 1.0)

    def value(self, name: str) -> float:
        return float(self.theta[self.names.index(name)])


def lowpass_rows(a: np.ndarray, fs: float, cutoff_hz: float, order: int = 8) -> np.ndarray:
    """contact_dynamics_common.signal.zero_phase_lowpass along axis 0 (time) instead of the last axis
    (offline; the dissertation's 10 Hz / order 8)."""
    return np.moveaxis(zero_phase_lowpass(np.moveaxis(a, 0, -1), fs, cutoff_hz, order), -1, 0)


def names_for(friction: bool) -> tuple:
    return D.ALL_NAMES if friction else D.BASE_NAMES


def sample_order(n: int, order: str = 'original', spread: int = 10, seed: int = 0) -> np.ndarray:
    """'original' 0..n-1; 'spread' every spread-th sample then the next offset (1, 11, 21, ..., 2, 12, ...);
    'shuffle' a random permutation."""
    if order == 'original':
        return np.arange(n)
    if order == 'spread':
        return np.concatenate([np.arange(o, n, spread) for o in range(spread)])
    if order == 'shuffle':
        return np.random.default_rng(seed).permutation(n)
    raise ValueError(f"order '{order}' is not one of original, spread, shuffle")


def make_filter(theta0, P0=None, R_e=0.01, m: int = 6, alpha=1e-3, beta=2.0, kappa=0.0, **kw) -> ParameterUKF:
    theta0 = np.asarray(theta0, float)
    P0 = (0.5 * np.abs(theta0)) ** 2 if P0 is None else P0
    R = np.full(m, R_e) if np.ndim(R_e) == 0 else R_e
    return ParameterUKF(theta0, P0, R, alpha=alpha, beta=beta, kappa=kappa, lower=np.zeros(len(theta0)), **kw)


def identify(m: Machine, rec: Record, *, friction: bool = False, friction_model: str = 'continuous',
             theta0=None, rel0: float = 0.8, P0=None, R_e: float = 0.01, model: str = 'force', window: int = 1,
             order: str = 'original', spread: int = 10, epochs: int = 1, seed: int = 0, history_every: int = 10,
             active=None, ukf: ParameterUKF | None = None, lowpass_hz: float | None = None, state_noise=None,
             **ukf_kw) -> Result:
    """Run the parameter UKF over a record and return the estimate with flags and history.

    ``lowpass_hz``: zero-phase Butterworth (order 8) applied alike to the regressor rows and the measured
    forces (the model is linear, so filtered F = filtered(Y) theta holds exactly without noise).
    ``state_noise``: (3, 6) standard deviations of the (q, qd, qdd) noise (e.g. ``eiv.uniform_noise_std``).
    Force model only: each sample's measurement covariance becomes the errors-in-variables covariance
    R_k = R_e I + G_k diag(sigma^2) G_k^T (:mod:`pkm_identification.eiv`, G_k at theta_0), with R_e the
    force-measurement variance. Not combined with ``lowpass_hz`` (R_k assumes white, unfiltered state noise).
    """
    names = names_for(friction)
    if theta0 is None:
        fr = rec.friction if rec.friction is not None else np.ones(12)
        truth = rec.theta8 if not friction else np.concatenate([rec.theta8, fr])
        theta0 = rel0 * truth
    if model == 'force':
        X = D.regressor(m, rec.q, rec.qd, rec.qdd, friction=friction, friction_model=friction_model)
        Z = rec.F
    elif model == 'energy':
        X, Z = D.energy_regressor(m, rec.q, rec.qd, rec.L, rec.F, window=window, friction=friction,
                                  friction_model=friction_model)
    else:
        raise ValueError(f"model '{model}' is not force or energy")
    Rk = None
    if state_noise is not None:
        if model != 'force' or lowpass_hz:
            raise ValueError('state_noise weighting needs the force model without lowpass_hz')
        from .eiv import equation_error_cov
        Rk = equation_error_cov(m, theta0, rec.q, rec.qd, rec.qdd, state_noise, force_var=R_e, friction=friction,
                                friction_model=friction_model)
    if lowpass_hz:
        fs = 1.0 / float(rec.t[1] - rec.t[0]) / (window if model == 'energy' else 1)
        X, Z = lowpass_rows(X, fs, lowpass_hz), lowpass_rows(Z, fs, lowpass_hz)
    f = ukf or make_filter(theta0, P0, R_e, m=Z.shape[1], **ukf_kw)
    if active is not None:
        f.set_active(active)
    info = InformationMatrix(len(names), f.R)
    info.add(X, Z, np.asarray(theta0, float))
    hist_t, hist, hist_s = [], [], []
    step = 0
    dt = (rec.t[1] - rec.t[0]) * (window if model == 'energy' else 1)
    for ep in range(epochs):
        for k in sample_order(len(Z), order, spread, seed + ep):
            f.update(Z[k], X[k], None if Rk is None else Rk[k])
            step += 1
            if history_every and step % history_every == 0:
                hist_t.append(step * dt)
                hist.append(f.theta[0].copy())
                hist_s.append(f.std[0].copy())
    return finish(names, f, info, np.asarray(hist_t), np.asarray(hist), np.asarray(hist_s))


def finish(names, f: ParameterUKF, info: InformationMatrix, hist_t=None, hist=None, hist_s=None) -> Result:
    std, std0 = f.std[0], np.sqrt(np.diagonal(f.P0[0]))
    excitation = np.clip(1.0 - (std / np.maximum(std0, 1e-300)) ** 2, 0.0, 1.0)
    fl = make_flags(names, f.theta[0], std, excitation, f.active)
    warnings = []
    if info.scale_ambiguous():
        warnings.append(SCALE_WARNING)
        fl = [RATIO_ONLY if x in ('identified', 'converging') else x for x in fl]
    return Result(tuple(names), f.theta[0].copy(), std, f.P[0].copy(), fl, excitation, dict(f.counts), warnings,
                  np.zeros(0) if hist_t is None else hist_t, np.zeros((0, len(names))) if hist is None else hist,
                  np.zeros((0, len(names))) if hist_s is None else hist_s, f.nis.copy())


def staged(m: Machine, rec: Record, theta0, *, friction_model: str = 'continuous', R_e: float = 1.0,
           P0=None, epochs_per_stage: int = 1, **kw) -> tuple[Result, list[Result]]:
    """Stage 1: friction only (inertia held at theta0); stage 2: inertia only (friction from stage 1);
    stage 3: all 20 together. One UKF carries over between stages. Returns (final, per-stage results)."""
    theta0 = np.asarray(theta0, float)
    f = make_filter(theta0, P0, R_e)
    stages = []
    for active in (np.arange(8, 20), np.arange(8), np.arange(20)):
        res = identify(m, rec, friction=True, friction_model=friction_model, theta0=theta0, ukf=f, active=active,
                       epochs=epochs_per_stage, R_e=R_e, **kw)
        stages.append(res)
    return stages[-1], stages


def converged(res: Result, tail: int = 100) -> tuple[bool, str]:
    """trust.convergence over the last ``tail`` history points of the excited, active parameters."""
    from contact_dynamics_common import trust
    judged = [f in ('identified', 'converging') for f in res.flags]
    if not any(judged) or len(res.history) < 8:
        return False, 'nothing excited or too short a history'
    c = trust.convergence(res.names, res.history[-tail:], res.history_std[-tail:], check=judged)
    return c.ok, c.reason


def cross_start(m: Machine, records: dict, theta0, start: str = 'x', **kw) -> dict:
    """The dissertation's multi-trajectory workflow (ch. 5): a staged run on ``records[start]`` from theta0, then
    a staged run on every other record started from that estimate. Returns {name: (Result, converged, reason)}."""
    first, _ = staged(m, records[start], theta0, **kw)
    out = {start: (first, *converged(first))}
    for name, rec in records.items():
        if name != start:
            res, _ = staged(m, rec, first.theta, **kw)
            out[name] = (res, *converged(res))
    return out
