"""numpy column dicts of a bag's topics (schema in ``messages.convert``): ``ColumnReader``.

The fast path of offline replay: the chunks are read by the storages themselves (``Piece`` per chunk), the
pieces of each topic gathered in log-time order (``Collected``) and the numbers read with numpy views when
every message of a topic has one CDR layout (``layout.fixed_layout_columns``); otherwise each message is
decoded (``MessageDecoders``) and the same columns built by ``messages.convert.columns_from_messages``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from mcap.records import Schema

from ..messages import convert as msgconv
from .decode import MessageDecoders
from .layout import fixed_layout_columns
from .mcap_format import guard
from .records import Collected, Piece

__all__ = ['ColumnReader']


class ColumnReader:
    """Builds the column dicts of topics from the storage files of one bag; owns reading them in one pass
    over the chunks (``columns_many``) or window by window in bounded memory (``iter_column_chunks``).

    ``files``: the storage readers (``McapFile``, ``Db3File``, ``Bag1File``) in recording order; ``topics``:
    {topic: type name} of the bag; ``path``: the bag, for messages.
    """

    def __init__(self, files: list[Any], topics: dict[str, str], path: Path,
                 decoders: MessageDecoders) -> None:
        self.files, self.topics, self.path, self.decoders = files, topics, path, decoders

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
            with guard(self.path):
                cols = fixed_layout_columns(specs[topic], data) if fast else None
                if cols is None:
                    cols = msgconv.columns_from_messages(self.topics[topic], self.decoders.decode_all(data),
                                                         data.log_ns)
            out[topic] = cols
        return out

    def _collect(self, topics: list[str]) -> dict[str, Collected]:
        """Raw messages of several topics, read in one pass over the chunks."""
        pieces: dict[str, list[Piece]] = {t: [] for t in topics}
        schemas: dict[str, list[Schema]] = {t: [] for t in topics}
        index_parts: dict[str, list[np.ndarray]] = {t: [] for t in topics}
        for mf in self.files:
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
        return {t: Collected.build(pieces[t], schemas[t], index_parts[t]) for t in topics}

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
        for fi, mf in enumerate(self.files):
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
        pending: list[tuple[tuple[int, int], int, Piece]] = []        # ((file, offset), file, piece)
        nxt = 0
        for k, end in enumerate(ends):
            last = k == len(ends) - 1
            while nxt < len(sources) and (last or sources[nxt][0] <= end):
                _, fi, offset, ci = sources[nxt]
                nxt += 1
                mf = self.files[fi]
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
        data = Collected.build(pieces, schemas, index_parts)
        with guard(self.path):
            cols = fixed_layout_columns(spec, data) if fast else None
            if cols is None:
                cols = msgconv.columns_from_messages(self.topics[topic], self.decoders.decode_all(data),
                                                     data.log_ns)
        return cols
