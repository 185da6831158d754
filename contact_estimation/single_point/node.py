"""contact_estimator: the online single-point contact estimator node (ROS 2 glue only).

Subscribes  wrench (geometry_msgs/WrenchStamped) and joint_states (sensor_msgs/JointState) or pose
            (geometry_msgs/PoseStamped), sensor-data QoS.
Publishes   ~/estimate (primary algorithm) and ~/<algorithm>/estimate (contact_dynamics/ContactEstimate),
            /diagnostics (diagnostic_msgs/DiagnosticArray).
Services    ~/reset (std_srvs/Trigger), ~/tare (std_srvs/Trigger: force bias from the latest unloaded
            wrench samples); the lifecycle services (~/change_state, ~/get_state, ...): a managed
            node that configures and activates itself unless autostart is false.
Callbacks only copy samples into the pipeline's ring buffers; estimation runs on a timer at publish_rate and
processes at most max_samples_per_update samples of each input per update (bounded cost; the rest waits in
the ring buffer). Every input sample is accounted for in /diagnostics: received = accepted + pending +
dropped by cause (overflow, stamp gate, ...), with a WARN when the node does not keep up.
"""
from __future__ import annotations

from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from contact_dynamics.msg import ContactEstimate as ContactEstimateMsg
from contact_dynamics_common.messages.checks import joint_state_problem
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import OK, WARN, EstimatorNode, InputStats, node_main, output_qos, status
from contact_dynamics_common.rosfill import fill

from .config import NODE_NAME, PARAMS
from .contact_kind import contact_units, effort_row
from .messages import publications
from .pipeline import ContactPipeline


class ContactEstimatorNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: ContactPipeline | None = None
        self.rates = {'wrench': InputStats(), 'displacement': InputStats()}
        self.deferred_updates = 0          # updates that left samples for the next one (max_samples_per_update)
        self.pubs: dict = {}
        self.latest = []

    def configure(self) -> None:
        """Pipeline (estimators), subscriptions and lifecycle publishers; ConfigError on a bad combination."""
        p = self.params
        self.pipeline = ContactPipeline(p)
        if not self.pubs:
            depth = p['input_queue_size']
            if p['force_source'] == 'joint_effort':         # the efforts arrive with the positions
                self.rates['wrench'] = self.rates['displacement']
            else:
                self.add_input(WrenchStamped, p['wrench_topic'], self.rates['wrench'], self._on_wrench, depth)
            if p['displacement_source'] == 'joint_state':
                self.add_input(JointState, p['joint_states_topic'], self.rates['displacement'],
                               self._on_joint_state, depth,
                               check=lambda m, j=[p['joint_name']]: joint_state_problem(m, j))
            else:
                # the position only is used: the orientation is not judged (a position-only source may leave it 0)
                self.add_input(PoseStamped, p['pose_topic'], self.rates['displacement'], self._on_pose, depth)
            topics = ['~/estimate'] + [f'~/{a}/estimate' for a in p['algorithms']]
            self.pubs = {t: self.create_lifecycle_publisher(ContactEstimateMsg, t, output_qos()) for t in topics}
            self.create_service(Trigger, '~/tare', self._on_tare)
        force = ('joint effort' if p['force_source'] == 'joint_effort'
                 else self.resolve_topic_name(p['wrench_topic']))
        self.get_logger().info(
            f"estimating {p['model']} ({p['contact_type']}, k in {contact_units(p)['stiffness']}) with "
            f"{', '.join(p['algorithms'])} from {force} and {p['displacement_source']} at "
            f"{p['publish_rate']:g} Hz")

    # --- callbacks (add_input: only while active, counted): copy only ---
    def _on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.torque if self.params['force_source'] == 'wrench_torque' else msg.wrench.force
        self.pipeline.push_wrench(stamp_to_ns(msg.header.stamp), f.x, f.y, f.z)
        if not self.pipeline.wrench_frame:
            self.pipeline.wrench_frame = msg.header.frame_id

    def _on_joint_state(self, msg: JointState) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        self.pipeline.push_joint_state(stamp, msg.name, msg.position)
        if self.params['force_source'] == 'joint_effort':
            row = effort_row(msg.name, msg.position, msg.effort, self.params['joint_name'])
            if row is not None:                  # an absent joint / position is counted by the position push
                self.pipeline.push_wrench(stamp, *row)

    def _on_pose(self, msg: PoseStamped) -> None:
        q = msg.pose.position
        self.pipeline.push_pose(stamp_to_ns(msg.header.stamp), q.x, q.y, q.z)

    # --- timer ---
    def update(self) -> None:
        estimates = self.pipeline.step(self.params['max_samples_per_update'])
        if self.pipeline.backlog:
            self.deferred_updates += 1
        self.latest = estimates
        self.log_error_once(self.pipeline.last_error)
        msgs = {}
        for topic, fields in publications(self.pipeline, estimates, self.params):
            key = id(fields)
            if key not in msgs:
                msgs[key] = fill(ContactEstimateMsg(), fields)
            self.pubs[topic].publish(msgs[key])

    def _on_tare(self, request, response):
        try:
            bias = self.pipeline.tare()
        except ValueError as exc:
            self.get_logger().warning(f'tare refused: {exc}')
            return self.respond(response, False, f'tare refused: {exc}')
        unit = contact_units(self.params)['force']
        self.respond(response, True, 'force bias [{:.4g}, {:.4g}, {:.4g}] {}'.format(*bias, unit))
        self.get_logger().info(f'tare: {response.message}')
        return response

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline.reset()
        self.latest = []

    def diagnostics(self):
        if self.pipeline is None:
            return self.not_configured()
        timeout = self.params['sensor_timeout']
        counts = self.pipeline.status()
        ledger = self.pipeline.ledger()
        out = []
        joint_causes = ('joint_missing', 'joint_state_empty', 'joint_state_malformed')
        for name, meter in self.rates.items():
            rejected = {k: v for k, v in counts.items() if k.startswith(name + '.')}
            dropped = ledger[name]['dropped']
            if name == 'wrench' and self.params['force_source'] == 'joint_effort':   # the JointState's causes
                dropped = {**dropped, **{k: counts.get(k, 0) for k in joint_causes}}
            account, dropping = self.input_ledger(name, meter, ledger[name]['accepted'],
                                                  ledger[name]['pending'], dropped)
            values = {**rejected, **account}
            if name == 'displacement':
                refused = self.refused(meter)
                values.update({k: counts.get(k, 0) + refused.get(k, 0) for k in (
                    'joint_missing', 'joint_state_empty', 'joint_state_malformed')})
            no_data = name == 'displacement' and not counts.get('displacement.accepted')
            bad = sum(v for k, v in rejected.items() if not k.endswith('.accepted'))
            bad += sum(self.refused(meter).values())
            out.append(self.input_status(name, meter, values, timeout=timeout, dropping=dropping, bad=bad,
                                         error=(self.pipeline.last_error or self.last_refusal(meter)) if no_data
                                         else ''))
        pipeline_values = self.pipeline_values(counts)
        pipeline_values.update({'backlog': self.pipeline.backlog, 'deferred_updates': self.deferred_updates,
                                'max_samples_per_update': self.params['max_samples_per_update'],
                                'wrench_buffer_high_water': self.pipeline.wrench_buffer.high_water,
                                'displacement_buffer_high_water': self.pipeline.disp_buffer.high_water})
        level, msg = (OK, 'ok') if self.active else (WARN, 'inactive: estimate frozen')
        if self.active and self.pipeline.backlog > self.params['max_samples_per_update']:
            level, msg = WARN, (f'behind: {self.pipeline.backlog} samples pending, at most '
                                f"{self.params['max_samples_per_update']} per input and update")
        elif self.active and self.pipeline.rate_change is not None:
            old_hz, new_hz = self.pipeline.rate_change
            level, msg = WARN, (f'input sample rate changed from {old_hz:.6g} Hz to {new_hz:.6g} Hz '
                                f"without a reset ({counts['rate_changes']} change(s)): differentiator "
                                'window re-sized')
        out.append(status(f'{self.get_name()}: pipeline', level, msg, pipeline_values))
        for est in self.latest:
            values = {'valid': est.valid, 'samples_used': est.samples_used, 'residual_rms': est.residual_rms,
                      'condition_number': est.condition_number,
                      'covariance_trace': float(est.covariance.trace())}
            for i, n in enumerate(est.names):
                values[n] = float(est.values[i])
                values[f'{n}_std'] = est.std(n)
                values[f'{n}_excitation'] = float(est.excitation[i])
            out.append(status(f'{self.get_name()}: {est.algorithm}', OK if est.valid else WARN, est.reason, values))
        return out


main = node_main(ContactEstimatorNode)


if __name__ == '__main__':
    main()
