"""The records of an MCAP chunk that fails its CRC that still parse and agree with the file: ``salvage_chunk``.

A chunk's CRC covers all of its records, so one flipped bit fails the whole chunk (10 592 messages, 10 511
of them intact). Its records are read again one by one and a message record is kept when all of these hold:

- framing: opcode 0x05, length >= 22 (channel 2 + sequence 4 + log and publish time 2 x 8 bytes) and the
  record ends inside the decompressed records; schema and channel records (0x03, 0x04) are stepped over;
- its channel is one of the file's channels (the summary, or the channels read so far by a scan);
- its log time lies within the chunk's [message_start_time, message_end_time] (the chunk header), and the
  records kept of one channel have nondecreasing log times in file order: of the records that pass the other
  checks, the largest such set is kept (``monotone_subset``; among equally large sets the one of the
  earliest records, since a zstd stream that decodes past a flipped bit goes wrong from there on);
- its payload decodes with the channel's schema and encodes back to the same bytes, up to trailing zero
  padding (``decodes(channel id, payload)``, ``MessageDecoders.round_trips``): a record whose length was
  changed so that it swallows the next records, or whose string or sequence lengths broke, fails.

When a record fails, reading goes on at the next offset where a message record passing those checks starts
(a flipped length or opcode loses the records it covers, not the rest). A zstd or lz4 stream that breaks
gives the records decoded before the break (``decompress_salvage``). The payloads themselves are not
verified (no CRC confirms them): a flipped bit inside a number of a payload is not seen, and a zstd stream
that decodes past a flipped bit may copy wrong bytes into later records, so these messages are
*recovered-unverified* (``BagReader(unverified=False)`` refuses them).
"""
from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import zstandard

from .mcap_format import MESSAGE_DATA, RECORD_HEAD
from .records import gather

__all__ = ['decompress_salvage', 'salvage_chunk']


def decompress_salvage(compression: str, data: bytes, size: int) -> bytes:
    """As much of a damaged compressed chunk as decodes (at most 2 x its stated size)."""
    limit = 2 * size + 4096
    out = bytearray()
    try:
        if compression == 'zstd':
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
            while len(out) < limit:
                piece = reader.read(1 << 16)
                if not piece:
                    break
                out += piece
        elif compression == 'lz4':
            import lz4.frame
            dec = lz4.frame.LZ4FrameDecompressor()
            for k in range(0, len(data), 1 << 12):
                out += dec.decompress(data[k:k + (1 << 12)])
                if len(out) >= limit or dec.eof:
                    break
        elif compression == '':
            out += data
    except Exception:                                   # noqa: BLE001  (the stream breaks: keep what came out)
        pass
    return bytes(out[:limit])


def _candidates(arr: np.ndarray, t0: int, t1: int, channels: set[int]) -> np.ndarray:
    """Offsets where a message record header agrees with the file (opcode, length, channel, log time)."""
    n = len(arr)
    if n < MESSAGE_DATA:
        return np.empty(0, np.int64)
    pos = np.flatnonzero(arr[:n - MESSAGE_DATA + 1] == 0x05).astype(np.int64)
    if not len(pos):
        return pos
    length = gather(arr, pos + 1, 8, '<u8')
    ok = (length >= MESSAGE_DATA - 9) & (length <= n)
    pos, length = pos[ok], length[ok].astype(np.int64)
    ok = pos + 9 + length <= n
    pos = pos[ok]
    cid = gather(arr, pos + 9, 2, '<u2').astype(np.int64)
    log = gather(arr, pos + 15, 8, '<u8')
    ok = np.isin(cid, list(channels)) & (log >= t0) & (log <= t1)
    return pos[ok]


def monotone_subset(t: np.ndarray) -> np.ndarray:
    """Indices of the longest nondecreasing subsequence of ``t`` (the lexicographically smallest indices
    among the longest): L_i = 1 + max{L_j : j > i, t_j >= t_i} from the end, then from the start the
    first i with L_i = the length still needed and t_i >= the last kept value."""
    n = len(t)
    longest = np.ones(n, np.int64)
    for i in range(n - 2, -1, -1):
        later = longest[i + 1:][t[i + 1:] >= t[i]]
        if len(later):
            longest[i] = 1 + later.max()
    out, need, last = [], int(longest.max()) if n else 0, None
    for i in range(n):
        if need and longest[i] == need and (last is None or t[i] >= last):
            out.append(i)
            need, last = need - 1, t[i]
    return np.array(out, dtype=np.int64)


def salvage_chunk(buf: bytes, t0: int, t1: int, channels: set[int], decodes: Callable[[int, bytes], bool]
                  ) -> tuple[bytes, dict[int, int]]:
    """The message records of ``buf`` (a failed chunk's records) that pass the checks of the module
    docstring, re-framed back to back, and how many were kept per channel."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    cands = _candidates(arr, t0, t1, channels)
    good: set[int] = set()
    bad: set[int] = set()

    def message_ok(p: int) -> bool:
        if p in good:
            return True
        if p in bad:
            return False
        length = int.from_bytes(buf[p + 1:p + 9], 'little')
        cid = int.from_bytes(buf[p + 9:p + 11], 'little')
        ok = decodes(cid, buf[p + MESSAGE_DATA:p + 9 + length])
        (good if ok else bad).add(p)
        return ok

    kept: list[int] = []
    pos, end = 0, len(buf)
    cand_set = set(cands.tolist())
    while pos + 9 <= end:
        opcode, length = RECORD_HEAD.unpack_from(buf, pos)
        if opcode in (0x03, 0x04) and pos + 9 + length <= end:
            pos += 9 + length                           # a schema or channel record: step over
            continue
        if pos in cand_set and message_ok(pos):
            kept.append(pos)
            pos += 9 + length
            continue
        nxt = cands[np.searchsorted(cands, pos + 1):]   # resynchronise on the next good message record
        pos = next((int(p) for p in nxt if message_ok(int(p))), end)
    if not kept:
        return b'', {}
    offsets = np.array(kept, dtype=np.int64)
    cid = gather(arr, offsets + 9, 2, '<u2').astype(np.int64)
    log = gather(arr, offsets + 15, 8, '<u8').astype(np.int64)
    keep = np.zeros(len(offsets), bool)
    for c in np.unique(cid):                            # log times of a channel do not go back
        idx = np.flatnonzero(cid == c)
        keep[idx[monotone_subset(log[idx])]] = True
    offsets, cid = offsets[keep], cid[keep]
    counts = dict(zip(*(v.tolist() for v in np.unique(cid, return_counts=True))))
    sizes = gather(arr, offsets + 1, 8, '<u8').astype(np.int64) + 9
    return b''.join(buf[a:a + n] for a, n in zip(offsets.tolist(), sizes.tolist())), counts
