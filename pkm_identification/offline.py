"""pkm_identifier as an offline node for run-bag: the same pipeline and messages, in bag time."""
from __future__ import annotations

from contact_dynamics_common.offline_node import OfflineNodeBase

from .config import NODE_NAME
from .messages import publications
from .pipeline import PkmPipeline

JOINT_STATE = 'sensor_msgs/msg/JointState'


class OfflinePkmIdentifier(OfflineNodeBase):
    node_name = NODE_NAME

    def __init__(self, params: dict):
        super().__init__(params, PkmPipeline(params))
        self.topic = self.resolve(params['joint_states_topic'])

    def inputs(self) -> dict[str, str]:
        return {self.topic: JOINT_STATE}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        vel = cols.get('velocity')
        self.pipeline.push_joint_columns(cols['stamp_ns'][sl], cols['name'], cols['position'][sl],
                                         vel[sl] if vel is not None else None, cols['effort'][sl])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        return [(self.resolve(topic), type_name, fields) for est in self.pipeline.step_blocks()
                for topic, type_name, fields in publications(est, self.params)]
