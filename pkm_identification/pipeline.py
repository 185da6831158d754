"""Online identification pipeline of pkm_identifier, ROS-free and shared by the node and run-bag.

Per JointState sample (strut lengths L, optional velocities L_dot, actuator forces F_a):
 1. stamp gate: zero stamps, non-finite L or F, out-of-order samples are dropped and counted; a backward
    jump larger than time_jump_threshold (a looped bag) resets the identification;
 2. L_dot, L_ddot from a centred local polynomial of degree derivative_order over +/- derivative_half_window
    samples on their real stamps (signal.conditioning.local_polynomial_weights; causal with that delay); a
    window spanning a hole (an interval > 3 x its median) is skipped (counted), a gap longer than
    sensor_timeout restarts the window; L_dot from JointState.velocity if use_measured_velocity, L_ddot always
    from the positions;
 3. Newton forward kinematics (vectorised, warm-started) -> q; qd = J^-T L_dot; J^T qdd = c (spec sec. 2.5);
    samples with unconverged FK, L outside the stroke or |sin theta| < min_sin_theta are rejected (counted);
 4. regressor Y(q, qd, qdd) (26 columns built: 8 inertial, 12 friction, 6 friction-shape; 8 or 20
    estimated); parallel filtering: Y and F through the same Gaussian kernel (StreamingParallelFilter, delay ~0.94 / parallel_filter_hz s) -> parameter UKF update
    per sample (every decimation-th); with state_noise_std.* > 0 (and the filter off) each sample's
    measurement covariance is R_k = measurement_std^2 I + G_k diag(sigma^2) G_k^T (pkm_identification.eiv);
 5. block moments (pkm_identification.moments) of the filtered samples, and of an alternative chain (kernel at
    0.6 x the cut-off, L_dot from the positions) for the conditioning term; convergence snapshots every
    trust_block used samples; the estimate (``estimate``): honest covariance, identifiability against the
    model-error scale, unmodelled-friction test, one verdict (trust.verdict.judge).
Samples are processed strictly in order, in fixed blocks of update_block samples counted in the data (an
incomplete block waits for more data; the block before a gap is processed as it is), every statistic is
counted in samples, and an estimate is taken at every block boundary (``step_blocks``): a live node, a chunked
replay and run-bag of the same data run the same arithmetic on the same arrays, so they publish the same
estimates at the same data stamps, equal to the last bit, whatever the batching between updates.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import f as f_dist, t as student_t

from contact_dynamics_common import trust
from contact_dynamics_common.ros.params import ConfigError
from contact_dynamics_common.signal.conditioning import (cutoff_for_width, kernel_filter, kernel_half,
                                                         local_polynomial_weights, width_for_cutoff)
from contact_dynamics_common.signal.ringbuffer import RingBuffer
from contact_dynamics_common.signal.stamps import StampGate
from contact_dynamics_common.trust.covariance import combine
from contact_dynamics_common.trust.verdict import judge

from . import dynamics as D
from . import eiv
from . import kinematics as K
from .estimation import RATIO_ONLY, SCALE_WARNING
from .geometry import GeometryError, load_machine
from .identifiability import CONVERGING, IDENTIFIED, NOT_EXCITED, PRIOR_ONLY, InformationMatrix
from .moments import BlockMoments
from .ukf import ParameterUKF

MODEL = 'stewart_gough_13_body_lumped_mass'
#: the conditioning term's second, defensible parallel-filter cut-off, relative to parallel_filter_hz
ALTERNATIVE_RATIO = 0.6
#: columns of the block moments: 8 inertial, 12 friction (the estimator's law), 6 of a smoother Coulomb shape
#: tanh(L_dot / SHAPE_VS) per strut (the omitted-regressor test of the friction law when friction is estimated)
NCOL = 26
SHAPE_VS = 0.005


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


class StreamingParallelFilter:
    """The same Gaussian kernel (contact_dynamics_common.signal.conditioning.kernel_filter, real stamps, no
    window across a hole) on every regressor column and on the forces, streamed with a known delay of ``half``
    samples: filtered F = filtered(Y) theta holds exactly for the linear model, while the derivative noise in
    Y (blue: it grows with frequency) is removed above the cut-off. The sample period that sizes the kernel is
    the median of the first 16 intervals seen (sample-driven: the same however the stream is batched).
    ``inband_share`` = (f_c / f_Nyquist)^3: of noise with an f^2 spectrum (a once-differentiated white signal;
    the L_ddot noise of differentiated encoder lengths is bluer, f^4), the share below the cut-off relative to
    the power above it: how much of the noise the kernel removes it leaves in band (a bound)."""

    def __init__(self, cutoff_hz: float):
        self.width = width_for_cutoff(cutoff_hz)
        self.half = 0
        self.inband_share = 1.0
        self._t = np.zeros(0, np.int64)
        self._z = np.zeros((0, 0))

    def __call__(self, t_ns: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Feed rows Z (N, c) stamped t_ns; return (stamps, filtered rows, the same rows unfiltered) of the
        samples whose window is complete (earlier samples' outputs come with later calls)."""
        t = np.concatenate([self._t, t_ns])
        z = np.concatenate([self._z, Z]) if len(self._z) else np.asarray(Z, float)
        if not self.half:
            if len(t) < 17:
                self._t, self._z = t, z
                return t[:0], z[:0], z[:0]
            period = float(np.median(np.diff(t[:17]))) * 1e-9
            self.half = kernel_half(self.width, period)
            self.inband_share = min(cutoff_for_width(self.width) * 2.0 * period, 0.9) ** 3
        m = self.half
        out_t, out_z, raw = t[:0], z[:0], z[:0]
        if len(t) >= 2 * m + 1:
            ts = (t - t[0]) * 1e-9
            zf = kernel_filter(ts, z, self.width, half=m)
            sl = slice(m, len(t) - m)
            ok = np.isfinite(zf[sl]).all(axis=1)
            out_t, out_z, raw = t[sl][ok], zf[sl][ok], z[sl][ok]
        keep = min(len(t), 2 * m)
        self._t, self._z = t[len(t) - keep:], z[len(t) - keep:]
        return out_t, out_z, raw


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
        if self.state_sigma is not None and params['parallel_filter_hz'] > 0:
            raise ConfigError('state_noise_std.* (white-noise errors-in-variables weighting) needs '
                              'parallel_filter_hz: 0 (the filter colours the noise R_k assumes white)')
        self.block = int(params['update_block'])
        self._collect: list | None = None
        self.h = int(params['derivative_half_window'])
        self.order = int(params['derivative_order'])
        if self.order >= 2 * self.h + 1:
            raise ConfigError(f"derivative_order {self.order} needs derivative_half_window >= {self.order // 2 + 1} "
                              f"(a degree-{self.order} fit needs more than {self.order} samples)")
        self.buffer = RingBuffer(params['buffer_capacity'], 18)
        self.gate = StampGate(params['time_jump_threshold'])
        self.joint_names = list(params['joint_names'])
        self._index_cache: dict = {}
        self.counts = {'joint_missing': 0, 'joint_state_malformed': 0, 'rejected_kinematics': 0,
                       'window_restarts': 0, 'hole_skipped': 0, 'resets_time_jump': 0, 'samples_used': 0,
                       'frozen_skipped': 0}
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
        # friction columns always enter the moments: the omitted-regressor test of unmodelled strut friction
        self.moments = BlockMoments(NCOL, self.p['trust_block'])
        self._n_snap = 0                    # used samples at the last convergence snapshot
        fc = self.p['parallel_filter_hz']
        self.pfilter = StreamingParallelFilter(fc) if fc > 0 else None
        self.pfilter_alt = StreamingParallelFilter(ALTERNATIVE_RATIO * fc) if fc > 0 else None
        self.moments_alt = BlockMoments(NCOL, self.p['trust_block'])
        self.noise_removed = np.zeros((NCOL, NCOL))   # weighted cross-moments of what the kernel removed
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
        """Process every complete block of update_block samples that have their full differentiation window;
        return the estimate at the last block boundary, or None when no new sample was used since the last
        one."""
        self._ingest()
        if self.counts_used == self._reported_used:
            return None                              # nothing new since the last estimate: publish nothing
        self._reported_used = self.counts_used
        return self.estimate()

    def step_blocks(self) -> list[PkmEstimate]:
        """As ``step``, but the estimate at every block boundary reached (in data order; none for a block that
        used no new sample): what the node and run-bag publish, the same list however the samples were split
        between calls."""
        self._collect = []
        try:
            self._ingest()
            out = self._collect
        finally:
            self._collect = None
        return out

    def _ingest(self) -> None:
        stamps, rows = self.buffer.pop_all()
        if len(stamps):
            finite = np.isfinite(rows[:, 0:6]).all(1) & np.isfinite(rows[:, 12:18]).all(1)
            for seg in self.gate.filter(stamps, finite):
                if seg.reset_before:
                    self.counts['resets_time_jump'] += 1
                    self.reset()
                if len(seg.index):
                    self._append(stamps[seg.index], rows[seg.index])

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
        """Process window samples k in [max(next, lo + h), hi - h) (samples with h neighbours each side) in
        blocks of update_block samples; the incomplete last block waits for more data unless the range is
        ``final`` (it ends at a gap in the data). Every vectorised step then sees the same arrays however the
        samples arrived (round-off included), and the state is observed only at block boundaries."""
        h = self.h
        first = max(self._next, lo + h)
        last = hi - h
        if last <= first:
            if final:
                self._next = max(self._next, hi)
            return
        stops = list(range(first + self.block, last + 1, self.block))
        if final and (not stops or stops[-1] < last):
            stops.append(last)
        start = first
        for stop in stops:
            self._next = stop
            self._process_block(start, stop)
            start = stop
            if self._collect is not None and self.counts_used != self._reported_used:
                self._reported_used = self.counts_used
                self._collect.append(self.estimate())
        if final:
            self._next = hi

    def _process_block(self, first: int, last: int) -> None:
        """Derivatives, kinematics and the updates of window samples k in [first, last)."""
        h = self.h
        ks = np.arange(first, last)
        t = self._win_t
        x = self._win_x
        win = ks[:, None] + np.arange(-h, h + 1)[None, :]
        T = (t[win] - t[ks][:, None]) * 1e-9
        dT = np.diff(T, axis=1)
        spans_hole = dT.max(axis=1) > 3.0 * np.median(dT, axis=1)   # no derivative across a hole in the record
        if spans_hole.any():
            self.counts['hole_skipped'] += int(spans_hole.sum())
            ks, win, T = ks[~spans_hole], win[~spans_hole], T[~spans_hole]
            if not len(ks):
                return
        G = local_polynomial_weights(T, self.order)                            # (K, 3, w): value, d/dt, d2/dt2
        L = x[ks, 0:6]
        coefL = G @ x[win, 0:6]                                                # (K, 3, 6)
        have_v = np.isfinite(x[ks, 6:12]).all(axis=1) & bool(self.p['use_measured_velocity'])
        Ld = np.where(have_v[:, None], x[ks, 6:12], coefL[:, 1])
        Ldd = coefL[:, 2]                       # always from the positions (a noisy velocity channel diverges)
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
        qd_alt = None
        if have_v.any():                             # the conditioning term's alternative: L_dot from positions
            qd_alt = K.rates_from_struts(self.machine, q, coefL[:, 1][ok], Ldd)[0]
        self._use_samples(q, qd, qdd, F, L, stamps, qd_alt)

    def _columns(self, q, qd, qdd) -> np.ndarray:
        """(N, 6, NCOL): the 20-column regressor (friction columns of the estimator's law included even when
        friction is not estimated) and tanh(L_dot / SHAPE_VS) on each strut's own row."""
        Y = D.regressor(self.machine, q, qd, qdd, friction=True, friction_model=self.p['friction_model'])
        Ld = np.einsum('nji,nj->ni', K.jacobian(self.machine, q), qd)            # L_dot = J^T qd
        S = np.zeros(Y.shape[:2] + (6,))
        S[:, np.arange(6), np.arange(6)] = np.tanh(Ld / SHAPE_VS)
        return np.concatenate([Y, S], axis=2)

    def _use_samples(self, q, qd, qdd, F, L, stamps, qd_alt=None) -> None:
        """Regressor and UKF updates of accepted samples: pose q, rates qd, accelerations qdd, forces F [N].
        The 20-column regressor (strut friction columns included even when friction is not estimated: the
        omitted-regressor test) goes into the block moments with the weight the UKF gives each sample.
        The alternative chain (kernel at alternative_ratio x the cut-off; L_dot from the positions when the
        measured velocity is used: ``qd_alt``) feeds the second moments of the conditioning term."""
        Y20 = self._columns(q, qd, qdd)
        good = np.isfinite(Y20).all(axis=(1, 2)) & np.isfinite(F).all(1)
        self.counts['rejected_kinematics'] += int((~good).sum())
        Y20, F, L, stamps = Y20[good], F[good], L[good], stamps[good]
        if not len(F):
            return
        if self.pfilter_alt is not None and not self.frozen:
            Ya = Y20 if qd_alt is None else self._columns(q[good], qd_alt[good], qdd[good])
            _, Za, _ = self.pfilter_alt(stamps, np.concatenate([Ya.reshape(len(F), -1), F], axis=1))
            if len(Za):
                self.moments_alt.add(Za[:, :6 * NCOL].reshape(-1, 6, NCOL), Za[:, 6 * NCOL:],
                                     np.linalg.inv(self.ukf.R))
        n = len(self.names)
        self.stamp_ns = int(stamps[-1])
        self.pred = (int(stamps[-1]), Y20[-1, :, :n], L[-1].copy())     # newest sample: feed-forward prediction
        if self.pfilter is not None:                 # parallel filtering: Y and F through the same kernel
            st, Z, Zraw = self.pfilter(stamps, np.concatenate([Y20.reshape(len(F), -1), F], axis=1))
            Y20, F = Z[:, :6 * NCOL].reshape(-1, 6, NCOL), Z[:, 6 * NCOL:]
            if not len(F):
                return
            hp = Zraw[:, :6 * NCOL].reshape(-1, 6, NCOL) - Y20    # what the kernel removed from each column
        Y = Y20[:, :, :n]
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
            every = self.p['trust_block']
            for k in np.flatnonzero(use):
                if self.ukf.update(F[k], Y[k], None if Rk is None else Rk[k])[0]:
                    self.nis.append(float(self.ukf.nis[0]))
                    self.innov.append(self.ukf.innovation[0].copy())
                self._n_snap += 1
                if self._n_snap == every:            # convergence snapshot: every trust_block used samples
                    self._n_snap = 0
                    self.history.append(self.ukf.theta[0].copy())
                    self.history_std.append(self.ukf.std[0].copy())
            self.info.add(Y[use], F[use], self.theta0)
            W = np.linalg.inv(Rk[use]) if Rk is not None else np.linalg.inv(self.ukf.R)
            self.moments.add(Y20[use], F[use], W)
            if self.pfilter is not None:
                self.noise_removed += np.einsum('nki,kl,nlj->ij', hp[use], W, hp[use])
        n_used = int(use.sum())
        self.counts['samples_used'] += n_used
        self.counts_used += n_used

    # ------------------------------------------------------------------ output
    def _honest(self, theta_f: np.ndarray, P: np.ndarray, free: np.ndarray) -> dict:
        """Values and honest covariance of the ``free`` parameters with the other active ones held at the prior.

        Values: the filter's posterior conditioned on theta_u = theta0_u (exact for the linear-Gaussian model:
        the estimate the UKF gives when those parameters never moved). Covariance (trust.covariance.combine):
        own = the conditioned filter covariance; sandwich = Lam^-1 (k M + P0^-1) Lam^-1 with Lam = P0^-1 + H
        (H = sum Y^T R^-1 Y, what the filter counts), M the batch-means HAC covariance of the scores at the
        estimate (BlockMoments.score_covariance) and k = B / (B - 1) (t_{B-3}(0.99865) / 3)^2: the mean score
        is estimated, and a sigma estimated from B blocks needs Student's t quantile for its 3-sigma claim
        (with friction estimated B / (B - p_eff), p_eff = tr(H_ee Lam^-1): the scores at a fit of up to 20
        parameters lose that many degrees of freedom; 8 parameters: the correction was measured 4 % and is
        not applied);
        bias = S P0_u S^T, S = Lam^-1 H_eu: what holding the other parameters at an uncertain prior does,
        plus the filter's path term b b^T, b = theta_e - theta_ls with theta_ls = (P0^-1 + H_ee)^-1 (P0^-1
        theta0 + c_e - H_ef theta_f) the unconstrained information-form solution whose scatter the sandwich
        measures: the filter projects its estimate onto the bounds (>= 0) at every sample, and with a
        parameter whose truth lies at the bound (a friction coefficient ~0) the correlated parameters wind
        up with the projections (up to 2.5-7 sigma in the seed-0 friction_own_law draws); ~0 when nothing
        was clipped and the process noise is 0 (the filter then is recursive least squares);
        conditioning = d d^T, d the move of the information-form estimate between the two parallel-filter
        bandwidths (and, with a measured velocity, to L_dot from the positions): derivative and
        errors-in-variables bias that no residual shows; eiv = the first-order attenuation bias
        -Lam^-1 N theta of the noise N the parallel filter leaves in the columns (the columns' noise is one
        strut-acceleration noise seen through the kinematics: strongly correlated, so N is the full
        cross-moment), from what it removed above the cut-off with an f^2 noise spectrum
        (N = removed x r / (1 - r), r = (f_c / f_Nyq)^3):
        a column that is mostly noise (the fake rotation of a pure translation) gets sigma ~ |theta| and falls
        out as not_excited."""
        n = len(self.names)
        act = self.ukf.active
        e = np.flatnonzero(free)
        u = np.flatnonzero(act & ~free)
        theta = theta_f.copy()
        own = P[np.ix_(e, e)]
        if len(u):
            K = np.linalg.solve(P[np.ix_(u, u)], P[np.ix_(u, e)]).T
            theta[e] = theta_f[e] - K @ (theta_f[u] - self.theta0[u])
            theta[u] = self.theta0[u]
            own = own - K @ P[np.ix_(u, e)]
        t20 = np.zeros(NCOL)
        t20[:n] = theta
        M, B = self.moments.score_covariance(t20)
        A, _, _, _ = self.moments.totals()
        p0i = np.diag(1.0 / self.P0[e])
        lam_inv = np.linalg.inv(p0i + A[np.ix_(e, e)])
        k = np.inf                               # M needs more blocks than parameters
        if B > len(e) + 2:
            # B / (B - 1): the mean score is estimated; (t_nu / z)^2: a sigma estimated from B blocks (nu dof
            # after the HAC lags) must still hold the z = 3 (and 2) sigma claims: Student's t quantile
            # with friction estimated (up to 20 free parameters of ~60 blocks) the scores at the fit lose
            # p_eff = tr(H_ee Lam^-1) of their B degrees of freedom: B / (B - p_eff) instead of B / (B - 1)
            p_eff = float(np.trace(A[np.ix_(e, e)] @ lam_inv)) if self.friction else 1.0
            k = B / max(B - p_eff, 1.0) * (student_t.ppf(0.99865, max(B - 3, 1)) / 3.0) ** 2
        if np.isfinite(k):
            sand = lam_inv @ (k * M[np.ix_(e, e)] + p0i) @ lam_inv
            clamp = None
            if len(u):                           # the held parameters are uncertain by their prior
                Sx = lam_inv @ A[np.ix_(e, u)]
                clamp = Sx @ np.diag(self.P0[u]) @ Sx.T
            ls = self._information_solution(self.moments, e, u)
            # the published value is the filter's, the sandwich is the scatter of the unconstrained
            # information-form solution ls: what the filter's bound projection (lower bound 0: a friction
            # coefficient whose truth is ~0 is clipped at every sample and the correlated parameters wind up
            # with it) or its process noise moved it away from ls is a bias no residual shows
            path = np.outer(theta[e] - ls, theta[e] - ls)
            clamp = path if clamp is None else clamp + path
            cond = None
            if self.pfilter_alt is not None and self.moments_alt.samples > 0:
                d = ls - self._information_solution(self.moments_alt, e, u)
                cond = np.outer(d, d)
            eiv_b = None
            if self.pfilter is not None:         # in-band noise left in each column, white-equivalent (a bound)
                r = self.pfilter.inband_share
                N = self.noise_removed[np.ix_(e, e)] * r / (1.0 - r)
                # attenuation pulls the estimate towards 0: scale the bias with the larger of estimate and prior
                eiv_b = -lam_inv @ (N @ np.maximum(np.abs(theta[e]), np.abs(self.theta0[e])))
            cov = combine(own, sandwich=sand, bias=clamp, conditioning=cond, eiv=eiv_b).covariance
        else:                                    # too few blocks to know the model-error scale: nothing is judged
            cov = np.diag(self.P0[e])            # excited yet (the filter's own P would claim too much)
        return {'theta': theta, 'cov': cov, 'e': e, 'blocks': B, 'scale_known': bool(np.isfinite(k))}

    def _information_solution(self, mom: BlockMoments, e: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Least squares with the prior on the free parameters e from the moments ``mom``; the parameters u at
        their prior, the inactive ones at the filter's values: (P0^-1 + A_ee)^-1 (P0^-1 theta0 + c_e - A_ef theta_f)."""
        n = len(self.names)
        A, c, _, _ = mom.totals()
        fixed = np.setdiff1d(np.arange(n), e)
        tf = np.where(np.isin(np.arange(n), u), self.theta0, self.ukf.theta[0])[fixed]
        rhs = c[e] + self.theta0[e] / self.P0[e] - A[np.ix_(e, fixed)] @ tf
        return np.linalg.solve(np.diag(1.0 / self.P0[e]) + A[np.ix_(e, e)], rhs)

    def _friction_check(self, theta: np.ndarray, free: np.ndarray, sigma: np.ndarray):
        """Omitted-regressor (Wald) test of the strut friction: without friction estimated, its 12 columns; with
        it, the 6 columns of a smoother Coulomb shape tanh(L_dot / SHAPE_VS) (does the estimator's friction law
        fit?). The tested columns are appended to the free parameters in the block moments; their coefficients'
        Wald statistic with the HAC covariance from B blocks, as Hotelling's T^2 against F(q, B_eff - q) (with
        friction estimated B_eff = B - (free + tested columns) + 1, the blocks' degrees of freedom left by the
        fit; otherwise B_eff = B) (alpha 1e-3), flags only when they would move a free parameter by more than
        its published (honest) sigma and more than 0.1 % of its value."""
        tested = np.arange(20, NCOL) if self.friction else np.arange(8, 20)
        nq = len(tested)
        e = np.flatnonzero(free)
        aug = np.concatenate([e, tested])
        rest = np.setdiff1d(np.arange(NCOL), aug)
        A, c, _, _ = self.moments.totals()
        t0 = np.zeros(NCOL)
        t0[:len(theta)] = theta
        p0 = np.concatenate([self.P0[e], np.full(nq, 1e12)])
        lam = np.diag(1.0 / p0) + A[np.ix_(aug, aug)]
        rhs = c[aug] - A[np.ix_(aug, rest)] @ t0[rest]
        rhs[:len(e)] += self.theta0[e] / self.P0[e]
        try:
            sol = np.linalg.solve(lam, rhs)
        except np.linalg.LinAlgError:
            return None
        t_aug = t0.copy()
        t_aug[aug] = sol
        M, B = self.moments.score_covariance(t_aug)
        # with friction estimated the block scores are taken at a fit of up to 26 columns, which uses up that
        # many of their B degrees of freedom: their covariance is scaled by B / (B_eff - 1) and T^2 referred to
        # F(q, B_eff - q), B_eff = B - len(aug) + 1 (with B / (B - 1), records obeying the estimator's own
        # friction law were refused at T^2 ~ 30-45: 4 of 6 seeds in test_pkm_acceptance_trust's plant). Without
        # friction estimated (20 columns at most) the former B - 1 is kept: its false-refusal rate measured
        # 0.6 % in the calibration, and a 1.5 s record (30 blocks) would leave too few for the test.
        b_eff = B - len(aug) + 1.0 if self.friction else float(B)
        if B <= len(aug) + 2 or b_eff <= nq + 1:
            return None
        li = np.linalg.inv(lam)
        C = li @ ((B / (b_eff - 1.0)) * M[np.ix_(aug, aug)]) @ li
        fr = sol[len(e):]
        try:
            wald = float(fr @ np.linalg.solve(C[len(e):, len(e):], fr))
        except np.linalg.LinAlgError:
            return None
        pv = float(f_dist.sf(wald * (b_eff - nq) / (nq * (b_eff - 1.0)), nq, b_eff - nq))
        # a move that matters: beyond the published sigma and beyond 0.1 % of the value (noise-free data has a
        # sigma of round-off, against which any structure is 'significant')
        shift = np.abs(sol[:len(e)] - theta[e]) / np.maximum(np.maximum(sigma[e], 1e-3 * np.abs(theta[e])), 1e-300)
        if pv < 1e-3 and shift.max() > 1.0:
            j = e[int(np.argmax(shift))]
            what = ('the strut friction law does not fit (a smoother Coulomb shape' if self.friction
                    else 'unmodelled strut friction (')
            hint = 'check the friction model' if self.friction else 'set estimate_friction: true'
            return trust.Check(False, f'{trust.MISMATCH}: {what} omitted-regressor test T2 = {wald:.3g}, '
                                      f'p = {pv:.2g}; it moves {self.names[j]} by {shift.max():.1f} sigma): {hint}',
                               'omitted_regressor', wald, pv)
        return trust.Check(True, 'ok', 'omitted_regressor', wald, pv)

    def estimate(self) -> PkmEstimate:
        """The published estimate: identifiability against the model-error scale, honest covariance, verdict.

        A parameter is excited when its honest posterior sigma (residual-based, see ``_honest``) is below
        0.9 x its prior sigma; the others are 'not_excited', held at the prior (value theta_0, sigma the
        prior's) and the excited ones are re-solved without them (iterated until no flag changes).
        Identified: excited, sigma <= converged_rel_std |value| and the verdict (trust.verdict.judge with
        the convergence over sample-driven snapshots and the unmodelled-friction test) is valid."""
        f = self.ukf
        n = len(self.names)
        theta_f, P = f.theta[0].copy(), f.P[0].copy()
        std0 = np.sqrt(self.P0)
        act = f.active.copy()
        own_exc = act & (np.diag(P) <= 0.81 * self.P0)           # the filter's own view (measurement_std)
        ambiguous = self.info.scale_ambiguous()
        free = own_exc.copy() if not ambiguous else np.zeros(n, bool)
        h = None
        scale_unknown = False
        for _ in range(n):
            if not free.any():
                h = None
                break
            h = self._honest(theta_f, P, free)
            if not h['scale_known']:                 # too few blocks: nothing is judged excited yet
                scale_unknown, free[:], h = True, False, None
                break
            sig = np.sqrt(np.diag(h['cov']))
            weak = sig >= 0.9 * std0[h['e']]
            if not weak.any():
                break
            free[h['e'][weak]] = False
        theta = np.where(act, self.theta0, theta_f)
        cov = P.copy()
        cov[np.ix_(act, act)] = np.diag(self.P0[act])
        if ambiguous:                                # free fall: only ratios; the filter's values, flagged
            theta, cov = theta_f.copy(), P.copy()
        elif h is not None:
            theta[h['e']] = h['theta'][h['e']]
            cov[np.ix_(h['e'], h['e'])] = h['cov']
        cov[np.ix_(act, ~act)] = 0.0
        cov[np.ix_(~act, act)] = 0.0
        std = np.sqrt(np.diag(cov))
        excitation = np.clip(1.0 - (std / std0) ** 2, 0.0, 1.0) * free
        fl = []
        for j in range(n):
            if not act[j]:
                fl.append(PRIOR_ONLY)
            elif ambiguous:
                fl.append(RATIO_ONLY if own_exc[j] else NOT_EXCITED)
            elif not free[j]:
                fl.append(NOT_EXCITED)
            elif std[j] <= self.p['converged_rel_std'] * abs(theta[j]):
                fl.append(IDENTIFIED)
            else:
                fl.append(CONVERGING)
        warnings = [SCALE_WARNING] if ambiguous else []
        judged = [x in (IDENTIFIED, CONVERGING) for x in fl]
        nis_mean = float(np.mean(self.nis)) if self.nis else float('nan')
        if len(self.nis) >= 10:
            c = trust.nis_check(nis_mean, dof=6, n=len(self.nis))
            if not c.ok:                             # measurement_std sets the gain only; sigma is residual-based
                warnings.append(f'measurement_std does not match the residuals ({c.reason}); the published sigma '
                                'is residual-based')
        tested = free if free.any() else own_exc
        fric = (self._friction_check(np.where(free, theta, theta_f), tested, std) if tested.any() and not ambiguous
                else None)
        checks = [fric]
        if any(judged) and len(self.history) >= 8:
            hist = np.array(self.history)
            hist_std = np.array(self.history_std)
            own = np.sqrt(np.maximum(np.diag(P), 1e-300))
            hist_std = hist_std * np.maximum(1.0, std / own)          # the honest scale of the final sigma
            checks.append(trust.convergence(self.names, hist, hist_std, check=judged))
        if ambiguous:
            prior_ok, prior_reason = False, SCALE_WARNING
        elif fric is not None and not fric.ok:       # unmodelled friction explains why nothing stands out
            prior_ok, prior_reason = False, fric.reason
        elif scale_unknown:
            prior_ok, prior_reason = False, 'not converged: too few samples for a residual-based sigma yet'
        elif not any(judged):
            prior_ok, prior_reason = False, 'no parameter is excited by the motion yet'
        elif len(self.history) < 8:
            prior_ok, prior_reason = False, 'not converged: too few estimates yet'
        else:
            prior_ok, prior_reason = True, 'ok'
        jn = [self.names[j] for j in range(n) if judged[j]]
        jidx = [j for j in range(n) if judged[j]]
        verdict = judge(jn, theta[jidx], cov[np.ix_(jidx, jidx)], flags=[fl[j] == IDENTIFIED for j in jidx],
                        required=(), positive=jn, checks=checks, prior_valid=prior_ok, prior_reason=prior_reason)
        valid, status = verdict.valid, verdict.reason
        for j, ok in zip(jidx, verdict.identified):
            if fl[j] == IDENTIFIED and (not ok or not valid):   # an untrusted estimate identifies nothing
                fl[j] = CONVERGING
        warnings.extend(verdict.notes)
        exc = np.flatnonzero(free)
        cond = float('inf')
        if len(exc):
            sc = np.abs(theta[exc]) + 1e-300
            lam = np.linalg.eigvalsh(sc[:, None] * self.info.A[np.ix_(exc, exc)] * sc[None, :])
            cond = float(lam[-1] / lam[0]) if lam[0] > 0 else float('inf')
        innov = np.array(self.innov) if self.innov else np.zeros((0, 6))
        rms = float(np.sqrt((innov ** 2).mean())) if len(innov) else float('nan')
        pred_stamp, pred, lengths = ((self.pred[0], self.pred[1] @ theta_f, self.pred[2]) if self.pred
                                     else (0, None, None))
        return PkmEstimate(self.names, self.units, theta, std, cov, fl, excitation, self.stamp_ns,
                           self.counts_used, valid, status, rms, cond, nis_mean, warnings,
                           pred_stamp, pred, lengths,
                           [self.names[i] for i in np.flatnonzero(f.active)], self.frozen)

    def status(self) -> dict:
        out = {f'joint_states.{k}': v for k, v in self.gate.counts.as_dict().items()}
        out.update(self.counts)
        out.update({f'ukf.{k}': v for k, v in self.ukf.counts.items()})
        out['buffer_overflowed'] = self.buffer.overflowed
        return out
