"""Offline replay (run-bag): run estimator nodes over a recorded bag in bag time, as fast as possible.

An offline node exposes ``node_name``, ``period_ns``, ``inputs() -> {topic: type}``,
``push(topic, columns, slice)``, ``tick(now_ns) -> [(topic, type, fields)]`` and ``status()``. The bag's
input topics are read once as numpy columns; at every timer tick of the node (bag time, its publish
period from the bag's start) the messages logged since the previous tick are pushed in log-time order,
then the node updates and its outputs are written with the tick as log time, exactly the sequence a live
node sees when the bag is played at recorded speed. A node may also offer
``replay_all(columns, ticks_ns) -> [[(topic, type, fields)] per tick]``, the outputs of that same
sequence computed at once; it is used instead when present.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .bag import BagReader, BagWriter


class ReplayError(ValueError):
    """The bag does not carry what a node needs (a missing topic, a topic of another type)."""


class OfflineNode(Protocol):
    node_name: str
    period_ns: int

    def inputs(self) -> dict[str, str]: ...
    def push(self, topic: str, cols: dict, sl: slice) -> None: ...
    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]: ...
    def status(self) -> dict: ...
    # optional: def replay_all(self, columns: dict[str, dict], ticks_ns: np.ndarray) -> list[list[tuple]]: ...


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
    outputs: dict[str, list[tuple[int, dict]]] = field(default_factory=dict)   # topic -> [(log_ns, fields)]
    types: dict[str, str] = field(default_factory=dict)
    input_messages: int = 0
    bag_duration_s: float = 0.0
    status: dict[str, dict] = field(default_factory=dict)


def replay(bag: BagReader, nodes: list[Any], writer: BagWriter | None = None,
           progress: bool = False, batched: bool = True) -> ReplayResult:
    """Run ``nodes`` over ``bag``; write every output to ``writer``; return all outputs.

    ``batched=False`` drives every node tick by tick even when it offers ``replay_all`` (the reference).
    """
    result = ReplayResult(bag_duration_s=bag.duration_s)
    columns: dict[str, dict] = {}
    for node in nodes:
        for topic, type_name in node.inputs().items():
            if topic not in bag.topics:
                raise ReplayError(f"{node.node_name}: input topic {topic} is not in the bag "
                               f"(topics: {', '.join(sorted(bag.topics))})")
            if bag.topics[topic] != type_name:
                raise ReplayError(f'{node.node_name}: {topic} has type {bag.topics[topic]} in the bag, '
                                f'expected {type_name}')
            if topic not in columns:
                columns[topic] = bag.columns(topic)
                result.input_messages += len(columns[topic]['log_ns'])
    start, end = bag.start_ns, bag.end_ns
    for node in nodes:
        ticks = np.arange(start + node.period_ns, end + 2 * node.period_ns, node.period_ns, dtype=np.int64)
        topics = list(node.inputs())
        if batched and hasattr(node, 'replay_all'):
            per_tick = node.replay_all({t: columns[t] for t in topics}, ticks)
        else:
            per_tick = _tick_by_tick(node, {t: columns[t] for t in topics}, ticks)
        for now, outputs in zip(ticks.tolist(), _progress(per_tick, progress, node.node_name, len(ticks))):
            for topic, type_name, fields in outputs:
                result.outputs.setdefault(topic, []).append((now, fields))
                result.types[topic] = type_name
                if writer is not None:
                    writer.write(topic, type_name, fields, now)
        result.status[node.node_name] = node.status()
    return result


def _tick_by_tick(node, columns: dict[str, dict], ticks: np.ndarray):
    """Outputs per tick: push the messages logged since the previous tick, then tick."""
    bounds = {t: np.searchsorted(cols['log_ns'], ticks, side='right') for t, cols in columns.items()}
    pos = dict.fromkeys(columns, 0)
    for k, now in enumerate(ticks.tolist()):
        for t, cols in columns.items():
            hi = int(bounds[t][k])
            if hi > pos[t]:
                node.push(t, cols, slice(pos[t], hi))
                pos[t] = hi
        yield node.tick(now)


def _progress(it, enabled: bool, desc: str, total: int):
    if not enabled or not sys.stderr.isatty():
        return it
    from tqdm import tqdm
    return tqdm(it, desc=desc, unit='tick', total=total, leave=False)
