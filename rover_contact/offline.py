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
        self.wheels_missing = 0

    def inputs(self) -> dict[str, str]:
        return dict(self.kinds)

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        kind = self.kinds[topic]
        if kind == OBSTACLE and 'contact_wheels' not in cols and len(cols['log_ns']):
            self.wheels_missing += len(range(*sl.indices(len(cols['log_ns']))))
        push_columns(self.pipeline.inputs, kind, cols, sl, self.params['base_frame'])

    def status(self) -> dict:
        out = dict(self.pipeline.status())
        if self.wheels_missing:
            out['offline_note'] = (f'{self.wheels_missing} obstacle hypotheses read without their contact_wheels (the '
                                   'bag reader gives no contact_wheels column): contact_wheels_default used')
        return out

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        fields = self.pipeline.step(now_ns)
        return [] if fields is None else [(self.out_topic, self.msg_type, fields)]
