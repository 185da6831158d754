"""pkm_identifier as an offline node for run-bag: the same pipeline and messages, in bag time."""
from __future__ import annotations

from contact_dynamics_common.replay import resolve_topic

from .config import NODE_NAME
from .messages import publications
from .pipeline import PkmPipeline

JOINT_STATE = 'sensor_msgs/msg/JointState'


class OfflinePkmIdentifier:
    node_name = NODE_NAME

    def __init__(self, params: dict):
        self.params = params
        self.pipeline = PkmPipeline(params)
        self.period_ns = int(round(1e9 / params['publish_rate']))
        self.topic = resolve_topic(params['joint_states_topic'], NODE_NAME)
        self._resolved: dict[str, str] = {}

    def inputs(self) -> dict[str, str]:
        return {self.topic: JOINT_STATE}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        vel = cols.get('velocity')
        self.pipeline.push_joint_columns(cols['stamp_ns'][sl], cols['name'], cols['position'][sl],
                                         vel[sl] if vel is not None else None, cols['effort'][sl])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        out = []
        for topic, type_name, fields in publications(self.pipeline.step(), self.params):
            if topic not in self._resolved:
                self._resolved[topic] = resolve_topic(topic, NODE_NAME)
            out.append((self._resolved[topic], type_name, fields))
        return out

    def status(self) -> dict:
        return dict(self.pipeline.status())
