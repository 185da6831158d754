"""One MCAP file of a rosbag2 bag: ``McapFile``, the storage the reader uses for ``*.mcap``.

The summary is the file's own (read by ``mcap``'s ``SeekingReader``) or rebuilt by ``SummaryScan``; the
chunks are read and checked by ``ChunkReader``. The same surface is offered by the other storages
(``sqlite.Db3File``, ``ros1.Bag1File``): ``summary``, ``topics``, ``schema``, ``channel_ids``,
``lost_by_channel``, ``iter_raw``, ``iter_pieces``, ``collect``, ``verify``, ``damage``, ``indexed_by``,
``rosbag2_info``.
"""
from __future__ import annotations

import errno
import heapq
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from mcap.reader import SeekingReader
from mcap.records import Schema
from mcap.summary import Summary

from .mcap_chunks import ChunkReader
from .mcap_format import guard, rosbag2_record
from .mcap_scan import SummaryScan
from .records import BagError, Damage, Piece, piece_messages

__all__ = ['McapFile']


class McapFile:
    """One MCAP file of a bag: owns its summary, its channels and the order its messages are read in.

    The summary is the file's own, or, when the file has none or it is unreadable (a recording cut by a
    power loss), rebuilt by ``SummaryScan`` up to the damage (``indexed_by = 'scan'``). With ``recover``, a
    chunk that fails its size/CRC check is skipped and a chunk cut by the end of the file gives the complete
    records it still holds (``ChunkReader``); every such place is kept in ``damage`` (by offset). Without it,
    damage raises BagError. ``unverified`` (default): a chunk that fails its CRC gives the records that still
    parse and agree with the file (recovered-unverified, ``mcap_salvage``); False skips such chunks whole.
    """

    storage = 'mcap'

    def __init__(self, path: Path, recover: bool = True, unverified: bool = True) -> None:
        self.path = path
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, 'bag file not found', str(path))
        self.size = path.stat().st_size
        self.recover = recover
        self.damage: dict[int, Damage] = {}
        self.indexed_by = 'summary'
        self.rosbag2_info: dict[str, Any] | None = None
        self._loose: Piece | None = None          # messages outside chunks found by a scan
        self.chunks = ChunkReader(path, self.size, recover, self.damage, unverified)
        with open(path, 'rb') as f:
            summary, problem = None, None
            try:
                with guard(path):
                    summary = SeekingReader(f).get_summary()
                    if summary is not None:
                        self.rosbag2_info = rosbag2_record(SeekingReader(f).iter_metadata())
                    if summary is not None and summary.statistics is None and recover:
                        summary = None                # counts and times come from a scan then
            except BagError as e:
                summary, problem = None, e
            if summary is None:
                if not recover:
                    raise problem or BagError(f'{path}: MCAP file has no summary section (interrupted '
                                              f'recording?); read it with recover=True or `mcap recover` it')
                self.indexed_by = 'scan'
                scan = SummaryScan(self.chunks, self.rosbag2_info)
                with guard(path):
                    summary = scan.run(f, problem)
                self._loose, self.rosbag2_info = scan.loose, scan.rosbag2_info
        self.summary: Summary = summary
        self.chunks.summary = summary             # the channels a damaged chunk's records are checked against
        self.topics = {c.topic: self.schema(c.id).name for c in summary.channels.values()}

    # ---- channels
    def schema(self, channel_id: int) -> Schema:
        channel = self.summary.channels[channel_id]
        schema = self.summary.schemas.get(channel.schema_id)
        if schema is None:
            raise BagError(f'{self.path}: channel {channel.topic} has no schema')
        return schema

    def channel_ids(self, topics: Iterable[str] | None) -> set[int]:
        wanted = None if topics is None else set(topics)
        return {c.id for c in self.summary.channels.values() if wanted is None or c.topic in wanted}

    def lost_by_channel(self) -> dict[int, int]:
        """Messages of each channel known to be lost in chunks that failed their checks."""
        out: dict[int, int] = {}
        for d in self.damage.values():
            for cid, n in d.lost_by_channel.items():
                out[cid] = out.get(cid, 0) + n
        return out

    def iter_raw(self, topics: list[str] | None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, type name, log time, CDR bytes) in log-time order (ties in file order), chunk by chunk:
        chunks whose log-time ranges overlap are merged, the others follow one another."""
        cids = self.channel_ids(topics)
        if not cids:
            return
        meta = {cid: (self.summary.channels[cid].topic, self.schema(cid).name) for cid in cids}
        chunks = sorted(self.summary.chunk_indexes,
                        key=lambda c: (c.message_start_time, c.chunk_start_offset))
        if not chunks:
            for piece in self.collect(cids):
                yield from piece_messages(piece, meta)
            return
        group: list[Any] = []
        group_end = 0
        for ci in [*chunks, None]:
            if group and (ci is None or ci.message_start_time > group_end):
                streams = [piece_messages(p, meta) for p in self.iter_pieces(
                    cids, sorted(group, key=lambda c: c.chunk_start_offset))]
                yield from (streams[0] if len(streams) == 1 else heapq.merge(*streams, key=itemgetter(2)))
                group = []
            if ci is not None:
                group_end = max(group_end, ci.message_end_time) if group else ci.message_end_time
                group.append(ci)

    def collect(self, channel_ids: set[int]) -> list[Piece]:
        """Messages of the wanted channels, chunk by chunk, in file order."""
        return list(self.iter_pieces(channel_ids))

    def verify(self) -> None:
        """Read and check every chunk (size, CRC), so that ``damage`` lists every damaged chunk."""
        for _ in self.iter_pieces(set(self.summary.channels)):
            pass

    def iter_pieces(self, channel_ids: set[int], chunks: list[Any] | None = None) -> Iterator[Piece]:
        """Messages of the wanted channels, one piece per chunk, for ``chunks`` (chunk indexes of the
        summary; default: all, in file order). Damaged chunks are skipped (noted in ``damage``)."""
        with guard(self.path), open(self.path, 'rb') as f:
            if not self.summary.chunk_indexes:                  # unchunked file
                if self.indexed_by == 'scan':                   # its messages: those the scan found
                    if self._loose is not None:
                        yield self._loose.select(np.isin(self._loose.channel, list(channel_ids)))
                    return
                msgs = [m for _, _, m in SeekingReader(f).iter_messages(
                    topics=[self.summary.channels[c].topic for c in channel_ids], log_time_order=False)
                    if m.channel_id in channel_ids]
                size = np.array([len(m.data) for m in msgs], dtype=np.int64)
                yield Piece(b''.join(m.data for m in msgs), np.array([m.log_time for m in msgs], np.int64),
                             np.cumsum(size) - size, size, np.array([m.channel_id for m in msgs], np.int64))
                return
            if chunks is None:
                chunks = sorted(self.summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
            for ci in chunks:
                piece = self.chunks.read_chunk(f, ci, channel_ids)
                if piece is not None:
                    yield piece
