"""ContactPipeline: raw wrench and displacement streams -> synchronised contact samples -> estimators.

ROS-free and deterministic: the node's callbacks and ``run-bag`` push the same samples into it, and the
result depends only on the samples and their stamps, not on how they were batched between steps, so live
and offline runs of one bag give the same estimates. Each ``step`` works on every sample that arrived
since the last one, vectorised:

1. stamp gate per stream: zero stamps, non-finite rows and out-of-order samples are dropped and counted;
   a backward time jump (looped bag) resets the estimators;
2. normal force F_n = f . force_direction (or tau . torque_axis, joint_sign effort: ``contact_kind``);
   displacement coordinate c = sign q (joint) or c = -p . n (pose);
3. pairing: c is interpolated linearly at each wrench stamp inside the displacement stream's span
   (wrench samples wait for the displacement stream; gaps longer than sensor_timeout, and holes where the
   ring buffer dropped displacement samples under overload, are not bridged; after an overflow the samples
   that lost their partners are taken beyond the update budget, so the two streams' chunks stay aligned);
4. datum: fixed (parameter) or the coordinate at contact onset (F_n >= onset_force, re-armed when
   F_n < contact_force_threshold); deformation x = c - c_datum;
5. centred local-linear differentiation over +-M samples (contact_dynamics_common.signal), i.e. a delay
   of M samples, giving xd (and xdd for the mass model); with ``derivative_filter: consistent_kernel`` the
   estimators get F, x, xd, xdd from one Gaussian kernel over +-``kernel_half_window`` instead
   (``signal.conditioning.consistent_regressors``: the model holds exactly for them) and the measured samples
   ride along (``ContactSamples.measured``) for the trust checks; no window spans a gap of more than 4 sample
   periods (samples lost upstream or in an overflowing buffer): those centres are not used; M is sized from
   the first 21 paired samples and re-sized when their rate changes without a reset (a block of 32
   intervals whose median departs from the sizing period by > 20 %: the differentiator re-arms at the
   block's last sample, so no window spans the two rates; counted in ``rate_changes``);
6. samples in contact (F_n >= contact_force_threshold, datum known) update every estimator.

``replay`` runs a whole recorded stream through the same code in one pass and reports, for every timer
tick, exactly what ``step`` would have returned at that tick (see its docstring).
"""
from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.signal import half_window_samples, local_derivatives
from contact_dynamics_common.signal.conditioning import consistent_regressors
from contact_dynamics_common.stamps import Segment, StampGate

from .estimate import ContactEstimate
from .algorithms import ALGORITHMS, make
from .assess import RecentSamples, TrustMonitor, boundaries
from .contact_kind import contact_inputs_problem, force_projection
from .gls import SlidingWindowGLS
from .models import get_model
from .reporting import update_and_report
from .samples import ContactSamples

#: paired samples used to measure the sample period that fixes the differentiator's half window
_PERIOD_SAMPLES = 21
#: a step between paired samples longer than this many sample periods is a gap (samples lost: an input queue
#: or ring buffer overflowing, a sensor drop-out); no derivative window spans one
_GAP_PERIODS = 4.0
#: the consistent kernel's smallest half window (samples): its Gaussian (width half / 5 samples) is then sampled
#: at least once per width, where the trapezoid rule keeps convolution and differentiation commuting
CONSISTENT_MIN_HALF = 5
#: the paired-sample rate is checked on consecutive blocks of this many intervals after the half window is
#: sized; a block whose median interval departs from the sizing period by more than _RATE_TOLERANCE
#: (relative) is a sample-rate change: the differentiator re-arms there and re-sizes its window
_RATE_BLOCK = 32
_RATE_TOLERANCE = 0.2


def estimator_options(params: dict, model) -> dict[str, dict]:
    """Constructor options of every registry algorithm from the node's parameters (shared with contact-compare)."""
    bounds = {n: (0.0, np.inf) for n in model.names} if params['nonnegative'] else None
    common = dict(bounds=bounds, min_samples=params['min_samples'], max_condition=params['max_condition'],
                  min_excitation={'damping': params['min_excitation_velocity']})
    initial = {'stiffness': params['initial_stiffness'], 'damping': params['initial_damping'],
               'mass': params['initial_mass']}
    recursive = dict(common, initial=initial)
    rls = dict(recursive, forgetting=params['rls.forgetting_factor'], initial_covariance=params['initial_covariance'],
               max_covariance=params['rls.max_covariance'])
    drift = {'stiffness': params['kalman.stiffness_drift'] ** 2, 'damping': params['kalman.damping_drift'] ** 2}
    return {
        'rls': dict(rls, model=model),
        'ils': dict(rls),
        'ia': dict(recursive, gain=tuple(params['ia.gain']), normalised=params['ia.normalised']),
        'kalman': dict(recursive, model=model, initial_covariance=params['initial_covariance'],
                       measurement_noise=params['kalman.force_noise'] ** 2, process_noise=drift),
        'gls': dict(common, model=model),
    }


