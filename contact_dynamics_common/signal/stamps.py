"""Time-stamp hygiene for one input stream: zero stamps, non-finite rows, out-of-order samples, isolated outlier
stamps and time jumping back (a looped or restarted bag), applied identically live and offline.

Rules, per sample in arrival order (``last`` = the last accepted stamp, ``J`` = ``jump_threshold_s``):

* zero / negative stamp: dropped, ``zero_stamp``; non-finite row: dropped, ``nonfinite``;
* ``last < t <= last + F``: accepted (``F`` = the forward tolerance, below);
* ``last - J <= t <= last``: dropped, ``out_of_order`` (an old sample re-sent late, a duplicate);
* otherwise the stamp *departs* from the stream (more than ``J`` back, or more than ``F`` ahead). One such
  sample is no evidence: it is dropped and counted ``stamp_outlier``, and the gate watches for the stream to
  continue from it. If the next ``confirm_samples - 1`` samples (in a row, not counting dropped ones) each
  continue from it (``c < t <= c + F``, ``c`` the previous one of them), the stream *did* move: the last of
  them is accepted, and, when the move was backwards, as the first sample after a reset (a looped or
  restarted source: ``time_jumps``, ``Segment.reset_before``). Those earlier departed samples are then
  recounted from ``stamp_outlier`` to ``jump_evidence`` (dropped: the evidence the move needed). If instead
  a sample continues the accepted stream (``last < t <= last + F``) the departed ones stay ``stamp_outlier``
  and the good data on both sides is kept; a sample departing from both starts a new watch.

``F = max(J, forward_intervals * dt)`` with ``dt`` the stream's last accepted interval: a hole in a
1 kHz stream longer than ``J`` needs the same evidence as a jump back, while a slow stream (one sample every
few seconds) is not suspected for its own period. Before an interval is known (the first accepted sample)
there is no forward limit.

Every decision depends only on the stamps in arrival order, not on how they are split into blocks, so the
node (blocks per timer tick) and run-bag (whole records) drop the same samples. Nothing is silently lost:
every rejected sample is counted by reason. Cost: a looped bag loses ``confirm_samples - 1`` samples per
stream at the loop, a forward hole longer than ``F`` the same number after the hole.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

#: the GateCounts fields that are drop causes (the others are accepted samples and events)
DROP_CAUSES = ('zero_stamp', 'nonfinite', 'out_of_order', 'stamp_outlier', 'jump_evidence')


@dataclass
class GateCounts:
    """Samples by what the gate did with them; accepted + Σ DROP_CAUSES = samples given to ``filter``.
    ``time_jumps`` counts events (resets), not samples."""

    accepted: int = 0
    zero_stamp: int = 0
    nonfinite: int = 0
    out_of_order: int = 0
    stamp_outlier: int = 0
    jump_evidence: int = 0
    time_jumps: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def dropped(self) -> dict[str, int]:
        """The drop causes and their counts (every cause, zeros included)."""
        return {k: getattr(self, k) for k in DROP_CAUSES}


@dataclass
class Segment:
    """Accepted samples that follow one another in time; ``reset_before`` marks a backward time jump."""

    index: np.ndarray
    reset_before: bool = False


@dataclass
class StampGate:
    """The stamp gate of one stream (see the module docstring); ``filter`` is called with each new block."""

    jump_threshold_s: float = 1.0
    confirm_samples: int = 3
    forward_intervals: float = 100.0
    last_ns: int | None = None
    counts: GateCounts = field(default_factory=GateCounts)
    dt_ns: int | None = None            # the last accepted interval
    watch_ns: int | None = None         # the newest departed sample being watched, None for none
    watch_n: int = 0                    # departed samples in a row continuing from the first one
    watch_back: bool = False            # whether the watched departure went back in time

    def reset(self) -> None:
        self.last_ns = None
        self.dt_ns = None
        self.watch_ns = None
        self.watch_n = 0

    @property
    def held(self) -> int:
        """Departed samples under watch (already counted ``stamp_outlier``)."""
        return self.watch_n if self.watch_ns is not None else 0

    def filter(self, stamps_ns: np.ndarray, finite: np.ndarray | None = None) -> list[Segment]:
        """Split a block of samples (in arrival order) into accepted segments (indices into the block); a
        segment with ``reset_before=True`` starts after a confirmed backward time jump (an empty one when the
        jump is the block's last event)."""
        stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
        n = len(stamps_ns)
        if n == 1 and stamps_ns[0] > 0 and (finite is None or bool(np.asarray(finite).reshape(-1)[0])):
            verdict = self._one(int(stamps_ns[0]))          # one sample (a callback): no vector machinery
            return [] if verdict == _DROP else [Segment(np.zeros(1, dtype=np.int64), verdict == _RESET)]
        ok = stamps_ns > 0
        self.counts.zero_stamp += int(n - ok.sum())
        if finite is not None:
            bad = ok & ~np.asarray(finite, dtype=bool)
            self.counts.nonfinite += int(bad.sum())
            ok &= ~bad
        idx, s = np.flatnonzero(ok), stamps_ns[ok]
        segments: list[Segment] = []
        current: list[np.ndarray] = []
        reset = False
        pos, window = 0, max(len(s), 1)                  # optimistic: the whole block in one run
        while pos < len(s):
            k = self._regular_run(s[pos:pos + window])      # leading samples the plain rule accepts, vectorised
            if k:
                current.append(idx[pos:pos + k])
                pos += k
                window = window * 2 if k == window else 64
                continue
            verdict = self._one(int(s[pos]))
            if verdict == _RESET:
                if current or reset:
                    segments.append(Segment(_joined(current), reset_before=reset))
                current, reset = [], True
            if verdict != _DROP:
                current.append(idx[pos:pos + 1])
            pos += 1
        if current or reset:
            segments.append(Segment(_joined(current), reset_before=reset))
        return segments

    def _regular_run(self, s: np.ndarray) -> int:
        """How many leading stamps of ``s`` continue the accepted stream (``last < t <= last + F``, no watch
        pending), each from the previous; they are accepted here (counts and state as ``_one`` would)."""
        if self.last_ns is None or self.watch_ns is not None or not len(s):
            return 0
        step = np.diff(np.concatenate(([self.last_ns], s)))
        if step.min() > 0 and step.max() <= self.jump_threshold_s * 1e9:
            k = len(s)                                      # the common case: no step back, none beyond J
        else:
            dt_before = np.concatenate(([self.dt_ns if self.dt_ns is not None else -1], step[:-1]))
            limit = np.where(dt_before < 0, np.inf, np.maximum(self.jump_threshold_s * 1e9,
                                                               self.forward_intervals * dt_before))
            good = (step > 0) & (step <= limit)
            k = len(s) if good.all() else int(np.argmin(good))
        if k:
            self.dt_ns = int(step[k - 1])
            self.last_ns = int(s[k - 1])
            self.counts.accepted += k
        return k

    # ------------------------------------------------------------------ one sample
    def _forward_ns(self) -> float:
        """F: how far ahead of the last accepted stamp a sample may be without departing."""
        jump = self.jump_threshold_s * 1e9
        return float('inf') if self.dt_ns is None else max(jump, self.forward_intervals * self.dt_ns)

    def _accept(self, t: int) -> None:
        if self.last_ns is not None:
            self.dt_ns = t - self.last_ns
        self.last_ns = t
        self.counts.accepted += 1

    def _one(self, t: int) -> int:
        c = self.counts
        if self.last_ns is None:
            self._accept(t)
            return _ACCEPT
        fwd = self._forward_ns()
        if self.last_ns < t <= self.last_ns + fwd:           # continues the accepted stream
            self.watch_ns, self.watch_n = None, 0             # any watched departure was an outlier
            self._accept(t)
            return _ACCEPT
        if self.watch_ns is not None and self.watch_ns < t <= self.watch_ns + fwd:
            self.watch_n += 1                                 # continues the watched departure
            dt, self.watch_ns = t - self.watch_ns, t
            if self.watch_n < self.confirm_samples:
                c.stamp_outlier += 1
                return _DROP
            return self._confirm(t, dt)
        jump = self.jump_threshold_s * 1e9
        if self.last_ns - jump <= t <= self.last_ns or (
                self.watch_ns is not None and self.watch_ns - jump <= t <= self.watch_ns):
            c.out_of_order += 1                               # behind the stream or the watched departure
            return _DROP
        # departs from the stream (and from any watched departure): watch it
        self.watch_ns, self.watch_n, self.watch_back = t, 1, t < self.last_ns
        if self.confirm_samples <= 1:                         # no evidence required
            return self._confirm(t, None)
        c.stamp_outlier += 1
        return _DROP

    def _confirm(self, t: int, dt: int | None) -> int:
        """The watched departure is confirmed by ``t``: the stream moved there. The earlier departed samples
        are recounted as ``jump_evidence``; ``t`` is accepted (after a reset when the move went back)."""
        c = self.counts
        moved = self.watch_n - 1
        c.stamp_outlier -= moved
        c.jump_evidence += moved
        back = self.watch_back
        self.watch_ns, self.watch_n = None, 0
        self.last_ns, self.dt_ns = t, dt
        c.accepted += 1
        if back:
            c.time_jumps += 1
            return _RESET
        return _ACCEPT


_ACCEPT, _DROP, _RESET = 0, 1, 2


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)

