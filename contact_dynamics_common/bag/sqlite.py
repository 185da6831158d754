"""rosbag2 sqlite3 storage (``.db3``, the default before Iron): read like an MCAP file of the bag.

A ``.db3`` file holds the tables ``topics`` (id, name, type, serialization_format, offered_qos_profiles,
type_description_hash), ``messages`` (id, topic_id, timestamp, data) and, in newer files,
``message_definitions`` and ``metadata`` (the serialized bag metadata). ``data`` holds the same CDR bytes as
an MCAP message, so ``Db3File`` offers what ``mcap.McapFile`` offers (a summary of channels, schemas and
statistics; ``iter_pieces``; ``iter_raw``) and ``BagReader`` builds the same columns with the same columnar
decoder. Message definitions: the file's own when recorded (``message_definitions``), else the installed
interfaces (``messages.definitions``), else the ``rosbags`` type store of ROS 2 Kilted. Payloads compressed per
message (``compression_mode: message``, zstd) are decompressed; a whole-file compressed ``.db3.zstd`` is
refused.

A damaged file (cut by a power loss, shorter than its header says, or one sqlite reports malformed) is read,
with ``recover``: its tables other than ``messages`` through sqlite from a temporary copy zero-padded to the
size its header gives, and its message rows page by page (``sqlite_pages.scan_message_pages``: every row on a
leaf page still whole in the file, also those whose b-tree interior pages were lost); the rows that are
missing (ids without a row, their pages lost) are counted and the place goes into ``damage`` like an MCAP
file's. Without ``recover`` such a file raises BagError.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import zstandard
from mcap.records import Channel, ChunkIndex, Schema
from mcap.summary import Summary

from .records import BagError, Damage, Piece
from .sqlite_pages import RowIndex, scan_message_pages
from .storage import SummaryFile, definition, file_size, piece, statistics

BATCH = 1 << 16            # rows per piece
_ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'


class Db3File(SummaryFile):
    """One sqlite3 file of a rosbag2 bag, read-only: owns the connection (opened again after pickling), the
    summary built from the ``topics`` / ``messages`` tables (row-id ranges stand in for MCAP chunks), the
    reading of a damaged file (its rows page by page, ``sqlite_pages``; what is lost in ``damage``), and the
    message rows read in batches of ``BATCH``."""

    storage = 'sqlite3'
    indexed_by = 'sqlite3'

    def __init__(self, path: Path, recover: bool = True) -> None:
        self.path = path
        self.size = file_size(path)
        if path.name.endswith(('.zstd', '.zst')):
            raise BagError(f'{path}: a file-compressed rosbag2 bag; decompress it first '
                           f'(zstd -d {path.name})')
        self.recover = recover
        with open(path, 'rb') as f:
            head = f.read(100)
        if len(head) < 100 and b'SQLite format 3\x00'.startswith(head[:16]):
            raise BagError(f'{path}: damaged rosbag2 sqlite3 file: it ends ({len(head)} bytes) before the end '
                           f'of its 100-byte sqlite3 header (a recording cut before anything was written)')
        self.damage: dict[int, Damage] = {}
        self._decompress = zstandard.ZstdDecompressor()
        self._index: RowIndex | None = None          # damaged file: the rows read page by page
        self._tmp: Path | None = None
        self._expected_size = self.size
        try:
            if self._header_size() > self.size:
                raise sqlite3.DatabaseError(f'the file is shorter than its header says '
                                            f'({self.size} of {self._header_size()} bytes)')
            self._open(path)
        except sqlite3.DatabaseError as e:
            if not recover:
                raise BagError(f'{path}: unreadable rosbag2 sqlite3 file ({e})') from e
            try:
                self._open(self._padded_copy(), damaged=e)
            except sqlite3.DatabaseError as e2:
                raise BagError(f'{path}: damaged rosbag2 sqlite3 file: its topics table is unreadable '
                               f'({e2}; first: {e})') from e2
            finally:                          # sqlite keeps its descriptor: the name can go now
                if self._tmp is not None:
                    self._tmp.unlink(missing_ok=True)
        self.topics = self.topic_types()

    def _header_size(self) -> int:
        """File size the sqlite header gives (page size x page count; 0 when the header is unreadable or
        its page count is not valid: sqlite trusts it only when the change counter equals the
        version-valid-for number)."""
        with open(self.path, 'rb') as f:
            head = f.read(100)
        if len(head) < 100 or not head.startswith(b'SQLite format 3\x00') or head[24:28] != head[92:96]:
            return 0
        page = struct.unpack('>H', head[16:18])[0]
        return (65536 if page == 1 else page) * struct.unpack('>I', head[28:32])[0]

    def _open(self, path: Path, damaged: Exception | None = None) -> None:
        self._db = self._connect(path)
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {'topics', 'messages'} <= tables:
            raise BagError(f'{self.path}: not a rosbag2 sqlite3 file (tables: {sorted(tables)})')
        self.summary = self._summary(tables, damaged)
        self.rosbag2_info = self._metadata(tables)

    def _padded_copy(self) -> Path:
        """A temporary copy of a file cut short (power loss), zero-padded to the size its header gives, so
        that sqlite reads the pages before the cut."""
        with open(self.path, 'rb') as f:
            head = f.read(100)
        if len(head) < 100 or not head.startswith(b'SQLite format 3\x00'):
            raise BagError(f'{self.path}: not a sqlite3 file')
        page = struct.unpack('>H', head[16:18])[0]
        page = 65536 if page == 1 else page
        expected = page * struct.unpack('>I', head[28:32])[0]
        fd, name = tempfile.mkstemp(suffix='.db3', prefix='contact_dynamics_recover_')
        os.close(fd)
        self._tmp = Path(name)
        shutil.copyfile(self.path, self._tmp)
        self._expected_size = max(expected, self.size)
        if expected > self.size:
            os.truncate(self._tmp, expected)
        return self._tmp

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (e.g. sent to a Dask worker): the connection is opened again on the other side."""
        return {k: v for k, v in self.__dict__.items() if k not in ('_db', '_decompress')}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._decompress = zstandard.ZstdDecompressor()
        # a damaged file is read from its row index (the file itself, page by page): no connection
        self._db = self._connect(self.path) if self._index is None else None

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(f'file:{path}?mode=ro', uri=True, check_same_thread=False)
            db.execute('SELECT count(*) FROM sqlite_master').fetchone()
            return db
        except sqlite3.OperationalError:                    # e.g. a hot journal in a read-only place
            return sqlite3.connect(f'file:{path}?immutable=1', uri=True, check_same_thread=False)

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self._db.execute(f'PRAGMA table_info({table})')}

    def _summary(self, tables: set[str], damaged: Exception | None = None) -> Summary:
        cols = self._columns('topics')
        qos = 'offered_qos_profiles' if 'offered_qos_profiles' in cols else "''"
        hsh = 'type_description_hash' if 'type_description_hash' in cols else "''"
        defs: dict[str, str] = {}
        if 'message_definitions' in tables:
            for type_name, encoding, text in self._db.execute(
                    'SELECT topic_type, encoding, encoded_message_definition FROM message_definitions'):
                if encoding == 'ros2msg' and text:
                    defs[type_name] = text
        summary = Summary()
        schema_ids: dict[str, int] = {}
        for tid, name, type_name, fmt, offered, type_hash in self._db.execute(
                f'SELECT id, name, type, serialization_format, {qos}, {hsh} FROM topics ORDER BY id'):
            if type_name not in schema_ids:
                schema_ids[type_name] = len(schema_ids) + 1
                summary.schemas[schema_ids[type_name]] = Schema(
                    id=schema_ids[type_name], name=type_name, encoding='ros2msg',
                    data=definition(type_name, defs.get(type_name, '')))
            if fmt != 'cdr':
                raise BagError(f'{self.path}: topic {name} is serialized as {fmt!r}, not cdr')
            summary.channels[tid] = Channel(id=tid, topic=name, message_encoding='cdr',
                                            schema_id=schema_ids[type_name],
                                            metadata={'offered_qos_profiles': offered or '',
                                                      'topic_type_hash': type_hash or ''})
        counts, start, end = {}, None, None
        groups: dict[int, list[int]] = {}              # row-id group -> [first id, last id, first t, last t]
        rows = self._page_rows(set(summary.channels), damaged) if damaged is not None else self._db.execute(
            f'SELECT id / {BATCH} AS g, topic_id, count(*), min(id), max(id), min(timestamp), '
            f'max(timestamp) FROM messages GROUP BY g, topic_id')
        for g, tid, n, id_lo, id_hi, lo, hi in rows:
            counts[tid] = counts.get(tid, 0) + n
            start = lo if start is None else min(start, lo)
            end = hi if end is None else max(end, hi)
            a = groups.setdefault(g, [id_lo, id_hi, lo, hi])
            a[:] = [min(a[0], id_lo), max(a[1], id_hi), min(a[2], lo), max(a[3], hi)]
        # row-id ranges stand in for MCAP chunks, so that readers going chunk by chunk (streamed replay)
        # hold one range at a time: chunk_start_offset = first row id, chunk_length = number of ids
        summary.chunk_indexes = [
            ChunkIndex(message_start_time=lo, message_end_time=hi, chunk_start_offset=id_lo,
                       chunk_length=id_hi - id_lo + 1, message_index_offsets={}, message_index_length=0,
                       compression='', compressed_size=0, uncompressed_size=0)
            for _, (id_lo, id_hi, lo, hi) in sorted(groups.items())]
        orphans = set(counts) - set(summary.channels)
        if orphans:
            raise BagError(f'{self.path}: messages of unknown topic ids {sorted(orphans)}')
        summary.statistics = statistics(summary, counts, start or 0, end or 0)
        return summary

    def _page_rows(self, topic_ids: set[int], damaged: Exception
                   ) -> list[tuple[int, int, int, int, int, int, int]]:
        """The rows of a damaged file read page by page (``_index``), as the GROUP BY rows of ``_summary``;
        what is lost is noted in ``damage``."""
        idx = self._index = scan_message_pages(self.path, topic_ids)
        n = len(idx.rowid)
        cut = self._expected_size > self.size
        top = int(idx.rowid[-1]) if n else 0
        missing = top - n                             # ids below the last one found that have no row
        first_gap = int(np.argmax(idx.rowid != np.arange(1, n + 1))) if missing else n
        last_ns = int(idx.timestamp[first_gap - 1]) if first_gap else None
        where = (f'the sqlite3 file ends at byte {self.size} of {self._expected_size}' if cut else
                 f'sqlite3 file damaged ({damaged})')
        detail = (f'{where}; {n} rows read page by page from {idx.leaf_pages} leaf pages of the '
                  f'{idx.pages} left; {missing} of ids 1..{top} missing (on lost pages)' if n else
                  f'{where}; no message row on the {idx.pages} pages left')
        if idx.rejected:
            detail += f'; {idx.rejected} cells of those pages cut or inconsistent'
        if cut:
            detail += f'; rows after id {top} unknown'
        offset = self.size if cut else 0
        self.damage[offset] = Damage(self.path.name, offset, 'truncated' if cut else 'corrupt', detail,
                                     lost_messages=missing, last_good_ns=last_ns)
        out = []
        if n:
            group = idx.rowid // BATCH
            for g, tid in sorted(set(zip(group.tolist(), idx.topic_id.tolist()))):
                sel = (group == g) & (idx.topic_id == tid)
                ids, ts = idx.rowid[sel], idx.timestamp[sel]
                out.append((g, tid, int(sel.sum()), int(ids.min()), int(ids.max()), int(ts.min()),
                            int(ts.max())))
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        if self._index is not None:
            self._index.close()

    def _metadata(self, tables: set[str]) -> dict[str, Any] | None:
        if 'metadata' not in tables:
            return None
        row = self._db.execute('SELECT metadata FROM metadata ORDER BY id DESC LIMIT 1').fetchone()
        if not row or not row[0]:
            return None
        try:
            data = yaml.safe_load(row[0])
        except yaml.YAMLError:
            return None
        if isinstance(data, dict) and isinstance(data.get('rosbag2_bagfile_information'), dict):
            data = data['rosbag2_bagfile_information']
        return data if isinstance(data, dict) else None

    # ---- same surface as mcap.McapFile (channel look-ups: SummaryFile)
    def verify(self) -> None:
        """sqlite's own integrity check; a damage already found (and read around) is not checked again."""
        if self.damage:
            return
        try:
            problems = [r[0] for r in self._db.execute('PRAGMA quick_check')]
        except sqlite3.DatabaseError as e:
            problems = [str(e)]
        if problems != ['ok']:
            if not self.recover:
                raise BagError(f'{self.path}: sqlite3 integrity check failed: {problems[:3]}')
            self.damage[0] = Damage(self.path.name, 0, 'corrupt', f'sqlite3 integrity check failed: '
                                    f'{"; ".join(problems[:3])}')

    def _payload(self, data: bytes) -> bytes:
        return self._decompress.decompress(data) if data[:4] == _ZSTD_MAGIC else data

    def _rows(self, channel_ids: set[int], order: str, id_range: tuple[int, int] | None = None
              ) -> Iterator[list[tuple[int, int, bytes]]]:
        ids = sorted(channel_ids)
        if not ids:
            return
        if self._index is not None:
            yield from self._index_rows(ids, order, id_range)
            return
        where = f"topic_id IN ({','.join('?' * len(ids))})"
        if id_range is not None:
            where += ' AND id BETWEEN ? AND ?'
            ids += list(id_range)
        try:
            cur = self._db.execute(f'SELECT topic_id, timestamp, data FROM messages WHERE {where} '
                                   f'ORDER BY {order}', ids)
            while rows := cur.fetchmany(BATCH):
                yield rows
        except sqlite3.DatabaseError as e:
            if not self.recover:
                raise BagError(f'{self.path}: unreadable rosbag2 sqlite3 file ({e})') from e
            self.damage.setdefault(-1, Damage(self.path.name, 0, 'corrupt', f'message data unreadable ({e}); '
                                              f'the messages after it in this read are left out'))

    def _index_rows(self, ids: list[int], order: str, id_range: tuple[int, int] | None
                    ) -> Iterator[list[tuple[int, int, bytes]]]:
        """``_rows`` of a damaged file, from the rows read page by page."""
        idx = self._index
        keep = np.isin(idx.topic_id, ids)
        if id_range is not None:
            keep &= (idx.rowid >= id_range[0]) & (idx.rowid <= id_range[1])
        sel = np.flatnonzero(keep)
        if order != 'id':                                   # 'timestamp, id'
            sel = sel[np.lexsort((idx.rowid[sel], idx.timestamp[sel]))]
        for k in range(0, len(sel), BATCH):
            part = sel[k:k + BATCH].tolist()
            yield [(int(idx.topic_id[i]), int(idx.timestamp[i]), idx.payload(i)) for i in part]

    def iter_pieces(self, channel_ids: set[int], chunks: list[Any] | None = None) -> Iterator[Piece]:
        """Messages of the wanted channels in file (row id) order, at most ``BATCH`` rows per piece; only
        the row-id ranges of ``chunks`` (entries of ``summary.chunk_indexes``) when given."""
        ranges = [None] if chunks is None else [
            (c.chunk_start_offset, c.chunk_start_offset + c.chunk_length - 1) for c in chunks]
        for rows in (rows for r in ranges for rows in self._rows(channel_ids, 'id', r)):
            tids, stamps, payloads = zip(*rows)
            if payloads[0][:4] == _ZSTD_MAGIC:           # compression_mode: message (every payload)
                payloads = [self._payload(d) for d in payloads]
            yield piece(tids, stamps, payloads)

    def iter_raw(self, topics: list[str] | None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, type name, log time, CDR bytes) in log-time order (ties in row order)."""
        cids = self.channel_ids(topics)
        meta = self.channel_meta(cids)
        for rows in self._rows(cids, 'timestamp, id'):
            for tid, ts, data in rows:
                topic, type_name = meta[tid]
                yield topic, type_name, ts, self._payload(data)

