"""The multi-point estimator as an offline node for run-bag: same pipeline, same messages, bag time."""
from __future__ import annotations

from contact_dynamics_common.replay import resolve_topic

from .config import NODE_NAME
from .messages import MSG_TYPE, publications
from .pipeline import MultiPointPipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
ODOM = 'nav_msgs/msg/Odometry'
POSE = 'geometry_msgs/msg/PoseStamped'


class OfflineMultiPointEstimator:
    node_name = NODE_NAME

    def __init__(self, params: dict, geometry=None):
        self.params = params
        self.pipeline = MultiPointPipeline(params, geometry)
        self.period_ns = int(round(1e9 / params['publish_rate']))
        self.wrench_topic = resolve_topic(params['wrench_topic'], NODE_NAME)
        if params['pose_source'] == 'odometry':
            self.pose_topic, self.pose_type = resolve_topic(params['odom_topic'], NODE_NAME), ODOM
        else:
            self.pose_topic, self.pose_type = resolve_topic(params['pose_topic'], NODE_NAME), POSE
        self.out_topic = None

    def inputs(self) -> dict[str, str]:
        return {self.wrench_topic: WRENCH, self.pose_topic: self.pose_type}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        if topic == self.wrench_topic:
            self.pipeline.push_wrench_columns(cols['stamp_ns'][sl], cols['force'][sl], cols['torque'][sl])
        else:
            self.pipeline.pose_frame = self.pipeline.pose_frame or cols.get('frame_id', '')
            if self.pose_type == ODOM:
                self.pipeline.push_pose_columns(cols['stamp_ns'][sl], cols['position'][sl], cols['orientation'][sl],
                                                cols['linear'][sl], cols['angular'][sl])
            else:
                self.pipeline.push_pose_columns(cols['stamp_ns'][sl], cols['position'][sl], cols['orientation'][sl])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        self.pipeline.step()
        return [(resolve_topic(topic, NODE_NAME), MSG_TYPE, fields)
                for topic, fields in publications(self.pipeline, self.params)]

    def status(self) -> dict:
        return self.pipeline.status()
