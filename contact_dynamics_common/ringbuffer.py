"""Preallocated numpy ring buffer of time-stamped rows: O(1) appends in callbacks, batched reads on a timer."""
from __future__ import annotations

import numpy as np


class RingBuffer:
    """Fixed-capacity FIFO of (stamp_ns, row[width]) samples.

    ``append``/``extend`` never allocate; when the buffer is full the oldest unread samples are
    overwritten and counted in ``overflowed``. ``pop_all`` returns the unread samples in order.
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

    def __len__(self) -> int:
        return self._size

    def append(self, stamp_ns: int, row) -> None:
        """Copy one sample in (the callback path)."""
        i = self._head
        self._stamps[i] = stamp_ns
        self._rows[i] = row
        self._head = (i + 1) % self.capacity
        if self._size == self.capacity:
            self.overflowed += 1
        else:
            self._size += 1

    def extend(self, stamps_ns: np.ndarray, rows: np.ndarray) -> None:
        """Copy a block of samples in, oldest first."""
        stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.float64).reshape(len(stamps_ns), self.width)
        n = len(stamps_ns)
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

    def pop_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Unread samples (stamps, rows) in arrival order, as copies; the buffer is then empty."""
        n = self._size
        idx = (self._head - n + np.arange(n)) % self.capacity
        out = self._stamps[idx].copy(), self._rows[idx].copy()
        self._size = 0
        return out

    def clear(self) -> None:
        self._size = 0
