"""impact_indicator: effective kinetic energy of impact T_c, effective mass and time to contact (ROS 2 glue).

Subscribes  joint_states_topic (sensor_msgs/JointState), odom_topic (nav_msgs/Odometry),
            obstacle_topic (contact_dynamics/ObstacleHypothesis); sensor-data QoS;
            robot_description_topic (std_msgs/String, transient local) when set.
Publishes   ~/impact_indicator (contact_dynamics/ImpactIndicator) at publish_rate, /diagnostics.
Services    ~/reset (forget inputs), lifecycle services.
Callbacks only queue the message; the timer validates the queued samples in arrival order (drain_inputs) and runs
the evaluation (ImpactPipeline).
"""
from __future__ import annotations

from contact_dynamics.msg import ImpactIndicator
from contact_dynamics_common.node import ERROR, OK, WARN, node_main, output_qos, status
from contact_dynamics_common.rosfill import fill

from ..node_base import LEVELS, RoverNode
from .config import NODE_NAME, PARAMS
from .pipeline import ImpactPipeline


class ImpactIndicatorNode(RoverNode):
    pipeline_class = ImpactPipeline

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: ImpactPipeline | None = None

    def configure(self) -> None:
        p = self.params
        self.pipeline = ImpactPipeline(p)          # ConfigError (bad model / URDF) fails configure with the reason
        if self.pub is None:
            self.subscribe_rover_inputs()
            self.pub = self.create_lifecycle_publisher(ImpactIndicator, '~/impact_indicator', output_qos())
        m = self.pipeline.model
        self.get_logger().info(f"model '{m.roles.model_name}' ({m.nv} DOF, {len(m.wheel_names)} wheels), "
                               f"ground_mode {p['ground_mode']}, {p['publish_rate']:g} Hz")

    def work(self) -> None:
        self.drain_inputs()
        fields = self.pipeline.step(self.get_clock().now().nanoseconds)
        if fields is None:
            if self.pipeline.level == 'error':
                self.log_status_error(self.pipeline.cause, self.pipeline.last_status)
            return
        self.pub.publish(fill(ImpactIndicator(), fields))

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return self.not_configured('not configured')
        out = self.rate_statuses()
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
        return out + [self.timing_status()] + self.model_and_input_statuses()


main = node_main(ImpactIndicatorNode)


if __name__ == '__main__':
    main()
