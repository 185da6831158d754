"""impact_indicator: effective kinetic energy of impact T_c, effective mass and time to contact (ROS 2 glue).

Subscribes  joint_states_topic (sensor_msgs/JointState), odom_topic (nav_msgs/Odometry),
            obstacle_topic (contact_dynamics/ObstacleHypothesis); sensor-data QoS;
            robot_description_topic (std_msgs/String, transient local) when set.
Publishes   ~/impact_indicator (contact_dynamics/ImpactIndicator) at publish_rate, /diagnostics.
Services    ~/reset (forget inputs), lifecycle services.
Callbacks validate and keep the latest sample; the evaluation runs on the timer (ImpactPipeline).
"""
from __future__ import annotations

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from contact_dynamics.msg import ImpactIndicator, ObstacleHypothesis
from contact_dynamics_common.node import ERROR, OK, WARN, EstimatorNode, RateMeter, output_qos, run, sensor_qos, status
from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.rosfill import fill
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..inputs import model_from_urdf

from ..ros_io import push_joint_state_msg, push_obstacle_msg, push_odometry_msg
from .config import NODE_NAME, PARAMS
from .pipeline import ImpactPipeline

LEVELS = {'ok': OK, 'warn': WARN, 'error': ERROR}


class ImpactIndicatorNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: ImpactPipeline | None = None
        self.pub = None
        self.description_error = ''
        self.description_state = "waiting for robot_description (using the role map's URDF)"
        self.rates = {'joint_states': RateMeter(), 'odometry': RateMeter(), 'obstacle': RateMeter()}
        self._logged = ''

    def configure(self) -> None:
        p = self.params
        self.pipeline = ImpactPipeline(p)          # ConfigError (bad model / URDF) fails configure with the reason
        if self.pub is None:
            d = p['input_queue_size']
            self.create_subscription(JointState, p['joint_states_topic'], self._on_js, sensor_qos(d))
            self.create_subscription(Odometry, p['odom_topic'], self._on_odom, sensor_qos(d))
            self.create_subscription(ObstacleHypothesis, p['obstacle_topic'], self._on_obstacle, sensor_qos(10))
            if p['robot_description_topic']:
                self.create_subscription(String, p['robot_description_topic'], self._on_description, QoSProfile(
                    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
            self.pub = self.create_lifecycle_publisher(ImpactIndicator, '~/impact_indicator', output_qos())
        m = self.pipeline.model
        self.get_logger().info(f"model '{m.roles.model_name}' ({m.nv} DOF, {len(m.wheel_names)} wheels), "
                               f"ground_mode {p['ground_mode']}, {p['publish_rate']:g} Hz")

    def _on_description(self, msg) -> None:
        try:
            model = model_from_urdf(self.params, msg.data)
        except ConfigError as exc:
            self.description_error = str(exc)
            self.get_logger().error(f'{exc}; keeping the previous model')
            return
        self.pipeline = ImpactPipeline(self.params, model)
        self.description_error = ''
        self.description_state = 'model built from the latest robot_description'
        self.get_logger().info(f"model rebuilt from robot_description ({model.nv} DOF)")

    def _on_js(self, msg) -> None:
        if self.active:
            self.rates['joint_states'].tick()
            push_joint_state_msg(self.pipeline.inputs, msg)

    def _on_odom(self, msg) -> None:
        if self.active:
            self.rates['odometry'].tick()
            push_odometry_msg(self.pipeline.inputs, msg)

    def _on_obstacle(self, msg) -> None:
        if self.active:
            self.rates['obstacle'].tick()
            if not push_obstacle_msg(self.pipeline.inputs, msg, self.params['base_frame']):
                self.get_logger().warning(self.pipeline.inputs.last_error)

    def update(self) -> None:
        fields = self.pipeline.step(self.get_clock().now().nanoseconds)
        if fields is None:
            if self.pipeline.level == 'error' and self.pipeline.last_status != self._logged:
                self._logged = self.pipeline.last_status
                self.get_logger().error(self._logged)
            return
        self.pub.publish(fill(ImpactIndicator(), fields))

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline = ImpactPipeline(self.params, self.pipeline.model)   # keeps a robot_description model

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return [status(f'{name}: pipeline', WARN, 'not configured', {})]
        out = []
        for k, meter in self.rates.items():
            out.append(status(f'{name}: input {k}', OK if meter.count else WARN,
                              'ok' if meter.count else 'no messages received',
                              {'rate_hz': meter.rate(), 'received': meter.count, 'age_s': meter.age()}))
        values = {k: v for k, v in self.pipeline.status().items()}
        values.update(self.cost.figures())
        inp = self.pipeline.inputs
        level = LEVELS[self.pipeline.level]
        msg = self.pipeline.last_status
        if inp.last_error and level == OK and (inp.counts['joint_missing'] or inp.counts['obstacle_rejected']
                                               or inp.counts['joint_nonfinite'] or inp.counts['odometry_nonfinite']):
            level, msg = WARN, f'{msg}; last input error: {inp.last_error}'
        if inp.counts['joint_missing'] and not inp.counts['joint_states_accepted']:
            level, msg = ERROR, inp.last_error
        out.append(status(f'{name}: indicator', level, msg, values))
        if self.params['robot_description_topic']:
            out.append(status(f'{name}: robot_description', ERROR if self.description_error else OK,
                              self.description_error or self.description_state, {}))
        inp = self.pipeline.inputs
        bad = {k: v for k, v in inp.counts.items() if k.startswith(('joint_', 'odometry_', 'obstacle_', 'stale'))
               and not k.endswith('accepted')}
        out.append(status(f'{name}: inputs', WARN if inp.last_error else OK, inp.last_error or 'ok',
                          {**dict(inp.counts), 'rejected_total': sum(bad.values())}))
        return out


def main(args=None) -> None:
    raise SystemExit(run(lambda: ImpactIndicatorNode(), args))


if __name__ == '__main__':
    main()