def build_estimators(params: dict, model) -> dict:
    """The configured online estimators, by name: the recursive ones and a sliding-window GLS."""
    options = estimator_options(params, model)
    out = {}
    for name in params['algorithms']:
        if name == 'gls':
            opts = dict(options['gls'])
            out[name] = SlidingWindowGLS(opts.pop('model'), window_s=params['gls.window'], **opts)
        elif name in ALGORITHMS and ALGORITHMS[name].kind == 'recursive':
            out[name] = make(name, **options[name])
        else:
            raise ValueError(f"algorithm '{name}' cannot run online")
    return out


class Stream(NamedTuple):
    """One input topic as columns in log-time order: log time (ns), header stamp (ns), rows (N, width)."""

    log_ns: np.ndarray
    stamp_ns: np.ndarray
    rows: np.ndarray


@dataclass(frozen=True)
class TickReport:
    """What one update of the pipeline reports: its estimates and the pipeline state that
    ``messages.publications`` reads (``counts['samples_used']``, ``stamp_ns``, ``datum``,
    ``wrench_frame``)."""

    estimates: list[ContactEstimate]
    samples_used: int
    datum: float
    t0_ns: int | None
    wrench_frame: str

    @property
    def counts(self) -> dict[str, int]:
        return {'samples_used': self.samples_used}

    def stamp_ns(self, est: ContactEstimate) -> int:
        return _absolute_ns(self.t0_ns, est.stamp)


@dataclass(frozen=True)
class _Ingested:
    """What one ingestion produced: the newly paired samples (stamps, and the datum in effect after each,
    NaN for none), the in-contact samples for the estimators, and for each of those the index (into the
    newly paired samples) of the newest paired sample its derivative needed."""

    paired_ns: np.ndarray
    datum: np.ndarray
    samples: ContactSamples
    newest: np.ndarray


