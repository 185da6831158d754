"""ImpedancePipeline: raw joint-state (and wrench) streams -> conditioned samples -> recursive segmented LS.

ROS-free and deterministic: the live node's callbacks and run-bag push the same samples, and the profile
depends only on the samples and their stamps, not on how they were batched between updates.

1. stamp gate per stream (contact_dynamics_common.stamps): zero stamps, non-finite rows and out-of-order
   samples are dropped and counted; a backward jump larger than time_jump_threshold (a looped bag) resets
   the profile;
2. x = q[joint_name] (m or rad); F = (f - force_bias) . force_direction (WrenchStamped) or
   effort_sign * effort[joint_name] (JointState effort);
3. pairing (wrench source): x interpolated linearly at every wrench stamp between the two position samples
   around it; gaps longer than sensor_timeout are not bridged (counted as unpaired);
4. the sample period is measured on the first samples (or given), then the same causal Butterworth
   (contact_dynamics_common.signal.CausalLowpass) runs on x and F (online nodes cannot use zero phase, B5);
   its start-up transient (5 / f_c s after a start or reset) is dropped;
5. v and a are central differences of the filtered x at the previous sample, so x, v, a and F all come out
   with the same one-sample delay (matched group delay on every channel);
6. every sample with |v| > v_min inside the edges updates the RLS of its (segment, direction) bin.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.signal import CausalLowpass
from contact_dynamics_common.stamps import StampGate

from .recursive import RecursiveSegmentedLS
from .segmented import ImpedanceProfile, uniform_edges

_PERIOD_SAMPLES = 21


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
    """Causal low-pass on (x, F) and one-sample-delayed central differences of the filtered x."""

    def __init__(self, cutoff_hz: float, order: int = 2, rate_hz: float = 0.0, settle_periods: float = 5.0):
        self.cutoff, self.order, self.rate = float(cutoff_hz), int(order), float(rate_hz)
        self.settle_periods = float(settle_periods)
        self.reset()

    def reset(self) -> None:
        self.filter: CausalLowpass | None = None
        self._hold = np.zeros((0, 3))          # (t, x, F) waiting for the sample period
        self._hist = np.zeros((0, 3))          # last two filtered (t, x, F)
        self.measured_rate = 0.0
        self.correlation = 1.0
        self._to_skip = 0                      # filter start-up samples still to drop

    def push(self, t: np.ndarray, x: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, ...]:
        """t (s, increasing), x, F -> (t, x, v, a, F) of the samples that became complete."""
        rows = np.column_stack([t, x, F]) if len(t) else np.zeros((0, 3))
        if self.filter is None:
            self._hold = np.vstack([self._hold, rows])
            if len(self._hold) < _PERIOD_SAMPLES:
                return tuple(np.zeros(0) for _ in range(5))
            rate = self.rate or 1.0 / float(np.median(np.diff(self._hold[:_PERIOD_SAMPLES, 0])))
            self.measured_rate = rate
            if not self.cutoff < 0.5 * rate:
                raise ConfigError(f'cutoff_frequency {self.cutoff} Hz is not below the Nyquist frequency '
                                  f'{0.5 * rate:.4g} Hz of the {rate:.4g} Hz input')
            self.filter = CausalLowpass(rate, self.cutoff, self.order, channels=2)
            self.correlation = rate / (2 * self.cutoff)
            self._to_skip = int(np.ceil(self.settle_periods * rate / self.cutoff))
            rows, self._hold = self._hold, np.zeros((0, 3))
        if not len(rows):
            return tuple(np.zeros(0) for _ in range(5))
        filt = np.column_stack([rows[:, 0], self.filter(rows[:, 1:])])
        allr = np.vstack([self._hist, filt])
        self._hist = allr[-2:]
        if len(allr) < 3:
            return tuple(np.zeros(0) for _ in range(5))
        t, x, f = allr[:, 0], allr[:, 1], allr[:, 2]
        dt1 = t[1:-1] - t[:-2]
        dt2 = t[2:] - t[1:-1]
        s1 = (x[1:-1] - x[:-2]) / dt1
        s2 = (x[2:] - x[1:-1]) / dt2
        v = (x[2:] - x[:-2]) / (t[2:] - t[:-2])
        a = 2.0 * (s2 - s1) / (t[2:] - t[:-2])
        k = min(self._to_skip, len(v))         # the filter's start-up transient (its state starts at rest)
        self._to_skip -= k
        return t[1:-1][k:], x[1:-1][k:], v[k:], a[k:], f[1:-1][k:]


class ImpedancePipeline:
    """Buffers, pairing, conditioning and the recursive profile of one 1-DOF joint (module docstring)."""

    def __init__(self, params: dict):
        p = self.params = params
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
        self.conditioner = StreamConditioner(p['cutoff_frequency'], p['filter_order'], p['sample_rate'])
        self.counts: Counter = Counter()
        self.last_error = ''
        self.wrench_frame = ''
        self._names = None
        self._idx = None
        self._reset_state()

    def _reset_state(self) -> None:
        self.rls.reset()
        self.conditioner.reset()
        self._pos_t = np.zeros(0, np.int64)     # retained position samples for interpolation
        self._pos_x = np.zeros(0)
        self._w_t = np.zeros(0, np.int64)       # wrench samples waiting for the position stream
        self._w_f = np.zeros(0)
        self._t0_ns: int | None = None
        self.newest_ns = 0
        self._last_sign = 0.0                   # sign of v of the last moving sample
        self._last_reversal = -np.inf           # time (s) of the last sign change of v

    def reset(self) -> None:
        self.joint_buffer.clear()
        self.wrench_buffer.clear()
        self._reset_state()
        self.joint_gate.reset()
        self.wrench_gate.reset()
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

    # ------------------------------------------------------------------ processing
    def step(self) -> int:
        """Process everything buffered; returns the number of samples that updated the profile."""
        js, jr = self.joint_buffer.pop_all()
        ws, wr = self.wrench_buffer.pop_all()
        if self.force_source == 'effort':
            used = 0
            for seg in self.joint_gate.filter(js, np.isfinite(jr).all(axis=1)):
                if seg.reset_before:
                    self._jump()
                used += self._condition(js[seg.index], jr[seg.index, 0], self.effort_sign * jr[seg.index, 1])
            return used
        for seg in self.joint_gate.filter(js, np.isfinite(jr[:, 0])):
            if seg.reset_before:
                self._jump()
            self._pos_t = np.concatenate([self._pos_t, js[seg.index]])
            self._pos_x = np.concatenate([self._pos_x, jr[seg.index, 0]])
        for seg in self.wrench_gate.filter(ws, np.isfinite(wr).all(axis=1)):
            if seg.reset_before:
                self._jump()
            self._w_t = np.concatenate([self._w_t, ws[seg.index]])
            self._w_f = np.concatenate([self._w_f, (wr[seg.index] - self.force_bias) @ self.force_dir])
        used = self._pair()
        # bounded memory when one stream stops: keep at most buffer_capacity samples of each waiting
        cap = self.params['buffer_capacity']
        if len(self._w_t) > cap:
            self.counts['unpaired'] += len(self._w_t) - cap
            self._w_t, self._w_f = self._w_t[-cap:], self._w_f[-cap:]
        if len(self._pos_t) > cap:
            self._pos_t, self._pos_x = self._pos_t[-cap:], self._pos_x[-cap:]
        return used

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

    def _pair(self) -> int:
        """Interpolate x at every wrench stamp covered by the position stream, condition, update."""
        pt, px, wt = self._pos_t, self._pos_x, self._w_t
        if not len(wt) or not len(pt):
            return 0
        early = wt < pt[0]
        n_ready = int(np.searchsorted(wt, pt[-1], side='right'))   # wt is increasing (gated)
        self.counts['unpaired'] += int(early.sum())
        sel = slice(int(early.sum()), n_ready)
        t, f = wt[sel], self._w_f[sel]
        self._w_t, self._w_f = wt[n_ready:], self._w_f[n_ready:]
        if not len(t):
            return 0
        ref = int(pt[0])
        k = np.clip(np.searchsorted(pt, t, side='left'), 1, max(len(pt) - 1, 1))
        if len(pt) > 1:
            exact = pt[np.minimum(np.searchsorted(pt, t, side='left'), len(pt) - 1)] == t
            bridged = exact | ((pt[k] - pt[k - 1]) <= self.timeout_ns)
        else:
            bridged = pt[0] == t
        self.counts['unpaired'] += int((~bridged).sum())
        x = np.interp((t - ref).astype(float), (pt - ref).astype(float), px)
        keep_from = max(int(np.searchsorted(pt, t[-1], side='right')) - 1, 0)
        self._pos_t, self._pos_x = pt[keep_from:], px[keep_from:]
        return self._condition(t[bridged], x[bridged], f[bridged])

    def _condition(self, stamps_ns: np.ndarray, x: np.ndarray, f: np.ndarray) -> int:
        if not len(stamps_ns):
            return 0
        if self._t0_ns is None:
            self._t0_ns = int(stamps_ns[0])
        t = (stamps_ns - self._t0_ns) * 1e-9
        try:
            tt, xx, vv, aa, ff = self.conditioner.push(t, x, f)
        except ConfigError as exc:
            self.last_error = str(exc)
            self.counts['config_error'] += 1
            return 0
        if len(tt):
            self.newest_ns = self._t0_ns + int(round(tt[-1] * 1e9))
        self.rls.correlation = self.conditioner.correlation
        keep = self._after_reversal(tt, vv)
        n = self.rls.update(xx[keep], vv[keep], aa[keep], ff[keep], tt[keep])
        self.counts['samples_used'] += n
        self.counts['samples_conditioned'] += len(tt)
        return n

    # ------------------------------------------------------------------ output
    def profile(self) -> ImpedanceProfile:
        return self.rls.profile()

    def status(self) -> dict:
        out = dict(self.counts)
        for name, gate in (('joint', self.joint_gate), ('wrench', self.wrench_gate)):
            out.update({f'{name}.{k}': v for k, v in gate.counts.as_dict().items()})
        out['joint.overflowed'] = self.joint_buffer.overflowed
        out['wrench.overflowed'] = self.wrench_buffer.overflowed
        out['sample_rate_hz'] = self.conditioner.measured_rate
        return out
