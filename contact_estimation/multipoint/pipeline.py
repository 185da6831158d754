"""Streaming multi-point estimation shared by the node and run-bag: stamp gates, wrench/pose pairing,
contact kinematics, regressor rows and the global bounded least-squares estimate.

Processing (a sample's result does not depend on how the stream was batched):
1. each input passes a ``StampGate`` (zero stamps, NaN/inf, out-of-order samples dropped and counted; a
   backward jump larger than ``time_jump_threshold`` resets the estimator);
2. pose samples get their twist: Odometry's (child frame, rotated to the pose frame) or, for PoseStamped,
   centred local-line fits over ±M = ``pose_derivative_half_window`` pose samples
   (``geometry.rotations.twist_from_poses``; zero phase, known online once M + 1 later poses have arrived:
   the delay) and, for the conditioning term, a second twist over ±(M + 1) (a measured Odometry twist is used
   as it is: no second twist); a pose gap longer than
   ``max_pose_gap`` splits the stream (no derivative window spans it; one-sided windows at its edges);
3. a wrench sample is paired with the pose interpolated at its stamp between two pose samples at most
   ``max_pose_gap`` apart whose twists are known: cubic Hermite in position and quaternion (the twists as end
   slopes, exact to O(h⁴) on smooth motion), linear in the twist; the old linear/normalised-linear pose is kept
   as the alternative of the interpolation term (zero when the stamps coincide);
4. the contact kinematics of the paired instants (``contact_estimation.geometry.contacts``) give the regressor
   blocks (``estimator.regressor``) and measured rows, kept for the estimation window, with the alternative
   rows of the two conditioning terms (other twist bandwidth; linear interpolation, first order in the pose
   change: ``ContactSet.with_motion`` / ``ContactSet.displaced``); a sliding contact whose slip direction the
   two twists do not resolve (> 30° apart, or slip speed < 2 x their difference) is counted as
   ``slip_direction_unresolved`` and its instant is left out of the fit (``DROP_UNRESOLVED_SLIP``: its friction
   force is in the wrench, but the model cannot place it);
   The pairing runs in *data-time blocks* (issue 15: the estimate at a data stamp does not depend on how a
   timer's ticks split the streams): the wrench samples of [B_(k-1), B_k), B_k the multiples of ``block_ns`` =
   1 / publish_rate in epoch nanoseconds, are paired once the wrench stream has reached B_k and the poses with
   known twists have too; so an update ends on the last sample before a block boundary, live and in run-bag
   alike. The incomplete last block is paired by a *flush*: ``step(flush=True)``, or on its own when a step
   finds no new sample (run-bag: the tick after the bag's end); the live node flushes only when its input has
   ended (``EstimatorNode.input_ended``: the sim-time drain, or two ticks and 0.5 s on the wall clock without a
   sample);
5. every update solves the global bounded least squares over the window from its running sufficient
   statistics AᵀA, Aᵀy, yᵀy (``estimator.global_fit_gram``; recomputed from the kept rows when the window drops
   old ones), then its honest covariance (``estimator.honest_covariance``): the HAC sandwich of the residuals
   (``estimator.residual_sandwich`` = ``trust.covariance.sandwich``, lags from their own autocorrelation) where larger than the white form, plus
   the bandwidth term (``bandwidth_scale`` x (estimate with the ±(M+1) twist − estimate)), the interpolation
   term (estimate with linearly interpolated poses − estimate) and the slip, pulling and EIV terms counted by
   their excess over their own noise (``estimator.alternative_terms``). Significance and identifiability use
   the total.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.stamps import StampGate
from contact_estimation.geometry.body import CompoundBody, load_geometry
from contact_estimation.geometry.contacts import ContactKinematics, ContactSet
from contact_estimation.geometry.rotations import quat_multiply, quat_to_matrix, twist_from_poses

from .estimator import (MultiPointEstimate, Thresholds, alternative_terms, eiv_alternative, friction_columns,
                        global_fit_gram, gram, measurement, mismatch_check, mismatch_columns, noise_columns,
                        bandwidth_scale, pulling_keep, regressor, regressor_noise_rss, residual_sandwich, robust_noise,
                        slip_alternative)

_POSE_COLS = ('_p_t', '_p_x', '_p_q', '_p_v', '_p_w', '_p_v2', '_p_w2', '_p_known', '_p_start', '_p_noise_done')
_ROW_COLS = ('_rows_t', '_rows_id', '_rows_A', '_rows_y', '_rows_A_bw', '_rows_A_in', '_rows_y_in', '_rows_Z', '_rows_Z_bw',
             '_rows_Uv', '_rows_Uw', '_rows_Ux', '_rows_Up')
_CONTACT_COLS = ('_c_id', '_c_speed', '_c_lever', '_c_fcol', '_n_id', '_n_delta', '_n_ddot')
#: an instant holding a sliding contact whose slip direction is not resolved is left out of the fit: its friction
#: force is in the measured wrench but the model cannot place it (as sticking it became residual: 22 % of the
#: wrench unexplained in a well-excited calibration draw); the count ``slip_direction_unresolved`` stays
DROP_UNRESOLVED_SLIP = True
#: a pose step longer than this many times the median of the five before it is a hole
HOLE_PERIODS = 4.0



def resolve_geometry_path(name: str) -> Path:
    """A geometry file: as given (absolute or relative to the working directory), else in config/."""
    p = Path(name)
    if p.is_file():
        return p
    if not p.is_absolute():
        from contact_dynamics_common.cli import config_dir
        q = config_dir() / name
        if q.is_file():
            return q
    raise ConfigError(f"geometry_file '{name}' not found (working directory or config/)")


@dataclass
class Latest:
    """The contact set of the newest paired instant."""
    stamp_ns: int
    contacts: ContactSet


class MultiPointPipeline:
    def __init__(self, params: dict, geometry: tuple[CompoundBody, CompoundBody] | None = None):
        self.params = params
        if geometry is None:
            try:
                geometry = load_geometry(resolve_geometry_path(params['geometry_file']))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"geometry_file '{params['geometry_file']}': {exc}") from None
        self.payload, self.environment = geometry
        self.kin = ContactKinematics(self.payload.parts, self.environment.world_parts(),
                                     slide_eps=params['slide_speed_threshold'])
        self.thresholds = Thresholds(max_condition=params['max_condition'], min_excitation=params['min_excitation'],
                                     max_residual_fraction=params['max_residual_fraction'],
                                     significance=params['significance'])
        self.rows_per_instant = 6 if params['formulation'] == 'force_moment' else 3
        self.half_window = int(params['pose_derivative_half_window'])
        self.block_ns = max(int(round(1e9 / params['publish_rate'])), 1)     # data-time block (module docstring)
        self._fresh = 0                              # samples received since the last step (queued or pushed)
        self.wrench_gate = StampGate(params['time_jump_threshold'])
        self.pose_gate = StampGate(params['time_jump_threshold'])
        self.counts = {'wrench_unpaired': 0, 'resets': 0, 'instants': 0, 'instants_in_contact': 0,
                       'slip_direction_unresolved': 0}
        self.pose_frame = ''
        self._differentiated = params['pose_source'] == 'pose'     # twist from the poses (set by the pushes)
        self._queue: list[tuple[str, tuple]] = []     # single samples from ROS callbacks, in arrival order
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self._flush()
        self._w_t = np.zeros(0, np.int64)
        self._w_F = np.zeros((0, 3))
        self._w_M = np.zeros((0, 3))
        self._p_t = np.zeros(0, np.int64)
        self._p_x = np.zeros((0, 3))
        self._p_q = np.zeros((0, 4))
        self._p_v = np.zeros((0, 3))
        self._p_w = np.zeros((0, 3))
        self._p_v2 = np.zeros((0, 3))
        self._p_w2 = np.zeros((0, 3))
        self._p_known = np.zeros(0, bool)
        self._p_start = np.zeros(0, bool)            # first sample of a hole-free pose segment
        self._p_noise_done = np.zeros(0, bool)       # its twist entered the twist-noise record
        self._noise_t = np.zeros(0, np.int64)        # twist-noise record: stamp, |4th differences| of v and ω
        self._noise_v = np.zeros((0, 3))
        self._noise_w = np.zeros((0, 3))
        self._noise_x = np.zeros((0, 3))             # ... and of the position and orientation (rotation vector)
        self._noise_p = np.zeros((0, 3))
        self._next_id = 0
        self._rows_id = np.zeros(0, np.int64)
        self._c_id = np.zeros(0, np.int64)           # per sliding contact: its instant's id, slip speed, |lever|,
        self._c_speed = np.zeros(0)                  # friction column contribution (rows_per_instant,)
        self._c_lever = np.zeros(0)
        self._c_fcol = np.zeros((0, self.rows_per_instant))
        self._n_id = np.zeros(0, np.int64)           # per contact: its instant's id, δ, δ̇ (pulling test)
        self._n_delta = np.zeros(0)
        self._n_ddot = np.zeros(0)
        self._rows_t = np.zeros(0, np.int64)
        self._rows_A = np.zeros((0, self.rows_per_instant, 3))
        self._rows_y = np.zeros((0, self.rows_per_instant))
        self._rows_A_bw = np.zeros((0, self.rows_per_instant, 3))     # rows with the other twist bandwidth
        self._rows_A_in = np.zeros((0, self.rows_per_instant, 3))     # rows with linearly interpolated poses
        self._rows_y_in = np.zeros((0, self.rows_per_instant))
        self._rows_Z = np.zeros((0, self.rows_per_instant, 3))      # the model-mismatch test's candidate terms
        self._rows_Z_bw = np.zeros((0, self.rows_per_instant, 3))   # ... with the other twist bandwidth
        m = self.rows_per_instant                                    # the EIV term's unit-noise columns
        self._rows_Uv, self._rows_Uw = np.zeros((0, m)), np.zeros((0, m))
        self._rows_Ux, self._rows_Up = np.zeros((0, m, 2)), np.zeros((0, m, 2))
        self._stats = [np.zeros((3, 3)), np.zeros(3), 0.0, 0]        # AᵀA, Aᵀy, yᵀy, rows of the window
        self.latest: Latest | None = None
        self.estimate: MultiPointEstimate | None = None
        self.newest_ns = 0
        self._w_newest = 0                           # newest wrench stamp accepted (the blocks' completeness)
        self.wrench_gate.reset()
        self.pose_gate.reset()

    # ------------------------------------------------------------------ inputs
    def push_wrench_columns(self, stamps, force, torque) -> None:
        stamps = np.asarray(stamps, np.int64)
        self._fresh += len(stamps)
        F, M = np.asarray(force, float).reshape(-1, 3), np.asarray(torque, float).reshape(-1, 3)
        finite = np.all(np.isfinite(F), axis=1) & np.all(np.isfinite(M), axis=1)
        for seg in self.wrench_gate.filter(stamps, finite):
            i = seg.index
            if seg.reset_before:
                self._time_jump('wrench', int(stamps[i[0]]) if len(i) else None)
            self._w_t = np.r_[self._w_t, stamps[i]]
            if len(i):
                self._w_newest = max(self._w_newest, int(stamps[i[-1]]))
            self._w_F = np.r_[self._w_F, F[i]]
            self._w_M = np.r_[self._w_M, M[i]]

    def push_wrench(self, stamp_ns: int, force, torque) -> None:
        """One sample (ROS callback): only queued; gated and stored in arrival order by the next update."""
        self._queue.append(('wrench', (stamp_ns, force, torque)))

    def push_pose_columns(self, stamps, position, orientation, linear=None, angular=None) -> None:
        """Poses (pose frame) and, for Odometry, the twist in the child (payload) frame."""
        stamps = np.asarray(stamps, np.int64)
        self._fresh += len(stamps)
        x = np.asarray(position, float).reshape(-1, 3)
        q = np.asarray(orientation, float).reshape(-1, 4)
        qn = np.linalg.norm(q, axis=1)
        finite = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(q), axis=1) & (qn > 0.5) & (qn < 1.5)
        has_twist = linear is not None
        self._differentiated = not has_twist
        if has_twist:
            lin = np.asarray(linear, float).reshape(-1, 3)
            ang = np.asarray(angular, float).reshape(-1, 3)
            finite &= np.all(np.isfinite(lin), axis=1) & np.all(np.isfinite(ang), axis=1)
        for seg in self.pose_gate.filter(stamps, finite):
            i = seg.index
            if seg.reset_before:
                self._time_jump('pose', int(stamps[i[0]]) if len(i) else None)
            if not len(i):
                continue
            qi = q[i] / qn[i][:, None]
            start = self._segment_starts(stamps[i])
            self._p_start = np.r_[self._p_start, start]
            self._p_noise_done = np.r_[self._p_noise_done, np.zeros(len(i), bool)]
            self._p_t = np.r_[self._p_t, stamps[i]]
            self._p_x = np.r_[self._p_x, x[i]]
            self._p_q = np.r_[self._p_q, qi]
            if has_twist:
                R = quat_to_matrix(qi)
                self._p_v = np.r_[self._p_v, np.einsum('nij,nj->ni', R, lin[i])]
                self._p_w = np.r_[self._p_w, np.einsum('nij,nj->ni', R, ang[i])]
                self._p_v2 = np.r_[self._p_v2, self._p_v[-len(i):]]          # measured: no second twist
                self._p_w2 = np.r_[self._p_w2, self._p_w[-len(i):]]
                self._p_known = np.r_[self._p_known, np.ones(len(i), bool)]
            else:
                for name in ('_p_v', '_p_w', '_p_v2', '_p_w2'):
                    setattr(self, name, np.r_[getattr(self, name), np.full((len(i), 3), np.nan)])
                self._p_known = np.r_[self._p_known, np.zeros(len(i), bool)]
                self._pose_twists()
            self._twist_noise()

    def _segment_starts(self, st: np.ndarray) -> np.ndarray:
        """Which new pose stamps start a hole-free segment: the first ever, a step longer than ``max_pose_gap``
        or longer than HOLE_PERIODS x the median of the five steps before it (a hole in the stream; the
        history is the stored stream's, so the flags do not depend on the batching)."""
        prev = self._p_t[-6:]
        allt = np.r_[prev, st].astype(np.int64)
        d = np.diff(allt) * 1e-9
        k0 = len(prev) - 1                                    # index in d of the step into st[0] (-1: none)
        start = np.zeros(len(st), bool)
        if not len(prev):
            start[0] = True
        hist = np.r_[np.full(5, np.nan), d]
        win = np.lib.stride_tricks.sliding_window_view(hist, 5)[:len(d)]   # the 5 steps before each step
        n_hist = np.isfinite(win).sum(axis=1)
        ref = np.where(n_hist > 0, np.nanmedian(np.where(n_hist[:, None] > 0, win, 0.0), axis=1), np.nan)
        hole = (d > self.params['max_pose_gap']) | (np.isfinite(ref) & (d > HOLE_PERIODS * ref))
        if len(prev):
            start |= hole[k0:]
        else:
            start[1:] |= hole
        return start

    def push_pose(self, stamp_ns: int, position, orientation, linear=None, angular=None) -> None:
        """One sample (ROS callback): only queued; gated and stored in arrival order by the next update."""
        kind = 'pose' if linear is None else 'odom'
        self._queue.append((kind, (stamp_ns, position, orientation, linear, angular)))

    def _flush(self) -> None:
        """Queued single samples into the column pushes, one call per run of one kind (same order of events as
        pushing them one by one: the stamp gates and the column pushes do not depend on the batching)."""
        queue, self._queue = self._queue, []
        start = 0
        for k in range(1, len(queue) + 1):
            if k < len(queue) and queue[k][0] == queue[start][0]:
                continue
            kind, cols = queue[start][0], list(zip(*(item for _, item in queue[start:k])))
            if kind == 'wrench':
                self.push_wrench_columns(*cols)
            else:
                self.push_pose_columns(*cols[:3], *(cols[3:] if kind == 'odom' else ()))
            start = k

    def _pose_twists(self) -> None:
        """Twists of the pose samples whose derivative windows are complete (see the module docstring, step 2):
        in the newest (open) segment a sample waits until its ±(M + 1) window — or, near the segment start,
        the first full window — has arrived; a closed segment (a later pose after a gap) is finished with
        one-sided windows. A sample's twist never depends on how the stream was batched."""
        n = len(self._p_t)
        todo = np.nonzero(~self._p_known)[0]
        if not len(todo):
            return
        m, m2 = self.half_window, self.half_window + 1
        starts = np.r_[np.nonzero(self._p_start)[0], n]
        starts = np.unique(np.r_[0, starts])
        for a, b in zip(starts[:-1], starts[1:]):
            mine = todo[(todo >= a) & (todo < b)]
            if not len(mine):
                continue
            closed = b < n
            if not closed:
                seg_start = bool(self._p_start[a])
                # window end needed: i + m2 (centred) or a + 2 m2 (first full window at the segment start)
                need = np.maximum(mine + m2, (a + 2 * m2) if seg_start else mine + m2)
                mine = mine[need <= b - 1]
                if not len(mine):
                    continue
            lo = a if (mine[0] - 2 * m2 <= a) else mine[0] - 2 * m2
            sl = slice(lo, b)
            t = (self._p_t[sl] - self._p_t[lo]) * 1e-9
            v, w = twist_from_poses(t, self._p_x[sl], self._p_q[sl], m)
            v2, w2 = twist_from_poses(t, self._p_x[sl], self._p_q[sl], m2)
            k = mine - lo
            self._p_v[mine], self._p_w[mine], self._p_v2[mine], self._p_w2[mine] = v[k], w[k], v2[k], w2[k]
            self._p_known[mine] = True

    def _twist_noise(self) -> None:
        """Record |4th differences| of the twist of every newly known pose sample whose four predecessors are
        known and in its segment (the robust twist-noise level of the slip term: median / 0.6745 / √70)."""
        n = len(self._p_t)
        todo = np.nonzero(self._p_known & ~self._p_noise_done)[0]
        if not len(todo):
            return
        # a sample is processed once its predecessors are known (known grows as a prefix per segment)
        ok = todo >= 4
        if ok.any():
            i = todo[ok]
            lag = i[:, None] - np.arange(5)[None, :]                       # i, i-1, ..., i-4
            same = ~self._p_start[lag[:, :4]].any(axis=1) & self._p_known[lag].all(axis=1)
            c = np.array([1.0, -4.0, 6.0, -4.0, 1.0])
            dv = np.einsum('k,nkj->nj', c, self._p_v[lag])
            dw = np.einsum('k,nkj->nj', c, self._p_w[lag])
            dx = np.einsum('k,nkj->nj', c, self._p_x[lag])
            q = self._p_q[lag]                                            # sign-aligned to the newest
            q = q * np.sign(np.einsum('nki,ni->nk', q, q[:, 0]) + 1e-300)[:, :, None]
            dp = 2.0 * np.einsum('k,nkj->nj', c, q[:, :, :3])              # small rotations: 2 vec(q)
            use = same & np.isfinite(dv).all(1) & np.isfinite(dw).all(1)
            self._noise_t = np.r_[self._noise_t, self._p_t[i[use]]]
            self._noise_v = np.r_[self._noise_v, np.abs(dv[use])]
            self._noise_w = np.r_[self._noise_w, np.abs(dw[use])]
            self._noise_x = np.r_[self._noise_x, np.abs(dx[use])]
            self._noise_p = np.r_[self._noise_p, np.abs(dp[use])]
        self._p_noise_done[todo] = True
        del n

    def _time_jump(self, source: str, new_ns: int | None) -> None:
        """Time went back in ``source`` (a looped bag): forget the estimation and that stream's samples; the
        other stream's samples newer than the jump are dropped too and its gate re-armed, so that its own
        jump (which follows) is taken as the same event, not as a second reset."""
        self.counts['resets'] += 1
        self._rows_t = self._rows_t[:0]
        self._rows_A = self._rows_A[:0]
        self._rows_y = self._rows_y[:0]
        for name in _ROW_COLS + _CONTACT_COLS:
            setattr(self, name, getattr(self, name)[:0])
        for name in ('_noise_t', '_noise_v', '_noise_w', '_noise_x', '_noise_p'):
            setattr(self, name, getattr(self, name)[:0])
        self._stats = [np.zeros((3, 3)), np.zeros(3), 0.0, 0]
        self.latest, self.estimate, self.newest_ns = None, None, 0
        wrench_side = source == 'wrench'
        other_gate = self.pose_gate if wrench_side else self.wrench_gate
        self._clear('wrench' if wrench_side else 'pose')
        if other_gate.last_ns is not None and (new_ns is None or other_gate.last_ns > new_ns):
            self._clear('pose' if wrench_side else 'wrench')
            other_gate.reset()

    def _clear(self, stream: str) -> None:
        if stream == 'wrench':
            self._w_t, self._w_F, self._w_M = self._w_t[:0], self._w_F[:0], self._w_M[:0]
            self._w_newest = 0
        else:
            for name in _POSE_COLS:
                setattr(self, name, getattr(self, name)[:0])

    # ------------------------------------------------------------------ processing
    def take_fresh(self) -> int:
        """The samples received (queued or pushed) since the previous call; counting restarts."""
        n, self._fresh = self._fresh + len(self._queue), -len(self._queue)
        return n

    def _pair(self, flush: bool) -> None:
        """Pair pending wrench samples with interpolated poses; compute their rows (and the alternatives): the
        complete data-time blocks, and with ``flush`` every sample the known poses cover (module docstring)."""
        if not len(self._w_t) or not len(self._p_t):
            return
        known = np.nonzero(self._p_known)[0]
        if not len(known):
            return
        last_known = known[-1]
        t_known = self._p_t[last_known]
        if flush:
            ready = self._w_t <= t_known
        else:
            ready = self._w_t < min(self._w_newest, int(t_known)) // self.block_ns * self.block_ns
        if not ready.any():
            return
        wt = self._w_t[ready]
        j = np.searchsorted(self._p_t, wt, side='right') - 1          # pose at or before
        before = j < 0
        jc = np.clip(j, 0, len(self._p_t) - 1)
        exact = (~before) & (self._p_t[jc] == wt)
        j1 = np.clip(jc + 1, 0, len(self._p_t) - 1)
        gap = (self._p_t[j1] - self._p_t[jc]) * 1e-9
        ok = ~before & (exact | ((j1 > jc) & (gap <= self.params['max_pose_gap'])))
        ok &= self._p_known[jc] & (exact | (self._p_known[j1] & ~self._p_start[j1]))    # never across a hole
        twist_ok = np.isfinite(self._p_v[jc]).all(1) & (exact | np.isfinite(self._p_v[j1]).all(1))
        ok &= twist_ok
        self.counts['wrench_unpaired'] += int((~ok).sum())
        if ok.any():
            self._rows_of(wt[ok], jc[ok], j1[ok], exact[ok], gap[ok], self._w_F[ready][ok], self._w_M[ready][ok])
        # drop consumed wrench samples and pose samples no longer needed (keep the derivative windows' history)
        keep = ~ready
        self._w_t, self._w_F, self._w_M = self._w_t[keep], self._w_F[keep], self._w_M[keep]
        unknown = np.nonzero(~self._p_known)[0]
        cut = int(last_known) - 1
        if len(unknown):
            cut = min(cut, int(unknown[0]) - 2 * (self.half_window + 1) - 1)
        cut = min(cut, len(self._p_t) - 6)                # 4th differences; the hole test's five steps
        if len(self._w_t):                                # the poses around the waiting wrench samples
            cut = min(cut, int(np.searchsorted(self._p_t, self._w_t[0], side='right')) - 2)
        if cut > 0:
            for name in _POSE_COLS:
                setattr(self, name, getattr(self, name)[cut:])
        self._prune()

    def _rows_of(self, t, jj, jn, exact, gap, F, M) -> None:
        """Rows of paired wrench samples at stamps t between pose samples jj and jn (gap s apart)."""
        jn = np.where(exact, jj, jn)                   # an exact pair uses its own sample only (jn may be unknown)
        a = np.where(exact, 0.0, (t - self._p_t[jj]) * 1e-9 / np.where(exact, 1.0, gap))[:, None]
        h = np.where(exact, 0.0, gap)[:, None]
        # cubic Hermite basis (the twists as end slopes)
        h00, h10 = 2 * a ** 3 - 3 * a ** 2 + 1, a ** 3 - 2 * a ** 2 + a
        h01, h11 = -2 * a ** 3 + 3 * a ** 2, a ** 3 - a ** 2
        x0, x1 = self._p_x[jj], self._p_x[jn]
        v0, v1 = self._p_v[jj], self._p_v[jn]
        x = h00 * x0 + h10 * h * v0 + h01 * x1 + h11 * h * v1
        q0 = self._p_q[jj]
        q1 = self._p_q[jn] * np.sign(np.einsum('ni,ni->n', q0, self._p_q[jn]) + 1e-300)[:, None]
        pad = lambda w: np.concatenate([w, np.zeros((len(w), 1))], axis=1)
        dq0 = 0.5 * quat_multiply(pad(self._p_w[jj]), q0)
        dq1 = 0.5 * quat_multiply(pad(self._p_w[jn]), q1)
        q = h00 * q0 + h10 * h * dq0 + h01 * q1 + h11 * h * dq1
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        lin = lambda u0, u1: (1 - a) * u0 + a * u1
        v, w = lin(v0, v1), lin(self._p_w[jj], self._p_w[jn])
        v2, w2 = lin(self._p_v2[jj], self._p_v2[jn]), lin(self._p_w2[jj], self._p_w2[jn])
        x_lin = lin(x0, x1)
        q_lin = lin(q0, q1)
        q_lin = q_lin / np.linalg.norm(q_lin, axis=1, keepdims=True)
        R, R_lin = quat_to_matrix(q), quat_to_matrix(q_lin)
        F_lin, M_lin = F, M
        if self.params['wrench_expressed_in'] == 'payload':
            F, F_lin = np.einsum('nij,nj->ni', R, F), np.einsum('nij,nj->ni', R_lin, F_lin)
            M, M_lin = np.einsum('nij,nj->ni', R, M), np.einsum('nij,nj->ni', R_lin, M_lin)
        cs = self.kin.compute(R, x, v, w)
        cs2 = cs.with_motion(v2, w2, self.kin.slide_eps)
        # sliding direction not resolved by a differentiated twist — the ±(M+1) twist disagrees on it by > 30°,
        # or the slip speed is below twice their difference: treated as sticking, no friction column
        # (agar §3.10), counted
        unsure = cs.sliding & (~cs2.sliding | (np.einsum('ci,ci->c', cs.t, cs2.t) < 0.866)
                               | (np.linalg.norm(cs.v_t, axis=1) < 2 * np.linalg.norm(cs.v_t - cs2.v_t, axis=1)))
        unresolved = np.zeros(len(t), bool)
        if unsure.any():
            cs = replace(cs, t=np.where(unsure[:, None], 0.0, cs.t), sliding=cs.sliding & ~unsure)
            cs2 = replace(cs2, t=np.where(unsure[:, None], 0.0, cs2.t), sliding=cs2.sliding & ~unsure)
            self.counts['slip_direction_unresolved'] += int(unsure.sum())
            if self.params.get('drop_unresolved_slip', DROP_UNRESOLVED_SLIP):
                unresolved[cs.k[unsure]] = True
        n = len(t)
        form, ms = self.params['formulation'], self.params['moment_scale']
        A = regressor(cs, n, form, ms)
        y = measurement(F, M, form, ms)
        # bandwidth alternative: the ±(M+1) twist (PoseStamped); a measured twist has none (zero term)
        A_bw = regressor(cs2, n, form, ms) if self._differentiated else A
        dphi = 2.0 * quat_multiply(q_lin, q * np.array([-1.0, -1.0, -1.0, 1.0]))[:, :3]
        A_in = regressor(cs.displaced(x_lin - x, dphi), n, form, ms)
        y_in = measurement(F_lin, M_lin, form, ms)
        contact = (cs.count > 0) & ~unresolved
        self.counts['instants'] += n
        self.counts['instants_in_contact'] += int((cs.count > 0).sum())
        ids = self._next_id + np.arange(n)
        self._next_id += n
        self._rows_t = np.r_[self._rows_t, t[contact]]
        self._rows_id = np.r_[self._rows_id, ids[contact]]
        kept = contact[cs.k]                           # contacts of the instants that enter the fit
        sl = cs.sliding & kept
        self._c_id = np.r_[self._c_id, ids[cs.k[sl]]]
        self._c_speed = np.r_[self._c_speed, np.linalg.norm(cs.v_t[sl], axis=1)]
        self._c_lever = np.r_[self._c_lever, np.linalg.norm(cs.lever[sl], axis=1)]
        self._c_fcol = np.concatenate([self._c_fcol, friction_columns(cs, form, ms)[sl]])
        self._n_id = np.r_[self._n_id, ids[cs.k[kept]]]
        self._n_delta = np.r_[self._n_delta, cs.delta[kept]]
        self._n_ddot = np.r_[self._n_ddot, cs.delta_dot[kept]]
        self._rows_A = np.concatenate([self._rows_A, A[contact]])
        self._rows_y = np.concatenate([self._rows_y, y[contact]])
        self._rows_A_bw = np.concatenate([self._rows_A_bw, A_bw[contact]])
        self._rows_A_in = np.concatenate([self._rows_A_in, A_in[contact]])
        self._rows_y_in = np.concatenate([self._rows_y_in, y_in[contact]])
        self._rows_Z = np.concatenate([self._rows_Z, mismatch_columns(cs, n, form, ms)[contact]])
        Z_bw = mismatch_columns(cs2, n, form, ms) if self._differentiated else None
        self._rows_Z_bw = np.concatenate([self._rows_Z_bw, (Z_bw if Z_bw is not None else
                                                            mismatch_columns(cs, n, form, ms))[contact]])
        Uv, Uw, Ux, Up = noise_columns(cs, ids, n, form, ms)
        self._rows_Uv = np.concatenate([self._rows_Uv, Uv[contact]])
        self._rows_Uw = np.concatenate([self._rows_Uw, Uw[contact]])
        self._rows_Ux = np.concatenate([self._rows_Ux, Ux[contact]])
        self._rows_Up = np.concatenate([self._rows_Up, Up[contact]])
        self._accumulate(A[contact], y[contact])
        self.latest = Latest(int(t[-1]), cs.at(n - 1))
        self.newest_ns = int(t[-1])

    def _prune(self) -> None:
        keep = np.ones(len(self._rows_t), bool)
        if self.params['window'] > 0 and len(self._rows_t):
            keep &= self._rows_t > self._rows_t[-1] - int(self.params['window'] * 1e9)
        extra = int(keep.sum()) - self.params['max_samples']
        if extra > 0:
            keep[np.nonzero(keep)[0][:extra]] = False
        if not keep.all():
            for name in _ROW_COLS:
                setattr(self, name, getattr(self, name)[keep])
            kc = np.isin(self._c_id, self._rows_id)
            for name in _CONTACT_COLS[:4]:
                setattr(self, name, getattr(self, name)[kc])
            kn = np.isin(self._n_id, self._rows_id)
            for name in _CONTACT_COLS[4:]:
                setattr(self, name, getattr(self, name)[kn])
            self._stats = [np.zeros((3, 3)), np.zeros(3), 0.0, 0]       # recomputed: no drift from subtraction
            self._accumulate(self._rows_A, self._rows_y)

    def _accumulate(self, A: np.ndarray, y: np.ndarray) -> None:
        G, g, yy, rows = gram(A.reshape(-1, 3), y.reshape(-1))
        self._stats = [self._stats[0] + G, self._stats[1] + g, self._stats[2] + yy, self._stats[3] + rows]

    def step(self, flush: bool | None = None) -> MultiPointEstimate | None:
        """Process what has arrived and re-estimate; None until an instant with contact was paired. ``flush``:
        also pair the incomplete last data-time block; None (default): flush when no sample arrived since the
        previous step (the input has stopped)."""
        if flush is None:
            flush = self.take_fresh() == 0
        self._flush()
        self._pair(flush)
        if not len(self._rows_t):
            return self.estimate
        A, y = self._rows_A.reshape(-1, 3), self._rows_y.reshape(-1)
        rss = lambda th: float(np.sum((y - A @ th) ** 2))
        common = dict(thresholds=self.thresholds, formulation=self.params['formulation'],
                      samples_used=len(self._rows_t))
        first = global_fit_gram(*self._stats, rss=rss, **common)
        hac, terms, noise = self._sigma_terms(first, A, y)
        chain = [(self._rows_A_bw, self._rows_y, self._rows_Z_bw, bandwidth_scale(self.half_window))]
        check = mismatch_check(A, y, self._rows_Z, noise, chain) if first.rank == 3 else None
        self.estimate = global_fit_gram(*self._stats, rss=rss, residual_cov=hac, cov_terms=terms, checks=(check,),
                                        noise_rss=noise, **common)
        for name, C in (('hac', hac), *terms.items()):
            if C is not None:
                sd = np.sqrt(np.maximum(np.diag(C), 0.0))
                for j, par in enumerate(('k', 'b', 'mu_k')):
                    self.estimate.extras[f'sigma_{name}_{par}'] = float(sd[j])
        self.estimate.extras['pose_derivative_half_window'] = self.half_window
        self.estimate.extras['stamp_ns'] = int(self._rows_t[-1])
        return self.estimate

    def _sigma_terms(self, first: MultiPointEstimate, A: np.ndarray, y: np.ndarray):
        """HAC sandwich of the residuals of ``first`` (θ units) and the chain's terms ΔΔᵀ (bandwidth,
        interpolation, slip, pulling) from the alternative rows (``estimator.alternative_terms``)."""
        hac = residual_sandwich(A, y, first)
        if hac is None:
            return None, {}, 0.0
        theta = first.theta
        sv, sw = self.twist_noise()
        sx, sp = self.pose_noise()
        row = np.searchsorted(self._rows_id, self._c_id)
        nrow = np.searchsorted(self._rows_id, self._n_id)
        alts = {'bandwidth': (self._rows_A_bw, self._rows_y), 'interpolation': (self._rows_A_in, self._rows_y_in),
                'slip': (slip_alternative(self._rows_A, row, self._c_speed, self._c_lever, self._c_fcol, sv, sw),
                         self._rows_y),
                'pulling': (None, None, pulling_keep(nrow, self._n_delta, self._n_ddot, theta, len(self._rows_A))),
                'eiv': (eiv_alternative(self._rows_A, self._rows_Uv, self._rows_Uw, self._rows_Ux, self._rows_Up,
                                        sv, sw, sx, sp), self._rows_y)}
        self.term_details = {}
        terms = alternative_terms(theta, alts, self.params['formulation'], base=(self._rows_A, self._rows_y),
                                  scales={'bandwidth': bandwidth_scale(self.half_window)},
                                  details=self.term_details)
        return hac, terms, regressor_noise_rss(self._rows_A, alts['eiv'][0], theta)

    def _noise_window(self) -> np.ndarray:
        lo = self._rows_t[0] if self.params['window'] > 0 else -1
        return (self._noise_t <= self._rows_t[-1]) & (self._noise_t >= lo)

    def pose_noise(self) -> tuple[float, float]:
        """Robust white-noise σ of the position (m) and orientation (rad) components over the window."""
        if not len(self._noise_t) or not len(self._rows_t):
            return 0.0, 0.0
        use = self._noise_window()
        return robust_noise(self._noise_x[use]), robust_noise(self._noise_p[use])

    def twist_noise(self) -> tuple[float, float]:
        """Robust white-noise σ of the twist components (m/s, rad/s) over the estimation window
        (``estimator.robust_noise`` of the recorded |4th differences|)."""
        if not len(self._noise_t) or not len(self._rows_t):
            return 0.0, 0.0
        lo = self._rows_t[0] if self.params['window'] > 0 else -1
        use = (self._noise_t <= self._rows_t[-1]) & (self._noise_t >= lo)
        return robust_noise(self._noise_v[use]), robust_noise(self._noise_w[use])

    def status(self) -> dict:
        self._flush()
        out = dict(self.counts)
        out.update({f'wrench.{k}': v for k, v in self.wrench_gate.counts.as_dict().items()})
        out.update({f'pose.{k}': v for k, v in self.pose_gate.counts.as_dict().items()})
        out['samples_in_window'] = int(len(self._rows_t))
        return out
