"""Preallocated numpy ring buffer of time-stamped rows: O(1) appends in callbacks, batched reads on a timer."""
from __future__ import annotations

import numpy as np


class RingBuffer:
    """Fixed-capacity FIFO of (stamp_ns, row[width]) samples.

    ``append``/``extend`` never allocate; when the buffer is full the oldest unread samples are
    overwritten and counted in ``overflowed``. ``pop_all`` returns the unread samples in order; ``pop(n)``
    the oldest n of them (a consumer with a bounded cost per update leaves the rest for the next one).
    Every sample appended is accounted for: appended = popped + overflowed + discarded (``clear``) + len.
    ``high_water`` is the most unread samples held at once.
    """

    def __init__(self, capacity: int, width: int):
        if capacity < 1 or width < 1:
            raise ValueError('capacity and width must be >= 1')
        self.capacity = int(capacity)
        self.width = int(width)
        self._stamps = np.zeros(self.capacity, dtype=np.int64)
        self._rows = np.zeros((self.capacity, self.width), dtype=np.float64)
        self._head = 0      # next write position
        self._size = 0      # unread samples
        self.overflowed = 0
        self.appended = 0
        self.popped = 0
        self.discarded = 0
        self.high_water = 0

    def __len__(self) -> int:
        return self._size

    def append(self, stamp_ns: int, row) -> None:
        """Copy one sample in (the callback path)."""
        i = self._head
        self._stamps[i] = stamp_ns
        self._rows[i] = row
        self._head = (i + 1) % self.capacity
        self.appended += 1
        if self._size == self.capacity:
            self.overflowed += 1
        else:
            self._size += 1
            if self._size > self.high_water:
                self.high_water = self._size

    def extend(self, stamps_ns: np.ndarray, rows: np.ndarray) -> None:
        """Copy a block of samples in, oldest first."""
        stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.float64).reshape(len(stamps_ns), self.width)
        n = len(stamps_ns)
        self.appended += n
        if n > self.capacity:
            self.overflowed += n - self.capacity
            stamps_ns, rows, n = stamps_ns[-self.capacity:], rows[-self.capacity:], self.capacity
        idx = (self._head + np.arange(n)) % self.capacity
        self._stamps[idx] = stamps_ns
        self._rows[idx] = rows
        self._head = (self._head + n) % self.capacity
        lost = max(0, self._size + n - self.capacity)
        self.overflowed += lost
        self._size = min(self.capacity, self._size + n)
        self.high_water = max(self.high_water, self._size)

    def pop_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Unread samples (stamps, rows) in arrival order, as copies; the buffer is then empty."""
        return self.pop(None)

    def pop(self, max_n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The oldest ``max_n`` unread samples (all: None) in arrival order, as copies; the rest stay."""
        n = self._size if max_n is None else max(0, min(int(max_n), self._size))
        idx = (self._head - self._size + np.arange(n)) % self.capacity
        out = self._stamps[idx].copy(), self._rows[idx].copy()
        self._size -= n
        self.popped += n
        return out

    def clear(self) -> None:
        """Forget the unread samples (counted in ``discarded``)."""
        self.discarded += self._size
        self._size = 0
