"""The contact estimator as an offline node for run-bag: same pipeline, same messages, bag time."""
from __future__ import annotations

from contact_dynamics_common.replay import resolve_topic

from .config import NODE_NAME
from .messages import MSG_TYPE, publications
from .pipeline import ContactPipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
JOINT_STATE = 'sensor_msgs/msg/JointState'
POSE = 'geometry_msgs/msg/PoseStamped'


class OfflineContactEstimator:
    node_name = NODE_NAME

    def __init__(self, params: dict):
        self.params = params
        self.pipeline = ContactPipeline(params)
        self.period_ns = int(round(1e9 / params['publish_rate']))
        self.wrench_topic = resolve_topic(params['wrench_topic'], NODE_NAME)
        if params['displacement_source'] == 'joint_state':
            self.disp_topic, self.disp_type = resolve_topic(params['joint_states_topic'], NODE_NAME), JOINT_STATE
        else:
            self.disp_topic, self.disp_type = resolve_topic(params['pose_topic'], NODE_NAME), POSE

    def inputs(self) -> dict[str, str]:
        return {self.wrench_topic: WRENCH, self.disp_topic: self.disp_type}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        if topic == self.wrench_topic:
            self.pipeline.push_wrench_columns(cols['stamp_ns'][sl], cols['force'][sl])
            self.pipeline.wrench_frame = self.pipeline.wrench_frame or cols.get('frame_id', '')
        elif self.disp_type == JOINT_STATE:
            self.pipeline.push_joint_columns(cols['stamp_ns'][sl], cols['name'], cols['position'][sl])
        else:
            self.pipeline.push_pose_columns(cols['stamp_ns'][sl], cols['position'][sl])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        estimates = self.pipeline.step()
        return [(resolve_topic(topic, NODE_NAME), MSG_TYPE, fields)
                for topic, fields in publications(self.pipeline, estimates, self.params)]

    def status(self) -> dict:
        return dict(self.pipeline.status())
