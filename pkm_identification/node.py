"""pkm_identifier: online UKF identification of a Stewart-Gough platform's inertia (and strut friction).

Subscribes  joint_states (sensor_msgs/JointState: position = strut length [m], velocity = L_dot [m/s],
            effort = actuator force [N]), sensor-data QoS.
Publishes   ~/parameters (contact_dynamics/ParameterEstimate), ~/platform_inertia (geometry_msgs/InertiaStamped),
            ~/predicted_effort (sensor_msgs/JointState, feed-forward F_a = Y theta), /diagnostics.
Services    ~/reset (std_srvs/Trigger: back to the prior), ~/freeze (std_srvs/SetBool: stop updating, keep
            predicting), ~/set_active_set (contact_dynamics/PkmSetActiveSet: staged estimation), ~/save
            (std_srvs/Trigger: estimate to the YAML file save_path); the lifecycle services.
Callbacks only copy samples into the pipeline's ring buffer; identification runs on a timer at publish_rate.
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
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import ERROR, OK, WARN, EstimatorNode, RateMeter, output_qos, run, sensor_qos, status
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
        self.rate = RateMeter()
        self.pubs: dict = {}
        self.latest: PkmEstimate | None = None
        self._reported_error = ''

    def configure(self) -> None:
        p = self.params
        self.pipeline = PkmPipeline(p)
        if not self.pubs:
            self.create_subscription(JointState, p['joint_states_topic'], self._on_joint_state,
                                     sensor_qos(p['input_queue_size']))
            self.pubs = {t: self.create_lifecycle_publisher(ty, t, output_qos()) for t, ty in TYPES.items()}
            self.create_service(SetBool, '~/freeze', self._on_freeze)
            self.create_service(PkmSetActiveSet, '~/set_active_set', self._on_set_active)
            self.create_service(Trigger, '~/save', self._on_save)
        self.get_logger().info(
            f"identifying {len(self.pipeline.names)} parameters of '{p['machine']}' from "
            f"{self.resolve_topic_name(p['joint_states_topic'])} at {p['publish_rate']:g} Hz")

    def _on_joint_state(self, msg: JointState) -> None:
        if not self.active:
            return
        self.rate.tick()
        self.pipeline.push_joint_state(stamp_to_ns(msg.header.stamp), msg.name, msg.position, msg.velocity,
                                       msg.effort)

    def update(self) -> None:
        est = self.pipeline.step()
        if est is not None:
            self.latest = est
        if self.pipeline.last_error and self.pipeline.last_error != self._reported_error:
            self._reported_error = self.pipeline.last_error
            self.get_logger().error(self.pipeline.last_error)
        for topic, _, fields in publications(est, self.params):
            self.pubs[topic].publish(fill(TYPES[topic](), fields))

    # --- services ---
    def _on_freeze(self, request, response):
        if self.pipeline is None:
            response.success, response.message = False, 'not configured'
            return response
        self.pipeline.frozen = bool(request.data)
        response.success = True
        response.message = 'frozen: predicting only' if request.data else 'updating'
        self.get_logger().info(f'~/freeze: {response.message}')
        return response

    def _on_set_active(self, request, response):
        if self.pipeline is None:
            response.success, response.message = False, 'not configured'
            return response
        try:
            active = self.pipeline.set_active(request.preset if request.preset else list(request.names))
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.active = True, active
        response.message = f"updating {', '.join(active)}"
        self.get_logger().info(f'~/set_active_set: {response.message}')
        return response

    def _on_save(self, request, response):
        if self.pipeline is None or self.latest is None:
            response.success, response.message = False, 'no estimate yet'
            return response
        path = self.params['save_path']
        try:
            with open(path, 'w', encoding='utf-8') as f:
                yaml.safe_dump(estimate_yaml(self.latest, self.params, self.pipeline.machine.theta12()), f,
                               sort_keys=False)
        except OSError as exc:
            response.success, response.message = False, f'cannot write {path}: {exc}'
            return response
        response.success, response.message = True, f'estimate written to {path}'
        return response

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline.reset()
        self.latest = None

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return [status(f'{name}: pipeline', WARN, 'not configured (lifecycle state unconfigured)', {})]
        counts = self.pipeline.status()
        age = self.rate.age()
        rejected = sum(v for k, v in counts.items() if k.startswith('joint_states.') and not k.endswith('accepted'))
        rejected += counts['rejected_kinematics'] + counts['joint_missing'] + counts['joint_state_malformed']
        values = {'rate_hz': self.rate.rate(), 'received': self.rate.count, 'age_s': age, **counts,
                  'rejected_total': rejected}
        if self.pipeline.last_error and not counts.get('joint_states.accepted'):
            level, msg = ERROR, self.pipeline.last_error
        elif self.rate.count == 0:
            level, msg = WARN, 'no messages received'
        elif age > self.params['sensor_timeout']:
            level, msg = WARN, f'stale: no message for {age:.2f} s'
        elif rejected:
            level, msg = WARN, f'{rejected} samples rejected (see counts)'
        else:
            level, msg = OK, 'ok'
        out = [status(f'{name}: input joint_states', level, msg, values)]
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


def main(args=None) -> None:
    raise SystemExit(run(lambda: PkmIdentifierNode(), args))


if __name__ == '__main__':
    main()
