"""The records every bag storage hands to the reader, and what it tells about damage.

- ``BagError``: a bag file is corrupt, truncated or not a readable bag;
- ``Damage`` / ``BagRecovery``: one damaged place of a file, and what a reader can use of a bag;
- ``Piece``: the messages of one topic in one chunk (payloads back to back in one buffer);
- ``Collected``: the pieces of one topic put in log-time order, as the column decoders take them.

This module imports none of the storage back-ends (``mcap``, ``sqlite``, ``ros1``): they all build on it.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mcap.records import Schema

__all__ = ['BagError', 'BagRecovery', 'Collected', 'Damage', 'Piece', 'gather', 'piece_messages']


class BagError(RuntimeError):
    """A bag file is corrupt, truncated or not a rosbag2 MCAP file."""


def gather(buf: np.ndarray, offsets: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Little-endian integers of ``width`` bytes at each offset of a uint8 buffer."""
    return buf[offsets[:, None] + np.arange(width)].view(dtype).ravel()


@dataclass
class Piece:
    """Messages of one topic in one chunk, in file order: payload i is buf[start[i]:start[i] + size[i]]."""

    buf: bytes
    log_ns: np.ndarray
    start: np.ndarray
    size: np.ndarray
    channel: np.ndarray

    def select(self, mask: np.ndarray) -> Piece:
        return Piece(self.buf, self.log_ns[mask], self.start[mask], self.size[mask], self.channel[mask])

    def payloads(self) -> list[bytes]:
        buf = self.buf
        return [buf[a:b] for a, b in zip(self.start.tolist(), (self.start + self.size).tolist())]

    def matrix(self, length: int) -> np.ndarray:
        """(n, length) uint8 rows of payloads that all have ``length`` bytes."""
        arr = np.frombuffer(self.buf, dtype=np.uint8)
        steps = np.diff(self.start)
        if len(steps) and steps[0] >= length and (steps == steps[0]).all():     # evenly spaced
            return np.lib.stride_tricks.as_strided(arr[self.start[0]:], shape=(len(self.start), length),
                                                   strides=(int(steps[0]), 1), writeable=False)
        return np.take(arr, self.start[:, None] + np.arange(length))


@dataclass
class Collected:
    """Raw messages of one topic; ``log_ns`` is in log-time order (ties in file order)."""

    pieces: list[Piece]
    schemas: list[Schema]
    schema_index: np.ndarray                   # per message (file order): index into schemas
    log_ns: np.ndarray
    order: np.ndarray | None                   # file order -> log-time order; None if already ordered

    @classmethod
    def build(cls, pieces: list[Piece], schemas: list[Schema], index_parts: list[np.ndarray]) -> Collected:
        log_ns = np.concatenate([p.log_ns for p in pieces]) if pieces else np.empty(0, np.int64)
        order = None
        if len(log_ns) > 1 and np.any(np.diff(log_ns) < 0):
            order = np.argsort(log_ns, kind='stable')
            log_ns = log_ns[order]
        schema_index = np.concatenate(index_parts) if index_parts else np.empty(0, np.int64)
        return cls(pieces, schemas, schema_index, log_ns, order)

    def _ordered(self, values: Any) -> Any:
        if self.order is None:
            return values
        if isinstance(values, np.ndarray):
            return values[self.order]
        return [values[i] for i in self.order.tolist()]

    def payloads(self) -> list[bytes]:
        return self._ordered([p for piece in self.pieces for p in piece.payloads()])

    def schemas_in_order(self) -> list[Schema]:
        return [self.schemas[i] for i in self._ordered(self.schema_index).tolist()]

    def matrix(self) -> np.ndarray | None:
        """(N, L) uint8 payload rows in log-time order, or None when payload lengths differ."""
        sizes = np.concatenate([p.size for p in self.pieces])
        if len(sizes) == 0 or np.any(sizes != sizes[0]):
            return None
        return self._ordered(np.concatenate([p.matrix(int(sizes[0])) for p in self.pieces]))


