"""The summary of an MCAP file rebuilt by reading its records from the start: ``SummaryScan``.

Used when a file has no summary section or an unreadable one (a recording cut by a power loss), as
``mcap recover`` / ``ros2 bag reindex`` do: schemas, channels and the ``rosbag2`` metadata record are
collected, every chunk is read and checked (``ChunkReader``) to count its messages per channel and its
log-time span, messages written outside chunks are kept, and after garbage the scan resumes at the next
self-consistent chunk header.
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np
from mcap.records import Channel, ChunkIndex, Schema, Statistics
from mcap.summary import Summary

from .mcap_chunks import ChunkReader
from .mcap_format import (CHUNK_HEAD, CORRUPTION, DATA_END, FOOTER, MAGIC, MESSAGE_DATA, RECORD_HEAD,
                          RECORD_NAMES, parse_record, plausible_chunk, rosbag2_record, walk_records)
from .records import BagError, Piece, gather

__all__ = ['SummaryScan']


class SummaryScan:
    """Rebuilds the summary of one MCAP file from its records; owns the resynchronisation after garbage, the
    messages found outside chunks (``loose``) and the ``rosbag2`` record found on the way (``rosbag2_info``,
    replacing ``rosbag2_info`` given when the scan reaches the end of the records). Damage goes to the
    ``ChunkReader``'s ``damage``.
    """

    def __init__(self, chunks: ChunkReader, rosbag2_info: dict[str, Any] | None = None) -> None:
        self.chunks = chunks
        self._note = chunks.note                      # damage goes to the chunk reader's record
        self.path, self.size = chunks.path, chunks.size
        self.loose: Piece | None = None               # messages outside chunks
        self.rosbag2_info = rosbag2_info

    def run(self, f: Any, problem: BagError | None) -> Summary:
        """Summary of the intact part of the file, read record by record from its start."""
        f.seek(0)
        magic = f.read(8)
        summary = Summary()
        self.chunks.summary = summary         # damaged chunks are checked against the channels read so far
        if magic != MAGIC:
            if len(magic) < 8 and MAGIC.startswith(magic):        # cut before any record: nothing to read
                self._note(0, 'truncated', f'the file ({self.size} bytes) ends before its first record')
                summary.statistics = Statistics(
                    attachment_count=0, channel_count=0, channel_message_counts={}, chunk_count=0,
                    message_count=0, message_end_time=0, message_start_time=0, metadata_count=0,
                    schema_count=0)
                return summary
            raise BagError(f'{self.path}: not an MCAP file (bad magic)')
        counts: dict[int, int] = {}
        times: list[int] = []                 # min and max log time so far
        last = [None]                         # log time of the last message in file order
        loose: list[tuple[int, int, bytes]] = []
        metadata: list[Any] = []
        pos = 8
        trusted_end, seen_chunk = 8, -1       # end of the last record known good; last chunk read
        while True:
            head = f.read(9)
            if len(head) < 9:
                what = 'ends without a summary or footer' if not head else 'ends inside a record header'
                self._note(pos, 'truncated', f'the file ({self.size} bytes) {what}', last_good_ns=last[0])
                break
            opcode, length = RECORD_HEAD.unpack(head)
            avail = self.size - pos - 9
            problem_here = self._implausible(f, pos, head, opcode, length, avail)
            if problem_here:
                nxt = self._resync(f, max(trusted_end, seen_chunk + 1))
                if nxt is None:
                    kind = 'truncated' if problem_here.startswith('the file ends') else 'corrupt'
                    self._note(pos, kind, f'{problem_here}: nothing readable after it', last_good_ns=last[0])
                    break
                start = min(trusted_end, pos)
                self._note(start, 'corrupt', f'{problem_here} at byte {pos}; {nxt - start} bytes from byte '
                           f'{start} skipped, reading resumes at the chunk at byte {nxt}',
                           last_good_ns=last[0])
                pos = trusted_end = nxt
                f.seek(pos)
                continue
            if opcode in (DATA_END, FOOTER):
                if problem is not None:
                    cause = problem.__cause__ or problem
                    self._note(pos, 'summary', f'summary section unreadable ({type(cause).__name__}); all '
                               f'data records before it are intact', lost_messages=0, last_good_ns=last[0])
                break
            body = f.read(min(length, avail))
            good = False
            if opcode == 0x06:
                seen_chunk = pos
                good = self._scan_chunk(pos, head + body, summary, counts, times, last)
            elif opcode in (0x03, 0x04, 0x0C):
                try:
                    rec = parse_record(opcode, body)
                    self._add_record(rec, summary, metadata)
                    good = True
                except CORRUPTION as e:
                    self._note(pos, 'corrupt', f'unreadable record (opcode 0x{opcode:02x}: {e})',
                               last_good_ns=last[0])
            elif opcode == 0x05 and length >= MESSAGE_DATA - 9:
                cid, _, log_ns = struct.unpack_from('<HIQ', body, 0)
                loose.append((cid, log_ns, body[MESSAGE_DATA - 9:]))
                counts[cid] = counts.get(cid, 0) + 1
                times[:] = [min(times[0], log_ns), max(times[1], log_ns)] if times else [log_ns, log_ns]
                last[0] = log_ns
            if length > avail:
                break
            pos += 9 + length
            if good:
                trusted_end = pos
        if loose:
            size = np.array([len(p) for _, _, p in loose], dtype=np.int64)
            self.loose = Piece(b''.join(p for _, _, p in loose),
                                 np.array([t for _, t, _ in loose], dtype=np.int64), np.cumsum(size) - size,
                                 size, np.array([c for c, _, _ in loose], dtype=np.int64))
        self.rosbag2_info = rosbag2_record(metadata)
        for c in [c for c in summary.channels.values() if c.schema_id and c.schema_id not in summary.schemas]:
            del summary.channels[c.id]        # its schema record was in a lost chunk: undecodable
        unknown = sorted(set(counts) - set(summary.channels))
        if unknown:                           # channel or schema records were in a lost chunk
            lost = sum(counts.pop(c) for c in unknown)
            self._note(self.size, 'corrupt', f'{lost} intact messages of channels {unknown} left out: their '
                       f'channel or schema records were lost', lost_messages=lost)
        summary.statistics = Statistics(
            message_count=sum(counts.values()), schema_count=len(summary.schemas),
            channel_count=len(summary.channels), attachment_count=0, metadata_count=len(metadata),
            chunk_count=len(summary.chunk_indexes), message_start_time=times[0] if times else 0,
            message_end_time=times[1] if times else 0, channel_message_counts=counts)
        return summary

    def _implausible(self, f: Any, pos: int, head: bytes, opcode: int, length: int, avail: int) -> str:
        """Why the record at ``pos`` cannot be right ('' when it may be): an unknown opcode, a data end or
        footer of the wrong size, a chunk whose header contradicts itself, a record past the end of the file.
        """
        if not 0x01 <= opcode <= 0x0F:
            return f'invalid record (opcode 0x{opcode:02x})'
        if (opcode, length) in ((DATA_END, 4), (FOOTER, 20)):
            return ''
        if opcode in (DATA_END, FOOTER):
            return f'invalid record (opcode 0x{opcode:02x} of {length} bytes)'
        if opcode == 0x06:                    # header: 41 bytes, compression name (<= 4), records length
            header = head + f.read(min(avail, CHUNK_HEAD.size - 9 + 4 + 8))
            f.seek(pos + 9)
            if len(header) < CHUNK_HEAD.size:
                return ''                     # cut inside its header: noted when the chunk is read
            clen = struct.unpack_from('<I', header, CHUNK_HEAD.size - 4)[0]
            if clen > 4:
                return 'invalid chunk header'
            if len(header) < CHUNK_HEAD.size + clen + 8:
                return ''
            return '' if plausible_chunk(header, 0) else 'invalid chunk header'
        if length > avail:
            name = RECORD_NAMES.get(opcode, 'record')
            return f'the file ends {length - avail} bytes into a {name} record ({length} bytes)'
        return ''

    def _resync(self, f: Any, start: int) -> int | None:
        """Offset of the first self-consistent chunk header at or after ``start`` (None: there is none)."""
        block = 1 << 22
        pos = start
        while pos < self.size:
            f.seek(pos)
            buf = f.read(block + 64)
            i = buf.find(b'\x06')
            while 0 <= i < block:
                if plausible_chunk(buf, i):
                    return pos + i
                i = buf.find(b'\x06', i + 1)
            pos += block
        return None

    def _add_record(self, rec: Any, summary: Summary, metadata: list[Any]) -> None:
        if isinstance(rec, Schema):
            summary.schemas[rec.id] = rec
        elif isinstance(rec, Channel):
            summary.channels[rec.id] = rec
        else:
            metadata.append(rec)

    def _scan_chunk(self, pos: int, raw: bytes, summary: Summary, counts: dict[int, int], times: list[int],
                    last: list[int | None]) -> bool:
        """Add the chunk at ``pos`` (record ``raw``) to the rebuilt summary; True when it is intact."""
        buf = self.chunks.chunk_records(raw, len(raw), pos)
        damage = self.chunks.damage.get(pos)
        if buf is None:
            damage.last_good_ns = last[0]
            return False
        offsets, other, end = walk_records(buf)
        if end != len(buf) and damage is None:
            damage = self._note(pos, 'corrupt', f'the records of this chunk break at byte {end} of '
                                f'{len(buf)} (no CRC to detect it); the {len(offsets)} messages before '
                                f'are kept')
        for opcode, p, n in other:
            if opcode in (0x03, 0x04):
                self._add_record(parse_record(opcode, buf[p + 9:p + 9 + n]), summary, [])
        log = np.empty(0, np.int64)
        if len(offsets):
            arr = np.frombuffer(buf, dtype=np.uint8)
            channel = gather(arr, offsets + 9, 2, '<u2')
            log = gather(arr, offsets + 15, 8, '<u8').astype(np.int64)
            for cid, n in zip(*np.unique(channel, return_counts=True)):
                counts[int(cid)] = counts.get(int(cid), 0) + int(n)
            lo, hi = int(log.min()), int(log.max())
            times[:] = [min(times[0], lo), max(times[1], hi)] if times else [lo, hi]
            last[0] = int(log[-1])
        if damage is not None:                # a chunk cut by the end of the file
            damage.last_good_ns = last[0]
        summary.chunk_indexes.append(ChunkIndex(
            message_start_time=int(log.min()) if len(log) else 0,
            message_end_time=int(log.max()) if len(log) else 0, chunk_start_offset=pos,
            chunk_length=len(raw), message_index_offsets={}, message_index_length=0, compression='',
            compressed_size=0, uncompressed_size=len(buf)))
        return damage is None