class ContactPipeline:
    """Buffers, synchronisation and estimators of one single-point contact (see module docstring)."""

    def __init__(self, params: dict):
        self.params = params
        self.model = get_model(params['model'])
        problem = contact_inputs_problem(params)     # prismatic / revolute inputs (contact_kind)
        if problem:
            raise ConfigError(problem)
        self.force_dir = force_projection(params)   # force_direction, torque_axis or (joint_sign, 0, 0)
        self.source = params['displacement_source']
        self.joint_name = params['joint_name']
        self.normal = np.asarray(params['contact_normal'], dtype=np.float64)
        sign = params['joint_sign'] if self.source == 'joint_state' else -1.0
        self._coord_sign = sign
        self._fixed_datum = sign * params['datum']
        self.force_bias = np.asarray(params['force_bias'], dtype=np.float64)
        self._consistent = params.get('derivative_filter', 'local_fit') == 'consistent_kernel'
        self._recent_wrench = np.zeros((0, 3))          # latest accepted raw wrench rows, for tare()
        self.onset_force = params['onset_force']
        self.threshold = params['contact_force_threshold']
        self.timeout_ns = int(params['sensor_timeout'] * 1e9)
        cap = params['buffer_capacity']
        self.wrench_buffer = RingBuffer(cap, 3)
        self.disp_buffer = RingBuffer(cap, 1 if self.source == 'joint_state' else 3)
        self.wrench_gate = StampGate(params['time_jump_threshold'])
        self.disp_gate = StampGate(params['time_jump_threshold'])
        try:
            self.estimators = build_estimators(params, self.model)
            # the shared trust verdict (convergence, Kalman NIS) on each estimator's successive reports
            self.monitors = {n: TrustMonitor(e) for n, e in self.estimators.items()}
            self.recent = RecentSamples()          # the in-contact samples the monitors judge the model on
            self._monitored = 0                    # in-contact samples fed to the estimators since the reset
        except ValueError as exc:       # an option combination the estimators refuse: a configuration error
            raise ConfigError(f'estimator configuration: {exc}') from None
        self.counts: Counter = Counter()
        self.rate_change: tuple[float, float] | None = None   # the last sample-rate change (old, new Hz)
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
        rows = self.joint_rows(names, position)
        if rows is not None:
            self.disp_buffer.extend(stamps_ns, rows)

    def joint_rows(self, names, position: np.ndarray) -> np.ndarray | None:
        """The configured joint's column (N, 1) of JointState positions; None (counted) if it is absent."""
        j = self._joint_index(names, count=len(position))
        return None if j is None else position[:, j:j + 1]

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
    def step(self, max_samples: int | None = None) -> list[ContactEstimate]:
        """Process everything buffered (at most the oldest ``max_samples`` of each stream, leaving the rest
        for the next step: a bounded cost per update); return the current estimate of every estimator.

        Chunking does not change the estimates, only when they include the samples: the result after the
        backlog is worked off equals one step over everything (pairing, differentiator and estimators
        carry their state across steps).
        """
        w_extra, d_extra = self._stale_after_overflow() if max_samples is not None else (0, 0)
        wt, wf = self.wrench_buffer.pop(None if max_samples is None else max_samples + w_extra)
        dt, dc = self.disp_buffer.pop(None if max_samples is None else max_samples + d_extra)
        # a full ring buffer drops its oldest unread samples: the hole lies right before the first one popped
        d_hole = self.disp_buffer.overflowed > self._d_overflow_seen
        self._d_overflow_seen = self.disp_buffer.overflowed
        if d_hole and len(dt):
            self._d_hole_next = True
        w_segs = self.wrench_gate.filter(wt, np.isfinite(wf).all(axis=1))
        d_segs = self.disp_gate.filter(dt, np.isfinite(dc).all(axis=1))
        if any(s.reset_before for s in w_segs + d_segs):
            w_pre, w_post = _split_at_reset(w_segs)
            d_pre, d_post = _split_at_reset(d_segs)
            self._update(self._ingest(wt[w_pre], wf[w_pre], dt[d_pre], dc[d_pre]).samples)
            self.reset(gates=False)
            self.counts['resets_time_jump'] += 1
            self._update(self._ingest(wt[w_post], wf[w_post], dt[d_post], dc[d_post]).samples)
        else:
            w_idx = _indices(w_segs)
            d_idx = _indices(d_segs)
            self._update(self._ingest(wt[w_idx], wf[w_idx], dt[d_idx], dc[d_idx]).samples)
        return self.estimates()

    def _stale_after_overflow(self) -> tuple[int, int]:
        """Samples at the head of each buffer that lost their partners in the other stream's overflow: taken
        beyond the per-update budget so the chunks of the two streams cover the same time.

        An overloaded node's callbacks drain one subscription, then the other, so one stream runs ahead of the
        other by up to an input queue; when both ring buffers overflow, equal-count chunks of the two then
        cover different times and hardly pair (measured: none of 1200 wrench samples paired with a 50-sample
        lead, budget 50). After a displacement overflow, wrench samples stamped before the oldest unread
        displacement sample lie in its hole (never paired, counted ``wrench_in_displacement_hole``); after a
        wrench overflow, displacement samples before the oldest unread wrench sample, but the one just before
        it (its interpolation partner), pair with nothing. Neither costs estimator work.
        """
        w_extra = d_extra = 0
        if self.disp_buffer.overflowed > self._d_overflow_seen:
            first = self.disp_buffer.first_stamp()
            if first is not None:
                w_extra = self.wrench_buffer.leading_before(first)
        if self.wrench_buffer.overflowed > self._w_overflow_seen:
            first = self.wrench_buffer.first_stamp()
            if first is not None:
                d_extra = max(self.disp_buffer.leading_before(first) - 1, 0)
        self._w_overflow_seen = self.wrench_buffer.overflowed
        return w_extra, d_extra

    def estimates(self) -> list[ContactEstimate]:
        return [self.monitors[n].review(est.estimate()) for n, est in self.estimators.items()]

    def report(self, estimates: list[ContactEstimate]) -> TickReport:
        """``estimates`` with the pipeline state they are published with."""
        return TickReport(estimates, self.counts['samples_used'], self.datum, self._t0_ns, self.wrench_frame)

    def replay(self, wrench: Stream, displacement: Stream, ticks_ns: np.ndarray) -> list[TickReport]:
        """Reports of a fresh pipeline stepped at every tick of ``ticks_ns``, computed in one pass.

        Equivalent to: at each tick T, push the samples logged since the previous tick (log_ns <= T),
        ``step()``, ``report()``; every sample must be logged by the last tick. The record goes once
        through the gates and the ingestion code of ``step``, and the tick at which step would have
        used each sample is derived from the delivery rules:

        * a sample is delivered at the first tick T >= its log time;
        * a wrench sample is paired at the first tick by which it and a displacement sample stamped at or
          after it have been delivered (ready tick);
        * the derivative at a paired sample needs the M paired samples after it, and none is taken before
          the first 21 paired samples (the half window M is fixed by them), nor before the first 21 after
          a rate change re-arms the differentiator: a contact sample is used at the ready tick of the newest
          paired sample it needed;

        and each estimator reports after the number of samples used by each tick (``update_and_report``).
        A record that would make step behave batch-dependently (a backward time jump, which resets; a
        per-tick block beyond buffer_capacity; a wrench queue beyond buffer_capacity waiting for the
        displacement stream) is stepped tick by tick instead.
        """
        used = self._t0_ns is not None or len(self.wrench_buffer) or len(self.disp_buffer)
        if used or self.wrench_gate.last_ns is not None or self.disp_gate.last_ns is not None:
            raise ValueError('replay needs a fresh pipeline')
        return self.replay_chunk(wrench, displacement, ticks_ns)

    def replay_chunk(self, wrench: Stream, displacement: Stream, ticks_ns: np.ndarray) -> list[TickReport]:
        """``replay`` continued: the reports at ``ticks_ns`` of the samples logged since the previous call
        (all by ``ticks_ns[-1]``), from the pipeline's current state, which is carried to the next call.

        A record cut into consecutive chunks at tick boundaries gives the same reports as ``replay`` of the
        whole record (and as stepping tick by tick): wrench samples still waiting for the displacement
        stream, the differentiator's tail, the datum, the gates and the estimators all carry over. Each
        chunk takes the one-pass path or, when it must (see ``replay``), is stepped tick by tick.
        """
        if len(self.wrench_buffer) or len(self.disp_buffer):
            raise ValueError('replay_chunk needs empty input buffers (samples pushed but not stepped)')
        ticks = np.asarray(ticks_ns, dtype=np.int64)
        w_tick = _delivery_ticks(wrench.log_ns, ticks)
        d_tick = _delivery_ticks(displacement.log_ns, ticks)
        plan = self._batch_plan(wrench, displacement, w_tick, d_tick, len(ticks))
        if plan is None:
            return self._replay_stepwise(wrench, displacement, w_tick, d_tick, len(ticks))
        return self._replay_batched(*plan, len(ticks))

    def contact_samples(self, wrench: Stream, displacement: Stream) -> ContactSamples:
        """Every in-contact sample of a whole record as the estimators would receive them (gates, pairing,
        datum, differentiation), in one pass and without updating the estimators. After a backward time
        jump only the part after the last jump is kept (the estimators would have been reset there)."""
        w_segs = self.wrench_gate.filter(wrench.stamp_ns, np.isfinite(wrench.rows).all(axis=1))
        d_segs = self.disp_gate.filter(displacement.stamp_ns, np.isfinite(displacement.rows).all(axis=1))
        if any(s.reset_before for s in w_segs + d_segs):
            w_idx, d_idx = _split_at_reset(w_segs)[1], _split_at_reset(d_segs)[1]
            self.counts['resets_time_jump'] += 1
        else:
            w_idx, d_idx = _indices(w_segs), _indices(d_segs)
        block = self._ingest(wrench.stamp_ns[w_idx], wrench.rows[w_idx], displacement.stamp_ns[d_idx],
                             displacement.rows[d_idx])
        return block.samples

    def _batch_plan(self, wrench: Stream, displacement: Stream, w_tick: np.ndarray, d_tick: np.ndarray,
                    n_ticks: int) -> tuple | None:
        """Gate the record; return (wt, wf, dt, dc, stamps and ready ticks of the wrench samples that may pair
        now: those still queued from earlier chunks, then the accepted ones), or None (gates untouched)
        when the record must be stepped tick by tick."""
        if _largest_block(w_tick, n_ticks) > self.wrench_buffer.capacity \
                or _largest_block(d_tick, n_ticks) > self.disp_buffer.capacity:
            return None
        w_gate, d_gate = copy.deepcopy(self.wrench_gate), copy.deepcopy(self.disp_gate)
        w_segs = w_gate.filter(wrench.stamp_ns, np.isfinite(wrench.rows).all(axis=1))
        d_segs = d_gate.filter(displacement.stamp_ns, np.isfinite(displacement.rows).all(axis=1))
        if any(s.reset_before for s in w_segs + d_segs):
            return None
        w_idx, d_idx = _indices(w_segs), _indices(d_segs)
        wt, dt = wrench.stamp_ns[w_idx], displacement.stamp_ns[d_idx]
        # earlier chunks: wrench samples still queued (delivered before this chunk, tick -1) and the newest
        # displacement stamp (delivered too)
        all_wt = np.concatenate((self._w_t, wt))
        w_tick = np.concatenate((np.full(len(self._w_t), -1, dtype=np.int64), w_tick[w_idx]))
        d_tick = np.concatenate((np.full(min(len(self._d_t), 1), -1, dtype=np.int64), d_tick[d_idx]))
        first_after = np.searchsorted(np.concatenate((self._d_t[-1:], dt)), all_wt, side='left')
        ready = np.maximum(w_tick, np.append(d_tick, n_ticks)[first_after])  # first displacement >= t_w
        waiting = _cumulative(w_tick, n_ticks) - _cumulative(ready, n_ticks)
        if len(waiting) and waiting.max() > self.wrench_buffer.capacity:
            return None
        self.wrench_gate, self.disp_gate = w_gate, d_gate
        return wt, wrench.rows[w_idx], dt, displacement.rows[d_idx], all_wt, ready

    def _replay_batched(self, wt, wf, dt, dc, all_wt: np.ndarray, ready: np.ndarray, n_ticks: int
                        ) -> list[TickReport]:
        """One ingestion of the gated chunk; per tick, the samples used and the datum by then."""
        used_before = self.counts['samples_used']
        datum_before = np.nan if self._datum is None else self._datum
        block = self._ingest(wt, wf, dt, dc)
        paired_tick = ready[np.searchsorted(all_wt, block.paired_ns)]
        used = _cumulative(paired_tick[block.newest], n_ticks)
        if self.params['datum_mode'] == 'fixed':
            datum = [self.datum] * n_ticks
        else:
            # the datum after the last sample paired by each tick (none paired yet in this chunk: index -1,
            # the appended datum carried in from the previous chunk, NaN for none)
            after = np.append(block.datum, datum_before)[_cumulative(paired_tick, n_ticks) - 1]
            datum = [self._datum_value(None if np.isnan(d) else d) for d in after.tolist()]
        per_estimator = self._monitored_reports(block.samples, used)
        return [TickReport(list(ests), used_before + n, d, self._t0_ns, self.wrench_frame)
                for ests, n, d in zip(zip(*per_estimator), used.tolist(), datum)]

    def _replay_stepwise(self, wrench: Stream, displacement: Stream, w_tick: np.ndarray, d_tick: np.ndarray,
                         n_ticks: int) -> list[TickReport]:
        """The reference: push each tick's samples, step, report."""
        w_end, d_end = _cumulative(w_tick, n_ticks), _cumulative(d_tick, n_ticks)
        out = []
        w_pos = d_pos = 0
        for w_hi, d_hi in zip(w_end.tolist(), d_end.tolist()):
            self.wrench_buffer.extend(wrench.stamp_ns[w_pos:w_hi], wrench.rows[w_pos:w_hi])
            self.disp_buffer.extend(displacement.stamp_ns[d_pos:d_hi], displacement.rows[d_pos:d_hi])
            w_pos, d_pos = w_hi, d_hi
            out.append(self.report(self.step()))
        return out

    def reset(self, gates: bool = True) -> None:
        """Forget all samples and restart the estimators (the ~/reset service, a time jump)."""
        for est in self.estimators.values():
            est.reset()
        for monitor in self.monitors.values():
            monitor.reset()
        self.recent.clear()
        self._monitored = 0
        if gates:
            self.rate_change = None
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
        self._half_window: int | None = None           # the derivative window's half length (samples)
        self._local_half: int | None = None            # the local fit's (the kernel's window may be longer)
        self._kernel_half = 0                          # the consistent kernel's, once sized (kept after a re-arm)
        self._period_s: float | None = None
        self._rate_pending = np.zeros(0)             # intervals (s) of the rate check's unfinished block
        self._datum: float | None = None
        self.last_stamp_ns = 0
        self._d_hole = np.zeros(0, dtype=bool)       # per queued displacement sample: samples lost before it
        self._d_hole_next = False
        self._d_overflow_seen = self.disp_buffer.overflowed
        self._w_overflow_seen = self.wrench_buffer.overflowed

    def _ingest(self, wt, wf, dt, dc) -> _Ingested:
        """Gated samples in: queue them, pair what can be paired, differentiate what has a full window."""
        if len(dt):
            coord = dc[:, 0] if dc.shape[1] == 1 else dc @ self.normal
            self._d_t = np.concatenate((self._d_t, dt))
            self._d_c = np.concatenate((self._d_c, self._coord_sign * coord))
            hole = np.zeros(len(dt), dtype=bool)
            hole[0], self._d_hole_next = self._d_hole_next, False
            self._d_hole = np.concatenate((self._d_hole, hole))
        if len(wt):
            self._w_t = np.concatenate((self._w_t, wt))
            self._w_f = np.concatenate((self._w_f, (wf - self.force_bias) @ self.force_dir))
            self._recent_wrench = np.concatenate((self._recent_wrench, wf))[-self.params['tare_samples']:]
        return self._paired(*self._pair())

    def _pair(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(stamp, F_n, coordinate) of the queued wrench samples that can now be paired.

        A wrench sample at t waits until the displacement stream has a sample at or after t; c(t) is
        interpolated between the samples around it, unless they are more than sensor_timeout apart or
        displacement samples between them were lost in the ring buffer (a sample stamped exactly at a
        displacement sample needs no interpolation and is always paired).
        """
        none = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
        if len(self._d_t) == 0 or len(self._w_t) == 0:
            self._cap_wrench_queue()
            return none
        ready = self._w_t <= self._d_t[-1]
        t_ns, force = self._w_t[ready], self._w_f[ready]
        self._w_t, self._w_f = self._w_t[~ready], self._w_f[~ready]
        self._cap_wrench_queue()
        k = np.searchsorted(self._d_t, t_ns, side='right')          # d_t[k-1] <= t < d_t[k]
        before = k == 0
        lo = np.clip(k - 1, 0, len(self._d_t) - 1)
        hi = np.clip(k, 0, len(self._d_t) - 1)
        gap = self._d_t[hi] - self._d_t[lo]
        bridged = (gap <= self.timeout_ns) & ~self._d_hole[hi]
        usable = ~before & (bridged | (t_ns == self._d_t[lo]))
        self.counts['wrench_unpaired'] += int((~usable).sum())
        in_hole = ~usable & ~before & (gap <= self.timeout_ns)
        self.counts['wrench_in_displacement_hole'] += int(in_hole.sum())
        t_ns, force, lo, hi = t_ns[usable], force[usable], lo[usable], hi[usable]
        if not len(t_ns):
            return none
        span = (self._d_t[hi] - self._d_t[lo]).astype(np.float64)
        frac = np.divide((t_ns - self._d_t[lo]).astype(np.float64), span, out=np.zeros(len(t_ns)),
                         where=span > 0)
        coord = self._d_c[lo] + frac * (self._d_c[hi] - self._d_c[lo])
        keep_from = max(int(lo[-1]), 0)
        self._d_t, self._d_c = self._d_t[keep_from:], self._d_c[keep_from:]
        self._d_hole = self._d_hole[keep_from:]
        return t_ns, force, coord

    def _cap_wrench_queue(self) -> None:
        extra = len(self._w_t) - self.wrench_buffer.capacity
        if extra > 0:
            self.counts['wrench_unpaired'] += extra
            self._w_t, self._w_f = self._w_t[extra:], self._w_f[extra:]

    def _paired(self, t_ns: np.ndarray, force: np.ndarray, coord: np.ndarray) -> _Ingested:
        """Datum, deformation and its centred derivatives; the in-contact samples for the estimators."""
        datum = self._datum_track(force, coord)
        nothing = _Ingested(t_ns, datum, ContactSamples.make([], [], [], []), np.zeros(0, dtype=np.int64))
        if not len(t_ns):
            return nothing
        if self._t0_ns is None:
            self._t0_ns = int(t_ns[0])
        t = (t_ns - self._t0_ns) * 1e-9
        x = coord - datum
        parts = []
        start = 0                        # index in t of the first sample of the differentiator's current arm
        while start < len(t):
            part, restart = self._differentiate(t[start:], force[start:], x[start:])
            if part is not None:
                parts.append((part[0], part[1] + start) + part[2:])
            if restart is None:
                break
            start += restart
        parts = [p for p in parts if len(p[0])]
        if not parts:
            return nothing
        tc, newest, fc, xc, xd = (np.concatenate(col) for col in list(zip(*parts))[:5])
        xdd = None if parts[0][5] is None else np.concatenate([p[5] for p in parts])
        measured = None
        if parts[0][6] is not None:     # consistent kernel: the measured samples at the same stamps
            cols = [np.concatenate([p[6][j] for p in parts]) if parts[0][6][j] is not None else None
                    for j in range(4)]
            measured = ContactSamples(tc, *cols)
        samples = ContactSamples.make(tc, fc, xc, xd, xdd, measured=measured,
                                      kernel_half=self._kernel_half if measured is not None else 0)
        self.counts['samples_dropped_nonfinite'] += samples.dropped
        self.counts['samples_used'] += len(samples)
        kept = np.searchsorted(tc, samples.t)          # the centres make() kept (times increase strictly)
        return _Ingested(t_ns, datum, samples, newest[kept])

    def _differentiate(self, t: np.ndarray, force: np.ndarray, x: np.ndarray
                       ) -> tuple[tuple | None, int | None]:
        """Centred derivatives of the new samples (t s, F_n N, x m) continuing the differentiator's tail.

        Returns (part, restart): part = (t, newest, F_n, x, xd, xdd) of the in-contact centres with a full
        window (newest: index into ``t`` of the newest sample each needed), or None; restart = index into
        ``t`` from which the differentiator re-arms after a sample-rate change (``_rate_change_at``), or None.
        """
        tt, ff, xx = (np.concatenate((a, b)) for a, b in zip(self._tail, (t, force, x)))
        n_tail = len(tt) - len(t)
        warm_up_end = 0                      # index in tt of the last sample the half window waited for
        if self._half_window is None:
            if len(tt) < _PERIOD_SAMPLES:
                self._tail = (tt, ff, xx)
                return None, None
            period = float(np.median(np.diff(tt[:_PERIOD_SAMPLES])))
            self._half_window = half_window_samples(self.params['differentiator_half_window'], period)
            self._local_half = self._half_window
            if self._consistent:
                self._half_window = max(half_window_samples(self.params['kernel_half_window'], period),
                                        CONSISTENT_MIN_HALF, self._local_half)
                self._kernel_half = self._half_window
            self._period_s = period
            self._rate_pending = np.zeros(0)
            warm_up_end = _PERIOD_SAMPLES - 1
        restart = None
        change = self._rate_change_at(tt, max(n_tail, warm_up_end + 1, 1))
        if change is not None:                   # samples from tt[change] on: a new arm, sized on them
            restart = change - n_tail
            tt, ff, xx = tt[:change], ff[:change], xx[:change]
        m = self._half_window
        if self._consistent:      # the kernel's regressors; the local fit of the measurement for the checks
            f_k, x_k, xd_k, xdd_k = consistent_regressors(tt, ff, xx, m, self._period_s,
                                                          second=self.model.uses_acceleration)
            ml = self._local_half
            xd, xdd = local_derivatives(tt[m - ml:len(tt) - (m - ml)], xx[m - ml:len(tt) - (m - ml)], ml,
                                        second=self.model.uses_acceleration)
        else:
            xd, xdd = local_derivatives(tt, xx, m, second=self.model.uses_acceleration)
        if restart is None:
            self._tail = tuple(a[max(len(tt) - 2 * m, 0):] for a in (tt, ff, xx))
        else:                                    # the old arm's last 2m samples get no derivative
            self._tail = (np.zeros(0), np.zeros(0), np.zeros(0))
            self._half_window = None
        if len(xd) == 0:
            return None, restart
        centre = slice(m, len(tt) - m)
        tc, fc, xc = tt[centre], ff[centre], xx[centre]          # as measured, at the centres
        self.last_stamp_ns = _absolute_ns(self._t0_ns, tc[-1])
        newest = np.maximum(np.arange(2 * m, len(tt)), warm_up_end) - n_tail
        contact = (fc >= self.threshold) & np.isfinite(xc)
        self.counts['out_of_contact'] += int((~contact).sum())
        gaps = np.flatnonzero(np.diff(tt) > _GAP_PERIODS * self._period_s)
        if len(gaps):                         # centres whose +-m window spans a gap: no derivative there
            cum = np.zeros(len(tt), dtype=np.int64)
            cum[gaps + 1] = 1
            cum = np.cumsum(cum)
            centres = np.arange(m, len(tt) - m)
            spans = cum[centres + m] > cum[centres - m]
            self.counts['derivative_across_gap'] += int((contact & spans).sum())
            contact &= ~spans
        measured = (fc[contact], xc[contact], xd[contact], None if xdd is None else xdd[contact])
        if self._consistent:             # the kernel's outputs as regressors, the measured samples beside them
            return (tc[contact], newest[contact], f_k[contact], x_k[contact], xd_k[contact],
                    None if xdd_k is None else xdd_k[contact], measured), restart
        return (tc[contact], newest[contact]) + measured + (None,), restart

    def _rate_change_at(self, tt: np.ndarray, first: int) -> int | None:
        """Index in tt of the sample that completes a block of _RATE_BLOCK intervals whose median departs
        from the period the half window was sized with by more than _RATE_TOLERANCE (relative), or None.

        Intervals are taken from the one ending at tt[first] on, in consecutive blocks counted from the
        arming (partial blocks carry over between calls), so the decision depends only on the samples.
        A change is counted (``rate_changes``) and remembered (``rate_change``: old and new rate, Hz).
        """
        iv = np.concatenate((self._rate_pending, np.diff(tt[first - 1:]) if first < len(tt) else np.zeros(0)))
        n_blocks = len(iv) // _RATE_BLOCK
        if n_blocks:
            med = np.median(iv[:n_blocks * _RATE_BLOCK].reshape(n_blocks, _RATE_BLOCK), axis=1)
            off = np.flatnonzero(np.abs(med / self._period_s - 1.0) > _RATE_TOLERANCE)
            if len(off):
                b = int(off[0])
                self.counts['rate_changes'] += 1
                self.rate_change = (1.0 / self._period_s, 1.0 / float(med[b]))
                end = first + (b + 1) * _RATE_BLOCK - 1 - len(self._rate_pending)
                self._rate_pending = np.zeros(0)
                return end
        self._rate_pending = iv[n_blocks * _RATE_BLOCK:]
        return None

    def _update(self, samples: ContactSamples) -> None:
        self._monitored_reports(samples, np.zeros(0, dtype=np.int64))

    def _monitored_reports(self, samples: ContactSamples, used: np.ndarray) -> list[list[ContactEstimate]]:
        """Update every estimator with the block; the monitors observe the estimates at their sample
        boundaries (``assess.boundaries``) and review the reports after the first used[j] samples."""
        bounds = boundaries(self._monitored, len(samples))
        counts = np.union1d(used, bounds)
        index = {c: i for i, c in enumerate(counts.tolist())}
        windows: dict[int, ContactSamples] = {}        # one window object per boundary, for every monitor

        def window(c_b: int) -> ContactSamples:
            if c_b not in windows:
                windows[c_b] = self.recent.window(samples.slice(slice(0, c_b)))
            return windows[c_b]

        out = []
        for name, est in self.estimators.items():
            if not len(counts):
                est.update(samples)
                out.append([])
                continue
            reports = update_and_report(est, samples, counts)
            monitor = self.monitors[name]
            b, reviewed, pending = 0, [], []
            for c in used.tolist() + [len(samples) + 1]:
                while b < len(bounds) and bounds[b] <= c:
                    # the reports before this observation are reviewed with the monitor's state before it
                    reviewed += monitor.review_many(pending)
                    pending = []
                    c_b = int(bounds[b])
                    monitor.observe(reports[index[c_b]], lambda c_b=c_b: window(c_b))
                    b += 1
                if c <= len(samples):
                    pending.append(reports[index[c]])
            reviewed += monitor.review_many(pending)
            out.append(reviewed)
        self.recent.extend(samples)
        self._monitored += len(samples)
        return out

    def _datum_track(self, force: np.ndarray, coord: np.ndarray) -> np.ndarray:
        """Datum per sample (NaN out of contact in 'onset' mode: before onset and from a loss on).

        'onset' mode: the datum is the coordinate at the first sample with F_n >= max(onset_force,
        contact_force_threshold), kept until a sample with F_n < contact_force_threshold.
        """
        if self.params['datum_mode'] == 'fixed':
            return np.full(len(coord), self._fixed_datum)
        out = np.full(len(coord), np.nan)
        onset = max(self.onset_force, self.threshold)      # an onset below the threshold is lost at once
        pos = 0
        while pos < len(coord):
            if self._datum is None:
                hits = np.flatnonzero(force[pos:] >= onset)
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

    def tare(self) -> np.ndarray:
        """Set ``force_bias`` to the mean of the latest ``tare_samples`` wrench rows and return it.

        Refused (ValueError) without samples, or when the latest deformation shows the tool pressing into
        the environment (x > 0 from a known datum): a tare must see the unloaded sensor, and the force
        alone cannot tell an offset from a contact. Live-only: offline runs use the force_bias parameter.
        """
        if not len(self._recent_wrench):
            raise ValueError('no wrench samples yet')
        x_last = self._tail[2][-1] if len(self._tail[2]) else float('nan')
        if x_last > 0:
            raise ValueError(f'in contact (deformation {x_last * 1e3:.3g} mm from the datum): tare refused')
        self.force_bias = self._recent_wrench.mean(axis=0)
        return self.force_bias

    def stamp_ns(self, est: ContactEstimate) -> int:
        """Absolute stamp (ns) of an estimate's newest sample (estimators keep time relative to t0)."""
        return _absolute_ns(self._t0_ns, est.stamp)

    @property
    def datum(self) -> float:
        """Current contact datum in the input's own units (joint position or p . n)."""
        return self._datum_value(self._fixed_datum if self.params['datum_mode'] == 'fixed' else self._datum)

    def _datum_value(self, d: float | None) -> float:
        """A datum of the coordinate c in the input's own units (0 when there is none)."""
        return 0.0 if d is None else float(self._coord_sign * d)

    @property
    def backlog(self) -> int:
        """Samples buffered but not yet processed (both streams)."""
        return len(self.wrench_buffer) + len(self.disp_buffer)

    def ledger(self) -> dict[str, dict]:
        """Per stream: samples accepted by the stamp gate, pending in the ring buffer, and dropped by cause.

        Every sample pushed is in exactly one of them: pushed = accepted + pending + sum(dropped).
        Causes: the stamp gate's (``zero_stamp``, ``nonfinite``, ``out_of_order``, ``stamp_outlier``,
        ``jump_evidence``: ``signal.stamps``), ``overflow`` (ring buffer full:
        the oldest unread samples overwritten), ``reset`` (buffered when the estimators were reset) and, for
        JointState, ``joint_missing``, ``joint_state_empty``, ``joint_state_malformed``.
        """
        out = {}
        for name, gate, buf in (('wrench', self.wrench_gate, self.wrench_buffer),
                                ('displacement', self.disp_gate, self.disp_buffer)):
            c = gate.counts
            dropped = {**c.dropped(), 'overflow': buf.overflowed, 'reset': buf.discarded}
            if name == 'displacement' and self.source == 'joint_state':
                dropped.update({k: self.counts[k] for k in ('joint_missing', 'joint_state_empty',
                                                            'joint_state_malformed')})
            out[name] = {'accepted': c.accepted, 'pending': len(buf), 'dropped': dropped}
        return out

    def status(self) -> dict:
        """Counters for diagnostics: per-stream gate counts and pipeline counts."""
        out = {f'wrench.{k}': v for k, v in self.wrench_gate.counts.as_dict().items()}
        out.update({f'displacement.{k}': v for k, v in self.disp_gate.counts.as_dict().items()})
        out['wrench.overflowed'] = self.wrench_buffer.overflowed
        out['displacement.overflowed'] = self.disp_buffer.overflowed
        out.update(self.counts)
        if self.rate_change is not None:           # the last input rate change (Hz), until a reset service
            out['rate_change_old_hz'], out['rate_change_new_hz'] = self.rate_change
        return out


def _absolute_ns(t0_ns: int | None, t_s: float) -> int:
    """Absolute stamp (ns) of a time relative to t0 (0 while there is no t0)."""
    return 0 if t0_ns is None else t0_ns + int(round(t_s * 1e9))


def _delivery_ticks(log_ns: np.ndarray, ticks: np.ndarray) -> np.ndarray:
    """Index of the tick that delivers each sample: the first tick at or after its log time."""
    at = np.searchsorted(ticks, log_ns, side='left')
    if len(at) and at[-1] >= len(ticks):
        raise ValueError('samples logged after the last tick')
    return at


def _cumulative(tick: np.ndarray, n_ticks: int) -> np.ndarray:
    """Per tick k, how many of the (tick-sorted) items have tick <= k."""
    return np.searchsorted(tick, np.arange(n_ticks), side='right')


def _largest_block(tick: np.ndarray, n_ticks: int) -> int:
    """The most samples one tick delivers."""
    return int(np.bincount(tick, minlength=n_ticks).max()) if len(tick) else 0


def _indices(segments: list[Segment]) -> np.ndarray:
    parts = [s.index for s in segments]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _split_at_reset(segments: list[Segment]) -> tuple[np.ndarray, np.ndarray]:
    """Indices before the first reset and from the last reset on (anything between two jumps is dropped)."""
    first = next((i for i, s in enumerate(segments) if s.reset_before), len(segments))
    last = max((i for i, s in enumerate(segments) if s.reset_before), default=len(segments))
    return _indices(segments[:first]), _indices(segments[last:])
