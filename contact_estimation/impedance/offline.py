"""The impedance profiler as an offline node for run-bag: same pipeline, same message, bag time."""
from __future__ import annotations

from contact_dynamics_common.offline_node import OfflineNodeBase

from .config import NODE_NAME
from .messages import MSG_TYPE, TOPIC, profile_fields
from .pipeline import ImpedancePipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
JOINT_STATE = 'sensor_msgs/msg/JointState'
IMU = 'sensor_msgs/msg/Imu'


def publication(pipeline: ImpedancePipeline, params: dict) -> dict | None:
    """Fields of the current profile (None before the first sample updated it)."""
    if not pipeline.counts['samples_used']:
        return None
    frame = params['frame_id'] or pipeline.wrench_frame or params['joint_name']
    extras = {'sample_rate_hz': pipeline.conditioner.measured_rate,
              'cutoff_frequency_hz': params['cutoff_frequency'],
              'forgetting_factor': params['forgetting_factor'], 'min_velocity': params['min_velocity'],
              'covariance_correlation_samples': pipeline.conditioner.correlation,
              'unpaired': float(pipeline.counts['unpaired']),
              'delay_s': '1 sample + causal Butterworth group delay (same on x, v, a, F)'}
    return profile_fields(pipeline.profile(), stamp_ns=pipeline.newest_ns, frame_id=frame,
                          joint_name=params['joint_name'], force_source=params['force_source'],
                          algorithm='recursive_segmented_ls', samples_used=pipeline.counts['samples_used'],
                          extras=extras)


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

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        self.pipeline.step()
        fields = publication(self.pipeline, self.params)
        return [] if fields is None else [(self.out_topic, MSG_TYPE, fields)]