@dataclass
class Damage:
    """One damaged place of a bag file, as found while reading it."""

    file: str
    offset: int                           # byte offset of the damaged record (chunk) in the file
    kind: str                             # 'truncated' | 'corrupt' | 'summary' | 'index'
    detail: str
    lost_messages: int | None = None      # messages known to be lost (from an index); None: unknown
    last_good_ns: int | None = None       # log time of the last intact message before it (file order)
    lost_span_ns: tuple[int, int] | None = None     # log-time range of a lost chunk, when indexed
    lost_by_channel: dict[int, int] = field(default_factory=dict, repr=False)
    unverified: int = 0                   # messages kept from it that no CRC confirms (recovered-unverified)

    def describe(self) -> str:
        out = f'{self.file} at byte {self.offset}: {self.detail}'
        if self.lost_messages:
            out += f'; {self.lost_messages} messages lost'
        if self.lost_span_ns:
            out += f' (log time {self.lost_span_ns[0]} .. {self.lost_span_ns[1]} ns)'
        if self.last_good_ns is not None:
            out += f'; last intact message before it logged at {self.last_good_ns} ns'
        return out


@dataclass
class BagRecovery:
    """What a reader can use of a bag and what it had to leave out (``BagReader.recovery``).

    ``messages`` / ``per_topic`` / ``start_ns`` .. ``end_ns``: the messages replay uses (``unverified`` of
    them recovered from MCAP chunks that failed their CRC: they parse and agree with the file, no CRC
    confirms them);
    ``damage``: every damaged place found so far (MCAP chunks are checked as they are read; ``verify()``
    reads them all); ``indexed_by``: file -> 'summary' (the file's own index), 'scan' (rebuilt by reading
    the records, as ``mcap recover`` / ``ros2 bag reindex`` do) or 'sqlite3'; ``metadata``: where
    the rosbag2 metadata came from.
    """

    messages: int
    per_topic: dict[str, int]
    start_ns: int
    end_ns: int
    damage: list[Damage]
    indexed_by: dict[str, str]
    metadata: str

    @property
    def damaged(self) -> bool:
        return bool(self.damage)

    @property
    def unverified(self) -> int:
        """Messages of ``messages`` recovered from chunks that failed their CRC (parse, agree, not verified)."""
        return sum(d.unverified for d in self.damage)

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9 if self.messages else 0.0

    @property
    def break_offset(self) -> int | None:
        """Byte offset of the first damaged place (None when intact)."""
        return min((d.offset for d in self.damage), default=None)

    @property
    def last_good_ns(self) -> int | None:
        """Log time of the last intact message before the first damage that has one."""
        return next((d.last_good_ns for d in sorted(self.damage, key=lambda d: (d.file, d.offset))
                     if d.last_good_ns is not None), None)

    def lines(self) -> list[str]:
        """Human-readable report: one line when intact, a line per damaged place otherwise."""
        if not self.damaged:
            return []
        what = (f'{self.messages} intact messages' if not self.unverified else
                f'{self.messages} messages ({self.messages - self.unverified} intact, {self.unverified} '
                f'recovered-unverified)')
        out = [f'recovered {what}, {self.seconds:.3f} s '
               f'({", ".join(f"{t}: {n}" for t, n in sorted(self.per_topic.items()))}); '
               f'the bag is damaged in {len(self.damage)} place(s):']
        out += ['  ' + d.describe() for d in self.damage]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {'damaged': self.damaged, 'messages': self.messages, 'unverified': self.unverified,
                'seconds': self.seconds,
                'per_topic': dict(self.per_topic), 'start_ns': self.start_ns, 'end_ns': self.end_ns,
                'break_offset': self.break_offset, 'last_good_ns': self.last_good_ns,
                'indexed_by': dict(self.indexed_by), 'metadata': self.metadata,
                'damage': [{'file': d.file, 'offset': d.offset, 'kind': d.kind, 'detail': d.detail,
                            'lost_messages': d.lost_messages, 'last_good_ns': d.last_good_ns,
                            'unverified': d.unverified}
                           for d in self.damage]}


def piece_messages(piece: Piece, meta: dict[int, tuple[str, str]]) -> Iterator[tuple[str, str, int, bytes]]:
    """(topic, type name, log time, CDR bytes) of one piece in log-time order (ties in file order)."""
    order = np.argsort(piece.log_ns, kind='stable')
    buf = piece.buf
    for start, size, log_ns, cid in zip(piece.start[order].tolist(), piece.size[order].tolist(),
                                        piece.log_ns[order].tolist(), piece.channel[order].tolist()):
        topic, type_name = meta[cid]
        yield topic, type_name, log_ns, buf[start:start + size]
