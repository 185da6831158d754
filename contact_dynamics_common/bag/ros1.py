"""ROS 1 bags (``.bag``, format 2.0) read like rosbag2 bags, through ``rosbags``.

Each message is converted to the CDR of the ROS 2 type of the same name (``geometry_msgs/WrenchStamped`` ->
``geometry_msgs/msg/WrenchStamped``; ``std_msgs/Header`` loses ``seq``) by rosbags' message converter, so
``BagReader`` builds the same columns with the same decoder and ``run-bag``, ``play`` and ``contact-compare``
work as on MCAP. The conversion runs per message in Python (tens of thousands of messages per second):
convert a large bag once with ``rosbags-convert`` when it is read often. The file is read as one piece (no
streaming windows). A type that rosbags' Kilted store does not know (this project's own messages, e.g.
``contact_dynamics/msg/ObstacleHypothesis``) takes its ROS 2 definition from the installed interfaces
(``messages.definitions``); topics whose type has no ROS 2 definition at all are left out and reported. An
unindexed bag (the recording was cut) must be reindexed first (``rosbag reindex``).
"""
from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcap.records import Channel, Schema
from mcap.summary import Summary

from ..messages import definitions as msgdefs
from .records import BagError, Damage, Piece
from .storage import SummaryFile, definition, file_size, piece, statistics

BATCH = 1 << 16            # messages per piece


def _register_installed(store: Any, type_name: str) -> None:
    """Add an installed ROS 2 message type (and the dependencies the store lacks) to a rosbags type store;
    nothing when it is not installed."""
    from rosbags.typesys import get_types_from_msg
    try:
        types = get_types_from_msg(msgdefs.msgdef(type_name), type_name)
        store.register({k: v for k, v in types.items() if k not in store.fielddefs})
    except Exception:                                       # noqa: BLE001  (not installed or unparsable)
        pass


class Bag1File(SummaryFile):
    """One ROS 1 bag file, read-only, with the surface of ``mcap.McapFile``."""

    storage = 'rosbag1'
    indexed_by = 'rosbag1'

    def __init__(self, path: Path, recover: bool = True) -> None:
        from rosbags.rosbag1 import Reader, ReaderError
        self.path = path
        self.size = file_size(path)
        self.recover = recover
        self.damage: dict[int, Damage] = {}
        self.rosbag2_info = None
        self._reader = Reader(path)
        try:
            self._reader.open()
        except ReaderError as e:
            raise BagError(f'{path}: unreadable ROS 1 bag ({e}); a bag cut while recording needs '
                           f'`rosbag reindex` first') from e
        self._build()

    def _build(self) -> None:
        from rosbags.convert.converter import generate_message_converter
        from rosbags.typesys import Stores, get_types_from_msg, get_typestore

        source, target = get_typestore(Stores.EMPTY), get_typestore(Stores.ROS2_KILTED)
        for conn in self._reader.connections:
            source.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
            if conn.msgtype not in target.fielddefs:
                _register_installed(target, conn.msgtype)
        self.summary = Summary()
        self._convert: dict[int, Any] = {}
        schema_ids: dict[str, int] = {}
        counts: dict[int, int] = {}
        times: list[int] = []
        cache: dict[str, object] = {}
        unsupported = []
        for conn in self._reader.connections:
            if conn.msgtype not in target.fielddefs:
                unsupported.append(f'{conn.topic} ({conn.msgtype})')
                continue
            with contextlib.redirect_stdout(io.StringIO()):        # the converter prints what it migrates
                self._convert[conn.id] = generate_message_converter(
                    source, target, conn.msgtype, conn.msgtype, cache, src_is2=False, dst_is2=True)
            if conn.msgtype not in schema_ids:
                schema_ids[conn.msgtype] = len(schema_ids) + 1
                self.summary.schemas[schema_ids[conn.msgtype]] = Schema(
                    id=schema_ids[conn.msgtype], name=conn.msgtype, encoding='ros2msg',
                    data=definition(conn.msgtype, ''))
            latched = bool(getattr(conn.ext, 'latching', 0))
            qos = ('- {history: keep_last, depth: 1, reliability: reliable, durability: transient_local}'
                   if latched else '')
            self.summary.channels[conn.id] = Channel(
                id=conn.id, topic=conn.topic, message_encoding='cdr', schema_id=schema_ids[conn.msgtype],
                metadata={'offered_qos_profiles': qos, 'topic_type_hash': ''})
            index = self._reader.indexes[conn.id]
            counts[conn.id] = len(index)
            if index:
                lo, hi = index[0].time, index[-1].time
                times[:] = [min(times[0], lo), max(times[1], hi)] if times else [lo, hi]
        if unsupported:
            self.damage[0] = Damage(self.path.name, 0, 'unsupported',
                                    f'topics without a ROS 2 type left out: {", ".join(unsupported)}',
                                    lost_messages=sum(len(self._reader.indexes[c.id])
                                                      for c in self._reader.connections
                                                      if c.id not in self._convert))
        self.summary.statistics = statistics(self.summary, counts, times[0] if times else 0,
                                             times[1] if times else 0)
        self.topics = self.topic_types()

    def __getstate__(self) -> dict[str, Any]:
        return {'path': self.path, 'recover': self.recover}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state['path'], state['recover'])

    # ---- same surface as mcap.McapFile (channel look-ups: SummaryFile)
    def verify(self) -> None:
        """Nothing beyond what opening checked (rosbags reads the index and the connection records)."""

    def _messages(self, channel_ids: set[int]) -> Iterator[tuple[int, int, bytes]]:
        from rosbags.rosbag1 import ReaderError
        conns = [c for c in self._reader.connections if c.id in channel_ids]
        if not conns:
            return
        try:
            for conn, t, raw in self._reader.messages(conns):
                yield conn.id, t, bytes(self._convert[conn.id](raw))
        except ReaderError as e:
            raise BagError(f'{self.path}: unreadable ROS 1 bag ({e})') from e

    def iter_pieces(self, channel_ids: set[int], chunks: list[Any] | None = None) -> Iterator[Piece]:
        """Messages of the wanted channels in log-time order, ``BATCH`` per piece."""
        batch: list[tuple[int, int, bytes]] = []
        for row in self._messages(channel_ids):
            batch.append(row)
            if len(batch) == BATCH:
                yield piece(*zip(*batch))
                batch = []
        if batch:
            yield piece(*zip(*batch))

    def iter_raw(self, topics: list[str] | None) -> Iterator[tuple[str, str, int, bytes]]:
        cids = self.channel_ids(topics)
        meta = self.channel_meta(cids)
        for cid, t, payload in self._messages(cids):
            yield (*meta[cid], t, payload)

    def close(self) -> None:
        self._reader.close()
