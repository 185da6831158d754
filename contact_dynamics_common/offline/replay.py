"""Offline replay (run-bag): run estimator nodes over a recorded bag in bag time, as fast as possible.

Every node has a timer with period ``period_ns`` starting at the bag's first message; at each tick T the
messages logged since the previous tick (log time <= T) are delivered in log-time order, then the node
updates and its outputs are written with T as log time: exactly what a live node sees when the bag is
played at recorded speed. The bag is streamed: it is read in chunks of about ``chunk_s`` seconds of bag
time (``BagReader.iter_column_chunks``), so memory does not grow with the length of the bag.

The offline node protocol (a node is any object with these):

* ``node_name``, ``period_ns``, ``inputs() -> {topic: type}``, ``status() -> dict`` (counters);
* ``push(topic, columns, slice)``: messages ``slice`` of a column dict (``messages.convert`` schema) of one topic,
  in log-time order. A node may receive several pushes of one topic between two ticks (a chunk boundary
  falls between them), so ``push`` must only buffer;
* ``tick(now_ns) -> [(topic, type, fields)]``: update on what was pushed, return the outputs;
* optional ``replay_chunk(columns, ticks_ns) -> [[(topic, type, fields)] per tick]``: the same sequence
  computed at once for consecutive ticks. ``columns`` ({topic: column dict}) hold the messages logged
  since the previous call (the first call: since the start), ``ticks_ns`` the ticks due in this chunk
  (possibly none); messages logged after ``ticks_ns[-1]`` belong to later ticks and must be kept by the
  node for the next call. The node carries its state from call to call. When a node has it, it is used
  instead of push/tick (unless ``replay(batched=False)``, the reference).
* optional ``replay_all(columns, ticks_ns)``: the whole record in one call on a fresh node (no longer
  used by ``replay``; kept by nodes for callers that hold a record in memory).

A node without ``replay_chunk`` is driven by push/tick with the same chunked reading: memory stays bounded
either way.
"""
from __future__ import annotations

import gc
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..bag import BagReader, BagWriter

#: bag seconds per chunk of streamed replay
CHUNK_S = 10.0


class ReplayError(ValueError):
    """The bag does not carry what a node needs (a missing topic, a topic of another type)."""


class OfflineNode(Protocol):
    node_name: str
    period_ns: int

    def inputs(self) -> dict[str, str]: ...
    def push(self, topic: str, cols: dict, sl: slice) -> None: ...
    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]: ...
    def status(self) -> dict: ...
    # optional: def replay_chunk(self, columns: dict[str, dict], ticks_ns: np.ndarray) -> list[list[tuple]]


def resolve_topic(name: str, node_name: str, namespace: str = '/') -> str:
    """ROS 2 name resolution for a node in ``namespace``: '/abs', '~/private', 'relative'."""
    ns = '/' + namespace.strip('/') if namespace.strip('/') else ''
    if name.startswith('/'):
        return name
    if name.startswith('~'):
        return f'{ns}/{node_name}' + name[1:]
    return f'{ns}/{name}'


