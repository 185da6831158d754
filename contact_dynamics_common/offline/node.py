"""Base of the offline nodes of run-bag (the protocol in ``replay``): what every one of them repeats.

An offline node holds its parameters and ROS-free pipeline, ticks every ``period_ns = round(1e9 /
publish_rate)`` ns of bag time, publishes on topics resolved as the live node would resolve them (cached) and
reports the pipeline's counters as its status. Subclasses set ``node_name`` and add ``inputs``, ``push`` and
``tick`` (and optionally ``replay_chunk``).
"""
from __future__ import annotations

from .replay import resolve_topic


class OfflineNodeBase:
    node_name: str = ''

    def __init__(self, params: dict, pipeline):
        self.params = params
        self.pipeline = pipeline
        self.period_ns = int(round(1e9 / params['publish_rate']))
        self._resolved: dict[str, str] = {}

    def resolve(self, topic: str) -> str:
        """``topic`` ('/abs', '~/private', 'relative') resolved for this node (in the root namespace)."""
        out = self._resolved.get(topic)
        if out is None:
            out = self._resolved[topic] = resolve_topic(topic, self.node_name)
        return out

    def status(self) -> dict:
        return dict(self.pipeline.status())
