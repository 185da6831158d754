"""Offline node (run-bag) shared by impact_indicator and posture_evaluator: the rover inputs pushed from bag
columns, the pipeline stepped at each tick, its fields published on one topic."""
from __future__ import annotations

from contact_dynamics_common.offline_node import OfflineNodeBase

from .ros_io import JOINT_STATE, OBSTACLE, ODOMETRY, push_columns


class RoverOfflineNode(OfflineNodeBase):
    """Subclasses set ``node_name``, ``pipeline_class`` (built as ``pipeline_class(params)``), ``output``
    (the live node's topic) and ``msg_type``."""

    pipeline_class: type = None
    output = ''
    msg_type = ''

    def __init__(self, params: dict):
        super().__init__(params, self.pipeline_class(params))
        self.kinds = {self.resolve(params['joint_states_topic']): JOINT_STATE,
                      self.resolve(params['odom_topic']): ODOMETRY,
                      self.resolve(params['obstacle_topic']): OBSTACLE}
        self.out_topic = self.resolve(self.output)

    def inputs(self) -> dict[str, str]:
        return dict(self.kinds)

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        push_columns(self.pipeline.inputs, self.kinds[topic], cols, sl, self.params['base_frame'])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        fields = self.pipeline.step(now_ns)
        return [] if fields is None else [(self.out_topic, self.msg_type, fields)]
