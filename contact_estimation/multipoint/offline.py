"""The multi-point estimator as an offline node for run-bag: same pipeline, same messages, bag time.

Its geometry follows the rule of ``config.geometry_source``: ``geometry_file`` when set (a relative name
beside the params file first), else the bag's own ``geometry.yaml``, else the packaged default; run-bag hands
the node the bag and the params file (``bind_sources``) before the replay and prints ``describe()``.
"""
from __future__ import annotations

from pathlib import Path

from contact_dynamics_common.offline_node import OfflineNodeBase
from contact_dynamics_common.params import ConfigError

from .config import NODE_NAME, describe_sources, geometry_source
from .messages import MSG_TYPE, publications
from .pipeline import MultiPointPipeline

WRENCH = 'geometry_msgs/msg/WrenchStamped'
ODOM = 'nav_msgs/msg/Odometry'
POSE = 'geometry_msgs/msg/PoseStamped'


class OfflineMultiPointEstimator(OfflineNodeBase):
    node_name = NODE_NAME

    def __init__(self, params: dict, geometry=None):
        self.source, self._geometry_error = None, None
        pipeline = None
        if geometry is None:
            try:
                self.source = geometry_source(params['geometry_file'])
                pipeline = MultiPointPipeline(params, (self.source.payload, self.source.environment))
            except ConfigError as exc:       # a relative name may be beside the params file: bind_sources decides
                self._geometry_error = exc
        else:
            pipeline = MultiPointPipeline(params, geometry)
        super().__init__(params, pipeline)
        self.wrench_topic = self.resolve(params['wrench_topic'])
        if params['pose_source'] == 'odometry':
            self.pose_topic, self.pose_type = self.resolve(params['odom_topic']), ODOM
        else:
            self.pose_topic, self.pose_type = self.resolve(params['pose_topic']), POSE
        self.out_topic = None

    def bind_sources(self, bag: str | Path | None = None, config: str | Path | None = None) -> None:
        """Re-resolve the geometry knowing the bag and the params file (before any message is pushed); a node
        built with an explicit geometry keeps it."""
        if self.source is None and self._geometry_error is None:
            return
        params_dir = Path(config).resolve().parent if config else None
        src = geometry_source(self.params['geometry_file'], bag=bag, params_dir=params_dir)
        if self.source is None or src.path != self.source.path:
            self.pipeline = MultiPointPipeline(self.params, (src.payload, src.environment))
        self.source, self._geometry_error = src, None

    def _ready(self) -> None:
        if self.pipeline is None:
            raise self._geometry_error

    def describe(self) -> str:
        """One line: the geometry file, the rule that chose it, and the input topics."""
        if self.source is None:
            return f'{NODE_NAME}: geometry given by the caller; inputs: wrench {self.wrench_topic}, ' \
                   f'pose {self.pose_topic}'
        return describe_sources(self.source, {'wrench': self.wrench_topic, 'pose': self.pose_topic})

    def status(self) -> dict:
        self._ready()
        out = super().status()
        if out.get('instants', 0) and not out.get('instants_in_contact', 0):
            where = self.source.path if self.source is not None else 'the given geometry'
            out['note'] = (f"no contact in any of {out['instants']} paired instants with the geometry {where} "
                           '(another payload or environment, or poses in another frame?)')
        return out

    def inputs(self) -> dict[str, str]:
        return {self.wrench_topic: WRENCH, self.pose_topic: self.pose_type}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        self._ready()
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
        self._ready()
        self.pipeline.step()
        return [(self.resolve(topic), MSG_TYPE, fields)
                for topic, fields in publications(self.pipeline, self.params)]
