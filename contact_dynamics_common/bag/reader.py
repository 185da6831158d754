"""rosbag2-compatible MCAP bag directories: ``BagWriter`` and ``BagReader``.

A bag is a directory ``NAME/`` holding ``NAME_0.mcap`` (profile ros2, ``ros2msg`` schemas, CDR messages,
channel metadata ``offered_qos_profiles`` + ``topic_type_hash``, a ``rosbag2`` metadata record) and a
``metadata.yaml`` (rosbag2 version 9), as ``ros2 bag record -s mcap`` writes them.

``custom_data`` must be a string->string map in rosbag2. Strings are stored as they are; any other value
(and a string that itself starts with ``json:``) is stored as ``'json:' + json.dumps(value)``, and
``BagReader.custom_data`` decodes those back.

``BagReader.columns`` / ``columns_many`` are the fast path for offline replay: they read the chunks
themselves (chunk and message indexes, zstd/lz4, CRC check) and, when every message of a topic has the CDR
layout of its first message, decode the numbers with numpy views of an (N, L) byte matrix instead of
decoding message by message. Otherwise each message is decoded with mcap_ros2 and the same columns are built
by ``msgconv.columns_from_messages``.
"""
from __future__ import annotations

import contextlib
import errno
import heapq
import io
import json
import os
import shutil
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import zstandard
from mcap.data_stream import ReadDataStream
from mcap.exceptions import McapError
from mcap.reader import SeekingReader
from mcap.records import Channel, ChunkIndex, MessageIndex, Metadata, Schema, Statistics
from mcap.summary import Summary
from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import CompressionType, Writer as McapWriter
from mcap_ros2._dynamic import generate_dynamic

from ..messages import cdr, convert as msgconv, definitions as msgdefs

__all__ = ['BagError', 'BagReader', 'BagRecovery', 'BagWriter', 'Damage', 'QOS_PRESETS', 'qos_profile']

_INFINITE = {'sec': 9223372036, 'nsec': 854775807}     # RMW_DURATION_INFINITE as rosbag2 writes it
_JSON_PREFIX = 'json:'


class BagError(RuntimeError):
    """A bag file is corrupt, truncated or not a rosbag2 MCAP file."""


def qos_profile(reliability: str = 'reliable', durability: str = 'volatile', depth: int = 10,
                history: str = 'keep_last') -> dict[str, Any]:
    """One offered QoS profile in rosbag2's metadata layout (version 9: policy names as strings)."""
    return {'history': history, 'depth': depth, 'reliability': reliability, 'durability': durability,
            'deadline': dict(_INFINITE), 'lifespan': dict(_INFINITE), 'liveliness': 'automatic',
            'liveliness_lease_duration': dict(_INFINITE), 'avoid_ros_namespace_conventions': False}


QOS_PRESETS: dict[str, dict[str, Any]] = {
    'default': qos_profile(),                                    # rclpy default: reliable, depth 10
    'sensor_data': qos_profile('best_effort', depth=5),          # rclpy qos_profile_sensor_data
}


