"""Online identification pipeline of pkm_identifier, ROS-free and shared by the node and run-bag.

Per JointState sample (strut lengths L, optional velocities L_dot, actuator forces F_a):
 1. stamp gate: zero stamps, non-finite L or F, out-of-order samples are dropped and counted; a backward
    jump larger than time_jump_threshold (a looped bag) resets the identification;
 2. L_dot, L_ddot from a centred local quadratic fit over +/- derivative_half_window samples (on their real
    stamps; a gap longer than sensor_timeout restarts the window); L_dot from JointState.velocity if given;
 3. Newton forward kinematics (vectorised, warm-started) -> q; qd = J^-T L_dot; J^T qdd = c (spec sec. 2.5);
    samples with unconverged FK, L outside the stroke or |sin theta| < min_sin_theta are rejected (counted);
 4. regressor Y(q, qd, qdd) (8 or 20 columns) -> parameter UKF update per sample (every decimation-th);
    with state_noise_std.* > 0 each sample's measurement covariance is the errors-in-variables
    R_k = measurement_std^2 I + G_k diag(sigma^2) G_k^T [N^2] (pkm_identification.eiv, G_k at theta_0);
 5. running information matrix, NIS, innovations; flags, convergence (contact_dynamics_common.trust).
Samples are processed strictly in order whatever the batching between updates, so a live node and run-bag
of the same data give the same estimate.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from contact_dynamics_common import trust
from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.stamps import StampGate

from . import dynamics as D
from . import eiv
from . import kinematics as K
from .estimation import RATIO_ONLY, SCALE_WARNING
from .geometry import GeometryError, load_machine
from .identifiability import InformationMatrix, flags as make_flags
from .ukf import ParameterUKF

MODEL = 'stewart_gough_13_body_lumped_mass'


@dataclass
class PkmEstimate:
    names: tuple
    units: tuple
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    flags: list
    excitation: np.ndarray
    stamp_ns: int
    samples_used: int
    valid: bool
    status: str
    residual_rms: float
    condition_number: float
    nis_mean: float
    warnings: list = field(default_factory=list)
    predicted_stamp_ns: int = 0
    predicted_effort: np.ndarray | None = None
    lengths: np.ndarray | None = None
    active: list = field(default_factory=list)
    frozen: bool = False


class PkmPipeline:
    def __init__(self, params: dict):
        self.p = params
        try:
            self.machine = load_machine(params['machine'])
        except GeometryError as exc:
            raise ConfigError(f"parameter 'machine': {exc}") from None
        self.friction = bool(params['estimate_friction'])
        self.names = D.ALL_NAMES if self.friction else D.BASE_NAMES
        self.units = D.ALL_UNITS if self.friction else D.BASE_UNITS
        cad = D.base_from_12(self.machine.theta12()) * params['prior_scale']
        th0 = np.where(np.asarray(params['theta0']) > 0, params['theta0'], cad)
        if self.friction:
            th0 = np.concatenate([th0, params['friction0']])
        if not (th0 > 0).all():
            raise ConfigError('every initial parameter value must be > 0 (P_0 is relative to it)')
        self.theta0 = th0
        self.P0 = (params['prior_rel_std'] * th0) ** 2
        if params['active_set'] == 'friction' and not self.friction:
            raise ConfigError("active_set 'friction' needs estimate_friction: true")
        sigma = np.array([params[f'state_noise_std.{c}'] for c in ('position', 'velocity', 'acceleration')],
                         float)
        if not (sigma.shape == (3, 6) and np.isfinite(sigma).all() and (sigma >= 0).all()):
            raise ConfigError(f'state_noise_std.* must be 3 x 6 finite values >= 0, got {sigma.tolist()}')
        self.state_sigma = sigma if (sigma > 0).any() else None     # None: scalar R^e, the unweighted filter
        self.h = int(params['derivative_half_window'])
        self.buffer = RingBuffer(params['buffer_capacity'], 18)
        self.gate = StampGate(params['time_jump_threshold'])
        self.joint_names = list(params['joint_names'])
        self._index_cache: dict = {}
        self.counts = {'joint_missing': 0, 'joint_state_malformed': 0, 'rejected_kinematics': 0,
                       'window_restarts': 0, 'resets_time_jump': 0, 'samples_used': 0, 'frozen_skipped': 0}
        self.frozen = False
        self.last_error = ''
        self.reset()

    # ------------------------------------------------------------------ state
    def _make_filter(self) -> ParameterUKF:
        p = self.p
        Q = (p['process_noise_rel'] * self.theta0) ** 2
        return ParameterUKF(self.theta0, self.P0, np.full(6, p['measurement_std'] ** 2), alpha=p['alpha'],
                            beta=p['beta'], kappa=p['kappa'], lower=np.zeros(len(self.theta0)),
                            process=p['process_noise'], Q=Q, a_rm=p['a_rm'], forgetting=p['forgetting'])

    def reset(self) -> None:
        """Back to the prior: filter, information matrix, differentiation window (counters are kept)."""
        self.ukf = self._make_filter()
        self.set_active(getattr(self, '_active_preset', self.p['active_set']))
        self.info = InformationMatrix(len(self.names), self.ukf.R)
        self._win_t = np.zeros(0, np.int64)
        self._win_x = np.zeros((0, 18))
        self._next = 0                      # index in the window of the first unprocessed sample
        self._q_last = self.machine.home_q.copy()
        self._seq = 0                       # accepted-and-processed sample counter (decimation)
        self.nis = deque(maxlen=self.p['nis_window'])
        self.innov = deque(maxlen=self.p['nis_window'])
        self.history: deque = deque(maxlen=self.p['history_window'])
        self.history_std: deque = deque(maxlen=self.p['history_window'])
        self.stamp_ns = 0
        self.pred = None
        self.counts_used = 0
        self._reported_used = 0

    def set_active(self, preset_or_names) -> list[str]:
        """'inertial' | 'friction' | 'all' | a list of parameter names; returns the active names."""
        if isinstance(preset_or_names, str):
            preset = preset_or_names
            if preset == 'all':
                idx = list(range(len(self.names)))
            elif preset == 'inertial':
                idx = list(range(8))
            elif preset == 'friction':
                if not self.friction:
                    raise ValueError("preset 'friction' needs estimate_friction: true")
                idx = list(range(8, 20))
            else:
                raise ValueError(f"unknown preset '{preset}' (inertial, friction, all)")
        else:
            unknown = [n for n in preset_or_names if n not in self.names]
            if unknown or not preset_or_names:
                raise ValueError(f"unknown parameter(s) {unknown} (known: {', '.join(self.names)})"
                                 if unknown else 'name at least one parameter')
            idx = [self.names.index(n) for n in preset_or_names]
        self.ukf.set_active(np.array(idx))
        self._active_preset = preset_or_names
        return [self.names[i] for i in idx]

    # ------------------------------------------------------------------ input
    def _index(self, names) -> np.ndarray | None:
        key = tuple(names)
        idx = self._index_cache.get(key)
        if idx is None:
            pos = {n: i for i, n in enumerate(key)}
            missing = [n for n in self.joint_names if n not in pos]
            if missing:
                self.last_error = f'joint(s) {missing} not in the JointState names {list(key)}'
                self._index_cache[key] = idx = np.zeros(0, np.intp)
            else:
                self._index_cache[key] = idx = np.array([pos[n] for n in self.joint_names])
        return idx if len(idx) else None

    def push_joint_state(self, stamp_ns: int, names, position, velocity, effort) -> None:
        """One JointState message (the callback path: copy only)."""
        idx = self._index(names)
        if idx is None:
            self.counts['joint_missing'] += 1
            return
        n = len(names)
        if len(position) != n or len(effort) != n or (len(velocity) not in (0, n)):
            self.counts['joint_state_malformed'] += 1
            return
        row = np.empty(18)
        row[0:6] = np.asarray(position, float)[idx]
        row[6:12] = np.asarray(velocity, float)[idx] if len(velocity) else np.nan
        row[12:18] = np.asarray(effort, float)[idx]
        self.buffer.append(stamp_ns, row)

    def push_joint_columns(self, stamps_ns: np.ndarray, names, position, velocity, effort) -> None:
        """Bag columns (rows = messages, columns = the union of joint names, NaN where missing)."""
        idx = self._index(names)
        if idx is None:
            self.counts['joint_missing'] += len(stamps_ns)
            return
        rows = np.empty((len(stamps_ns), 18))
        rows[:, 0:6] = position[:, idx]
        rows[:, 6:12] = velocity[:, idx] if velocity is not None and velocity.size else np.nan
        rows[:, 12:18] = effort[:, idx]
        self.buffer.extend(np.asarray(stamps_ns, np.int64), rows)

    # ------------------------------------------------------------------ processing
    def step(self) -> PkmEstimate | None:
        """Process every sample that has its full differentiation window; return the estimate, or None when no
        new sample was used since the last one (the convergence history then holds one entry per update)."""
        stamps, rows = self.buffer.pop_all()
        if len(stamps):
            finite = np.isfinite(rows[:, 0:6]).all(1) & np.isfinite(rows[:, 12:18]).all(1)
            for seg in self.gate.filter(stamps, finite):
                if seg.reset_before:
                    self.counts['resets_time_jump'] += 1
                    self.reset()
                if len(seg.index):
                    self._append(stamps[seg.index], rows[seg.index])
        if self.counts_used == self._reported_used:
            return None                              # nothing new since the last estimate: publish nothing
        self._reported_used = self.counts_used
        return self.estimate()

    def _append(self, t: np.ndarray, x: np.ndarray) -> None:
        self._win_t = np.concatenate([self._win_t, t])
        self._win_x = np.concatenate([self._win_x, x])
        gap_ns = int(self.p['sensor_timeout'] * 1e9)
        gaps = np.flatnonzero(np.diff(self._win_t) > gap_ns)
        next0 = self._next
        start = 0
        for g in list(gaps) + [None]:
            end = len(self._win_t) if g is None else int(g) + 1
            self._process_range(start, end, final=g is not None)
            if g is not None:
                self.counts['window_restarts'] += int(end > next0)
                start = end
        keep = max(0, min(self._next, len(self._win_t)) - self.h)
        self._win_t, self._win_x = self._win_t[keep:], self._win_x[keep:]
        self._next -= keep

    def _process_range(self, lo: int, hi: int, final: bool) -> None:
        """Process window samples k in [max(next, lo + h), hi - h) (samples with h neighbours each side)."""
        h = self.h
        first = max(self._next, lo + h)
        last = hi - h
        if last <= first:
            if final:
                self._next = max(self._next, hi)
            return
        ks = np.arange(first, last)
        self._next = hi if final else last
        t = self._win_t
        x = self._win_x
        win = ks[:, None] + np.arange(-h, h + 1)[None, :]
        T = (t[win] - t[ks][:, None]) * 1e-9
        V = np.stack([np.ones_like(T), T, T * T], axis=2)                      # (K, w, 3)
        G = np.linalg.inv(np.swapaxes(V, 1, 2) @ V) @ np.swapaxes(V, 1, 2)      # (K, 3, w)
        L = x[ks, 0:6]
        Lw = x[win, 0:6]
        coefL = G @ Lw                                                         # (K, 3, 6)
        vel = x[ks, 6:12]
        have_v = np.isfinite(x[win, 6:12]).all(axis=(1, 2)) & bool(self.p['use_measured_velocity'])
        Ld = np.where(have_v[:, None], vel, coefL[:, 1])
        coefV = G @ np.where(np.isfinite(x[win, 6:12]), x[win, 6:12], 0.0)
        Ldd = np.where(have_v[:, None], coefV[:, 1], 2.0 * coefL[:, 2])
        F = x[ks, 12:18]
        q, ok = K.forward_kinematics(self.machine, L, q0=self._q_last)
        lo_s, hi_s = self.machine.stroke
        ok &= ((L >= lo_s) & (L <= hi_s)).all(1) & (np.abs(np.sin(q[:, 4])) >= self.p['min_sin_theta'])
        if ok.any():
            self._q_last = q[ok][-1].copy()
        self.counts['rejected_kinematics'] += int((~ok).sum())
        if not ok.any():
            return
        q, L, Ld, Ldd, F, stamps = q[ok], L[ok], Ld[ok], Ldd[ok], F[ok], t[ks][ok]
        qd, qdd = K.rates_from_struts(self.machine, q, Ld, Ldd)
        self._use_samples(q, qd, qdd, F, L, stamps)

    def _use_samples(self, q, qd, qdd, F, L, stamps) -> None:
        """Regressor and UKF updates of accepted samples: pose q, rates qd, accelerations qdd, forces F [N]."""
        Y = D.regressor(self.machine, q, qd, qdd, friction=self.friction, friction_model=self.p['friction_model'])
        good = np.isfinite(Y).all(axis=(1, 2)) & np.isfinite(F).all(1)
        self.counts['rejected_kinematics'] += int((~good).sum())
        Y, F, L, stamps = Y[good], F[good], L[good], stamps[good]
        if not len(F):
            return
        seq = self._seq + np.arange(len(F))
        self._seq += len(F)
        use = (seq % self.p['decimation']) == 0
        if self.frozen:
            self.counts['frozen_skipped'] += int(use.sum())
        else:
            Rk = None
            if self.state_sigma is not None and use.any():
                u = np.flatnonzero(good)[use]
                Rk = np.full((len(F), 6, 6), np.nan)
                Rk[use] = eiv.equation_error_cov(
                    self.machine, self.theta0, q[u], qd[u], qdd[u], self.state_sigma,
                    force_var=self.p['measurement_std'] ** 2, friction=self.friction,
                    friction_model=self.p['friction_model'])
            for k in np.flatnonzero(use):
                if self.ukf.update(F[k], Y[k], None if Rk is None else Rk[k])[0]:
                    self.nis.append(float(self.ukf.nis[0]))
                    self.innov.append(self.ukf.innovation[0].copy())
            self.info.add(Y[use], F[use], self.theta0)
        n_used = int(use.sum())
        self.counts['samples_used'] += n_used
        self.counts_used += n_used
        self.stamp_ns = int(stamps[-1])
        self.pred = (int(stamps[-1]), Y[-1], L[-1].copy())     # newest sample: feed-forward prediction

    # ------------------------------------------------------------------ output
    def estimate(self) -> PkmEstimate:
        f = self.ukf
        theta, std = f.theta[0].copy(), f.std[0].copy()
        std0 = np.sqrt(self.P0)
        excitation = np.clip(1.0 - (std / std0) ** 2, 0.0, 1.0)
        fl = make_flags(self.names, theta, std, excitation, f.active, converged_rel=self.p['converged_rel_std'])
        warnings = []
        if self.info.scale_ambiguous():
            warnings.append(SCALE_WARNING)
            fl = [RATIO_ONLY if x in ('identified', 'converging') else x for x in fl]
        self.history.append(theta)
        self.history_std.append(std)
        judged = [x in ('identified', 'converging') for x in fl]
        nis_mean = float(np.mean(self.nis)) if self.nis else float('nan')
        checks = []                                  # model adequacy first: it explains a failed convergence
        if len(self.nis) >= 10:
            checks.append(trust.nis_check(nis_mean, dof=6, n=len(self.nis)))
        if any(judged) and len(self.history) >= 8:
            checks.append(trust.convergence(self.names, np.array(self.history), np.array(self.history_std),
                                            check=judged))
        bad = trust.first_failure(checks)
        if not any(judged):
            status = 'no parameter is excited by the motion yet' if not warnings else warnings[0]
        elif len(self.history) < 8:
            status = 'not converged: too few estimates yet'
        else:
            status = bad.reason if bad is not None else (warnings[0] if warnings else 'ok')
        valid = status == 'ok'
        if not valid:                                # an untrusted estimate identifies nothing
            fl = ['converging' if x == 'identified' else x for x in fl]
        exc = np.flatnonzero(excitation > 0.19)
        cond = float('inf')
        if len(exc):
            sc = np.abs(theta[exc]) + 1e-300
            lam = np.linalg.eigvalsh(sc[:, None] * self.info.A[np.ix_(exc, exc)] * sc[None, :])
            cond = float(lam[-1] / lam[0]) if lam[0] > 0 else float('inf')
        innov = np.array(self.innov) if self.innov else np.zeros((0, 6))
        rms = float(np.sqrt((innov ** 2).mean())) if len(innov) else float('nan')
        pred_stamp, pred, lengths = (self.pred[0], self.pred[1] @ theta, self.pred[2]) if self.pred else (0, None, None)
        return PkmEstimate(self.names, self.units, theta, std, f.P[0].copy(), fl, excitation, self.stamp_ns,
                           self.counts_used, valid, status, rms, cond, nis_mean, warnings,
                           pred_stamp, pred, lengths,
                           [self.names[i] for i in np.flatnonzero(f.active)], self.frozen)

    def status(self) -> dict:
        out = {f'joint_states.{k}': v for k, v in self.gate.counts.as_dict().items()}
        out.update(self.counts)
        out.update({f'ukf.{k}': v for k, v in self.ukf.counts.items()})
        out['buffer_overflowed'] = self.buffer.overflowed
        return out
