"""The impedance profiler as an offline node for run-bag: same pipeline, same message, bag time."""
from __future__ import annotations

from contact_dynamics_common.offline_node import OfflineNodeBase

from .config import NODE_NAME
from .messages import MSG_TYPE, TOPIC, publication
from .pipeline import ImpedancePipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
JOINT_STATE = 'sensor_msgs/msg/JointState'
IMU = 'sensor_msgs/msg/Imu'


class OfflineImpedanceProfiler(OfflineNodeBase):
    node_name = NODE_NAME

    def __init__(self, params: dict):
        super().__init__(params, ImpedancePipeline(params))
        self.joint_topic = self.resolve(params['joint_states_topic'])
        wrench, imu = params['force_source'] == 'wrench', params['acceleration_source'] == 'imu'
        self.wrench_topic = self.resolve(params['wrench_topic']) if wrench else None
        self.imu_topic = self.resolve(params['imu_topic']) if imu else None
        self.out_topic = self.resolve(TOPIC)

    def inputs(self) -> dict[str, str]:
        out = {self.joint_topic: JOINT_STATE}
        if self.wrench_topic:
            out[self.wrench_topic] = WRENCH
        if self.imu_topic:
            out[self.imu_topic] = IMU
        return out

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        if topic == self.imu_topic:
            self.pipeline.push_imu_columns(cols['stamp_ns'][sl], cols['linear_acceleration'][sl])
        elif topic == self.wrench_topic:
            self.pipeline.push_wrench_columns(cols['stamp_ns'][sl], cols['force'][sl])
            self.pipeline.wrench_frame = self.pipeline.wrench_frame or cols.get('frame_id', '')
        else:
            effort = cols.get('effort')
            self.pipeline.push_joint_columns(cols['stamp_ns'][sl], cols['name'], cols['position'][sl],
                                             effort[sl] if effort is not None else None)

    def status(self) -> dict:
        """The pipeline's counters, and its last error (a cut-off too high for the input rate, a missing
        joint ...) as text, so that run-bag can say why nothing was published."""
        out = dict(self.pipeline.status())
        if self.pipeline.last_error:
            out['last_error'] = self.pipeline.last_error
        return out

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        self.pipeline.step()
        fields = publication(self.pipeline, self.params)
        return [] if fields is None else [(self.out_topic, MSG_TYPE, fields)]
