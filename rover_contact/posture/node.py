"""posture_evaluator: anticipatory posture ranking before an impact (ROS 2 glue).

Subscribes  joint_states_topic, odom_topic, obstacle_topic, robot_description_topic (as impact_indicator),
            candidates_topic
            (contact_dynamics/PostureCandidateArray, optional: replaces the parameter grid).
Publishes   ~/posture_evaluation (contact_dynamics/PostureEvaluation; candidates best first) on a new
            obstacle hypothesis or while the time to contact < horizon_s; /diagnostics.
Services    ~/evaluate_postures (contact_dynamics/EvaluatePostures): evaluate the given candidates (empty: the
            grid) against the given obstacle; ~/reset; lifecycle services.
"""
from __future__ import annotations

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from contact_dynamics.msg import ObstacleHypothesis, PostureCandidateArray, PostureEvaluation
from contact_dynamics.srv import EvaluatePostures
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import ERROR, OK, WARN, EstimatorNode, RateMeter, output_qos, run, sensor_qos, status
from contact_dynamics_common.params import ConfigError
from contact_dynamics_common.rosfill import fill
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..inputs import model_from_urdf

from ..ros_io import push_joint_state_msg, push_obstacle_msg, push_odometry_msg
from .config import NODE_NAME, PARAMS
from .evaluate import Candidate
from .pipeline import PosturePipeline

LEVELS = {'ok': OK, 'warn': WARN, 'error': ERROR}


def candidates_from_msgs(msgs) -> list[Candidate]:
    out = []
    for c in msgs:
        if len(c.joint_names) != len(c.positions):
            raise ValueError(f"candidate '{c.label}': {len(c.joint_names)} joint names but {len(c.positions)} positions")
        out.append(Candidate(dict(zip(c.joint_names, map(float, c.positions))), float(c.approach_speed), c.label))
    return out


class PostureEvaluatorNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: PosturePipeline | None = None
        self.pub = None
        self.description_error = ''
        self.description_state = "waiting for robot_description (using the role map's URDF)"
        self.rates = {'joint_states': RateMeter(), 'odometry': RateMeter(), 'obstacle': RateMeter()}
        self.service_calls = 0
        self.service_errors = 0

    def configure(self) -> None:
        p = self.params
        self.pipeline = PosturePipeline(p)
        if self.pub is None:
            d = p['input_queue_size']
            self.create_subscription(JointState, p['joint_states_topic'], self._on_js, sensor_qos(d))
            self.create_subscription(Odometry, p['odom_topic'], self._on_odom, sensor_qos(d))
            self.create_subscription(ObstacleHypothesis, p['obstacle_topic'], self._on_obstacle, sensor_qos(10))
            self.create_subscription(PostureCandidateArray, p['candidates_topic'], self._on_candidates, 10)
            if p['robot_description_topic']:
                self.create_subscription(String, p['robot_description_topic'], self._on_description, QoSProfile(
                    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
            self.pub = self.create_lifecycle_publisher(PostureEvaluation, '~/posture_evaluation', output_qos())
            self.create_service(EvaluatePostures, '~/evaluate_postures', self._on_evaluate)
        self.get_logger().info(f"model '{self.pipeline.model.roles.model_name}', {len(self.pipeline.grid)} grid "
                               f"candidates, ground_mode {p['ground_mode']}")

    def _on_description(self, msg) -> None:
        try:
            model = model_from_urdf(self.params, msg.data)
        except ConfigError as exc:
            self.description_error = str(exc)
            self.get_logger().error(f'{exc}; keeping the previous model')
            return
        self.pipeline = PosturePipeline(self.params, model)
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

    def _on_candidates(self, msg) -> None:
        try:
            self.pipeline.candidates = candidates_from_msgs(msg.candidates) or None
        except ValueError as exc:
            self.get_logger().warning(f'candidates ignored: {exc}')

    def _on_evaluate(self, request, response):
        self.service_calls += 1
        o = request.obstacle
        try:
            if self.pipeline is None:
                raise ValueError('node not configured')
            n = o.face_normal_out
            hyp = self.pipeline.inputs.hypothesis(stamp_to_ns(o.header.stamp), o.header.frame_id, (n.x, n.y, n.z),
                                                  o.beta_rad, o.height_m, o.distance_m, list(o.contact_wheels),
                                                  o.step_edge, o.k, o.p, o.e_restitution, o.contact_model,
                                                  self.params['base_frame'])
            cands = candidates_from_msgs(request.candidates)
            fields = self.pipeline.evaluate(hyp, cands or None, self.get_clock().now().nanoseconds)
        except ValueError as exc:
            self.service_errors += 1
            response.success, response.message = False, str(exc)
            self.get_logger().warning(f'evaluate_postures refused: {exc}')
            return response
        fill(response.evaluation, fields)
        response.success = True
        best = fields['candidates'][0]['label'] if fields['best_index'] == 0 else 'none feasible'
        response.message = f"{len(fields['candidates'])} candidates, best: {best}"
        if self.active:
            self.pub.publish(response.evaluation)
        return response

    def update(self) -> None:
        fields = self.pipeline.step(self.get_clock().now().nanoseconds)
        if fields is not None:
            self.pub.publish(fill(PostureEvaluation(), fields))

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline = PosturePipeline(self.params, self.pipeline.model)  # keeps a robot_description model

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return [status(f'{name}: pipeline', WARN, 'not configured', {})]
        out = [status(f'{name}: input {k}', OK if m.count else WARN, 'ok' if m.count else 'no messages received',
                      {'rate_hz': m.rate(), 'received': m.count, 'age_s': m.age()}) for k, m in self.rates.items()]
        values = self.pipeline.status()
        values.update(self.cost.figures())
        values.update({'service_calls': self.service_calls, 'service_errors': self.service_errors})
        level, msg = LEVELS[self.pipeline.level], self.pipeline.last_status
        inp = self.pipeline.inputs
        if inp.last_error and level == OK:
            level, msg = WARN, f'{msg}; last input error: {inp.last_error}'
        out.append(status(f'{name}: evaluator', level, msg, values))
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
    raise SystemExit(run(lambda: PostureEvaluatorNode(), args))


if __name__ == '__main__':
    main()
