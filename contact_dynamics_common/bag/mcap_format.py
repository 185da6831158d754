"""The MCAP file format as the bag reader needs it below ``mcap``'s own reader: record framing, chunk headers,
decompression, and the one guard that turns a low-level parse error into a ``BagError`` naming the file.

A record is opcode (uint8) + length (uint64) + body; a chunk (opcode 0x06) holds its records compressed
(zstd, lz4 or none) with the uncompressed size and CRC32 in its header; a message record (0x05) is channel
(uint16), sequence (uint32), log and publish time (uint64 ns) then the CDR payload.
"""
from __future__ import annotations

import contextlib
import io
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import zstandard
from mcap.data_stream import ReadDataStream
from mcap.exceptions import McapError
from mcap.records import Channel, Metadata, Schema

from .records import BagError

__all__ = ['CHUNK_HEAD', 'CORRUPTION', 'DATA_END', 'FOOTER', 'MAGIC', 'MESSAGE_DATA', 'RECORD_HEAD',
           'RECORD_NAMES', 'decompress', 'decompress_prefix', 'guard', 'parse_record', 'plausible_chunk', 'rosbag2_record',
           'walk_records']

CORRUPTION = (McapError, struct.error, ValueError, IndexError, KeyError, EOFError, UnicodeDecodeError,
               zstandard.ZstdError, yaml.YAMLError, RuntimeError)


@contextlib.contextmanager
def guard(path: Path) -> Iterator[None]:
    """Turn low-level parse errors of one MCAP file into a BagError naming the file."""
    try:
        yield
    except (BagError, NotImplementedError):
        raise
    except CORRUPTION as e:
        raise BagError(f'{path}: corrupt or truncated MCAP file ({type(e).__name__}: {e})') from e


def decompress(compression: str, data: bytes, size: int) -> bytes:
    if compression == 'zstd':
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    if compression == 'lz4':
        import lz4.frame
        return lz4.frame.decompress(data)
    if compression == '':
        return data
    raise BagError(f'unsupported chunk compression {compression!r}')


CHUNK_HEAD = struct.Struct('<BQQQQII')      # opcode, length, start, end, uncompressed size, crc, len(name)
RECORD_HEAD = struct.Struct('<BQ')
MESSAGE_DATA = 31                           # opcode 1 + length 8 + channel 2 + sequence 4 + 2 times 8
MAGIC = b'\x89MCAP0\r\n'
RECORD_NAMES = {0x01: 'header', 0x03: 'schema', 0x04: 'channel', 0x05: 'message', 0x07: 'message index',
                 0x08: 'chunk index', 0x09: 'attachment', 0x0A: 'attachment index', 0x0B: 'statistics',
                 0x0C: 'metadata', 0x0D: 'metadata index', 0x0E: 'summary offset'}
DATA_END, FOOTER = 0x0F, 0x02


def decompress_prefix(compression: str, data: bytes) -> bytes:
    """As much of a cut compressed chunk as decodes (a prefix of its records)."""
    if compression == 'zstd':
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if compression == 'lz4':
        import lz4.frame
        return lz4.frame.LZ4FrameDecompressor().decompress(data)
    if compression == '':
        return data
    raise BagError(f'unsupported chunk compression {compression!r}')


def walk_records(buf: bytes, *, suspect_last: bool = True
                  ) -> tuple[np.ndarray, list[tuple[int, int, int]], int]:
    """Message record offsets, other records (opcode, offset, length) and the end of the last good record of
    a chunk's record stream. When the framing breaks inside the stream (garbage, not a cut),
    ``suspect_last`` leaves out the record just before the break too: contiguous garbage that broke the
    next record's header may have begun in its payload."""
    head = RECORD_HEAD.unpack_from
    messages, other = [], []
    pos, end = 0, len(buf)
    while pos + 9 <= end:
        opcode, length = head(buf, pos)
        if pos + 9 + length > end or (opcode == 0x05 and length < MESSAGE_DATA - 9):
            break
        if opcode == 0x05:
            messages.append(pos)
        else:
            other.append((opcode, pos, length))
        pos += 9 + length
    if suspect_last and pos != end and messages and (not other or other[-1][1] < messages[-1]):
        pos = messages.pop()                  # framing broke inside the stream: distrust the record before
    return np.array(messages, dtype=np.int64), other, pos


def plausible_chunk(buf: bytes, i: int) -> bool:
    """Whether a self-consistent chunk header starts at ``buf[i]``: known compression, record length equal
    to header + compressed records, start time <= end time."""
    j = i + CHUNK_HEAD.size
    if j + 8 > len(buf):
        return False
    opcode, length, t0, t1, size, _, clen = CHUNK_HEAD.unpack_from(buf, i)
    if opcode != 0x06 or clen > 4 or j + clen + 8 > len(buf):
        return False
    if bytes(buf[j:j + clen]) not in (b'', b'lz4', b'zstd'):
        return False
    (data_len,) = struct.unpack_from('<Q', buf, j + clen)
    return length == 40 + clen + data_len and t0 <= t1 and size < 1 << 40


def parse_record(opcode: int, body: bytes) -> Any:
    cls = {0x03: Schema, 0x04: Channel, 0x0C: Metadata}[opcode]
    return cls.read(ReadDataStream(io.BytesIO(body)))


def rosbag2_record(records: Iterable[Any]) -> dict[str, Any] | None:
    return next((yaml.safe_load(m.metadata['serialized_metadata']) for m in records
                 if m.name == 'rosbag2' and 'serialized_metadata' in m.metadata), None)
