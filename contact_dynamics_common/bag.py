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
import json
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
from mcap.exceptions import McapError
from mcap.reader import SeekingReader
from mcap.records import Schema
from mcap.summary import Summary
from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import CompressionType, Writer as McapWriter
from mcap_ros2._dynamic import generate_dynamic, serialize_dynamic
from mcap_ros2.decoder import DecoderFactory

from . import msgconv, msgdefs

__all__ = ['BagError', 'BagReader', 'BagWriter', 'QOS_PRESETS', 'qos_profile']

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
    return (path / 'metadata.yaml').is_file() or any(path.glob('*.mcap'))


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
    encoder: Any = None           # mcap_ros2 serializer for dicts / attribute objects
    rclpy_class: type | None = None


class BagWriter:
    """Write a rosbag2 MCAP bag directory. Use as a context manager; ``close()`` writes the metadata.

    ``custom_data`` (attribute, a dict) may be updated until ``close()``.
    """

    def __init__(self, path: str | Path, *, custom_data: dict[str, Any] | None = None,
                 ros_distro: str = 'kilted', overwrite: bool = False, chunk_size: int = 1 << 20) -> None:
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
        self._mcap = McapWriter(self._stream, chunk_size=chunk_size, compression=CompressionType.ZSTD)
        self._mcap.start(profile='ros2', library='contact_dynamics')
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
        if t.type_name != msgdefs.full_type_name(type_name):
            raise ValueError(f'topic {topic!r} has type {t.type_name}, not {type_name}')
        return t

    def write(self, topic: str, type_name: str, msg: Any, t_ns: int, *, publish_ns: int | None = None
              ) -> None:
        """Serialize and write one message: an rclpy message (rclpy serializer) or a dict / attribute
        object (mcap_ros2 serializer built from the installed definition)."""
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
                t.encoder = serialize_dynamic(t.type_name, msgdefs.msgdef(t.type_name))[t.type_name]
            data = t.encoder(msg)
        self._add(t, data, t_ns, publish_ns)

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
        self._mcap.add_message(channel_id=t.channel_id, log_time=t_ns, data=data,
                               publish_time=t_ns if publish_ns is None else int(publish_ns),
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


class _McapFile:
    """One MCAP file of a bag with its summary."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, 'bag file not found', str(path))
        self.size = path.stat().st_size
        with _guard(path), open(path, 'rb') as f:
            summary = SeekingReader(f).get_summary()
            if summary is None:
                raise BagError(f'{path}: MCAP file has no summary section (interrupted recording?); '
                               f'repair it with `mcap recover` first')
            self.summary: Summary = summary
            self.rosbag2_info = next((yaml.safe_load(m.metadata['serialized_metadata'])
                                      for m in SeekingReader(f).iter_metadata()
                                      if m.name == 'rosbag2' and 'serialized_metadata' in m.metadata), None)
        self.topics = {c.topic: self.schema(c.id).name for c in summary.channels.values()}

    def schema(self, channel_id: int) -> Schema:
        channel = self.summary.channels[channel_id]
        schema = self.summary.schemas.get(channel.schema_id)
        if schema is None:
            raise BagError(f'{self.path}: channel {channel.topic} has no schema')
        return schema

    def channel_ids(self, topics: Iterable[str] | None) -> set[int]:
        wanted = None if topics is None else set(topics)
        return {c.id for c in self.summary.channels.values() if wanted is None or c.topic in wanted}

    def iter_raw(self, topics: list[str] | None, decode: bool) -> Iterator[tuple[str, str, int, Any]]:
        with _guard(self.path), open(self.path, 'rb') as f:
            reader = SeekingReader(f, validate_crcs=True,
                                   decoder_factories=[DecoderFactory()] if decode else ())
            it = (reader.iter_decoded_messages(topics=topics) if decode
                  else ((s, c, m, m.data) for s, c, m in reader.iter_messages(topics=topics)))
            for schema, channel, message, payload in it:
                yield channel.topic, schema.name if schema else '', message.log_time, payload

    def collect(self, channel_ids: set[int]) -> list[_Piece]:
        """Messages of the wanted channels, chunk by chunk, in file order."""
        pieces = []
        with _guard(self.path), open(self.path, 'rb') as f:
            if not self.summary.chunk_indexes:                  # unchunked file: let mcap walk it
                msgs = [m for _, _, m in SeekingReader(f).iter_messages(
                    topics=[self.summary.channels[c].topic for c in channel_ids], log_time_order=False)
                    if m.channel_id in channel_ids]
                size = np.array([len(m.data) for m in msgs], dtype=np.int64)
                return [_Piece(b''.join(m.data for m in msgs), np.array([m.log_time for m in msgs], np.int64),
                               np.cumsum(size) - size, size,
                               np.array([m.channel_id for m in msgs], np.int64))]
            for ci in sorted(self.summary.chunk_indexes, key=lambda c: c.chunk_start_offset):
                indexed = bool(ci.message_index_offsets)
                if indexed and not channel_ids.intersection(ci.message_index_offsets):
                    continue
                need = ci.chunk_length + (ci.message_index_length if indexed else 0)
                if ci.chunk_start_offset + need > self.size:
                    raise BagError(f'{self.path}: chunk index points past the end of the file')
                f.seek(ci.chunk_start_offset)
                raw = f.read(need)
                buf = self._chunk_records(raw, ci.chunk_length, ci.chunk_start_offset)
                if indexed:
                    offsets = self._indexed_offsets(raw, ci, channel_ids)
                else:
                    offsets = self._scanned_offsets(buf, channel_ids)
                if len(offsets) == 0:
                    continue
                arr = np.frombuffer(buf, dtype=np.uint8)
                if np.any(offsets + _MESSAGE_DATA > len(buf)) or np.any(arr[offsets] != 0x05):
                    raise BagError(f'{self.path}: message index points outside the messages of a chunk')
                size = _gather(arr, offsets + 1, 8, '<u8').astype(np.int64) - (_MESSAGE_DATA - 9)
                if np.any(size < 0) or np.any(offsets + _MESSAGE_DATA + size > len(buf)):
                    raise BagError(f'{self.path}: message record overruns its chunk')
                pieces.append(_Piece(buf, _gather(arr, offsets + 15, 8, '<u8').astype(np.int64),
                                     offsets + _MESSAGE_DATA, size,
                                     _gather(arr, offsets + 9, 2, '<u2').astype(np.int64)))
        return pieces

    def _chunk_records(self, raw: bytes, chunk_length: int, chunk_offset: int) -> bytes:
        opcode, _, _, _, size, crc, name_len = _CHUNK_HEAD.unpack_from(raw, 0)
        if opcode != 0x06:
            raise BagError(f'{self.path}: chunk index does not point at a chunk')
        pos = _CHUNK_HEAD.size
        compression = raw[pos:pos + name_len].decode()
        (data_len,) = struct.unpack_from('<Q', raw, pos + name_len)
        pos += name_len + 8
        if pos + data_len > chunk_length:
            raise BagError(f'{self.path}: chunk record is truncated')
        buf = _decompress(compression, raw[pos:pos + data_len], size)
        if len(buf) != size or (crc and zlib.crc32(buf) != crc):
            raise BagError(f'{self.path}: chunk at offset {chunk_offset} fails its size or CRC check')
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

    def _scanned_offsets(self, buf: bytes, channel_ids: set[int]) -> np.ndarray:
        offsets = []
        head, channel = _RECORD_HEAD.unpack_from, struct.Struct('<H').unpack_from
        pos, end = 0, len(buf)
        while pos < end:
            opcode, length = head(buf, pos)
            if opcode == 0x05 and channel(buf, pos + 9)[0] in channel_ids:
                offsets.append(pos)
            pos += 9 + length
        if pos != end:
            raise BagError(f'{self.path}: chunk records overrun the chunk')
        return np.array(offsets, dtype=np.int64)


class BagReader:
    """Read a rosbag2 MCAP bag directory (with metadata.yaml) or a bare ``.mcap`` file.

    Attributes: ``topics`` {topic: type name}; ``info``, the ``rosbag2_bagfile_information`` mapping of
    metadata.yaml (or of the file's ``rosbag2`` record), or None. A directory without metadata.yaml is
    read as the union of its ``*.mcap`` files.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(errno.ENOENT, 'bag not found', str(self.path))
        self.info: dict[str, Any] | None = None
        if self.path.is_dir():
            meta = self.path / 'metadata.yaml'
            if meta.is_file():
                with _guard(meta), open(meta, encoding='utf-8') as f:
                    self.info = (yaml.safe_load(f) or {}).get('rosbag2_bagfile_information')
                if not isinstance(self.info, dict):
                    raise BagError(f'{meta}: no rosbag2_bagfile_information mapping')
                files = [self.path / p for p in self.info.get('relative_file_paths', [])]
            else:
                files = sorted(self.path.glob('*.mcap'))
            if not files:
                raise FileNotFoundError(errno.ENOENT, 'no .mcap file in bag directory', str(self.path))
        else:
            files = [self.path]
        self._files = [_McapFile(p) for p in files]
        if self.info is None:
            self.info = self._files[0].rosbag2_info
        self.topics: dict[str, str] = {}
        for mf in self._files:
            self.topics.update(mf.topics)
        self._decoders: dict[tuple[str, bytes], Any] = {}     # (schema name, text) -> mcap_ros2 decoder

    # ---- summary facts
    @property
    def message_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.topics, 0)
        for mf in self._files:
            stats = mf.summary.statistics
            if stats is None:
                raise BagError(f'{mf.path}: MCAP summary has no statistics record')
            for cid, n in stats.channel_message_counts.items():
                counts[mf.summary.channels[cid].topic] += n
        return counts

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
        its = [mf.iter_raw(topic_list, decode) for mf in self._files]
        return its[0] if len(its) == 1 else heapq.merge(*its, key=itemgetter(2))

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
        out = []
        for schema, payload in zip(data.schemas_in_order(), data.payloads()):
            key = (schema.name, schema.data)
            if key not in self._decoders:
                self._decoders[key] = generate_dynamic(schema.name, schema.data.decode())[schema.name]
            out.append(self._decoders[key](payload))
        return out


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
