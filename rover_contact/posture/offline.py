"""posture_evaluator as an offline node for run-bag: same pipeline and messages, in bag time."""
from __future__ import annotations

from contact_dynamics_common.replay import resolve_topic

from ..ros_io import JOINT_STATE, OBSTACLE, ODOMETRY, push_columns
from .config import NODE_NAME
from .messages import MSG_TYPE
from .pipeline import PosturePipeline


class OfflinePostureEvaluator:
    node_name = NODE_NAME

    def __init__(self, params: dict):
        self.params = params
        self.pipeline = PosturePipeline(params)
        self.period_ns = int(round(1e9 / params['publish_rate']))
        self.kinds = {resolve_topic(params['joint_states_topic'], NODE_NAME): JOINT_STATE,
                      resolve_topic(params['odom_topic'], NODE_NAME): ODOMETRY,
                      resolve_topic(params['obstacle_topic'], NODE_NAME): OBSTACLE}
        self.out_topic = resolve_topic('~/posture_evaluation', NODE_NAME)

    def inputs(self) -> dict[str, str]:
        return dict(self.kinds)

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        push_columns(self.pipeline.inputs, self.kinds[topic], cols, sl, self.params['base_frame'])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        fields = self.pipeline.step(now_ns)
        return [] if fields is None else [(self.out_topic, MSG_TYPE, fields)]

    def status(self) -> dict:
        return self.pipeline.status()
