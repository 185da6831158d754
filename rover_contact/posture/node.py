"""posture_evaluator: anticipatory posture ranking before an impact (ROS 2 glue).

Subscribes  joint_states_topic, odom_topic, obstacle_topic, robot_description_topic (as impact_indicator),
            candidates_topic
            (contact_dynamics/PostureCandidateArray, optional: replaces the parameter grid).
Publishes   ~/posture_evaluation (contact_dynamics/PostureEvaluation; candidates best first, stamped with data
            time) on a new obstacle hypothesis or while the time to contact < horizon_s, the candidates spread over
            ticks (candidates_per_update); /diagnostics (evaluator, timing: WARN when an update overruns the
            period, inputs ledger).
Services    ~/evaluate_postures (contact_dynamics/EvaluatePostures): evaluate the given candidates (empty: the
            grid) against the given obstacle; ~/reset; lifecycle services.
"""
from __future__ import annotations

from contact_dynamics.msg import PostureCandidateArray, PostureEvaluation
from contact_dynamics.srv import EvaluatePostures
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import OK, WARN, node_main, output_qos, status
from contact_dynamics_common.rosfill import fill

from ..node_base import LEVELS, RoverNode
from .config import NODE_NAME, PARAMS
from .evaluate import Candidate
from .pipeline import PosturePipeline


def candidates_from_msgs(msgs) -> list[Candidate]:
    out = []
    for c in msgs:
        if len(c.joint_names) != len(c.positions):
            raise ValueError(f"candidate '{c.label}': {len(c.joint_names)} joint names but {len(c.positions)} positions")
        out.append(Candidate(dict(zip(c.joint_names, map(float, c.positions))), float(c.approach_speed), c.label))
    return out


class PostureEvaluatorNode(RoverNode):
    pipeline_class = PosturePipeline

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: PosturePipeline | None = None
        self.service_calls = 0
        self.service_errors = 0

    def configure(self) -> None:
        p = self.params
        self.pipeline = PosturePipeline(p)
        if self.pub is None:
            self.subscribe_rover_inputs()
            self.create_subscription(PostureCandidateArray, p['candidates_topic'], self._on_candidates, 10)
            self.pub = self.create_lifecycle_publisher(PostureEvaluation, '~/posture_evaluation', output_qos())
            self.create_service(EvaluatePostures, '~/evaluate_postures', self._on_evaluate)
        self.get_logger().info(f"model '{self.pipeline.model.roles.model_name}', {len(self.pipeline.grid)} grid "
                               f"candidates, ground_mode {p['ground_mode']}")

    def _on_candidates(self, msg) -> None:
        try:
            self.pipeline.candidates = candidates_from_msgs(msg.candidates) or None
        except ValueError as exc:
            self.log_limited(self.get_logger(), 'warning', 'candidates', f'candidates ignored: {exc}')

    def _on_evaluate(self, request, response):
        self.service_calls += 1
        o = request.obstacle
        try:
            if self.pipeline is None:
                raise ValueError('node not configured')
            self.drain_inputs()                  # the hypothesis uses the latest odometry orientation
            n = o.face_normal_out
            hyp = self.pipeline.inputs.hypothesis(stamp_to_ns(o.header.stamp), o.header.frame_id, (n.x, n.y, n.z),
                                                  o.beta_rad, o.height_m, o.distance_m, list(o.contact_wheels),
                                                  o.step_edge, o.k, o.p, o.e_restitution, o.contact_model,
                                                  self.params['base_frame'])
            cands = candidates_from_msgs(request.candidates)
            fields = self.pipeline.evaluate(hyp, cands or None)
        except ValueError as exc:
            self.service_errors += 1
            response.success, response.message = False, str(exc)
            self.log_limited(self.get_logger(), 'warning', 'evaluate_postures', f'evaluate_postures refused: {exc}')
            return response
        fill(response.evaluation, fields)
        response.success = True
        best = fields['candidates'][0]['label'] if fields['best_index'] == 0 else 'none feasible'
        response.message = f"{len(fields['candidates'])} candidates, best: {best}"
        if self.active:
            self.pub.publish(response.evaluation)
        return response

    def work(self) -> None:
        self.drain_inputs()
        fields = self.pipeline.step(self.get_clock().now().nanoseconds)
        if fields is not None:
            self.pub.publish(fill(PostureEvaluation(), fields))

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return self.not_configured('not configured')
        out = self.rate_statuses()
        values = self.pipeline.status()
        values.update(self.cost.figures())
        values.update({'service_calls': self.service_calls, 'service_errors': self.service_errors})
        level, msg = LEVELS[self.pipeline.level], self.pipeline.last_status
        inp = self.pipeline.inputs
        if inp.last_error and level == OK:
            level, msg = WARN, f'{msg}; last input error: {inp.last_error}'
        out.append(status(f'{name}: evaluator', level, msg, values))
        return out + [self.timing_status()] + self.model_and_input_statuses()


main = node_main(PostureEvaluatorNode)


if __name__ == '__main__':
    main()
