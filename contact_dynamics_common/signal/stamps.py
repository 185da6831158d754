"""Time-stamp hygiene for one input stream: zero stamps, non-finite rows, out-of-order samples and
time jumping back (a looped or restarted bag), applied identically live and offline.

Following robot_localization's practice, a backward jump larger than ``jump_threshold_s`` is a
*reset* event (the consumer restarts its estimators), while a smaller step back is an out-of-order
sample that is dropped and counted. Nothing is silently lost: every rejected sample is counted by reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class GateCounts:
    accepted: int = 0
    zero_stamp: int = 0
    nonfinite: int = 0
    out_of_order: int = 0
    time_jumps: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Segment:
    """Accepted samples that follow one another in time; ``reset_before`` marks a backward time jump."""

    index: np.ndarray
    reset_before: bool = False


@dataclass
class StampGate:
    jump_threshold_s: float = 1.0
    last_ns: int | None = None
    counts: GateCounts = field(default_factory=GateCounts)

    def reset(self) -> None:
        self.last_ns = None

    def filter(self, stamps_ns: np.ndarray, finite: np.ndarray | None = None) -> list[Segment]:
        """Split a block of samples (in arrival order) into accepted segments.

        A sample is accepted when its stamp is non-zero, its row finite (``finite`` mask) and its stamp
        strictly later than the last accepted one. A stamp more than the jump threshold before the last
        accepted one starts a new segment with ``reset_before=True``.
        """
        stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
        n = len(stamps_ns)
        if n and self._all_good(stamps_ns, finite):      # the common case, in a few vector operations
            self.last_ns = int(stamps_ns[-1])
            self.counts.accepted += n
            return [Segment(np.arange(n))]
        ok = stamps_ns > 0
        self.counts.zero_stamp += int(n - ok.sum())
        if finite is not None:
            bad = ok & ~np.asarray(finite, dtype=bool)
            self.counts.nonfinite += int(bad.sum())
            ok &= ~bad
        candidates = np.flatnonzero(ok)
        jump_ns = int(self.jump_threshold_s * 1e9)
        segments: list[Segment] = []
        reset_next = False
        pos = 0
        while pos < len(candidates):
            idx = candidates[pos:]
            s = stamps_ns[idx]
            floor = self.last_ns if self.last_ns is not None else _NONE
            # prev[i]: the latest accepted-or-seen stamp before sample i
            prev = np.maximum.accumulate(np.concatenate(([floor], s[:-1])))
            jumps = np.flatnonzero((prev != _NONE) & (s < prev - jump_ns))
            stop = int(jumps[0]) if len(jumps) else len(s)
            keep = s[:stop] > prev[:stop]
            self.counts.out_of_order += int(stop - keep.sum())
            if keep.any():
                segments.append(Segment(idx[:stop][keep], reset_before=reset_next))
                reset_next = False
                self.last_ns = int(s[:stop][keep][-1])
                self.counts.accepted += int(keep.sum())
            if stop == len(s):
                break
            self.counts.time_jumps += 1      # restart from the sample that jumped back
            self.last_ns = None
            reset_next = True
            pos += stop
        if reset_next:
            segments.append(Segment(np.empty(0, dtype=np.int64), reset_before=True))
        return segments

    def _all_good(self, stamps_ns: np.ndarray, finite: np.ndarray | None) -> bool:
        first_ok = stamps_ns[0] > 0 and (self.last_ns is None or stamps_ns[0] > self.last_ns)
        return bool(first_ok and (finite is None or finite.all()) and (np.diff(stamps_ns) > 0).all())


_NONE = np.iinfo(np.int64).min
