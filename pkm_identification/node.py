"""pkm_identifier: online UKF identification of a Stewart-Gough platform's inertia (and strut friction).

Subscribes  joint_states (sensor_msgs/JointState: position = strut length [m], velocity = L_dot [m/s],
            effort = actuator force [N]), sensor-data QoS.
Publishes   ~/parameters (contact_dynamics/ParameterEstimate), ~/platform_inertia (geometry_msgs/InertiaStamped),
            ~/predicted_effort (sensor_msgs/JointState, feed-forward F_a = Y theta), /diagnostics.
Services    ~/reset (std_srvs/Trigger: back to the prior), ~/freeze (std_srvs/SetBool: stop updating, keep
            predicting), ~/set_active_set (contact_dynamics/PkmSetActiveSet: staged estimation), ~/save
            (std_srvs/Trigger: estimate to the YAML file save_path); the lifecycle services.
Callbacks only copy samples into the pipeline's ring buffer; identification runs on a timer at publish_rate, in
fixed blocks of update_block samples, and every block's estimate is published (stamped with its last sample).
"""
from __future__ import annotations

import datetime

import numpy as np
import yaml
from geometry_msgs.msg import InertiaStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger

from contact_dynamics.msg import ParameterEstimate
from contact_dynamics.srv import PkmSetActiveSet
from contact_dynamics_common.messages.checks import joint_state_problem
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import OK, WARN, EstimatorNode, InputStats, node_main, output_qos, status
from contact_dynamics_common.ros.inputs import gate_account
from contact_dynamics_common.rosfill import fill

from .config import NODE_NAME, PARAMS
from .identifiability import twelve_parameter_form
from .messages import publications
from .pipeline import MODEL, PkmEstimate, PkmPipeline

TYPES = {'~/parameters': ParameterEstimate, '~/platform_inertia': InertiaStamped, '~/predicted_effort': JointState}


def estimate_yaml(est: PkmEstimate, params: dict, cad12=None) -> dict:
    """The estimate as a plain mapping (for ~/save), with the 12-parameter form when ``cad12`` is given."""
    extra = {}
    if cad12 is not None:
        extra['twelve_parameter_form'] = twelve_parameter_form(cad12, est.names, est.values, est.flags)
    return {'model': MODEL, 'machine': params['machine'], 'frame_id': params['frame_id'],
            'stamp_ns': int(est.stamp_ns), 'samples_used': int(est.samples_used),
            'saved_utc': datetime.datetime.now(datetime.timezone.utc).isoformat(),
            'valid': bool(est.valid), 'status': est.status, 'warnings': list(est.warnings),
            'parameters': {n: {'value': float(v), 'std': float(s), 'unit': u, 'flag': f}
                           for n, v, s, u, f in zip(est.names, est.values, est.std, est.units, est.flags)},
            'names': list(est.names), 'covariance': np.asarray(est.covariance).tolist(), **extra}


class PkmIdentifierNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: PkmPipeline | None = None
        self.rate = InputStats()
        self.pubs: dict = {}
        self.latest: PkmEstimate | None = None

    def configure(self) -> None:
        p = self.params
        self.pipeline = PkmPipeline(p)
        if not self.pubs:
            self.add_input(JointState, p['joint_states_topic'], self.rate, self._on_joint_state,
                           p['input_queue_size'], check=lambda m, j=list(p['joint_names']): joint_state_problem(
                               m, j, ('position', 'effort')))
            self.pubs = {t: self.create_lifecycle_publisher(ty, t, output_qos()) for t, ty in TYPES.items()}
            self.create_service(SetBool, '~/freeze', self._on_freeze)
            self.create_service(PkmSetActiveSet, '~/set_active_set', self._on_set_active)
            self.create_service(Trigger, '~/save', self._on_save)
        self.get_logger().info(
            f"identifying {len(self.pipeline.names)} parameters of '{p['machine']}' from "
            f"{self.resolve_topic_name(p['joint_states_topic'])} at {p['publish_rate']:g} Hz")

    def _on_joint_state(self, msg: JointState) -> None:
        self.pipeline.push_joint_state(stamp_to_ns(msg.header.stamp), msg.name, msg.position, msg.velocity,
                                       msg.effort)

    def update(self) -> None:
        estimates = self.pipeline.step_blocks()      # one per completed block: the same stamps as run-bag
        if estimates:
            self.latest = estimates[-1]
        self.log_error_once(self.pipeline.last_error)
        for est in estimates:
            for topic, _, fields in publications(est, self.params):
                self.pubs[topic].publish(fill(TYPES[topic](), fields))

    # --- services ---
    def _on_freeze(self, request, response):
        if self.pipeline is None:
            return self.respond(response, False, 'not configured')
        self.pipeline.frozen = bool(request.data)
        self.respond(response, True, 'frozen: predicting only' if request.data else 'updating')
        self.get_logger().info(f'~/freeze: {response.message}')
        return response

    def _on_set_active(self, request, response):
        if self.pipeline is None:
            return self.respond(response, False, 'not configured')
        try:
            active = self.pipeline.set_active(request.preset if request.preset else list(request.names))
        except ValueError as exc:
            return self.respond(response, False, str(exc))
        self.respond(response, True, f"updating {', '.join(active)}")
        response.active = active
        self.get_logger().info(f'~/set_active_set: {response.message}')
        return response

    def _on_save(self, request, response):
        if self.pipeline is None or self.latest is None:
            return self.respond(response, False, 'no estimate yet')
        path = self.params['save_path']

        def write(path: str) -> None:
            with open(path, 'w', encoding='utf-8') as f:
                yaml.safe_dump(estimate_yaml(self.latest, self.params, self.pipeline.machine.theta12()), f,
                               sort_keys=False)
        return self.write_response(response, path, write, f'estimate written to {path}')

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline.reset()
        self.latest = None

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return self.not_configured()
        counts = self.pipeline.status()
        rejected = sum(v for k, v in counts.items() if k.startswith('joint_states.') and not k.endswith('accepted'))
        rejected += counts['rejected_kinematics'] + counts['joint_missing'] + counts['joint_state_malformed']
        refused = self.refused(self.rate)
        rejected += sum(refused.values())
        for k in ('joint_missing', 'joint_state_malformed'):
            counts[k] += refused.get(k, 0)
        error = (self.pipeline.last_error or self.last_refusal(self.rate)) \
            if not counts.get('joint_states.accepted') else ''
        buf, pl = self.pipeline.buffer, self.pipeline
        account, dropping = self.input_ledger('joint_states', self.rate, *gate_account(
            pl.gate, len(buf), overflow=buf.overflowed, reset=buf.discarded,
            **{k: pl.counts[k] for k in ('joint_missing', 'joint_state_malformed')}))
        out = [self.input_status('joint_states', self.rate, {**counts, 'rejected_total': rejected, **account},
                                 timeout=self.params['sensor_timeout'], bad=rejected, error=error,
                                 dropping=dropping)]
        est = self.latest
        pv = {**self.cost.figures(), 'updates': self.updates}
        if est is None:
            out.append(status(f'{name}: estimate', WARN, 'no estimate yet', pv))
            return out
        pv.update({'valid': est.valid, 'samples_used': est.samples_used, 'nis_mean': est.nis_mean,
                   'residual_rms': est.residual_rms, 'condition_number': est.condition_number,
                   'frozen': est.frozen, 'active': ','.join(est.active)})
        for n, v, s, f in zip(est.names, est.values, est.std, est.flags):
            pv[n] = float(v)
            pv[f'{n}_std'] = float(s)
            pv[f'{n}_flag'] = f
        level = OK if est.valid else WARN
        out.append(status(f'{name}: estimate', level, est.status, pv))
        return out


main = node_main(PkmIdentifierNode)


if __name__ == '__main__':
    main()
