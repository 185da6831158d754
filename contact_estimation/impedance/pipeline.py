"""ImpedancePipeline: raw joint-state (and wrench) streams -> conditioned samples -> recursive segmented LS.

ROS-free and deterministic: the live node's callbacks and run-bag push the same samples, and the profile
depends only on the samples and their stamps, not on how they were batched between updates.

1. stamp gate per stream (contact_dynamics_common.stamps): zero stamps, non-finite rows and out-of-order
   samples are dropped and counted; a backward jump larger than time_jump_threshold (a looped bag) resets
   the profile;
2. x = q[joint_name] (m or rad); F = (f - force_bias) . force_direction (WrenchStamped) or
   effort_sign * effort[joint_name] (JointState effort);
3. pairing: x (wrench source) and a measured acceleration (acceleration_source=imu: sensor_msgs/Imu
   linear_acceleration . imu_axis) interpolated linearly at every force stamp between the two samples
   around it; gaps longer than sensor_timeout, or than 4 periods of that stream, are not bridged (counted
   as unpaired: a straight line across a hole is not a motion);
4. the sample period is measured on the first samples (or given), then the shared parallel filter (a
   Gaussian kernel on the real stamps, -3 dB at cutoff_frequency; :mod:`.conditioning`) gives x, v = h' * x,
   a = h'' * x (or the measured a, filtered alike) and F = h * F with one delay on every channel, plus the
   friction transient column r = h * sgn(v) - sgn(v) (Coulomb friction through the filter, exact); the
   output is delayed by two kernel half-lengths; a hole (> 4 periods) restarts the kernels (no filter or
   derivative state across it);
5. the white noise of x (4th differences) and the kernels' gains give the errors-in-variables term; a
   second conditioner at 0.6 x cutoff_frequency feeds a second recursive fit whose move is the
   conditioning term of the covariance;
6. every sample with |v| > v_min inside the edges updates the RLS of its (segment, direction) bin.

Tick-split independence (issue 15): the samples go through steps 3-6 in *data-time blocks*, never in the
blocks a timer tick happened to collect. The blocks end at fixed boundaries of the data clock, the multiples
of ``block_ns`` = 1 / publish_rate in epoch nanoseconds. The force samples of [B_(k-1), B_k) are paired,
conditioned and fitted as one block, once every stream has delivered a sample at or after B_k (in-order
streams: the block is complete). A step therefore processes zero or more whole blocks. Every later operation
sees the same arrays whatever the tick split was: the pairing interpolation, both kernels, the noise tracker,
both RLS fits and the profile. So the estimate at a data stamp is the same to the last bit live, chunked and
in run-bag. A block that is still incomplete when the input stops is fitted by a *flush*: by
``step(flush=True)``, or on its own when a step finds no new sample on any input (run-bag: the tick after the
end of the bag). The live node flushes only when its input has ended: the sim-time drain, or on the wall
clock two ticks and 0.5 s without a sample (node.py). A flush while data is still arriving would put one
extra block boundary into the stream, and only round-off changes after it. A pause in a bag's data longer
than a tick is such a case: run-bag flushes there and the live node does not.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.signal.conditioning import (FastCausalKernel, bridge_gaps, cutoff_for_width,
                                                         width_for_cutoff)
from contact_dynamics_common.stamps import StampGate

from .conditioning import BRIDGE_WIDTHS, GAP_PERIODS, column_noise_variance, residual_correlation, sign_held
from .recursive import RecursiveSegmentedLS
from .segmented import ImpedanceProfile, uniform_edges

_PERIOD_SAMPLES = 21
#: the second defensible cut-off (conditioning term) as a share of cutoff_frequency
ALTERNATIVE_RATIO = 0.6


def edges_from_params(p: dict) -> np.ndarray:
    if len(p['edges']) >= 2:
        e = np.asarray(p['edges'], dtype=float)
        if len(e) < 2 or np.any(np.diff(e) <= 0):
            raise ConfigError(f"parameter 'edges' must be strictly increasing with >= 2 values, "
                              f"got {p['edges']}")
        return e
    lo, hi = p['position_range']
    if not hi > lo:
        raise ConfigError(f"parameter 'position_range' must be [lo, hi] with hi > lo, "
                          f"got {p['position_range']}")
    return uniform_edges(lo, hi, p['segments'])


class StreamConditioner:
    """Streaming parallel filter (:mod:`.conditioning`): the shared Gaussian kernel (FastCausalKernel: uniform
    windows as a convolution, others on their real stamps) on (x, F[, a]) gives
    (t, x_f, v_f, a_f, F_f) ``half`` samples late; a second kernel on s = sgn(v_f) gives the friction
    transient column r = h * s - s another ``half`` samples later. Holes (> GAP_PERIODS periods) restart both
    kernels; the samples whose windows span a hole are dropped. Also tracks the white noise of x (4th
    differences of the raw stream, never across a hole) for the errors-in-variables term."""

    def __init__(self, cutoff_hz: float, rate_hz: float = 0.0, measured_acceleration: bool = False):
        self.cutoff, self.rate = float(cutoff_hz), float(rate_hz)
        self.measured = bool(measured_acceleration)
        self.width = 4 if measured_acceleration else 3          # t, x, F[, a]
        self.reset()

    def reset(self) -> None:
        self.kernels = None
        self._hold = np.zeros((0, self.width))     # samples waiting for the sample period
        self._pending = np.zeros((0, 6))           # t, x, v, a, F, s waiting for the sign kernel
        self._last_sign = 0.0
        self._raw_tail = np.zeros((0, 2))          # last 4 raw (t, x) for the noise estimate
        self._last_row = None                      # last raw row (bridging a short gap to the next block)
        self._inserted = np.zeros(0)               # stamps of bridged (synthetic) samples not yet output
        self.bridged = 0
        self._d4 = [0.0, 0]                        # sum of squared 4th differences, count
        self.measured_rate = 0.0
        self.correlation = 1.0
        self.width_s = float('nan')
        self.half = 0

    @property
    def sigma_x(self) -> float:
        """White-noise std of x (m) from the 4th differences seen so far (quantisation included)."""
        return float(np.sqrt(self._d4[0] / self._d4[1] / 70.0)) if self._d4[1] else float('nan')

    def noise_variance(self) -> np.ndarray:
        if not (self.kernels and np.isfinite(self.sigma_x)):
            return np.full(4, np.nan)
        return column_noise_variance(self.sigma_x, self.width_s, 1.0 / self.measured_rate)

    @property
    def delay_s(self) -> float:
        """Output delay: two kernel half-lengths."""
        return 2 * self.half / self.measured_rate if self.measured_rate else float('nan')

    def _noise(self, t: np.ndarray, x: np.ndarray) -> None:
        tx = np.vstack([self._raw_tail, np.column_stack([t, x])])
        self._raw_tail = tx[-4:]
        if len(tx) < 5:
            return
        d4 = np.diff(tx[:, 1], 4)
        span = tx[4:, 0] - tx[:-4, 0]
        ok = span <= (4.0 + GAP_PERIODS) / self.measured_rate
        self._d4[0] += float(np.sum(d4[ok] ** 2))
        self._d4[1] += int(ok.sum())

    def push(self, t: np.ndarray, x: np.ndarray, F: np.ndarray, a: np.ndarray | None = None
             ) -> tuple[np.ndarray, ...]:
        """t (s, increasing), x, F (, a) -> (t, x, v, a, F, r) of the samples that became complete."""
        cols = [t, x, F] + ([a] if self.measured else [])
        rows = np.column_stack(cols) if len(t) else np.zeros((0, self.width))
        empty = tuple(np.zeros(0) for _ in range(6))
        if self.kernels is None:
            self._hold = np.vstack([self._hold, rows])
            if len(self._hold) < _PERIOD_SAMPLES:
                return empty
            rate = self.rate or 1.0 / float(np.median(np.diff(self._hold[:_PERIOD_SAMPLES, 0])))
            width = width_for_cutoff(self.cutoff)
            if not width >= 2.0 / rate:
                raise ConfigError(f'cutoff_frequency {self.cutoff} Hz is too high for the {rate:.4g} Hz '
                                  f'input: the kernel needs at least 2 samples of width (cut-off <= '
                                  f'{cutoff_for_width(2.0 / rate):.4g} Hz)')
            self.measured_rate, self.width_s = rate, width
            self.kernels = [FastCausalKernel(width, 1.0 / rate, gap_periods=GAP_PERIODS, orders=o)
                            for o in ((0, 1, 2), (), ())]
            self.half = self.kernels[0].half
            self.correlation = residual_correlation(width, rate)
            rows, self._hold = self._hold, np.zeros((0, self.width))
        if not len(rows):
            return empty
        self._noise(rows[:, 0], rows[:, 1])
        rows = self._bridge(rows)
        tt, Ff, xf, vf, af = self.kernels[0](rows[:, 0], rows[:, 1], rows[:, 2])
        if self.measured:
            ta, am, *_ = self.kernels[2](rows[:, 0], rows[:, 3], rows[:, 3])
            af = am
        s = sign_held(vf, self._last_sign)
        if len(s):
            self._last_sign = float(s[-1])
        self._pending = np.vstack([self._pending, np.column_stack([tt, xf, vf, af, Ff, s])])
        if len(tt):
            t2, hs, *_ = self.kernels[1](tt, s, s)
        else:
            t2, hs = np.zeros(0), np.zeros(0)
        if not len(t2):
            return empty
        pend = self._pending
        i = np.searchsorted(pend[:, 0], t2)
        out = pend[i]
        self._pending = pend[np.searchsorted(pend[:, 0], t2[-1], side='right'):]
        r = hs - out[:, 5]
        if len(self._inserted):
            real = ~np.isin(out[:, 0], self._inserted)
            self._inserted = self._inserted[self._inserted > out[-1, 0]]
            out, r = out[real], r[real]
        return out[:, 0], out[:, 1], out[:, 2], out[:, 3], out[:, 4], r

    def _bridge(self, rows: np.ndarray) -> np.ndarray:
        """Gaps of at most BRIDGE_WIDTHS kernel widths (also across blocks) filled by ``bridge_gaps``; the
        synthetic stamps are remembered and their outputs dropped (only real samples reach the fit)."""
        prev = self._last_row
        self._last_row = rows[-1].copy()
        block = rows if prev is None else np.vstack([prev[None, :], rows])
        if prev is not None and not block[1, 0] > block[0, 0]:
            block = rows
            prev = None
        tb, cb, ins = bridge_gaps(block[:, 0], block[:, 1:], 1.0 / self.measured_rate,
                                  BRIDGE_WIDTHS * self.width_s, gap_periods=GAP_PERIODS)
        if prev is not None:
            tb, cb, ins = tb[1:], cb[1:], ins[1:]
        if ins.any():
            self._inserted = np.concatenate([self._inserted, tb[ins]])
            self.bridged += int(ins.sum())
        return np.column_stack([tb, cb])


class _Track:
    """A stream sampled at other stamps by linear interpolation; keeps what brackets the next stamp. A gap
    is bridged only when it is at most ``timeout_ns`` and at most GAP_PERIODS of the stream's own period
    (measured on its first samples): interpolating across a hole would invent a straight-line motion."""

    def __init__(self):
        self.t = np.zeros(0, np.int64)
        self.y = np.zeros(0)
        self.period_ns = 0.0

    def add(self, t: np.ndarray, y: np.ndarray) -> None:
        self.t = np.concatenate([self.t, t])
        self.y = np.concatenate([self.y, y])
        if not self.period_ns and len(self.t) >= _PERIOD_SAMPLES:
            self.period_ns = float(np.median(np.diff(self.t[:_PERIOD_SAMPLES])))

    def at(self, t: np.ndarray, timeout_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """Values at stamps inside [t[0], t[-1]] of this track, and whether the gap around each is bridged."""
        pt = self.t
        ref = int(pt[0])
        y = np.interp((t - ref).astype(float), (pt - ref).astype(float), self.y)
        if len(pt) == 1:
            return y, pt[0] == t
        i = np.searchsorted(pt, t, side='left')
        k = np.clip(i, 1, len(pt) - 1)
        exact = pt[np.minimum(i, len(pt) - 1)] == t
        limit = min(timeout_ns, GAP_PERIODS * self.period_ns) if self.period_ns else timeout_ns
        return y, exact | ((pt[k] - pt[k - 1]) <= limit)

    def trim(self, t_used: int, cap: int) -> None:
        keep_from = max(int(np.searchsorted(self.t, t_used, side='right')) - 1, 0, len(self.t) - cap)
        self.t, self.y = self.t[keep_from:], self.y[keep_from:]


class ImpedancePipeline:
    """Buffers, pairing, conditioning and the recursive profile of one 1-DOF joint (module docstring)."""

    def __init__(self, params: dict):
        p = self.params = params
        if p.get('profile_mode', 'auto') == 'quasi_static':
            raise ConfigError("parameter 'profile_mode': quasi_static is a batch mode (contact-dynamics "
                              'impedance-profile); the online profiler fits the dynamic model: use auto or '
                              'dynamic')
        self.edges = edges_from_params(p)
        self.joint_name = p['joint_name']
        self.force_source = p['force_source']
        self.force_dir = np.asarray(p['force_direction'], dtype=float)
        self.force_bias = np.asarray(p['force_bias'], dtype=float)
        self.effort_sign = float(p['effort_sign'])
        self.timeout_ns = int(p['sensor_timeout'] * 1e9)
        cap = p['buffer_capacity']
        self.joint_buffer = RingBuffer(cap, 2)          # position, effort
        self.wrench_buffer = RingBuffer(cap, 3)
        self.joint_gate = StampGate(p['time_jump_threshold'])
        self.wrench_gate = StampGate(p['time_jump_threshold'])
        self.rls = RecursiveSegmentedLS(self.edges, p['forgetting_factor'], p['initial_covariance'],
                                        p['min_velocity'], p['min_samples'], p['min_unique_fraction'],
                                        p['max_condition'])
        self.imu = p['acceleration_source'] == 'imu'
        self.imu_axis = np.asarray(p['imu_axis'], dtype=float)
        self.imu_buffer = RingBuffer(cap, 3)
        self.imu_gate = StampGate(p['time_jump_threshold'])
        self.conditioner = StreamConditioner(p['cutoff_frequency'], p['sample_rate'],
                                             measured_acceleration=self.imu)
        # the conditioning term: the same fit on the stream conditioned at the second defensible cut-off
        self.alt_conditioner = StreamConditioner(ALTERNATIVE_RATIO * p['cutoff_frequency'], p['sample_rate'],
                                                 measured_acceleration=self.imu)
        self.alt_rls = RecursiveSegmentedLS(self.edges, p['forgetting_factor'], p['initial_covariance'],
                                            p['min_velocity'], p['min_samples'], p['min_unique_fraction'],
                                            p['max_condition'], hac=False)      # only its estimates are used
        self.block_ns = max(int(round(1e9 / p['publish_rate'])), 1)     # data-time block (module docstring)
        self.counts: Counter = Counter()
        self.last_error = ''
        self.wrench_frame = ''
        self._names = None
        self._idx = None
        self._reset_state()

    def _reset_state(self) -> None:
        self.rls.reset()
        self.conditioner.reset()
        self.alt_rls.reset()
        self.alt_conditioner.reset()
        self.pos = _Track()                     # joint positions (force_source=wrench)
        self.acc = _Track()                     # IMU accelerations (acceleration_source=imu)
        self._r_t = np.zeros(0, np.int64)       # force samples waiting for the other streams
        self._r_f = np.zeros(0)
        self._r_x = np.zeros(0)                 # x at those stamps when known (effort), else NaN
        self._t0_ns: int | None = None
        self.newest_ns = 0
        self._last_sign = 0.0                   # sign of v of the last moving sample
        self._last_reversal = -np.inf           # time (s) of the last sign change of v
        self._boundary: int | None = None       # end (ns, data time) of the next block to fit
        self._newest_ref = -1                   # newest force stamp received (ns)

    def reset(self) -> None:
        self.joint_buffer.clear()
        self.wrench_buffer.clear()
        self.imu_buffer.clear()
        self._reset_state()
        self.joint_gate.reset()
        self.wrench_gate.reset()
        self.imu_gate.reset()
        self.counts['resets'] += 1

    # ------------------------------------------------------------------ input
    def joint_index(self, names) -> int | None:
        names = list(names)
        if names == self._names:
            return self._idx
        if not names:
            self.counts['joint_state_empty'] += 1
            return None
        if self.joint_name not in names:
            self.counts['joint_missing'] += 1
            self.last_error = f"joint '{self.joint_name}' is not in the JointState names {names}"
            return None
        self._names, self._idx = names, names.index(self.joint_name)
        return self._idx

    def push_joint_state(self, stamp_ns: int, names, position, effort=()) -> None:
        j = self.joint_index(names)
        if j is None:
            return
        if j >= len(position) or (self.force_source == 'effort' and j >= len(effort)):
            self.counts['joint_state_malformed'] += 1
            self.last_error = (f'JointState has {len(names)} names but {len(position)} positions and '
                               f'{len(effort)} efforts')
            return
        e = effort[j] if j < len(effort) else np.nan
        self.joint_buffer.append(stamp_ns, (position[j], e))

    def push_joint_columns(self, stamps_ns, names, position, effort=None) -> None:
        j = self.joint_index(names)
        if j is None:
            return
        e = effort[:, j] if effort is not None and effort.shape[1] > j else np.full(len(stamps_ns), np.nan)
        self.joint_buffer.extend(stamps_ns, np.column_stack([position[:, j], e]))

    def push_wrench(self, stamp_ns: int, fx: float, fy: float, fz: float) -> None:
        self.wrench_buffer.append(stamp_ns, (fx, fy, fz))

    def push_wrench_columns(self, stamps_ns, force) -> None:
        self.wrench_buffer.extend(stamps_ns, force)

    def push_imu(self, stamp_ns: int, ax: float, ay: float, az: float) -> None:
        self.imu_buffer.append(stamp_ns, (ax, ay, az))

    def push_imu_columns(self, stamps_ns, linear_acceleration) -> None:
        self.imu_buffer.extend(stamps_ns, linear_acceleration)

    # ------------------------------------------------------------------ processing
    def step(self, flush: bool | None = None) -> int:
        """Take everything buffered and fit the data-time blocks it completes (module docstring); returns the
        number of samples that updated the profile. ``flush``: also fit the incomplete last block; None
        (default): flush when this step received no new sample on any input (the input has stopped)."""
        js, jr = self.joint_buffer.pop_all()
        ws, wr = self.wrench_buffer.pop_all()
        ims, imr = self.imu_buffer.pop_all()
        if flush is None:
            flush = not (len(js) or len(ws) or len(ims))
        effort = self.force_source == 'effort'
        for seg in self.joint_gate.filter(js, np.isfinite(jr if effort else jr[:, :1]).all(axis=1)):
            if seg.reset_before:
                self._jump()
            t, q = js[seg.index], jr[seg.index, 0]
            if effort:
                self._reference(t, self.effort_sign * jr[seg.index, 1], q)
            else:
                self.pos.add(t, q)
        if not effort:
            for seg in self.wrench_gate.filter(ws, np.isfinite(wr).all(axis=1)):
                if seg.reset_before:
                    self._jump()
                f = (wr[seg.index] - self.force_bias) @ self.force_dir
                self._reference(ws[seg.index], f, np.full(len(seg.index), np.nan))
        if self.imu:
            for seg in self.imu_gate.filter(ims, np.isfinite(imr).all(axis=1)):
                if seg.reset_before:
                    self._jump()
                self.acc.add(ims[seg.index], imr[seg.index] @ self.imu_axis)
        used = self._blocks(flush)
        # bounded memory when a stream stops: keep at most buffer_capacity samples of each waiting
        cap = self.params['buffer_capacity']
        if len(self._r_t) > cap:
            self.counts['unpaired'] += len(self._r_t) - cap
            self._r_t, self._r_f, self._r_x = self._r_t[-cap:], self._r_f[-cap:], self._r_x[-cap:]
        for track in (self.pos, self.acc):
            if len(track.t) > cap:
                track.t, track.y = track.t[-cap:], track.y[-cap:]
        return used

    def _blocks(self, flush: bool) -> int:
        """Pair, condition and fit every complete data-time block [B - block_ns, B): complete when the force
        stream and every interpolated stream have reached B. Then, with ``flush``, what is left."""
        tracks = ([self.pos] if self.force_source == 'wrench' else []) + ([self.acc] if self.imu else [])
        used = 0
        while len(self._r_t):
            first = int(self._r_t[0])
            if self._boundary is None or first >= self._boundary:     # the block holding the next sample
                self._boundary = (first // self.block_ns + 1) * self.block_ns
            b = self._boundary
            if self._newest_ref < b or any(not len(tr.t) or int(tr.t[-1]) < b for tr in tracks):
                break
            used += self._pair(limit=b)
            self._boundary = b + self.block_ns
        if flush and len(self._r_t):
            n0 = self.counts['samples_conditioned']
            used += self._pair()
            if self.counts['samples_conditioned'] > n0:
                self.counts['flushes'] += 1        # an extra block boundary (module docstring)
        return used

    def _reference(self, t: np.ndarray, f: np.ndarray, x: np.ndarray) -> None:
        if len(t):
            self._newest_ref = max(self._newest_ref, int(t[-1]))
        self._r_t = np.concatenate([self._r_t, t])
        self._r_f = np.concatenate([self._r_f, f])
        self._r_x = np.concatenate([self._r_x, x])

    def _jump(self) -> None:
        self._reset_state()
        self.counts['time_jumps'] += 1

    def _after_reversal(self, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Mask of samples at least ``reversal_holdoff`` s after the last sign change of v: the causal filter
        delays the friction step of a reversal, so samples just after it still carry the old direction's
        friction (batching-independent: the last sign and reversal time are carried over)."""
        hold = self.params['reversal_holdoff']
        if not len(t) or hold <= 0:
            return np.ones(len(t), bool)
        sgn = np.sign(v)
        prev = np.concatenate(([self._last_sign], sgn[:-1]))
        change = (sgn != prev) & (sgn != 0) & (prev != 0)
        t_rev = np.where(change, t, -np.inf)
        t_rev[0] = max(t_rev[0], self._last_reversal)
        last = np.maximum.accumulate(t_rev)
        nz = np.flatnonzero(sgn != 0)
        if len(nz):
            self._last_sign = float(sgn[nz[-1]])
        self._last_reversal = float(last[-1])
        return (t - last) >= hold

    def _pair(self, limit: int | None = None) -> int:
        """Sample the position (wrench source) and acceleration (IMU) streams at every force stamp before
        ``limit`` (ns; None: all) they cover, then condition and update; force stamps beyond them wait, those
        before them are unpaired."""
        tracks = ([self.pos] if self.force_source == 'wrench' else []) + ([self.acc] if self.imu else [])
        rt = self._r_t
        if not len(rt) or any(not len(tr.t) for tr in tracks):
            return 0
        first = max((int(tr.t[0]) for tr in tracks), default=int(rt[0]))
        last = min((int(tr.t[-1]) for tr in tracks), default=int(rt[-1]))
        if limit is not None:
            last = min(last, limit - 1)
        n_early = int(np.searchsorted(rt, first, side='left'))
        n_ready = max(int(np.searchsorted(rt, last, side='right')), n_early)
        self.counts['unpaired'] += n_early
        t, f, x = rt[n_early:n_ready], self._r_f[n_early:n_ready], self._r_x[n_early:n_ready]
        self._r_t, self._r_f, self._r_x = rt[n_ready:], self._r_f[n_ready:], self._r_x[n_ready:]
        if not len(t):
            return 0
        ok = np.ones(len(t), bool)
        acc = None
        cap = self.params['buffer_capacity']
        if self.force_source == 'wrench':
            x, bridged = self.pos.at(t, self.timeout_ns)
            ok &= bridged
            self.pos.trim(int(t[-1]), cap)
        if self.imu:
            acc, bridged = self.acc.at(t, self.timeout_ns)
            ok &= bridged
            self.acc.trim(int(t[-1]), cap)
        self.counts['unpaired'] += int((~ok).sum())
        return self._condition(t[ok], x[ok], f[ok], acc[ok] if acc is not None else None)

    def _condition(self, stamps_ns: np.ndarray, x: np.ndarray, f: np.ndarray,
                   acc: np.ndarray | None = None) -> int:
        if not len(stamps_ns):
            return 0
        if self._t0_ns is None:
            self._t0_ns = int(stamps_ns[0])
        t = (stamps_ns - self._t0_ns) * 1e-9
        try:
            tt, xx, vv, aa, ff, rr = self.conditioner.push(t, x, f, acc)
        except ConfigError as exc:
            self.last_error = str(exc)
            self.counts['config_error'] += 1
            return 0
        ta, xa, va, aa2, fa, ra = self.alt_conditioner.push(t, x, f, acc)
        self.alt_rls.update(xa, va, aa2, fa, ta, ra)
        if len(tt):
            self.newest_ns = self._t0_ns + int(round(tt[-1] * 1e9))
        self.rls.correlation = self.conditioner.correlation
        self.rls.noise_variance = self.conditioner.noise_variance()
        keep = self._after_reversal(tt, vv)
        n = self.rls.update(xx[keep], vv[keep], aa[keep], ff[keep], tt[keep], rr[keep])
        self.counts['samples_used'] += n
        self.counts['samples_conditioned'] += len(tt)
        return n

    # ------------------------------------------------------------------ output
    def profile(self) -> ImpedanceProfile:
        return self.rls.profile(alternative=self.alt_rls)

    def status(self) -> dict:
        out = dict(self.counts)
        for name, gate in (('joint', self.joint_gate), ('wrench', self.wrench_gate), ('imu', self.imu_gate)):
            out.update({f'{name}.{k}': v for k, v in gate.counts.as_dict().items()})
        out['joint.overflowed'] = self.joint_buffer.overflowed
        out['wrench.overflowed'] = self.wrench_buffer.overflowed
        out['imu.overflowed'] = self.imu_buffer.overflowed
        out['sample_rate_hz'] = self.conditioner.measured_rate
        out['bridged_samples'] = self.conditioner.bridged
        return out
