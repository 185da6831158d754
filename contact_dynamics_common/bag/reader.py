"""``BagReader``: a rosbag2 bag directory (MCAP, sqlite3 or ROS 1 storage) or a bare bag file, read.

The reader is a facade over one storage reader per file (``mcap.McapFile``, ``sqlite.Db3File``,
``ros1.Bag1File``, chosen by suffix): it owns the bag's metadata (metadata.yaml, else rebuilt from the files
as ``ros2 bag reindex`` does: ``metadata``), the facts that follow from the files' summaries (topics, counts,
time span, damage: ``recovery``) and the merge of the files' messages in log-time order. Columns for offline
replay are built by ``columns.ColumnReader``; messages are decoded by ``decode.MessageDecoders``.
"""
from __future__ import annotations

import errno
import heapq
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import yaml

from .columns import ColumnReader
from .decode import MessageDecoders
from .mcap import McapFile
from .mcap_format import guard
from .metadata import decode_custom, file_order, read_metadata, rebuilt_info, write_metadata
from .records import BagError, BagRecovery, Damage

__all__ = ['BagReader', 'open_storage']


def open_storage(path: Path, recover: bool, unverified: bool = True) -> Any:
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
    return McapFile(path, recover, unverified)


class BagReader:
    """Read a rosbag2 bag directory (MCAP or sqlite3 storage) or a bare ``.mcap`` / ``.db3`` file.

    Attributes: ``topics`` {topic: type name}; ``info``, the ``rosbag2_bagfile_information`` mapping of
    metadata.yaml (or of the file's ``rosbag2`` record), or None; ``storage`` ('mcap' or 'sqlite3');
    ``metadata_source``, where ``info`` came from. An unusable metadata.yaml (not YAML, not a mapping, no
    ``rosbag2_bagfile_information``) is left as it is and the metadata rebuilt in memory, as for a missing
    one (``metadata_source`` says why). A directory without metadata.yaml is read as the union of
    its ``*.mcap`` (else ``*.db3``) files, and its metadata is rebuilt from them as ``ros2 bag reindex``
    does: written to ``metadata.yaml`` when ``write_metadata`` and the directory is writable, else kept in
    memory. ``recover`` (default) reads damaged files around the damage (see ``recovery``); ``unverified``
    (default) keeps the records of an MCAP chunk that fails its CRC that still parse and agree with the file
    (``recovery.unverified`` counts them); ``unverified=False`` (strict) skips such chunks whole.
    """

    def __init__(self, path: str | Path, *, recover: bool = True, write_metadata: bool = True,
                 unverified: bool = True) -> None:
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
                self.info, unusable = read_metadata(meta)
            if self.info is not None:
                # names only: bags before rosbag2 metadata version 4 listed them with the directory
                files = [self.path / Path(p).name for p in self.info.get('relative_file_paths', [])]
            else:
                files = sorted(self.path.glob('*.mcap'), key=file_order) or sorted(self.path.glob('*.db3'),
                                                                                     key=file_order)
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
        self._files = [open_storage(p, recover, unverified) for p in files]
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
        self._decoders = MessageDecoders(self.path)
        self._columns = ColumnReader(self._files, self.topics, self.path, self._decoders)

    def _rebuild_metadata(self, write: bool) -> None:
        """``info`` rebuilt from the files' summaries (or scans), as ``ros2 bag reindex`` does (``metadata``);
        written to metadata.yaml when ``write``."""
        self.info = rebuilt_info(self._files, self.message_counts_by_file(), self.storage, self.info)
        how = 'a scan' if any(mf.indexed_by == 'scan' for mf in self._files) else f'the {self.storage} index'
        where = write_metadata(self.path, self.info) if write else 'kept in memory'
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
        return {k: decode_custom(v) for k, v in ((self.info or {}).get('custom_data') or {}).items()}

    def offered_qos(self, topic: str) -> list[dict[str, Any]]:
        """Offered QoS profiles of a topic from its channel metadata ([] when not recorded)."""
        for mf in self._files:
            for c in mf.summary.channels.values():
                if c.topic == topic and c.metadata.get('offered_qos_profiles'):
                    with guard(mf.path):
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
            yield topic, type_name, log_ns, self._decoders.decoder(schema)(payload)

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[tuple[str, str, int, Any]]:
        """(topic, type_name, log_time_ns, decoded message) in log-time order."""
        return self._iter(topics, decode=True)

    def raw_messages(self, topics: Iterable[str] | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, type_name, log_time_ns, CDR bytes) in log-time order."""
        return self._iter(topics, decode=False)

    # ---- columns (ColumnReader)
    def columns(self, topic: str, *, fast: bool = True) -> dict[str, Any]:
        """Columns of one topic (schema in ``messages.convert``), in log-time order.

        With ``fast`` (the default) the numbers are read with numpy views when all messages share one
        CDR layout; ``fast=False`` forces per-message decoding (the reference the fast path must match).
        """
        return self.columns_many([topic], fast=fast)[topic]

    def columns_many(self, topics: Iterable[str] | None = None, *, fast: bool = True
                     ) -> dict[str, dict[str, Any]]:
        """``columns()`` of several topics (default: every topic of a supported type) in one pass over
        the file, which avoids decompressing the chunks once per topic."""
        return self._columns.columns_many(topics, fast=fast)

    def iter_column_chunks(self, topics: Iterable[str], ends_ns: Iterable[int], *, fast: bool = True
                           ) -> Iterator[tuple[int, dict[str, dict[str, Any]]]]:
        """``columns_many`` window by window in bounded memory: for each end E of ``ends_ns`` (increasing),
        (E, {topic: columns of its messages logged in (previous E, E]}); see ``ColumnReader``."""
        return self._columns.iter_column_chunks(topics, ends_ns, fast=fast)
