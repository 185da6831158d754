"""Reading one chunk of an MCAP file and checking it: ``ChunkReader``.

A chunk is found through its chunk index (file offset, length, log-time span) and, when present, its message
indexes (message offsets per channel). Its records are decompressed and checked (uncompressed size, CRC32,
record framing); the message indexes are checked against the records they point at. Messages come out as a
``Piece`` (payloads of the wanted channels in file order). In a chunk that fails its size or CRC check, the
records that still parse and agree with the file are kept as recovered-unverified (``mcap_salvage``).
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .decode import MessageDecoders
from .mcap_format import (CHUNK_HEAD, CORRUPTION, MESSAGE_DATA, RECORD_HEAD, decompress, decompress_prefix,
                          walk_records)
from .mcap_salvage import decompress_salvage, salvage_chunk
from .records import BagError, Damage, Piece, gather

__all__ = ['ChunkReader']


class ChunkReader:
    """Reads and checks the chunks of one MCAP file; owns what a damaged chunk is and what it lost.

    With ``recover``, a chunk that fails its size/CRC check gives the records that still parse, belong to a
    known channel (``summary``), have a log time in the chunk's span and decode (recovered-unverified,
    ``mcap_salvage``; with ``unverified=False`` the chunk is skipped), its lost messages counted per channel
    from its message index when readable; a chunk cut by the end of the file gives the complete records it
    still holds, a chunk whose records break is read up to the break, and an unreadable message index makes
    the chunk be read by a scan of its records; every such place goes into ``damage`` (file offset ->
    Damage, the dict the ``McapFile`` reports). Without ``recover`` each of them raises BagError.
    """

    def __init__(self, path: Path, size: int, recover: bool, damage: dict[int, Damage],
                 unverified: bool = True) -> None:
        self.path, self.size, self.recover, self.damage = path, size, recover, damage
        self.unverified = unverified
        self.summary: Any = None              # the file's channels and schemas (set by McapFile / SummaryScan)
        self.salvaged: dict[int, dict[int, int]] = {}     # chunk offset -> messages kept per channel
        self._decoders = MessageDecoders(path)

    def _decodes(self, channel_id: int, payload: bytes) -> bool:
        """Whether a payload decodes with its channel's schema and encodes back to the same bytes."""
        channel = self.summary.channels.get(channel_id)
        schema = self.summary.schemas.get(channel.schema_id) if channel is not None else None
        return schema is not None and self._decoders.round_trips(schema, payload)

    def _salvage(self, compression: str, data: bytes, size: int, t0: int, t1: int
                 ) -> tuple[bytes, dict[int, int]]:
        """The consistent records of a chunk that failed its checks (``mcap_salvage``), kept per channel."""
        if not self.unverified or self.summary is None or not self.summary.channels:
            return b'', {}
        return salvage_chunk(decompress_salvage(compression, data, size), t0, t1, set(self.summary.channels),
                             self._decodes)

    def note(self, offset: int, kind: str, detail: str, **kw: Any) -> Damage:
        """The damage at ``offset`` (the first one noted there is kept)."""
        return self.damage.setdefault(offset, Damage(self.path.name, offset, kind, detail, **kw))

    def read_chunk(self, f: Any, ci: Any, channel_ids: set[int]) -> Piece | None:
        """The wanted messages of one chunk, or None (none wanted, or the chunk is damaged)."""
        indexed = bool(ci.message_index_offsets)
        if indexed and not channel_ids.intersection(ci.message_index_offsets):
            return None
        need = ci.chunk_length + (ci.message_index_length if indexed else 0)
        if ci.chunk_start_offset + need > self.size:
            msg = 'chunk index points past the end of the file'
            if not self.recover:
                raise BagError(f'{self.path}: {msg}')
            self.note(ci.chunk_start_offset, 'truncated', msg, lost_span_ns=(ci.message_start_time,
                                                                             ci.message_end_time))
            return None
        f.seek(ci.chunk_start_offset)
        raw = f.read(need)
        buf = self.chunk_records(raw, ci.chunk_length, ci.chunk_start_offset)
        if buf is None:
            self._count_lost(raw, ci)
            return None
        if ci.chunk_start_offset in self.salvaged:           # re-framed records: walked, not indexed
            self._count_lost(raw, ci, self.salvaged[ci.chunk_start_offset])
            indexed = False
        arr = np.frombuffer(buf, dtype=np.uint8)
        offsets = None
        if indexed:
            try:
                offsets = self._indexed_offsets(raw, ci, channel_ids)
                if np.any(offsets + MESSAGE_DATA > len(buf)) or np.any(arr[offsets] != 0x05):
                    raise BagError(f'{self.path}: message index points outside the messages of a chunk')
                size = gather(arr, offsets + 1, 8, '<u8').astype(np.int64) - (MESSAGE_DATA - 9)
                if np.any(size < 0) or np.any(offsets + MESSAGE_DATA + size > len(buf)):
                    raise BagError(f'{self.path}: message record overruns its chunk')
            except (BagError, struct.error) as e:
                if not self.recover:
                    raise
                index_error, offsets = e, None
        if offsets is None:
            found, _, end = walk_records(buf)
            channel = (gather(arr, found + 9, 2, '<u2').astype(np.int64) if len(found)
                       else np.empty(0, np.int64))
            if end != len(buf):
                if not self.recover:
                    raise BagError(f'{self.path}: chunk records overrun the chunk')
                damage = self.note(ci.chunk_start_offset, 'corrupt', f'the records of this chunk break at '
                                    f'byte {end} of {len(buf)} (no CRC to detect it); the {len(found)} '
                                    f'messages before are kept')
                if indexed:                   # lost: what the index lists beyond what was found
                    kept = dict(zip(*(v.tolist() for v in np.unique(channel, return_counts=True))))
                    lost = {c: n - kept.get(c, 0) for c, n in self._index_counts(raw, ci).items()}
                    damage.lost_by_channel = {c: n for c, n in lost.items() if n > 0}
                    damage.lost_messages = sum(damage.lost_by_channel.values())
                    damage.lost_span_ns = (ci.message_start_time, ci.message_end_time)
            elif indexed:
                self.note(ci.chunk_start_offset + ci.chunk_length, 'index',
                           f'message index of the chunk unreadable ({index_error}); chunk read by a scan',
                           lost_messages=0)
            offsets = found[np.isin(channel, list(channel_ids))]
        if len(offsets) == 0:
            return None
        size = gather(arr, offsets + 1, 8, '<u8').astype(np.int64) - (MESSAGE_DATA - 9)
        return Piece(buf, gather(arr, offsets + 15, 8, '<u8').astype(np.int64), offsets + MESSAGE_DATA,
                      size, gather(arr, offsets + 9, 2, '<u2').astype(np.int64))

    def _count_lost(self, raw: bytes, ci: Any, kept: dict[int, int] | None = None) -> None:
        """Lost messages of a damaged chunk, per channel, from its message index (when it has one), less
        the ``kept`` (recovered-unverified) ones."""
        damage = self.damage.get(ci.chunk_start_offset)
        if damage is None:
            return
        kept = kept or {}
        damage.lost_span_ns = (ci.message_start_time, ci.message_end_time)
        listed = self._index_counts(raw, ci)
        damage.lost_by_channel = {c: n - kept.get(c, 0) for c, n in listed.items() if n > kept.get(c, 0)}
        damage.lost_messages = sum(damage.lost_by_channel.values()) if listed else None

    @staticmethod
    def _index_counts(raw: bytes, ci: Any) -> dict[int, int]:
        """Messages per channel that a chunk's message index lists ({} when it is unreadable)."""
        counts: dict[int, int] = {}
        for cid, file_offset in ci.message_index_offsets.items():
            pos = file_offset - ci.chunk_start_offset
            try:
                opcode, _ = RECORD_HEAD.unpack_from(raw, pos)
                (nbytes,) = struct.unpack_from('<I', raw, pos + 11)
            except struct.error:
                return {}
            if opcode != 0x07:
                return {}
            counts[cid] = nbytes // 16
        return counts

    def chunk_records(self, raw: bytes, chunk_length: int, chunk_offset: int) -> bytes | None:
        """Decompressed records of the chunk whose record (from its opcode) is ``raw``.

        With ``recover``: None for a chunk that fails its checks, and the complete records still there for a
        chunk cut by the end of the file; both noted in ``damage``. Without it, BagError.
        """
        try:
            opcode, _, t0, t1, size, crc, name_len = CHUNK_HEAD.unpack_from(raw, 0)
            pos = CHUNK_HEAD.size
            compression = raw[pos:pos + name_len].decode()
            (data_len,) = struct.unpack_from('<Q', raw, pos + name_len)
            pos += name_len + 8
        except (struct.error, UnicodeDecodeError) as e:
            if not self.recover:
                raise BagError(f'{self.path}: chunk record at offset {chunk_offset} is unreadable ({e})')
            self.note(chunk_offset, 'truncated' if len(raw) < 64 else 'corrupt',
                       f'chunk header unreadable ({len(raw)} bytes left)')
            return None
        if opcode != 0x06:
            if not self.recover:
                raise BagError(f'{self.path}: chunk index does not point at a chunk')
            self.note(chunk_offset, 'corrupt', 'the chunk index points at no chunk')
            return None
        if pos + data_len > chunk_length:
            if not self.recover:
                raise BagError(f'{self.path}: chunk record is truncated')
            try:
                buf = decompress_prefix(compression, raw[pos:chunk_length])
            except CORRUPTION:
                buf = b''
            _, _, end = walk_records(buf, suspect_last=False)       # a cut, not garbage
            self.note(chunk_offset, 'truncated',
                       f'the file ends {pos + data_len - chunk_length} bytes before the end of this chunk '
                       f'({end} of its {size} record bytes intact)')
            return buf[:end]
        why = ''
        try:
            buf = decompress(compression, raw[pos:pos + data_len], size)
            if len(buf) != size:
                why = f'{len(buf)} bytes instead of {size}'
            elif crc and zlib.crc32(buf) != crc:
                why = 'CRC mismatch'
        except (BagError, *CORRUPTION) as e:
            why = f'{type(e).__name__}: {e}'
        if why:
            if not self.recover:
                raise BagError(f'{self.path}: chunk at offset {chunk_offset} fails its size or CRC check '
                               f'({why})')
            buf, kept = self._salvage(compression, raw[pos:pos + data_len], size, t0, t1)
            n = sum(kept.values())
            if not n:
                self.note(chunk_offset, 'corrupt', f'chunk fails its size or CRC check ({why}); skipped' + (
                    '' if self.unverified else ' (unverified records refused)'))
                return None
            self.salvaged[chunk_offset] = kept
            self.note(chunk_offset, 'corrupt', f'chunk fails its size or CRC check ({why}); {n} messages '
                      f'recovered-unverified (they parse, their channel and log time agree with the file, they '
                      f'decode and encode back to the same bytes; no CRC confirms their payloads)', unverified=n)
            return buf
        return buf

    def _indexed_offsets(self, raw: bytes, ci: Any, channel_ids: set[int]) -> np.ndarray:
        parts = []
        for cid, file_offset in ci.message_index_offsets.items():
            if cid not in channel_ids:
                continue
            pos = file_offset - ci.chunk_start_offset
            opcode, _ = RECORD_HEAD.unpack_from(raw, pos)
            (nbytes,) = struct.unpack_from('<I', raw, pos + 11)
            if opcode != 0x07 or pos + 15 + nbytes > len(raw):
                raise BagError(f'{self.path}: bad message index record')
            parts.append(np.frombuffer(raw, dtype='<u8', count=nbytes // 8, offset=pos + 15)[1::2])
        offsets = np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
        offsets.sort()
        return offsets
