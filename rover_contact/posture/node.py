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
Bridge      with command_enabled (or ~/enable_command, std_srvs/SetBool): the feasible best candidate as a
            trajectory_msgs/JointTrajectory on command_topic (posture.command: minimum-jerk, within
            command_speed_scale x the URDF velocity limits, not re-sent while executing the same choice)
            and its v_max as std_msgs/Float64 on speed_limit_topic.
"""
from __future__ import annotations

import math

from builtin_interfaces.msg import Duration
from std_msgs.msg import Float64
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from contact_dynamics.msg import PostureCandidateArray, PostureEvaluation
from contact_dynamics.srv import EvaluatePostures
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import OK, WARN, node_main, output_qos, status
from contact_dynamics_common.rosfill import fill

from ..node_base import LEVELS, RoverNode
from .config import NODE_NAME, PARAMS
from .command import PostureCommander, posture_trajectory, velocity_limits
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
        self.commander = PostureCommander()
        self.cmd_pub = None

    def configure(self) -> None:
        p = self.params
        self.pipeline = PosturePipeline(p)
        if self.pub is None:
            self.subscribe_rover_inputs()
            self.create_subscription(PostureCandidateArray, p['candidates_topic'], self._on_candidates, 10)
            self.pub = self.create_lifecycle_publisher(PostureEvaluation, '~/posture_evaluation', output_qos())
            self.create_service(EvaluatePostures, '~/evaluate_postures', self._on_evaluate)
            self.cmd_pub = self.create_lifecycle_publisher(JointTrajectory, p['command_topic'], output_qos())
            self.speed_pub = self.create_lifecycle_publisher(Float64, p['speed_limit_topic'], output_qos())
            self.create_service(SetBool, '~/enable_command', self._on_enable_command)
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
            self._command(fields)
        return response

    def _on_enable_command(self, request, response):
        self.params['command_enabled'] = bool(request.data)
        word = 'enabled' if request.data else 'disabled'
        self.get_logger().info(f'posture command {word} by ~/enable_command')
        return self.respond(response, True, f'posture command {word}')

    def _command(self, fields: dict) -> None:
        """The bridge: the feasible best candidate as a JointTrajectory and its v_max as a speed limit."""
        p, cmd = self.params, self.commander
        cmd.enabled = p['command_enabled']
        best_i = fields['best_index']
        cand = fields['candidates'][best_i] if best_i >= 0 else None
        best = dict(zip(cand['joint_names'], map(float, cand['positions']))) if cand is not None else None
        current = self.pipeline.current_joints()
        now = self.now_s()
        if not cmd.decide(best, current, now):
            return
        v_max = float(fields['v_max'][best_i])
        if math.isfinite(v_max):
            self.speed_pub.publish(Float64(data=v_max))
        if not best:
            return
        missing = [j for j in best if j not in current]
        if missing:                         # the move starts where the joints are, never from a guess
            cmd.refuse('no_state', f'no JointState position for {missing}')
            return
        try:
            limits = velocity_limits(self.pipeline.model, list(best))
        except ValueError as exc:
            cmd.refuse('infeasible', str(exc))
            return
        tr = posture_trajectory(current, best, limits, p['command_speed_scale'], p['command_min_duration_s'],
                                p['command_points'])
        msg = JointTrajectory(joint_names=tr.joint_names)
        for t, q, v, a in zip(tr.times, tr.positions, tr.velocities, tr.accelerations):
            sec, nanosec = divmod(int(round(t * 1e9)), 1_000_000_000)
            msg.points.append(JointTrajectoryPoint(
                positions=[float(x) for x in q], velocities=[float(x) for x in v],
                accelerations=[float(x) for x in a], time_from_start=Duration(sec=sec, nanosec=nanosec)))
        self.cmd_pub.publish(msg)
        cmd.sent(best, cand['label'], now, tr.duration)

    def work(self) -> None:
        self.drain_inputs()
        fields = self.pipeline.step(self.get_clock().now().nanoseconds)
        if fields is not None:
            self.pub.publish(fill(PostureEvaluation(), fields))
            self._command(fields)

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return self.not_configured('not configured')
        out = self.rate_statuses()
        values = self.pipeline.status()
        values.update(self.cost.figures())
        values.update({'service_calls': self.service_calls, 'service_errors': self.service_errors})
        values.update({f'command.{k}': v for k, v in self.commander.counts.items()})
        values['command'] = ('enabled: ' if self.params['command_enabled'] else 'disabled: ') + \
            self.commander.last_reason
        level, msg = LEVELS[self.pipeline.level], self.pipeline.last_status
        inp = self.pipeline.inputs
        if inp.last_error and level == OK:
            level, msg = WARN, f'{msg}; last input error: {inp.last_error}'
        out.append(status(f'{name}: evaluator', level, msg, values))
        return out + [self.timing_status()] + self.model_and_input_statuses()


main = node_main(PostureEvaluatorNode)


if __name__ == '__main__':
    main()
