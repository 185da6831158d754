"""What the storages read besides MCAP (rosbag2 sqlite3 ``sqlite``, ROS 1 ``ros1``) share: the part
of ``mcap.McapFile``'s surface that follows from an MCAP ``Summary`` they build, and the pieces and
statistics they hand to ``BagReader``."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from mcap.records import Schema, Statistics
from mcap.summary import Summary

from ..messages import definitions as msgdefs
from .records import Piece


def definition(type_name: str, recorded: str) -> bytes:
    """ros2msg definition text of a type: the recorded one, else the installed one, else rosbags'."""
    if recorded.strip():
        return recorded.encode()
    try:
        return msgdefs.msgdef(type_name).encode()
    except Exception:                                       # noqa: BLE001  (not installed: ask rosbags)
        pass
    try:
        from rosbags.typesys import Stores, get_typestore
        text, _ = get_typestore(Stores.ROS2_KILTED).generate_msgdef(type_name, ros_version=2)
        return text.encode()
    except Exception:                                       # noqa: BLE001
        return b''


def file_size(path: Path) -> int:
    """Size of the bag file (bytes); FileNotFoundError when it is not a file."""
    if not path.is_file():
        raise FileNotFoundError(2, 'bag file not found', str(path))
    return path.stat().st_size


def piece(channel_ids: Sequence[int], stamps: Sequence[int], payloads: Sequence[bytes]) -> Piece:
    """One ``Piece`` of messages: their CDR payloads back to back, log times, offsets, sizes, channels."""
    size = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    return Piece(b''.join(payloads), np.array(stamps, dtype=np.int64), np.cumsum(size) - size, size,
                  np.array(channel_ids, dtype=np.int64))


def statistics(summary: Summary, counts: dict[int, int], start_ns: int, end_ns: int) -> Statistics:
    """The MCAP Statistics record of a summary with these per-channel message counts and log-time span."""
    return Statistics(message_count=sum(counts.values()), schema_count=len(summary.schemas),
                      channel_count=len(summary.channels), attachment_count=0, metadata_count=0,
                      chunk_count=len(summary.chunk_indexes), message_start_time=start_ns,
                      message_end_time=end_ns, channel_message_counts=counts)


class SummaryFile:
    """Mixin: channel look-ups of a bag file whose ``summary`` (MCAP Summary) is built at open; such a file
    knows of no message lost inside it beyond ``damage``. Subclasses provide ``iter_pieces``."""

    summary: Summary

    def schema(self, channel_id: int) -> Schema:
        return self.summary.schemas[self.summary.channels[channel_id].schema_id]

    def channel_ids(self, topics: Iterable[str] | None) -> set[int]:
        wanted = None if topics is None else set(topics)
        return {c.id for c in self.summary.channels.values() if wanted is None or c.topic in wanted}

    def topic_types(self) -> dict[str, str]:
        """{topic: type name} of every channel."""
        return {c.topic: self.summary.schemas[c.schema_id].name for c in self.summary.channels.values()}

    def channel_meta(self, channel_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """{channel id: (topic, type name)}."""
        return {cid: (self.summary.channels[cid].topic, self.schema(cid).name) for cid in channel_ids}

    def lost_by_channel(self) -> dict[int, int]:
        return {}

    def collect(self, channel_ids: set[int]) -> list[Piece]:
        return list(self.iter_pieces(channel_ids))
