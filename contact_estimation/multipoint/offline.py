"""The multi-point estimator as an offline node for run-bag: same pipeline, same messages, bag time."""
from __future__ import annotations

from contact_dynamics_common.offline_node import OfflineNodeBase

from .config import NODE_NAME
from .messages import MSG_TYPE, publications
from .pipeline import MultiPointPipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
ODOM = 'nav_msgs/msg/Odometry'
POSE = 'geometry_msgs/msg/PoseStamped'


class OfflineMultiPointEstimator(OfflineNodeBase):
    node_name = NODE_NAME

    def __init__(self, params: dict, geometry=None):
        super().__init__(params, MultiPointPipeline(params, geometry))
        self.wrench_topic = self.resolve(params['wrench_topic'])
        if params['pose_source'] == 'odometry':
            self.pose_topic, self.pose_type = self.resolve(params['odom_topic']), ODOM
        else:
            self.pose_topic, self.pose_type = self.resolve(params['pose_topic']), POSE
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
        return [(self.resolve(topic), MSG_TYPE, fields)
                for topic, fields in publications(self.pipeline, self.params)]
