"""ContactPipeline: raw wrench and displacement streams -> synchronised contact samples -> estimators.

ROS-free and deterministic: the node's callbacks and ``run-bag`` push the same samples into it, and the
result depends only on the samples and their stamps, not on how they were batched between steps, so live
and offline runs of one bag give the same estimates. Each ``step`` works on every sample that arrived
since the last one, vectorised:

1. stamp gate per stream: zero stamps, non-finite rows and out-of-order samples are dropped and counted;
   a backward time jump (looped bag) resets the estimators;
2. normal force F_n = f . force_direction; displacement coordinate c = sign q (joint) or c = -p . n (pose);
3. pairing: c is interpolated linearly at each wrench stamp inside the displacement stream's span
   (wrench samples wait for the displacement stream; gaps longer than sensor_timeout are not bridged);
4. datum: fixed (parameter) or the coordinate at contact onset (F_n >= onset_force, re-armed when
   F_n < contact_force_threshold); deformation x = c - c_datum;
5. centred local-linear differentiation over +-M samples (contact_dynamics_common.signal), i.e. a delay
   of M samples, giving xd (and xdd for the mass model);
6. samples in contact (F_n >= contact_force_threshold, datum known) update every estimator.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.signal import half_window_samples, local_derivatives
from contact_dynamics_common.stamps import Segment, StampGate

from .estimate import ContactEstimate
from .gls import SlidingWindowGLS
from .models import get_model
from .rls import RecursiveLeastSquares
from .samples import ContactSamples

#: paired samples used to measure the sample period that fixes the differentiator's half window
_PERIOD_SAMPLES = 21


def build_estimators(params: dict, model) -> dict:
    """The configured estimators, by name, with the shared options (bounds, validity thresholds)."""
    bounds = {n: (0.0, np.inf) for n in model.names} if params['nonnegative'] else None
    common = dict(bounds=bounds, min_samples=params['min_samples'], max_condition=params['max_condition'],
                  min_excitation={'damping': params['min_excitation_velocity']})
    initial = {'stiffness': params['initial_stiffness'], 'damping': params['initial_damping'],
               'mass': params['initial_mass']}
    out = {}
    for name in params['algorithms']:
        if name == 'rls':
            out[name] = RecursiveLeastSquares(
                model, forgetting=params['rls.forgetting_factor'], initial_covariance=params['initial_covariance'],
                initial=initial, max_covariance=params['rls.max_covariance'], **common)
        elif name == 'gls':
            out[name] = SlidingWindowGLS(model, window_s=params['gls.window'], **common)
        else:
            raise ValueError(f"algorithm '{name}' cannot run online")
    return out


class ContactPipeline:
    """Buffers, synchronisation and estimators of one single-point contact (see module docstring)."""

    def __init__(self, params: dict):
        self.params = params
        self.model = get_model(params['model'])
        self.force_dir = np.asarray(params['force_direction'], dtype=np.float64)
        self.source = params['displacement_source']
        self.joint_name = params['joint_name']
        self.normal = np.asarray(params['contact_normal'], dtype=np.float64)
        sign = params['joint_sign'] if self.source == 'joint_state' else -1.0
        self._coord_sign = sign
        self._fixed_datum = sign * params['datum']
        self.onset_force = params['onset_force']
        self.threshold = params['contact_force_threshold']
        self.timeout_ns = int(params['sensor_timeout'] * 1e9)
        cap = params['buffer_capacity']
        self.wrench_buffer = RingBuffer(cap, 3)
        self.disp_buffer = RingBuffer(cap, 1 if self.source == 'joint_state' else 3)
        self.wrench_gate = StampGate(params['time_jump_threshold'])
        self.disp_gate = StampGate(params['time_jump_threshold'])
        self.estimators = build_estimators(params, self.model)
        self.counts: Counter = Counter()
        self.last_error = ''
        self.wrench_frame = ''
        self._joint_names: list | None = None
        self._joint_idx: int | None = None
        self._reset_state()

    # ---------------------------------------------------------------- input (callbacks, columns)
    def push_wrench(self, stamp_ns: int, fx: float, fy: float, fz: float) -> None:
        self.wrench_buffer.append(stamp_ns, (fx, fy, fz))

    def push_wrench_columns(self, stamps_ns: np.ndarray, force: np.ndarray) -> None:
        self.wrench_buffer.extend(stamps_ns, force)

    def push_joint_state(self, stamp_ns: int, names, positions) -> None:
        j = self._joint_index(names)
        if j is None:
            return
        if j >= len(positions):
            self.counts['joint_state_malformed'] += 1
            self.last_error = f'JointState has {len(names)} names but {len(positions)} positions'
            return
        self.disp_buffer.append(stamp_ns, positions[j])

    def push_joint_columns(self, stamps_ns: np.ndarray, names, position: np.ndarray) -> None:
        j = self._joint_index(names, count=len(stamps_ns))
        if j is not None:
            self.disp_buffer.extend(stamps_ns, position[:, j])

    def push_pose(self, stamp_ns: int, px: float, py: float, pz: float) -> None:
        self.disp_buffer.append(stamp_ns, (px, py, pz))

    def push_pose_columns(self, stamps_ns: np.ndarray, position: np.ndarray) -> None:
        self.disp_buffer.extend(stamps_ns, position)

    def _joint_index(self, names, count: int = 1) -> int | None:
        if names == self._joint_names:
            return self._joint_idx
        if len(names) == 0:
            self.counts['joint_state_empty'] += count
            return None
        try:
            idx = list(names).index(self.joint_name)
        except ValueError:
            self.counts['joint_missing'] += count
            self.last_error = f"joint '{self.joint_name}' is not in the JointState names {list(names)}"
            return None
        self._joint_names, self._joint_idx = list(names), idx
        return idx

    # ---------------------------------------------------------------- processing
    def step(self) -> list[ContactEstimate]:
        """Process everything buffered; return the current estimate of every estimator."""
        wt, wf = self.wrench_buffer.pop_all()
        dt, dc = self.disp_buffer.pop_all()
        w_segs = self.wrench_gate.filter(wt, np.isfinite(wf).all(axis=1))
        d_segs = self.disp_gate.filter(dt, np.isfinite(dc).all(axis=1))
        if any(s.reset_before for s in w_segs + d_segs):
            w_pre, w_post = _split_at_reset(w_segs)
            d_pre, d_post = _split_at_reset(d_segs)
            self._ingest(wt[w_pre], wf[w_pre], dt[d_pre], dc[d_pre])
            self.reset(gates=False)
            self.counts['resets_time_jump'] += 1
            self._ingest(wt[w_post], wf[w_post], dt[d_post], dc[d_post])
        else:
            w_idx = _indices(w_segs)
            d_idx = _indices(d_segs)
            self._ingest(wt[w_idx], wf[w_idx], dt[d_idx], dc[d_idx])
        return self.estimates()

    def estimates(self) -> list[ContactEstimate]:
        return [est.estimate() for est in self.estimators.values()]

    def reset(self, gates: bool = True) -> None:
        """Forget all samples and restart the estimators (the ~/reset service, a time jump)."""
        for est in self.estimators.values():
            est.reset()
        if gates:
            self.wrench_gate.reset()
            self.disp_gate.reset()
            self.wrench_buffer.clear()
            self.disp_buffer.clear()
        self._reset_state()

    def _reset_state(self) -> None:
        self._t0_ns: int | None = None
        self._d_t = np.zeros(0, dtype=np.int64)
        self._d_c = np.zeros(0)
        self._w_t = np.zeros(0, dtype=np.int64)
        self._w_f = np.zeros(0)
        self._tail = (np.zeros(0), np.zeros(0), np.zeros(0))
        self._half_window: int | None = None
        self._datum: float | None = None
        self.last_stamp_ns = 0

    def _ingest(self, wt, wf, dt, dc) -> None:
        if len(dt):
            coord = dc[:, 0] if dc.shape[1] == 1 else dc @ self.normal
            self._d_t = np.concatenate((self._d_t, dt))
            self._d_c = np.concatenate((self._d_c, self._coord_sign * coord))
        if len(wt):
            self._w_t = np.concatenate((self._w_t, wt))
            self._w_f = np.concatenate((self._w_f, wf @ self.force_dir))
        self._pair()

    def _pair(self) -> None:
        if len(self._d_t) == 0 or len(self._w_t) == 0:
            self._cap_wrench_queue()
            return
        ready = self._w_t <= self._d_t[-1]
        t_ns, force = self._w_t[ready], self._w_f[ready]
        self._w_t, self._w_f = self._w_t[~ready], self._w_f[~ready]
        self._cap_wrench_queue()
        k = np.searchsorted(self._d_t, t_ns, side='right')          # d_t[k-1] <= t < d_t[k]
        before = k == 0
        lo = np.clip(k - 1, 0, len(self._d_t) - 1)
        hi = np.clip(k, 0, len(self._d_t) - 1)
        gap = self._d_t[hi] - self._d_t[lo]
        usable = ~before & (gap <= self.timeout_ns)
        self.counts['wrench_unpaired'] += int((~usable).sum())
        t_ns, force, lo, hi = t_ns[usable], force[usable], lo[usable], hi[usable]
        if len(t_ns):
            span = (self._d_t[hi] - self._d_t[lo]).astype(np.float64)
            frac = np.divide((t_ns - self._d_t[lo]).astype(np.float64), span, out=np.zeros(len(t_ns)),
                             where=span > 0)
            coord = self._d_c[lo] + frac * (self._d_c[hi] - self._d_c[lo])
            keep_from = max(int(lo[-1]), 0)
            self._d_t, self._d_c = self._d_t[keep_from:], self._d_c[keep_from:]
            self._paired(t_ns, force, coord)

    def _cap_wrench_queue(self) -> None:
        extra = len(self._w_t) - self.wrench_buffer.capacity
        if extra > 0:
            self.counts['wrench_unpaired'] += extra
            self._w_t, self._w_f = self._w_t[extra:], self._w_f[extra:]

    def _paired(self, t_ns: np.ndarray, force: np.ndarray, coord: np.ndarray) -> None:
        if self._t0_ns is None:
            self._t0_ns = int(t_ns[0])
        t = (t_ns - self._t0_ns) * 1e-9
        x = coord - self._datum_track(force, coord)
        tt, ff, xx = (np.concatenate((a, b)) for a, b in zip(self._tail, (t, force, x)))
        if self._half_window is None:
            if len(tt) < _PERIOD_SAMPLES:
                self._tail = (tt, ff, xx)
                return
            period = float(np.median(np.diff(tt[:_PERIOD_SAMPLES])))
            self._half_window = half_window_samples(self.params['differentiator_half_window'], period)
        m = self._half_window
        xd, xdd = local_derivatives(tt, xx, m, second=self.model.uses_acceleration)
        centre = slice(m, len(tt) - m)
        self._tail = tuple(a[max(len(tt) - 2 * m, 0):] for a in (tt, ff, xx))
        if len(xd) == 0:
            return
        tc, fc, xc = tt[centre], ff[centre], xx[centre]
        contact = (fc >= self.threshold) & np.isfinite(xc)
        self.counts['out_of_contact'] += int((~contact).sum())
        samples = ContactSamples.make(tc[contact], fc[contact], xc[contact], xd[contact],
                                      None if xdd is None else xdd[contact])
        self.counts['samples_dropped_nonfinite'] += samples.dropped
        self.counts['samples_used'] += len(samples)
        self.last_stamp_ns = self._t0_ns + int(round(tc[-1] * 1e9))
        for est in self.estimators.values():
            est.update(samples)

    def _datum_track(self, force: np.ndarray, coord: np.ndarray) -> np.ndarray:
        """Datum per sample (NaN before onset in 'onset' mode)."""
        if self.params['datum_mode'] == 'fixed':
            return np.full(len(coord), self._fixed_datum)
        out = np.full(len(coord), np.nan)
        pos = 0
        while pos < len(coord):
            if self._datum is None:
                hits = np.flatnonzero(force[pos:] >= self.onset_force)
                if not len(hits):
                    break
                pos += int(hits[0])
                self._datum = float(coord[pos])
                self.counts['contact_onsets'] += 1
            lost = np.flatnonzero(force[pos:] < self.threshold)
            end = pos + int(lost[0]) if len(lost) else len(coord)
            out[pos:end] = self._datum
            if end < len(coord):
                self._datum = None
            pos = end
        return out

    def stamp_ns(self, est: ContactEstimate) -> int:
        """Absolute stamp (ns) of an estimate's newest sample (estimators keep time relative to t0)."""
        return 0 if self._t0_ns is None else self._t0_ns + int(round(est.stamp * 1e9))

    @property
    def datum(self) -> float:
        """Current contact datum in the input's own units (joint position or p . n)."""
        d = self._fixed_datum if self.params['datum_mode'] == 'fixed' else self._datum
        return 0.0 if d is None else float(self._coord_sign * d)

    def status(self) -> dict:
        """Counters for diagnostics: per-stream gate counts and pipeline counts."""
        out = {f'wrench.{k}': v for k, v in self.wrench_gate.counts.as_dict().items()}
        out.update({f'displacement.{k}': v for k, v in self.disp_gate.counts.as_dict().items()})
        out['wrench.overflowed'] = self.wrench_buffer.overflowed
        out['displacement.overflowed'] = self.disp_buffer.overflowed
        out.update(self.counts)
        return out


def _indices(segments: list[Segment]) -> np.ndarray:
    parts = [s.index for s in segments]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _split_at_reset(segments: list[Segment]) -> tuple[np.ndarray, np.ndarray]:
    """Indices before the first reset and from the last reset on (anything between two jumps is dropped)."""
    first = next((i for i, s in enumerate(segments) if s.reset_before), len(segments))
    last = max((i for i, s in enumerate(segments) if s.reset_before), default=len(segments))
    return _indices(segments[:first]), _indices(segments[last:])
