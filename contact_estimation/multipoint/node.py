"""multipoint_contact_estimator: online multi-point contact identification (ROS 2 glue only).

Subscribes  wrench_topic (geometry_msgs/WrenchStamped, default payload/wrench) and odom_topic (nav_msgs/Odometry,
            default payload/odom) or pose_topic (geometry_msgs/PoseStamped, default payload/pose), sensor-data QoS.
Geometry    geometry_file (a relative name beside the params file that set it, the working directory, config/),
            empty: the packaged default config/multipoint_acu_geometry.yaml; logged at configure with the
            resolved input topics (``config.geometry_source``, ``config.describe_sources``).
Publishes   ~/estimate (contact_dynamics/MultiPointContactEstimate: k, b, mu with covariance, verdict, contact
            count and contact points), /diagnostics (diagnostic_msgs/DiagnosticArray).
Services    ~/reset (std_srvs/Trigger), the lifecycle services (managed node; autostart by default).
Callbacks only queue samples in the pipeline; gating, pairing, kinematics and estimation run on a timer, in
data-time blocks of 1 / publish_rate (the estimate at a data stamp is run-bag's at that stamp).
"""
from __future__ import annotations

from geometry_msgs.msg import PoseStamped, WrenchStamped
from nav_msgs.msg import Odometry

from contact_dynamics.msg import MultiPointContactEstimate as EstimateMsg
from contact_dynamics_common.messages.checks import odometry_problem, pose_problem
from contact_dynamics_common.msgconv import odometry_row, pose_row, wrench_row
from contact_dynamics_common.node import OK, WARN, EstimatorNode, InputStats, node_main, output_qos, status
from contact_dynamics_common.ros.inputs import gate_account
from contact_dynamics_common.rosfill import fill

from .config import NODE_NAME, PARAMS, describe_sources, geometry_source
from .messages import TOPIC, publications
from .pipeline import MultiPointPipeline


class MultiPointEstimatorNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: MultiPointPipeline | None = None
        self.rates = {'wrench': InputStats(), 'pose': InputStats()}
        self.pub = None

    def configure(self) -> None:
        p = self.params
        # geometry_file (made absolute beside the params file that set it), else the packaged default
        src = geometry_source(p['geometry_file'])
        self.pipeline = MultiPointPipeline(p, (src.payload, src.environment))
        if self.pub is None:
            depth = p['input_queue_size']
            self.add_input(WrenchStamped, p['wrench_topic'], self.rates['wrench'], self._on_wrench, depth)
            if p['pose_source'] == 'odometry':
                self.add_input(Odometry, p['odom_topic'], self.rates['pose'], self._on_odom, depth,
                               check=odometry_problem)
            else:
                self.add_input(PoseStamped, p['pose_topic'], self.rates['pose'], self._on_pose, depth,
                               check=pose_problem)
            self.pub = self.create_lifecycle_publisher(EstimateMsg, TOPIC, output_qos())
        pose = p['odom_topic'] if p['pose_source'] == 'odometry' else p['pose_topic']
        topics = {'wrench': self.resolve_topic_name(p['wrench_topic']),
                  f"pose ({p['pose_source']})": self.resolve_topic_name(pose)}
        self.get_logger().info(f"{describe_sources(src, topics)}; {p['formulation']} rows")

    def _on_wrench(self, msg: WrenchStamped) -> None:
        r = wrench_row(msg)
        self.pipeline.push_wrench(r[0], r[1:4], r[4:7])

    def _on_odom(self, msg: Odometry) -> None:
        self.pipeline.pose_frame = self.pipeline.pose_frame or msg.header.frame_id
        r = odometry_row(msg)
        self.pipeline.push_pose(r[0], r[1:4], r[4:8], r[8:11], r[11:14])

    def _on_pose(self, msg: PoseStamped) -> None:
        self.pipeline.pose_frame = self.pipeline.pose_frame or msg.header.frame_id
        r = pose_row(msg)
        self.pipeline.push_pose(r[0], r[1:4], r[4:8])

    def update(self) -> None:
        # the incomplete last data-time block is paired only when the input has ended (pipeline docstring)
        self.pipeline.step(flush=self.input_ended(self.pipeline.take_fresh()))
        for _, fields in publications(self.pipeline, self.params):
            self.pub.publish(fill(EstimateMsg(), fields))

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline.reset()

    def diagnostics(self):
        if self.pipeline is None:
            return self.not_configured()
        counts = self.pipeline.status()
        out = []
        for name, meter in self.rates.items():
            gate = {k: v for k, v in counts.items() if k.startswith(name + '.')}
            # the pipeline's queue was flushed through the gates by status(): nothing pending
            sg = self.pipeline.wrench_gate if name == 'wrench' else self.pipeline.pose_gate
            account, dropping = self.input_ledger(name, meter, *gate_account(sg))
            bad = sum(v for k, v in gate.items() if not k.endswith('.accepted'))
            bad += sum(self.refused(meter).values())
            out.append(self.input_status(name, meter, {**gate, **account},
                                         timeout=self.params['sensor_timeout'], bad=bad, dropping=dropping))
        values = self.pipeline_values(counts)
        out.append(status(f'{self.get_name()}: pipeline', OK if self.active else WARN,
                          'ok' if self.active else 'inactive: estimate frozen', values))
        est = self.pipeline.estimate
        if est is not None:
            std = est.std()
            ev = {'valid': est.valid, 'rank': est.rank, 'condition_number': est.condition_number,
                  'residual_fraction': est.residual_fraction, 'samples_used': est.samples_used,
                  'contact_count': 0 if self.pipeline.latest is None else len(self.pipeline.latest.contacts)}
            for j, n in enumerate(est.names):
                ev[n] = float(est.values[j])
                ev[f'{n}_std'] = float(std[j])
                ev[f'{n}_identifiable'] = bool(est.identifiable[j])
                ev[f'{n}_bound_active'] = bool(est.bounds_active[j])
            out.append(status(f'{self.get_name()}: estimate', OK if est.valid else WARN, est.reason, ev))
        return out


main = node_main(MultiPointEstimatorNode)


if __name__ == '__main__':
    main()
