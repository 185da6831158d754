"""Offline replay (run-bag): run estimator nodes over a recorded bag in bag time, as fast as possible.

An offline node exposes ``node_name``, ``period_ns``, ``inputs() -> {topic: type}``,
``push(topic, columns, slice)``, ``tick(now_ns) -> [(topic, type, fields)]`` and ``status()``. The bag's
input topics are read once as numpy columns; at every timer tick of the node (bag time, its publish
period from the bag's start) the messages logged since the previous tick are pushed in log-time order,
then the node updates and its outputs are written with the tick as log time, exactly the sequence a live
node sees when the bag is played at recorded speed.
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
           progress: bool = False) -> ReplayResult:
    """Run ``nodes`` over ``bag``; write every output to ``writer``; return all outputs."""
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
        bounds = {t: np.searchsorted(columns[t]['log_ns'], ticks, side='right') for t in topics}
        pos = dict.fromkeys(topics, 0)
        for k in _progress(range(len(ticks)), progress, node.node_name):
            for t in topics:
                hi = int(bounds[t][k])
                if hi > pos[t]:
                    node.push(t, columns[t], slice(pos[t], hi))
                    pos[t] = hi
            now = int(ticks[k])
            for topic, type_name, fields in node.tick(now):
                result.outputs.setdefault(topic, []).append((now, fields))
                result.types[topic] = type_name
                if writer is not None:
                    writer.write(topic, type_name, fields, now)
        result.status[node.node_name] = node.status()
    return result


def _progress(it, enabled: bool, desc: str):
    if not enabled or not sys.stderr.isatty():
        return it
    from tqdm import tqdm
    return tqdm(it, desc=desc, unit='tick', leave=False)