@dataclass
class ReplayResult:
    """Outputs of a replay. ``outputs`` holds every output (topic -> [(log_ns, fields)]) unless the replay
    was asked to keep at most ``max_kept`` per topic: then an evenly thinned series, always ending with the
    latest message; ``counts`` has the number of messages per topic either way."""

    outputs: dict[str, list[tuple[int, dict]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    input_messages: int = 0
    notes: list[str] = field(default_factory=list)      # nodes' describe() lines (run-bag prints them)
    bag_duration_s: float = 0.0
    status: dict[str, dict] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)     # seconds: read, estimate, write
    read_busy_s: float = 0.0   # the background reader's own time (MCAP, overlapped; timing['read']: the wait)
    chunks: int = 0
    recovery: Any = None       # the bag's BagRecovery after the replay: what of a damaged bag was used


class _Thinned:
    """At most ``cap`` items of a series kept evenly (every ``stride``-th, the stride doubling when full),
    plus the latest item."""

    def __init__(self, items: list, cap: int):
        self.items, self.cap, self.stride, self.n, self.tail = items, max(int(cap), 2), 1, 0, False

    def add(self, item) -> None:
        if self.tail:                      # the previous latest item was not a stride point
            self.items.pop()
        self.tail = self.n % self.stride != 0
        self.items.append(item)
        self.n += 1
        if not self.tail and len(self.items) > self.cap:
            self.items[:] = self.items[::2]
            self.stride *= 2
            self.tail = (self.n - 1) % self.stride != 0
            if self.tail:                  # the latest item stays, as the tail
                self.items.append(item)


def replay(bag: BagReader, nodes: list[Any], writer: BagWriter | None = None,
           progress: bool = False, batched: bool = True, chunk_s: float = CHUNK_S,
           max_kept: int | None = None) -> ReplayResult:
    """Run ``nodes`` over ``bag`` chunk by chunk; write every output to ``writer``; return the outputs.

    ``batched=False`` drives every node by push/tick even when it offers ``replay_chunk`` (the reference).
    ``chunk_s``: bag seconds read per chunk (rounded to the first node's ticks). ``max_kept``: keep at most
    that many outputs per topic in the result (None: all).
    """
    result = ReplayResult(bag_duration_s=bag.duration_s)
    topics: list[str] = []
    for node in nodes:
        for topic, type_name in node.inputs().items():
            if topic not in bag.topics:
                raise ReplayError(f"{node.node_name}: input topic {topic} is not in the bag "
                                  f"(topics: {', '.join(sorted(bag.topics))})")
            if bag.topics[topic] != type_name:
                raise ReplayError(f'{node.node_name}: {topic} has type {bag.topics[topic]} in the bag, '
                                  f'expected {type_name}')
            if topic not in topics:
                topics.append(topic)
    if not nodes:
        result.recovery = bag.recovery
        return result
    start, end = bag.start_ns, bag.end_ns
    ticks = [np.arange(start + n.period_ns, end + 2 * n.period_ns, n.period_ns, dtype=np.int64)
             for n in nodes]
    ends = _chunk_ends(ticks[0], chunk_s)
    ends[-1] = max(int(t[-1]) for t in ticks)               # the last chunk takes everything
    drivers = [_Driver(n, t, batched and hasattr(n, 'replay_chunk')) for n, t in zip(nodes, ticks)]
    chunks = bag.iter_column_chunks(topics, ends)
    if getattr(bag, 'storage', None) == 'mcap':      # read the next chunks while this one is estimated
        chunks = _Prefetch(chunks)
    bar = _progress(progress, 'replay', len(ends))
    # the cyclic GC would traverse every object the replay keeps again and again: after each chunk, collect
    # what it left and freeze the survivors (only when the caller has frozen nothing, so that the
    # unfreeze at the end restores its state); in between, the automatic collections (thousands per bag
    # hour, over the output messages being built) are off: the collection after each chunk finds any cycle
    freeze = gc.isenabled() and gc.get_freeze_count() == 0
    try:
        if freeze:
            gc.disable()
        _replay_chunks(chunks, drivers, writer, result, max_kept, bar, freeze)
    finally:
        if isinstance(chunks, _Prefetch):
            chunks.close()
            result.read_busy_s = chunks.busy_s
        if freeze:
            gc.enable()
            gc.unfreeze()
    if bar is not None:
        bar.close()
    result.status = {n.node_name: n.status() for n in nodes}
    result.recovery = bag.recovery
    return result


def _replay_chunks(chunks, drivers, writer, result: ReplayResult, max_kept: int | None, bar,
                   freeze: bool) -> None:
    kept: dict[str, _Thinned] = {}
    timing = result.timing = dict.fromkeys(('read', 'estimate', 'write'), 0.0)
    t_prev = time.perf_counter()
    for chunk_end, columns in chunks:
        t_read = time.perf_counter()
        timing['read'] += t_read - t_prev
        result.chunks += 1
        result.input_messages += sum(len(c['log_ns']) for c in columns.values())
        per_node = [d.run(columns, chunk_end) for d in drivers]
        if freeze:
            gc.collect()
            gc.freeze()
        t_est = time.perf_counter()
        timing['estimate'] += t_est - t_read
        for outs in per_node:
            for now, outputs in outs:
                last = data = None
                for topic, type_name, fields in outputs:
                    if topic not in kept:
                        kept[topic] = _Thinned(result.outputs.setdefault(topic, []),
                                               max_kept if max_kept is not None else np.iinfo(np.int64).max)
                        result.types[topic] = type_name
                    kept[topic].add((now, fields))
                    if writer is not None:           # one message published on two topics: encoded once
                        if last == (id(fields), type_name):
                            writer.write_serialized(topic, type_name, data, now)
                        else:
                            data, last = writer.write(topic, type_name, fields, now), (id(fields), type_name)
        t_prev = time.perf_counter()
        timing['write'] += t_prev - t_est
        if bar is not None:
            bar.update(1)
        result.counts = {t: k.n for t, k in kept.items()}


class _Prefetch:
    """Iterate ``items`` in a background thread, at most ``depth`` items ahead, in order.

    File reads, CRC and zstd decompression release the GIL, so the next chunks of an MCAP bag are read
    and decoded while the current one is estimated. The items and their order are those of ``items``;
    an exception raised by it is raised here at the same place in the sequence. ``close()`` (always call
    it) stops and joins the thread; ``busy_s`` is the time the thread spent producing.
    """

    _END, _ITEM, _ERROR = range(3)

    def __init__(self, items, depth: int = 2):
        self._queue: queue.Queue = queue.Queue(maxsize=max(int(depth), 1))
        self._stop = threading.Event()
        self.busy_s = 0.0
        self._thread = threading.Thread(target=self._run, args=(iter(items),), name='replay-reader',
                                        daemon=True)
        self._thread.start()

    def _run(self, items) -> None:
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    item = next(items)
                except StopIteration:
                    self._put((self._END, None))
                    return
                finally:
                    self.busy_s += time.perf_counter() - t0
                if not self._put((self._ITEM, item)):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((self._ERROR, e))
        finally:
            close = getattr(items, 'close', None)
            if close is not None:
                close()

    def _put(self, entry) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        while True:
            kind, value = self._queue.get()
            if kind == self._END:
                return
            if kind == self._ERROR:
                raise value
            yield value

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _chunk_ends(ticks: np.ndarray, chunk_s: float) -> list[int]:
    """Ticks about ``chunk_s`` apart that end the chunks (the last tick ends the last one)."""
    if not len(ticks):
        return [0]
    period = int(ticks[1] - ticks[0]) if len(ticks) > 1 else 1
    step = max(1, int(chunk_s * 1e9 // max(period, 1)))
    ends = ticks[step - 1::step].tolist()
    if not ends or ends[-1] != int(ticks[-1]):
        ends.append(int(ticks[-1]))
    return ends


class _Driver:
    """One node through the chunks: ``replay_chunk`` or push/tick, its ticks consumed in order."""

    def __init__(self, node, ticks: np.ndarray, batched: bool):
        self.node, self.ticks, self.batched, self.next = node, ticks, batched, 0

    def run(self, columns: dict[str, dict], chunk_end: int) -> list[tuple[int, list]]:
        """The node's (tick, outputs) for its ticks up to ``chunk_end``, given the chunk's messages."""
        hi = int(np.searchsorted(self.ticks, chunk_end, side='right'))
        due = self.ticks[self.next:hi]
        self.next = hi
        cols = {t: columns[t] for t in self.node.inputs()}
        if self.batched:
            return list(zip(due.tolist(), self.node.replay_chunk(cols, due)))
        bounds = {t: np.searchsorted(c['log_ns'], due, side='right') for t, c in cols.items()}
        pos = dict.fromkeys(cols, 0)
        out = []
        for k, now in enumerate(due.tolist()):
            for t, c in cols.items():
                hi_t = int(bounds[t][k])
                if hi_t > pos[t]:
                    self.node.push(t, c, slice(pos[t], hi_t))
                    pos[t] = hi_t
            out.append((now, self.node.tick(now)))
        for t, c in cols.items():                # logged after the last due tick: for the next chunk's ticks
            if len(c['log_ns']) > pos[t]:
                self.node.push(t, c, slice(pos[t], len(c['log_ns'])))
        return out


def _progress(enabled: bool, desc: str, total: int):
    if not enabled or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(desc=desc, unit='chunk', total=total, leave=False)