class _Dumper(yaml.SafeDumper):
    """SafeDumper without anchors/aliases (rosbag2 writes every QoS profile out in full)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def _encode_custom(value: Any) -> str:
    if isinstance(value, str) and not value.startswith(_JSON_PREFIX):
        return value
    return _JSON_PREFIX + json.dumps(value, sort_keys=True,
                                     default=lambda o: o.tolist() if hasattr(o, 'tolist') else str(o))


def _decode_custom(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_JSON_PREFIX):
        return json.loads(value[len(_JSON_PREFIX):])
    return value


def _is_bag_dir(path: Path) -> bool:
    return (path / 'metadata.yaml').is_file() or any(path.glob('*.mcap')) or any(path.glob('*.db3'))


# ================================================================================ writer

def _rclpy_serialize(msg: Any) -> bytes:
    from rclpy.serialization import serialize_message
    return serialize_message(msg)


@dataclass
class _WriterTopic:
    type_name: str
    channel_id: int
    qos: list[dict[str, Any]]
    count: int = 0
    encoder: Any = None           # cdr.encoder for dicts / attribute objects
    rclpy_class: type | None = None


_CODECS = {'zstd': CompressionType.ZSTD, 'lz4': CompressionType.LZ4, 'none': CompressionType.NONE}


class BagWriter:
    """Write a rosbag2 MCAP bag directory (chunks compressed with ``compression``: zstd, lz4 or none).
    Use as a context manager; ``close()`` writes the metadata.

    ``custom_data`` (attribute, a dict) may be updated until ``close()``.
    """

    def __init__(self, path: str | Path, *, custom_data: dict[str, Any] | None = None,
                 ros_distro: str = 'kilted', overwrite: bool = False, chunk_size: int = 1 << 20,
                 compression: str = 'zstd') -> None:
        if compression not in _CODECS:
            raise ValueError(f'chunk compression must be one of {sorted(_CODECS)}, got {compression!r}')
        self.path = Path(path)
        if self.path.exists():
            if not self.path.is_dir():
                raise FileExistsError(errno.EEXIST, 'bag path exists and is not a directory', str(self.path))
            if any(self.path.iterdir()):
                if not overwrite:
                    raise FileExistsError(errno.EEXIST, 'bag directory exists and is not empty '
                                          '(pass overwrite=True to replace it)', str(self.path))
                if not _is_bag_dir(self.path):
                    raise FileExistsError(errno.EEXIST, 'refusing to overwrite a directory that is not a bag',
                                          str(self.path))
                shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.custom_data: dict[str, Any] = dict(custom_data or {})
        self.ros_distro = ros_distro
        self.file_name = f'{self.path.name}_0.mcap'
        self._stream = open(self.path / self.file_name, 'wb')
        self._mcap = McapWriter(self._stream, chunk_size=chunk_size, compression=_CODECS[compression])
        self._mcap.start(profile='ros2', library='contact_dynamics')
        self._fast = _FastMessages.of(self._mcap, chunk_size)
        self._topics: dict[str, _WriterTopic] = {}
        self._start: int | None = None
        self._end: int | None = None
        self._closed = False

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_topic(self, topic: str, type_name: str, qos: str | dict[str, Any] = 'default') -> None:
        """Register a topic; ``qos`` is a preset name ('default', 'sensor_data') or a profile dict."""
        type_name = msgdefs.full_type_name(type_name)
        if topic in self._topics:
            raise ValueError(f'topic {topic!r} is already registered as {self._topics[topic].type_name}')
        profile = dict(QOS_PRESETS[qos]) if isinstance(qos, str) else {**QOS_PRESETS['default'], **qos}
        schema_id = self._mcap.register_schema(name=type_name, encoding=SchemaEncoding.ROS2,
                                               data=msgdefs.msgdef(type_name).encode())
        channel_id = self._mcap.register_channel(
            topic=topic, message_encoding=MessageEncoding.CDR, schema_id=schema_id,
            metadata={'offered_qos_profiles': _yaml([profile]),
                      'topic_type_hash': msgdefs.type_hash(type_name)})
        self._topics[topic] = _WriterTopic(type_name, channel_id, [profile])

    def _topic(self, topic: str, type_name: str) -> _WriterTopic:
        t = self._topics.get(topic)
        if t is None:
            self.add_topic(topic, type_name)
            return self._topics[topic]
        if t.type_name != type_name and t.type_name != msgdefs.full_type_name(type_name):
            raise ValueError(f'topic {topic!r} has type {t.type_name}, not {type_name}')
        return t

    def write(self, topic: str, type_name: str, msg: Any, t_ns: int, *, publish_ns: int | None = None
              ) -> bytes:
        """Serialize and write one message: an rclpy message (rclpy serializer) or a dict / attribute
        object (``cdr.encoder``: compiled from the installed definition, mcap_ros2's rules); return the
        CDR bytes written."""
        t = self._topic(topic, type_name)
        cls = type(msg)
        if cls is t.rclpy_class:
            data = _rclpy_serialize(msg)
        elif hasattr(cls, 'get_fields_and_field_types'):        # rclpy generated message class
            actual = f'{cls.__module__.split(".")[0]}/msg/{cls.__name__}'
            if actual != t.type_name:
                raise TypeError(f'{topic}: expected a {t.type_name} message, got {actual}')
            t.rclpy_class = cls
            data = _rclpy_serialize(msg)
        else:
            if t.encoder is None:
                t.encoder = cdr.encoder(t.type_name)
            data = t.encoder(msg)
        self._add(t, data, t_ns, publish_ns)
        return data

    def write_serialized(self, topic: str, type_name: str, data: bytes, t_ns: int, *,
                         publish_ns: int | None = None) -> None:
        """Write one already CDR-serialized message."""
        self._add(self._topic(topic, type_name), bytes(data), t_ns, publish_ns)

    def _add(self, t: _WriterTopic, data: bytes, t_ns: int, publish_ns: int | None) -> None:
        if self._closed:
            raise ValueError(f'bag {self.path} is closed')
        t_ns = int(t_ns)
        if t_ns < 0:
            raise ValueError(f'negative log time {t_ns}')
        publish_ns = t_ns if publish_ns is None else int(publish_ns)
        if self._fast is not None:
            self._fast.add(t.channel_id, t_ns, data, publish_ns, t.count & 0xFFFFFFFF)
        else:
            self._mcap.add_message(channel_id=t.channel_id, log_time=t_ns, data=data, publish_time=publish_ns,
                                   sequence=t.count & 0xFFFFFFFF)
        t.count += 1
        self._start = t_ns if self._start is None else min(self._start, t_ns)
        self._end = t_ns if self._end is None else max(self._end, t_ns)

    def bag_info(self) -> dict[str, Any]:
        """The ``rosbag2_bagfile_information`` mapping for the messages written so far."""
        start = self._start or 0
        duration = (self._end - start) if self._end is not None else 0
        count = sum(t.count for t in self._topics.values())
        return {
            'version': 9,
            'storage_identifier': 'mcap',
            'duration': {'nanoseconds': duration},
            'starting_time': {'nanoseconds_since_epoch': start},
            'message_count': count,
            'topics_with_message_count': [
                {'topic_metadata': {'name': name, 'type': t.type_name, 'serialization_format': 'cdr',
                                    'offered_qos_profiles': t.qos,
                                    'type_description_hash': msgdefs.type_hash(t.type_name)},
                 'message_count': t.count}
                for name, t in self._topics.items()],
            'compression_format': '',
            'compression_mode': '',
            'relative_file_paths': [self.file_name],
            'files': [{'path': self.file_name, 'starting_time': {'nanoseconds_since_epoch': start},
                       'duration': {'nanoseconds': duration}, 'message_count': count}],
            'custom_data': {str(k): _encode_custom(v) for k, v in self.custom_data.items()},
            'ros_distro': self.ros_distro,
        }

    def close(self) -> None:
        """Finish the MCAP file (summary, ``rosbag2`` metadata record) and write ``metadata.yaml``."""
        if self._closed:
            return
        info = self.bag_info()
        try:
            self._mcap.add_metadata('rosbag2', {'ROS_DISTRO': self.ros_distro,
                                                'serialized_metadata': _yaml(info)})
            self._mcap.finish()
        finally:
            self._stream.close()
            self._closed = True
        with open(self.path / 'metadata.yaml', 'w', encoding='utf-8') as f:
            f.write(_yaml({'rosbag2_bagfile_information': info}))


class _FastMessages:
    """``McapWriter.add_message`` for a chunked writer in one struct pack per message (the same bytes,
    statistics and message indexes as mcap 1.x's own path, at a third of its cost; run-bag writes ~60
    messages per bag second). ``of`` returns None when the writer's internals are not the expected ones
    (another mcap version): ``add_message`` is used then."""

    _HEAD = struct.Struct('<BQHIQQ')      # opcode, record length, channel, sequence, log time, publish time

    def __init__(self, writer: McapWriter, stats, builder, chunk_size: int):
        self._writer, self._stats, self._builder, self._chunk_size = writer, stats, builder, chunk_size

    @classmethod
    def of(cls, writer: McapWriter, chunk_size: int) -> _FastMessages | None:
        stats = getattr(writer, '_Writer__statistics', None)
        builder = getattr(writer, '_Writer__chunk_builder', None)
        buf = getattr(getattr(builder, 'record_writer', None), '_buffer', None)
        if (stats is None or builder is None or not isinstance(buf, io.BytesIO)
                or not hasattr(writer, '_Writer__maybe_finalize_chunk')
                or getattr(writer, '_Writer__chunk_size', None) != chunk_size
                or not all(hasattr(builder, a) for a in ('message_indices', 'num_messages',
                                                         'message_start_time', 'message_end_time'))):
            return None
        return cls(writer, stats, builder, chunk_size)

    def add(self, channel_id: int, log_ns: int, data: bytes, publish_ns: int, sequence: int) -> None:
        stats, cb = self._stats, self._builder
        if stats.message_count == 0:
            stats.message_start_time = log_ns
        elif log_ns < stats.message_start_time:
            stats.message_start_time = log_ns
        if log_ns > stats.message_end_time:
            stats.message_end_time = log_ns
        stats.channel_message_counts[channel_id] += 1
        stats.message_count += 1
        if cb.num_messages == 0:
            cb.message_start_time = log_ns
        elif log_ns < cb.message_start_time:
            cb.message_start_time = log_ns
        if log_ns > cb.message_end_time:
            cb.message_end_time = log_ns
        index = cb.message_indices.get(channel_id)
        if index is None:
            index = cb.message_indices[channel_id] = MessageIndex(channel_id=channel_id, records=[])
        buf = cb.record_writer._buffer            # replaced by a new BytesIO whenever a chunk is finished
        index.records.append((log_ns, buf.tell()))
        cb.num_messages += 1
        buf.write(self._HEAD.pack(5, 22 + len(data), channel_id, sequence, log_ns, publish_ns))
        buf.write(data)
        if buf.tell() > self._chunk_size:
            self._writer._Writer__maybe_finalize_chunk()


# ================================================================================ reader

_CORRUPTION = (McapError, struct.error, ValueError, IndexError, KeyError, EOFError, UnicodeDecodeError,
               zstandard.ZstdError, yaml.YAMLError, RuntimeError)


@contextlib.contextmanager
def _guard(path: Path) -> Iterator[None]:
    """Turn low-level parse errors of one MCAP file into a BagError naming the file."""
    try:
        yield
    except (BagError, NotImplementedError):
        raise
    except _CORRUPTION as e:
        raise BagError(f'{path}: corrupt or truncated MCAP file ({type(e).__name__}: {e})') from e


def _decompress(compression: str, data: bytes, size: int) -> bytes:
    if compression == 'zstd':
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    if compression == 'lz4':
        import lz4.frame
        return lz4.frame.decompress(data)
    if compression == '':
        return data
    raise BagError(f'unsupported chunk compression {compression!r}')


_CHUNK_HEAD = struct.Struct('<BQQQQII')      # opcode, length, start, end, uncompressed size, crc, len(name)
_RECORD_HEAD = struct.Struct('<BQ')
_MESSAGE_DATA = 31                           # opcode 1 + length 8 + channel 2 + sequence 4 + 2 times 8


def _gather(buf: np.ndarray, offsets: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Little-endian integers of ``width`` bytes at each offset of a uint8 buffer."""
    return buf[offsets[:, None] + np.arange(width)].view(dtype).ravel()


@dataclass
class _Piece:
    """Messages of one topic in one chunk, in file order: payload i is buf[start[i]:start[i] + size[i]]."""

    buf: bytes
    log_ns: np.ndarray
    start: np.ndarray
    size: np.ndarray
    channel: np.ndarray

    def select(self, mask: np.ndarray) -> _Piece:
        return _Piece(self.buf, self.log_ns[mask], self.start[mask], self.size[mask], self.channel[mask])

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
class _Collected:
    """Raw messages of one topic; ``log_ns`` is in log-time order (ties in file order)."""

    pieces: list[_Piece]
    schemas: list[Schema]
    schema_index: np.ndarray                   # per message (file order): index into schemas
    log_ns: np.ndarray
    order: np.ndarray | None                   # file order -> log-time order; None if already ordered

    @classmethod
    def build(cls, pieces: list[_Piece], schemas: list[Schema], index_parts: list[np.ndarray]) -> _Collected:
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


_MAGIC = b'\x89MCAP0\r\n'
_RECORD_NAMES = {0x01: 'header', 0x03: 'schema', 0x04: 'channel', 0x05: 'message', 0x07: 'message index',
                 0x08: 'chunk index', 0x09: 'attachment', 0x0A: 'attachment index', 0x0B: 'statistics',
                 0x0C: 'metadata', 0x0D: 'metadata index', 0x0E: 'summary offset'}
_DATA_END, _FOOTER = 0x0F, 0x02


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

    ``messages`` / ``per_topic`` / ``start_ns`` .. ``end_ns``: the intact messages (what replay uses);
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
        out = [f'recovered {self.messages} intact messages, {self.seconds:.3f} s '
               f'({", ".join(f"{t}: {n}" for t, n in sorted(self.per_topic.items()))}); '
               f'the bag is damaged in {len(self.damage)} place(s):']
        out += ['  ' + d.describe() for d in self.damage]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {'damaged': self.damaged, 'messages': self.messages, 'seconds': self.seconds,
                'per_topic': dict(self.per_topic), 'start_ns': self.start_ns, 'end_ns': self.end_ns,
                'break_offset': self.break_offset, 'last_good_ns': self.last_good_ns,
                'indexed_by': dict(self.indexed_by), 'metadata': self.metadata,
                'damage': [{'file': d.file, 'offset': d.offset, 'kind': d.kind, 'detail': d.detail,
                            'lost_messages': d.lost_messages, 'last_good_ns': d.last_good_ns}
                           for d in self.damage]}


def _decompress_prefix(compression: str, data: bytes) -> bytes:
    """As much of a cut compressed chunk as decodes (a prefix of its records)."""
    if compression == 'zstd':
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if compression == 'lz4':
        import lz4.frame
        return lz4.frame.LZ4FrameDecompressor().decompress(data)
    if compression == '':
        return data
    raise BagError(f'unsupported chunk compression {compression!r}')


def _walk_records(buf: bytes, *, suspect_last: bool = True
                  ) -> tuple[np.ndarray, list[tuple[int, int, int]], int]:
    """Message record offsets, other records (opcode, offset, length) and the end of the last good record of
    a chunk's record stream. When the framing breaks inside the stream (garbage, not a cut),
    ``suspect_last`` leaves out the record just before the break too: contiguous garbage that broke the
    next record's header may have begun in its payload."""
    head = _RECORD_HEAD.unpack_from
    messages, other = [], []
    pos, end = 0, len(buf)
    while pos + 9 <= end:
        opcode, length = head(buf, pos)
        if pos + 9 + length > end or (opcode == 0x05 and length < _MESSAGE_DATA - 9):
            break
        if opcode == 0x05:
            messages.append(pos)
        else:
            other.append((opcode, pos, length))
        pos += 9 + length
    if suspect_last and pos != end and messages and (not other or other[-1][1] < messages[-1]):
        pos = messages.pop()                  # framing broke inside the stream: distrust the record before
    return np.array(messages, dtype=np.int64), other, pos


def _plausible_chunk(buf: bytes, i: int) -> bool:
    """Whether a self-consistent chunk header starts at ``buf[i]``: known compression, record length equal
    to header + compressed records, start time <= end time."""
    j = i + _CHUNK_HEAD.size
    if j + 8 > len(buf):
        return False
    opcode, length, t0, t1, size, _, clen = _CHUNK_HEAD.unpack_from(buf, i)
    if opcode != 0x06 or clen > 4 or j + clen + 8 > len(buf):
        return False
    if bytes(buf[j:j + clen]) not in (b'', b'lz4', b'zstd'):
        return False
    (data_len,) = struct.unpack_from('<Q', buf, j + clen)
    return length == 40 + clen + data_len and t0 <= t1 and size < 1 << 40


def _parse_record(opcode: int, body: bytes) -> Any:
    cls = {0x03: Schema, 0x04: Channel, 0x0C: Metadata}[opcode]
    return cls.read(ReadDataStream(io.BytesIO(body)))


def _rosbag2_record(records: Iterable[Any]) -> dict[str, Any] | None:
    return next((yaml.safe_load(m.metadata['serialized_metadata']) for m in records
                 if m.name == 'rosbag2' and 'serialized_metadata' in m.metadata), None)


class _McapFile:
    """One MCAP file of a bag with its summary.

    The summary is the file's own, or, when the file has none or it is unreadable (a recording cut by a
    power loss), rebuilt by reading the records from the start up to the damage (``indexed_by = 'scan'``).
    With ``recover``, a chunk that fails its size/CRC check is skipped and a chunk cut by the end of the
    file gives the complete records it still holds; every such place is kept in ``damage`` (by offset).
    Without it, damage raises BagError.
    """

    storage = 'mcap'

    def __init__(self, path: Path, recover: bool = True) -> None:
        self.path = path
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, 'bag file not found', str(path))
        self.size = path.stat().st_size
        self.recover = recover
        self.damage: dict[int, Damage] = {}
        self.indexed_by = 'summary'
        self.rosbag2_info: dict[str, Any] | None = None
        self._loose: _Piece | None = None         # messages outside chunks found by a scan
        with open(path, 'rb') as f:
            summary, problem = None, None
            try:
                with _guard(path):
                    summary = SeekingReader(f).get_summary()
                    if summary is not None:
                        self.rosbag2_info = _rosbag2_record(SeekingReader(f).iter_metadata())
                    if summary is not None and summary.statistics is None and recover:
                        summary = None                # counts and times come from a scan then
            except BagError as e:
                summary, problem = None, e
            if summary is None:
                if not recover:
                    raise problem or BagError(f'{path}: MCAP file has no summary section (interrupted '
                                              f'recording?); read it with recover=True or `mcap recover` it')
                with _guard(path):
                    summary = self._scan(f, problem)
        self.summary: Summary = summary
        self.topics = {c.topic: self.schema(c.id).name for c in summary.channels.values()}

    def _note(self, offset: int, kind: str, detail: str, **kw: Any) -> Damage:
        return self.damage.setdefault(offset, Damage(self.path.name, offset, kind, detail, **kw))

    # ---- index rebuilt by a scan
    def _scan(self, f: Any, problem: BagError | None) -> Summary:
        """Summary of the intact part of the file, read record by record from its start."""
        f.seek(0)
        magic = f.read(8)
        self.indexed_by = 'scan'
        summary = Summary()
        if magic != _MAGIC:
            if len(magic) < 8 and _MAGIC.startswith(magic):        # cut before any record: nothing to read
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
            opcode, length = _RECORD_HEAD.unpack(head)
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
            if opcode in (_DATA_END, _FOOTER):
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
                    rec = _parse_record(opcode, body)
                    self._add_record(rec, summary, metadata)
                    good = True
                except _CORRUPTION as e:
                    self._note(pos, 'corrupt', f'unreadable record (opcode 0x{opcode:02x}: {e})',
                               last_good_ns=last[0])
            elif opcode == 0x05 and length >= _MESSAGE_DATA - 9:
                cid, _, log_ns = struct.unpack_from('<HIQ', body, 0)
                loose.append((cid, log_ns, body[_MESSAGE_DATA - 9:]))
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
            self._loose = _Piece(b''.join(p for _, _, p in loose),
                                 np.array([t for _, t, _ in loose], dtype=np.int64), np.cumsum(size) - size,
                                 size, np.array([c for c, _, _ in loose], dtype=np.int64))
        self.rosbag2_info = _rosbag2_record(metadata)
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
        if (opcode, length) in ((_DATA_END, 4), (_FOOTER, 20)):
            return ''
        if opcode in (_DATA_END, _FOOTER):
            return f'invalid record (opcode 0x{opcode:02x} of {length} bytes)'
        if opcode == 0x06:                    # header: 41 bytes, compression name (<= 4), records length
            header = head + f.read(min(avail, _CHUNK_HEAD.size - 9 + 4 + 8))
            f.seek(pos + 9)
            if len(header) < _CHUNK_HEAD.size:
                return ''                     # cut inside its header: noted when the chunk is read
            clen = struct.unpack_from('<I', header, _CHUNK_HEAD.size - 4)[0]
            if clen > 4:
                return 'invalid chunk header'
            if len(header) < _CHUNK_HEAD.size + clen + 8:
                return ''
            return '' if _plausible_chunk(header, 0) else 'invalid chunk header'
        if length > avail:
            name = _RECORD_NAMES.get(opcode, 'record')
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
                if _plausible_chunk(buf, i):
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
        buf = self._chunk_records(raw, len(raw), pos)
        damage = self.damage.get(pos)
        if buf is None:
            damage.last_good_ns = last[0]
            return False
        offsets, other, end = _walk_records(buf)
        if end != len(buf) and damage is None:
            damage = self._note(pos, 'corrupt', f'the records of this chunk break at byte {end} of '
                                f'{len(buf)} (no CRC to detect it); the {len(offsets)} messages before '
                                f'are kept')
        for opcode, p, n in other:
            if opcode in (0x03, 0x04):
                self._add_record(_parse_record(opcode, buf[p + 9:p + 9 + n]), summary, [])
        log = np.empty(0, np.int64)
        if len(offsets):
            arr = np.frombuffer(buf, dtype=np.uint8)
            channel = _gather(arr, offsets + 9, 2, '<u2')
            log = _gather(arr, offsets + 15, 8, '<u8').astype(np.int64)
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

    # ---- reading
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
                yield from _piece_messages(piece, meta)
            return
        group: list[Any] = []
        group_end = 0
        for ci in [*chunks, None]:
            if group and (ci is None or ci.message_start_time > group_end):
                streams = [_piece_messages(p, meta) for p in self.iter_pieces(
                    cids, sorted(group, key=lambda c: c.chunk_start_offset))]
                yield from (streams[0] if len(streams) == 1 else heapq.merge(*streams, key=itemgetter(2)))
                group = []
            if ci is not None:
                group_end = max(group_end, ci.message_end_time) if group else ci.message_end_time
                group.append(ci)

    def collect(self, channel_ids: set[int]) -> list[_Piece]:
        """Messages of the wanted channels, chunk by chunk, in file order."""
        return list(self.iter_pieces(channel_ids))

    def verify(self) -> None:
        """Read and check every chunk (size, CRC), so that ``damage`` lists every damaged chunk."""
        for _ in self.iter_pieces(set(self.summary.channels)):
            pass

    def iter_pieces(self, channel_ids: set[int], chunks: list[Any] | None = None) -> Iterator[_Piece]:
        """Messages of the wanted channels, one piece per chunk, for ``chunks`` (chunk indexes of the
        summary; default: all, in file order). Damaged chunks are skipped (noted in ``damage``)."""
        with _guard(self.path), open(self.path, 'rb') as f:
            if not self.summary.chunk_indexes:                  # unchunked file
                if self._loose is not None:
                    keep = np.isin(self._loose.channel, list(channel_ids))
                    yield self._loose.select(keep)
                    return
                msgs = [m for _, _, m in SeekingReader(f).iter_messages(
                    topics=[self.summary.channels[c].topic for c in channel_ids], log_time_order=False)
                    if m.channel_id in channel_ids]
                size = np.array([len(m.data) for m in msgs], dtype=np.int64)
                yield _Piece(b''.join(m.data for m in msgs), np.array([m.log_time for m in msgs], np.int64),
                             np.cumsum(size) - size, size, np.array([m.channel_id for m in msgs], np.int64))
                return
            if chunks is None:
                chunks = sorted(self.summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
            for ci in chunks:
                piece = self._read_chunk(f, ci, channel_ids)
                if piece is not None:
                    yield piece

    def _read_chunk(self, f: Any, ci: Any, channel_ids: set[int]) -> _Piece | None:
        """The wanted messages of one chunk, or None (none wanted, or the chunk is damaged)."""
        indexed = bool(ci.message_index_offsets)
        if indexed and not channel_ids.intersection(ci.message_index_offsets):
            return None
        need = ci.chunk_length + (ci.message_index_length if indexed else 0)
        if ci.chunk_start_offset + need > self.size:
            msg = 'chunk index points past the end of the file'
            if not self.recover:
                raise BagError(f'{self.path}: {msg}')
            self._note(ci.chunk_start_offset, 'truncated', msg, lost_span_ns=(ci.message_start_time,
                                                                             ci.message_end_time))
            return None
        f.seek(ci.chunk_start_offset)
        raw = f.read(need)
        buf = self._chunk_records(raw, ci.chunk_length, ci.chunk_start_offset)
        if buf is None:
            self._count_lost(raw, ci)
            return None
        arr = np.frombuffer(buf, dtype=np.uint8)
        offsets = None
        if indexed:
            try:
                offsets = self._indexed_offsets(raw, ci, channel_ids)
                if np.any(offsets + _MESSAGE_DATA > len(buf)) or np.any(arr[offsets] != 0x05):
                    raise BagError(f'{self.path}: message index points outside the messages of a chunk')
                size = _gather(arr, offsets + 1, 8, '<u8').astype(np.int64) - (_MESSAGE_DATA - 9)
                if np.any(size < 0) or np.any(offsets + _MESSAGE_DATA + size > len(buf)):
                    raise BagError(f'{self.path}: message record overruns its chunk')
            except (BagError, struct.error) as e:
                if not self.recover:
                    raise
                index_error, offsets = e, None
        if offsets is None:
            found, _, end = _walk_records(buf)
            channel = (_gather(arr, found + 9, 2, '<u2').astype(np.int64) if len(found)
                       else np.empty(0, np.int64))
            if end != len(buf):
                if not self.recover:
                    raise BagError(f'{self.path}: chunk records overrun the chunk')
                damage = self._note(ci.chunk_start_offset, 'corrupt', f'the records of this chunk break at '
                                    f'byte {end} of {len(buf)} (no CRC to detect it); the {len(found)} '
                                    f'messages before are kept')
                if indexed:                   # lost: what the index lists beyond what was found
                    kept = dict(zip(*(v.tolist() for v in np.unique(channel, return_counts=True))))
                    lost = {c: n - kept.get(c, 0) for c, n in self._index_counts(raw, ci).items()}
                    damage.lost_by_channel = {c: n for c, n in lost.items() if n > 0}
                    damage.lost_messages = sum(damage.lost_by_channel.values())
                    damage.lost_span_ns = (ci.message_start_time, ci.message_end_time)
            elif indexed:
                self._note(ci.chunk_start_offset + ci.chunk_length, 'index',
                           f'message index of the chunk unreadable ({index_error}); chunk read by a scan',
                           lost_messages=0)
            offsets = found[np.isin(channel, list(channel_ids))]
        if len(offsets) == 0:
            return None
        size = _gather(arr, offsets + 1, 8, '<u8').astype(np.int64) - (_MESSAGE_DATA - 9)
        return _Piece(buf, _gather(arr, offsets + 15, 8, '<u8').astype(np.int64), offsets + _MESSAGE_DATA,
                      size, _gather(arr, offsets + 9, 2, '<u2').astype(np.int64))

    def _count_lost(self, raw: bytes, ci: Any) -> None:
        """Lost messages of a damaged chunk, per channel, from its message index (when it has one)."""
        damage = self.damage.get(ci.chunk_start_offset)
        if damage is None:
            return
        damage.lost_span_ns = (ci.message_start_time, ci.message_end_time)
        damage.lost_by_channel = self._index_counts(raw, ci)
        damage.lost_messages = sum(damage.lost_by_channel.values()) if damage.lost_by_channel else None

    @staticmethod
    def _index_counts(raw: bytes, ci: Any) -> dict[int, int]:
        """Messages per channel that a chunk's message index lists ({} when it is unreadable)."""
        counts: dict[int, int] = {}
        for cid, file_offset in ci.message_index_offsets.items():
            pos = file_offset - ci.chunk_start_offset
            try:
                opcode, _ = _RECORD_HEAD.unpack_from(raw, pos)
                (nbytes,) = struct.unpack_from('<I', raw, pos + 11)
            except struct.error:
                return {}
            if opcode != 0x07:
                return {}
            counts[cid] = nbytes // 16
        return counts

    def _chunk_records(self, raw: bytes, chunk_length: int, chunk_offset: int) -> bytes | None:
        """Decompressed records of the chunk whose record (from its opcode) is ``raw``.

        With ``recover``: None for a chunk that fails its checks, and the complete records still there for a
        chunk cut by the end of the file; both noted in ``damage``. Without it, BagError.
        """
        try:
            opcode, _, _, _, size, crc, name_len = _CHUNK_HEAD.unpack_from(raw, 0)
            pos = _CHUNK_HEAD.size
            compression = raw[pos:pos + name_len].decode()
            (data_len,) = struct.unpack_from('<Q', raw, pos + name_len)
            pos += name_len + 8
        except (struct.error, UnicodeDecodeError) as e:
            if not self.recover:
                raise BagError(f'{self.path}: chunk record at offset {chunk_offset} is unreadable ({e})')
            self._note(chunk_offset, 'truncated' if len(raw) < 64 else 'corrupt',
                       f'chunk header unreadable ({len(raw)} bytes left)')
            return None
        if opcode != 0x06:
            if not self.recover:
                raise BagError(f'{self.path}: chunk index does not point at a chunk')
            self._note(chunk_offset, 'corrupt', 'the chunk index points at no chunk')
            return None
        if pos + data_len > chunk_length:
            if not self.recover:
                raise BagError(f'{self.path}: chunk record is truncated')
            try:
                buf = _decompress_prefix(compression, raw[pos:chunk_length])
            except _CORRUPTION:
                buf = b''
            _, _, end = _walk_records(buf, suspect_last=False)       # a cut, not garbage
            self._note(chunk_offset, 'truncated',
                       f'the file ends {pos + data_len - chunk_length} bytes before the end of this chunk '
                       f'({end} of its {size} record bytes intact)')
            return buf[:end]
        why = ''
        try:
            buf = _decompress(compression, raw[pos:pos + data_len], size)
            if len(buf) != size:
                why = f'{len(buf)} bytes instead of {size}'
            elif crc and zlib.crc32(buf) != crc:
                why = 'CRC mismatch'
        except (BagError, *_CORRUPTION) as e:
            why = f'{type(e).__name__}: {e}'
        if why:
            if not self.recover:
                raise BagError(f'{self.path}: chunk at offset {chunk_offset} fails its size or CRC check '
                               f'({why})')
            self._note(chunk_offset, 'corrupt', f'chunk fails its size or CRC check ({why}); skipped')
            return None
        return buf

    def _indexed_offsets(self, raw: bytes, ci: Any, channel_ids: set[int]) -> np.ndarray:
        parts = []
        for cid, file_offset in ci.message_index_offsets.items():
            if cid not in channel_ids:
                continue
            pos = file_offset - ci.chunk_start_offset
            opcode, _ = _RECORD_HEAD.unpack_from(raw, pos)
            (nbytes,) = struct.unpack_from('<I', raw, pos + 11)
            if opcode != 0x07 or pos + 15 + nbytes > len(raw):
                raise BagError(f'{self.path}: bad message index record')
            parts.append(np.frombuffer(raw, dtype='<u8', count=nbytes // 8, offset=pos + 15)[1::2])
        offsets = np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
        offsets.sort()
        return offsets


def _piece_messages(piece: _Piece, meta: dict[int, tuple[str, str]]) -> Iterator[tuple[str, str, int, bytes]]:
    """(topic, type name, log time, CDR bytes) of one piece in log-time order (ties in file order)."""
    order = np.argsort(piece.log_ns, kind='stable')
    buf = piece.buf
    for start, size, log_ns, cid in zip(piece.start[order].tolist(), piece.size[order].tolist(),
                                        piece.log_ns[order].tolist(), piece.channel[order].tolist()):
        topic, type_name = meta[cid]
        yield topic, type_name, log_ns, buf[start:start + size]


def _open_storage(path: Path, recover: bool) -> Any:
    """The storage reader of one bag file, by its suffix: MCAP, rosbag2 sqlite3 (``.db3``) or ROS 1
    (``.bag``)."""
    if path.suffix == '.db3' or path.name.endswith(('.db3.zstd', '.db3.zst')):
        from .sqlite import Db3File
        return Db3File(path, recover)
    if path.suffix == '.bag':
        from .ros1 import Bag1File
        return Bag1File(path, recover)
    if path.suffix in ('.zstd', '.zst', '.lz4'):
        raise BagError(f'{path}: a file-compressed rosbag2 bag file; decompress it first '
                       f'({path.suffix[1:]} -d)')
    return _McapFile(path, recover)


def _file_order(path: Path) -> tuple[str, int, str]:
    """Split bag files in recording order: NAME_2 before NAME_10."""
    stem, _, index = path.stem.rpartition('_')
    return (stem, int(index), path.name) if index.isdigit() else (path.stem, -1, path.name)


def _read_metadata(meta: Path) -> tuple[dict[str, Any] | None, str]:
    """(``rosbag2_bagfile_information`` mapping of a metadata.yaml, '') or (None, why it is unusable: not
    YAML, not a mapping, no such mapping in it); unreadable files raise OSError as usual."""
    with open(meta, encoding='utf-8', errors='replace') as f:
        text = f.read()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return None, f'not valid YAML: {str(e).splitlines()[0] if str(e) else type(e).__name__}'
    if not isinstance(doc, dict):
        return None, f'not a mapping but {"empty" if doc is None else type(doc).__name__}'
    info = doc.get('rosbag2_bagfile_information')
    if not isinstance(info, dict):
        return None, 'no rosbag2_bagfile_information mapping'
    return info, ''


class BagReader:
    """Read a rosbag2 bag directory (MCAP or sqlite3 storage) or a bare ``.mcap`` / ``.db3`` file.

    Attributes: ``topics`` {topic: type name}; ``info``, the ``rosbag2_bagfile_information`` mapping of
    metadata.yaml (or of the file's ``rosbag2`` record), or None; ``storage`` ('mcap' or 'sqlite3');
    ``metadata_source``, where ``info`` came from. An unusable metadata.yaml (not YAML, not a mapping, no
    ``rosbag2_bagfile_information``) is left as it is and the metadata rebuilt in memory, as for a missing
    one (``metadata_source`` says why). A directory without metadata.yaml is read as the union of
    its ``*.mcap`` (else ``*.db3``) files, and its metadata is rebuilt from them as ``ros2 bag reindex``
    does: written to ``metadata.yaml`` when ``write_metadata`` and the directory is writable, else kept in
    memory. ``recover`` (default) reads damaged MCAP files up to the damage (see ``recovery``).
    """

    def __init__(self, path: str | Path, *, recover: bool = True, write_metadata: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(errno.ENOENT, 'bag not found', str(self.path))
        self.info: dict[str, Any] | None = None
        self.metadata_source = 'metadata.yaml'
        rebuild = False
        unusable = ''                 # why an existing metadata.yaml cannot be used (then rebuilt in memory)
        if self.path.is_dir():
            meta = self.path / 'metadata.yaml'
            if meta.is_file():
                self.info, unusable = _read_metadata(meta)
            if self.info is not None:
                # names only: bags before rosbag2 metadata version 4 listed them with the directory
                files = [self.path / Path(p).name for p in self.info.get('relative_file_paths', [])]
            else:
                files = sorted(self.path.glob('*.mcap'), key=_file_order) or sorted(self.path.glob('*.db3'),
                                                                                     key=_file_order)
                rebuild = True
            if not files and unusable:
                raise BagError(f'{meta}: {unusable}, and no .mcap or .db3 file in the bag directory to '
                               'rebuild it from')
            if not files:
                raise FileNotFoundError(errno.ENOENT, 'no .mcap or .db3 file in bag directory',
                                        str(self.path))
        else:
            files = [self.path]
        self._missing: list[Damage] = []          # files metadata.yaml lists that are not there
        if recover and len(files) > 1 and any(p.is_file() for p in files):
            self._missing = [Damage(p.name, 0, 'missing', 'listed in metadata.yaml but not in the bag '
                                    'directory') for p in files if not p.is_file()]
            files = [p for p in files if p.is_file()]
        self._files = [_open_storage(p, recover) for p in files]
        self.storage = self._files[0].storage
        if self.info is None:
            self.info = self._files[0].rosbag2_info
            self.metadata_source = f'the rosbag2 record of {self._files[0].path.name}'
            if rebuild or self.info is None:
                # an unusable metadata.yaml is the user's file: rebuilt in memory, never overwritten
                self._rebuild_metadata(write_metadata and rebuild and not unusable)
                if unusable:
                    self.metadata_source = f'metadata.yaml unusable ({unusable}): {self.metadata_source}'
        self.topics: dict[str, str] = {}
        for mf in self._files:
            self.topics.update(mf.topics)
        self._decoders: dict[tuple[str, bytes], Any] = {}     # (schema name, text) -> mcap_ros2 decoder

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (e.g. sent to a Dask worker); decoders are built again when needed."""
        return {**self.__dict__, '_decoders': {}}

    def _rebuild_metadata(self, write: bool) -> None:
        """``info`` rebuilt from the files' summaries (or scans), as ``ros2 bag reindex`` does; custom data
        and distro from the first file's own record when it has one."""
        own = self.info or {}
        per_file = []
        for mf in self._files:
            stats = mf.summary.statistics
            per_file.append({'path': mf.path.name,
                             'starting_time': {'nanoseconds_since_epoch': stats.message_start_time},
                             'duration': {'nanoseconds': stats.message_end_time - stats.message_start_time},
                             'message_count': stats.message_count})
        counts = self.message_counts_by_file()
        topics = []
        for mf, file_counts in zip(self._files, counts):
            for c in mf.summary.channels.values():
                if any(t['topic_metadata']['name'] == c.topic for t in topics):
                    continue
                qos = c.metadata.get('offered_qos_profiles', '')
                try:
                    qos = yaml.safe_load(qos) or [] if qos else []
                except yaml.YAMLError:
                    qos = []
                meta = {'name': c.topic, 'type': mf.schema(c.id).name,
                        'serialization_format': c.message_encoding, 'offered_qos_profiles': qos,
                        'type_description_hash': c.metadata.get('topic_type_hash', '')}
                topics.append({'topic_metadata': meta,
                               'message_count': sum(fc.get(c.topic, 0) for fc in counts)})
        starts = [f['starting_time']['nanoseconds_since_epoch'] for f in per_file if f['message_count']]
        ends = [f['starting_time']['nanoseconds_since_epoch'] + f['duration']['nanoseconds']
                for f in per_file if f['message_count']]
        start = min(starts, default=0)
        self.info = {
            'version': 9, 'storage_identifier': self.storage,
            'duration': {'nanoseconds': max(ends, default=0) - start},
            'starting_time': {'nanoseconds_since_epoch': start},
            'message_count': sum(f['message_count'] for f in per_file),
            'topics_with_message_count': topics,
            'compression_format': own.get('compression_format', ''),
            'compression_mode': own.get('compression_mode', ''),
            'relative_file_paths': [f['path'] for f in per_file], 'files': per_file,
            'custom_data': dict(own.get('custom_data') or {}), 'ros_distro': own.get('ros_distro', ''),
        }
        how = 'a scan' if any(mf.indexed_by == 'scan' for mf in self._files) else f'the {self.storage} index'
        where = 'kept in memory'
        if write:
            target = self.path / 'metadata.yaml'
            tmp = self.path / f'.metadata.yaml.{os.getpid()}.tmp'
            try:
                tmp.write_text(_yaml({'rosbag2_bagfile_information': self.info}), encoding='utf-8')
                os.replace(tmp, target)
                where = f'written to {target}'
            except OSError as e:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                where = f'kept in memory ({self.path} is not writable: {e.strerror or e})'
        self.metadata_source = f'rebuilt from {how}; {where}'

    # ---- summary facts
    def message_counts_by_file(self) -> list[dict[str, int]]:
        """Intact messages per topic of each file (the summary's counts less what damage lost)."""
        out = []
        for mf in self._files:
            stats = mf.summary.statistics
            if stats is None:
                raise BagError(f'{mf.path}: MCAP summary has no statistics record')
            lost = mf.lost_by_channel()
            counts: dict[str, int] = {}
            for cid, n in stats.channel_message_counts.items():
                topic = mf.summary.channels[cid].topic
                counts[topic] = counts.get(topic, 0) + max(0, n - lost.get(cid, 0))
            out.append(counts)
        return out

    @property
    def message_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.topics, 0)
        for file_counts in self.message_counts_by_file():
            for topic, n in file_counts.items():
                counts[topic] += n
        return counts

    @property
    def recovery(self) -> BagRecovery:
        """What is intact and what was lost; damage found so far (``verify()`` checks every chunk)."""
        counts = self.message_counts
        return BagRecovery(messages=sum(counts.values()), per_topic=counts, start_ns=self.start_ns,
                           end_ns=self.end_ns, damage=self._missing + [d for mf in self._files
                                                                     for _, d in sorted(mf.damage.items())],
                           indexed_by={mf.path.name: mf.indexed_by for mf in self._files},
                           metadata=self.metadata_source)

    def verify(self) -> BagRecovery:
        """Read every chunk of every file (size and CRC checks) and return ``recovery``."""
        for mf in self._files:
            mf.verify()
        return self.recovery

    @property
    def start_ns(self) -> int:
        starts = [s.message_start_time for s in self._statistics() if s.message_count]
        return min(starts) if starts else 0

    @property
    def end_ns(self) -> int:
        ends = [s.message_end_time for s in self._statistics() if s.message_count]
        return max(ends) if ends else 0

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    def _statistics(self) -> list[Any]:
        stats = [mf.summary.statistics for mf in self._files]
        if any(s is None for s in stats):
            raise BagError(f'{self.path}: MCAP summary has no statistics record')
        return stats

    @property
    def custom_data(self) -> dict[str, Any]:
        """metadata.yaml's custom_data, with ``json:``-encoded values decoded."""
        return {k: _decode_custom(v) for k, v in ((self.info or {}).get('custom_data') or {}).items()}

    def offered_qos(self, topic: str) -> list[dict[str, Any]]:
        """Offered QoS profiles of a topic from its channel metadata ([] when not recorded)."""
        for mf in self._files:
            for c in mf.summary.channels.values():
                if c.topic == topic and c.metadata.get('offered_qos_profiles'):
                    with _guard(mf.path):
                        return list(yaml.safe_load(c.metadata['offered_qos_profiles']) or [])
        if topic not in self.topics:
            raise KeyError(f'no topic {topic!r} in {self.path}')
        return []

    # ---- message iteration
    def _iter(self, topics: Iterable[str] | None, decode: bool) -> Iterator[tuple[str, str, int, Any]]:
        topic_list = None if topics is None else list(topics)
        its = [mf.iter_raw(topic_list) for mf in self._files]
        it = its[0] if len(its) == 1 else heapq.merge(*its, key=itemgetter(2))
        return self._decoded(it) if decode else it

    def _decoded(self, it: Iterator[tuple[str, str, int, bytes]]) -> Iterator[tuple[str, str, int, Any]]:
        schemas = {(c.topic, mf.schema(c.id).name): mf.schema(c.id)
                   for mf in self._files for c in mf.summary.channels.values()}
        for topic, type_name, log_ns, payload in it:
            schema = schemas[(topic, type_name)]
            yield topic, type_name, log_ns, self._decoder(schema)(payload)

    def _decoder(self, schema: Schema) -> Any:
        key = (schema.name, schema.data)
        if key not in self._decoders:
            try:
                self._decoders[key] = generate_dynamic(schema.name, schema.data.decode())[schema.name]
            except Exception as e:                           # noqa: BLE001  (mcap_ros2 raises plain errors)
                raise BagError(f'{self.path}: no usable message definition for {schema.name} ({e})') from e
        return self._decoders[key]

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[tuple[str, str, int, Any]]:
        """(topic, type_name, log_time_ns, decoded message) in log-time order."""
        return self._iter(topics, decode=True)

    def raw_messages(self, topics: Iterable[str] | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, type_name, log_time_ns, CDR bytes) in log-time order."""
        return self._iter(topics, decode=False)

    # ---- columns
    def columns(self, topic: str, *, fast: bool = True) -> dict[str, Any]:
        """Columns of one topic (schema in ``msgconv``), in log-time order.

        With ``fast`` (the default) the numbers are read with numpy views when all messages share one
        CDR layout; ``fast=False`` forces per-message decoding (the reference the fast path must match).
        """
        return self.columns_many([topic], fast=fast)[topic]

    def columns_many(self, topics: Iterable[str] | None = None, *, fast: bool = True
                     ) -> dict[str, dict[str, Any]]:
        """``columns()`` of several topics (default: every topic of a supported type) in one pass over
        the file, which avoids decompressing the chunks once per topic."""
        if topics is None:
            topics = [t for t, ty in self.topics.items() if ty in msgconv.COLUMN_SPECS]
        topics = list(dict.fromkeys(topics))
        for topic in topics:
            if topic not in self.topics:
                raise KeyError(f'no topic {topic!r} in {self.path}; topics: {sorted(self.topics)}')
        specs = {t: msgconv.column_spec(self.topics[t]) for t in topics}
        out = {}
        for topic, data in self._collect(topics).items():
            with _guard(self.path):
                cols = _fixed_layout_columns(specs[topic], data) if fast else None
                if cols is None:
                    cols = msgconv.columns_from_messages(self.topics[topic], self._decode_all(data),
                                                         data.log_ns)
            out[topic] = cols
        return out

    def _collect(self, topics: list[str]) -> dict[str, _Collected]:
        """Raw messages of several topics, read in one pass over the chunks."""
        pieces: dict[str, list[_Piece]] = {t: [] for t in topics}
        schemas: dict[str, list[Schema]] = {t: [] for t in topics}
        index_parts: dict[str, list[np.ndarray]] = {t: [] for t in topics}
        for mf in self._files:
            topic_of = np.full(1 << 16, -1, dtype=np.int64)
            lut = np.zeros(1 << 16, dtype=np.int64)             # channel id -> index into schemas[topic]
            for k, t in enumerate(topics):
                for cid in mf.channel_ids([t]):
                    topic_of[cid], lut[cid] = k, len(schemas[t])
                    schemas[t].append(mf.schema(cid))
            wanted = set(np.flatnonzero(topic_of >= 0).tolist())
            if not wanted:
                continue
            for piece in mf.collect(wanted):
                piece_topics = topic_of[piece.channel]
                for k, t in enumerate(topics):
                    mask = piece_topics == k
                    if mask.any():
                        sub = piece if mask.all() else piece.select(mask)
                        pieces[t].append(sub)
                        index_parts[t].append(lut[sub.channel])
        return {t: _Collected.build(pieces[t], schemas[t], index_parts[t]) for t in topics}

    def _decode_all(self, data: _Collected) -> list[Any]:
        return [self._decoder(schema)(payload)
                for schema, payload in zip(data.schemas_in_order(), data.payloads())]

    # ---- streamed columns (bounded memory)
    def iter_column_chunks(self, topics: Iterable[str], ends_ns: Iterable[int], *, fast: bool = True
                           ) -> Iterator[tuple[int, dict[str, dict[str, Any]]]]:
        """``columns_many`` window by window: for each end E of ``ends_ns`` (increasing), yield
        (E, {topic: columns of its messages logged in (previous E, E]}); the last window also takes every
        later message. The MCAP chunks are read in the order their messages start and only those that
        reach into the current window are held, so memory follows the window, not the bag. The windows
        together equal ``columns_many`` cut at the same log times (same order, ties in file order).
        An unchunked MCAP file is read whole."""
        topics = list(dict.fromkeys(topics))
        for topic in topics:
            if topic not in self.topics:
                raise KeyError(f'no topic {topic!r} in {self.path}; topics: {sorted(self.topics)}')
        specs = {t: msgconv.column_spec(self.topics[t]) for t in topics}
        schemas: dict[str, list[Schema]] = {t: [] for t in topics}
        maps = []           # per file: (channel -> topic index, channel -> schema index, wanted channels)
        sources = []        # (first log time, file, offset, chunk index)
        for fi, mf in enumerate(self._files):
            topic_of = np.full(1 << 16, -1, dtype=np.int64)
            lut = np.zeros(1 << 16, dtype=np.int64)
            for k, t in enumerate(topics):
                for cid in mf.channel_ids([t]):
                    topic_of[cid], lut[cid] = k, len(schemas[t])
                    schemas[t].append(mf.schema(cid))
            maps.append((topic_of, lut, set(np.flatnonzero(topic_of >= 0).tolist())))
            if not maps[-1][2]:
                continue
            if getattr(mf.summary, 'chunk_indexes', None):
                sources += [(ci.message_start_time, fi, ci.chunk_start_offset, ci)
                            for ci in mf.summary.chunk_indexes]
            else:
                sources.append((np.iinfo(np.int64).min, fi, 0, None))
        sources.sort(key=itemgetter(0, 1, 2))
        ends = [int(e) for e in ends_ns]
        pending: list[tuple[tuple[int, int], int, _Piece]] = []        # ((file, offset), file, piece)
        nxt = 0
        for k, end in enumerate(ends):
            last = k == len(ends) - 1
            while nxt < len(sources) and (last or sources[nxt][0] <= end):
                _, fi, offset, ci = sources[nxt]
                nxt += 1
                mf = self._files[fi]
                pieces = mf.iter_pieces(maps[fi][2], [ci]) if ci is not None else mf.collect(maps[fi][2])
                pending += [((fi, offset), fi, piece) for piece in pieces]
            emit, keep = [], []
            for key, fi, piece in pending:
                now = np.ones(len(piece.log_ns), bool) if last else piece.log_ns <= end
                if now.all():
                    emit.append((key, fi, piece))
                elif now.any():
                    emit.append((key, fi, piece.select(now)))
                    keep.append((key, fi, piece.select(~now)))
                else:
                    keep.append((key, fi, piece))
            pending = keep
            emit.sort(key=itemgetter(0))
            yield end, {t: self._window_columns(t, k_t, specs[t], schemas[t], emit, maps, fast)
                        for k_t, t in enumerate(topics)}

    def _window_columns(self, topic: str, k: int, spec: Any, schemas: list[Schema], emit: list, maps: list,
                        fast: bool) -> dict[str, Any]:
        pieces, index_parts = [], []
        for _, fi, piece in emit:
            topic_of, lut, _ = maps[fi]
            mask = topic_of[piece.channel] == k
            if mask.any():
                sub = piece if mask.all() else piece.select(mask)
                pieces.append(sub)
                index_parts.append(lut[sub.channel])
        data = _Collected.build(pieces, schemas, index_parts)
        with _guard(self.path):
            cols = _fixed_layout_columns(spec, data) if fast else None
            if cols is None:
                cols = msgconv.columns_from_messages(self.topics[topic], self._decode_all(data), data.log_ns)
        return cols


# ================================================================================ fixed-layout CDR

_PRIMITIVE_CDR = {'bool': (1, '<u1'), 'byte': (1, '<u1'), 'char': (1, '<u1'), 'int8': (1, '<i1'),
                  'uint8': (1, '<u1'), 'int16': (2, '<i2'), 'uint16': (2, '<u2'), 'int32': (4, '<i4'),
                  'uint32': (4, '<u4'), 'int64': (8, '<i8'), 'uint64': (8, '<u8'), 'float32': (4, '<f4'),
                  'float64': (8, '<f8')}


class _NotFixed(Exception):
    """The first message cannot serve as a layout template."""


@dataclass
class _Layout:
    numbers: dict[str, tuple[int, str, int]] = field(default_factory=dict)   # path -> (offset, dtype, n)
    strings: dict[str, Any] = field(default_factory=dict)                    # path -> str | list[str]
    structural: list[tuple[int, int]] = field(default_factory=list)          # byte ranges fixed per layout


def _walk(types: dict[str, list[msgdefs.Field]], root: str, data: bytes) -> _Layout:
    """Offsets of every field of one little-endian CDR message (XCDR1: alignment relative to byte 4)."""
    out = _Layout(structural=[(0, 4)])
    pos = 4

    def align(n: int) -> None:
        nonlocal pos
        pos += -(pos - 4) % n
        if pos > len(data):
            raise _NotFixed

    def count() -> int:
        nonlocal pos
        align(4)
        if pos + 4 > len(data):
            raise _NotFixed
        out.structural.append((pos, pos + 4))
        (n,) = struct.unpack_from('<I', data, pos)
        pos += 4
        return n

    def string() -> str:
        nonlocal pos
        n = count()
        if pos + n > len(data):
            raise _NotFixed
        out.structural.append((pos, pos + n))
        value = data[pos:pos + max(n - 1, 0)].decode('utf-8')
        pos += n
        return value

    def walk(type_key: str, prefix: str) -> None:
        nonlocal pos
        if type_key not in types:
            raise _NotFixed
        for f in types[type_key]:
            path = prefix + f.name
            n = (f.size if f.size is not None else count()) if f.is_array else 1
            if f.type == 'string':
                values = [string() for _ in range(n)]
                out.strings[path] = values if f.is_array else values[0]
            elif f.type in _PRIMITIVE_CDR:
                size, dtype = _PRIMITIVE_CDR[f.type]
                if n:
                    align(size)
                    out.numbers[path] = (pos, dtype, n)
                    pos += size * n
                    if pos > len(data):
                        raise _NotFixed
            elif f.is_primitive:                                # wstring
                raise _NotFixed
            elif f.is_array:
                for i in range(n):
                    walk(f.type, f'{path}[{i}].')
            else:
                walk(f.type, path + '.')

    walk(root, '')
    return out


def _fixed_layout_columns(spec: msgconv.ColumnSpec, data: _Collected) -> dict[str, Any] | None:
    """Columns by numpy views when all messages share the first one's CDR layout, else None."""
    n = len(data.log_ns)
    if n == 0 or len({(s.name, s.data) for s in data.schemas}) != 1:
        return None
    mat = data.matrix()
    if mat is None or mat.shape[1] < 4 or mat[0, 1] != 0x01:
        return None                                             # lengths differ or big-endian
    schema = data.schemas[0]
    try:
        types = msgdefs.parse_definition(schema.name, schema.data.decode())
        layout = _walk(types, '/'.join(msgdefs.split_type_name(schema.name)), mat[0].tobytes())
    except (_NotFixed, ValueError, struct.error):
        return None
    fixed = np.concatenate([np.arange(a, b) for a, b in layout.structural])
    if n > 1 and not (mat[1:, fixed] == mat[0, fixed]).all():
        return None

    def values(path: str, dtype: str = '<f8') -> np.ndarray:
        offset, actual, count = layout.numbers[path]
        if actual != dtype:
            raise _NotFixed
        width = np.dtype(dtype).itemsize * count
        return np.ascontiguousarray(mat[:, offset:offset + width]).view(dtype).reshape(n, count)

    try:
        cols: dict[str, Any] = {'log_ns': data.log_ns}
        if spec.stamp is None:
            cols['stamp_ns'] = data.log_ns.copy()
        else:
            sec = values(spec.stamp + '.sec', '<i4')[:, 0].astype(np.int64)
            cols['stamp_ns'] = sec * msgconv.NS_PER_S + values(spec.stamp + '.nanosec', '<u4')[:, 0]
        for name, path in spec.strings:
            msgconv.add_string_column(cols, name, [layout.strings[path]])
        for fc in spec.floats:
            cols[fc.name] = np.hstack([values(p) for p in fc.paths])
            if cols[fc.name].shape[1] != fc.width:
                return None
        if spec.joint_arrays:
            names = layout.strings['name']
            if len(set(names)) != len(names):
                return None
            cols['name'] = list(names)
            for fname in spec.joint_arrays:
                col = np.full((n, len(names)), np.nan)
                if fname in layout.numbers:
                    v = values(fname)
                    m = min(v.shape[1], len(names))
                    col[:, :m] = v[:, :m]
                cols[fname] = col
    except (_NotFixed, KeyError):
        return None
    return cols
