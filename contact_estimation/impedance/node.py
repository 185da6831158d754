"""impedance_profiler: the online position-varying impedance profiler node (ROS 2 glue only).

Subscribes  joint_states (sensor_msgs/JointState: position, and effort with force_source=effort), with
            force_source=wrench wrench (geometry_msgs/WrenchStamped), with acceleration_source=imu imu
            (sensor_msgs/Imu); sensor-data QoS.
Publishes   ~/profile (contact_dynamics/ImpedanceProfile) at publish_rate, /diagnostics.
Services    ~/reset (std_srvs/Trigger), ~/save (std_srvs/Trigger: the current profile to save_path as YAML)
            and the lifecycle services (autostart by default).
Callbacks only copy samples into the pipeline's ring buffers; the profile is updated on a timer, the samples
fitted in data-time blocks (pipeline.py), so what is published at a data stamp does not depend on the ticks.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import Imu, JointState
from std_srvs.srv import Trigger

from contact_dynamics.msg import ImpedanceProfile as ImpedanceProfileMsg
from contact_dynamics_common.messages.checks import joint_state_problem
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.node import OK, WARN, EstimatorNode, InputStats, node_main, output_qos, status
from contact_dynamics_common.ros.inputs import gate_account
from contact_dynamics_common.rosfill import fill

from .config import NODE_NAME, PARAMS
from .messages import publication
from .pipeline import ImpedancePipeline


class ImpedanceProfilerNode(EstimatorNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.pipeline: ImpedancePipeline | None = None
        self.rates = {'joint_states': InputStats(), 'wrench': InputStats(), 'imu': InputStats()}
        self.pub = None
        self.latest = None
        self._sample_us: deque = deque(maxlen=200)     # update cost per sample used (us), last 200 updates

    def configure(self) -> None:
        p = self.params
        self.pipeline = ImpedancePipeline(p)
        if self.pub is None:
            depth = p['input_queue_size']
            needs = ('position', 'effort') if p['force_source'] == 'effort' else ('position',)
            self.add_input(JointState, p['joint_states_topic'], self.rates['joint_states'],
                           self._on_joint_state, depth,
                           check=lambda m, j=[p['joint_name']]: joint_state_problem(m, j, needs))
            if p['force_source'] == 'wrench':
                self.add_input(WrenchStamped, p['wrench_topic'], self.rates['wrench'], self._on_wrench, depth)
            if p['acceleration_source'] == 'imu':
                self.add_input(Imu, p['imu_topic'], self.rates['imu'], self._on_imu, depth)
            self.pub = self.create_lifecycle_publisher(ImpedanceProfileMsg, '~/profile', output_qos())
            self.create_service(Trigger, '~/save', self._on_save)
        self.get_logger().info(
            f"profiling joint '{p['joint_name']}' over {len(self.pipeline.edges) - 1} segments "
            f"[{self.pipeline.edges[0]:g}, {self.pipeline.edges[-1]:g}], force from {p['force_source']}, "
            f"publishing at {p['publish_rate']:g} Hz")

    def _on_joint_state(self, msg: JointState) -> None:
        self.pipeline.push_joint_state(stamp_to_ns(msg.header.stamp), msg.name, msg.position, msg.effort)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.pipeline.push_wrench(stamp_to_ns(msg.header.stamp), f.x, f.y, f.z)
        if not self.pipeline.wrench_frame:
            self.pipeline.wrench_frame = msg.header.frame_id

    def _on_imu(self, msg: Imu) -> None:
        acc = msg.linear_acceleration
        self.pipeline.push_imu(stamp_to_ns(msg.header.stamp), acc.x, acc.y, acc.z)

    def update(self) -> None:
        t0 = time.perf_counter()
        pl = self.pipeline
        fresh = len(pl.joint_buffer) + len(pl.wrench_buffer) + len(pl.imu_buffer)
        # the incomplete last data-time block is fitted only when the input has ended (EstimatorNode.input_ended)
        flush = self.input_ended(fresh)
        n = pl.step(flush=flush)
        if n:
            self._sample_us.append((time.perf_counter() - t0) * 1e6 / n)
        self.log_error_once(self.pipeline.last_error)
        out = publication(self.pipeline, self.params)
        if out is None:
            return
        self.latest = out
        self.pub.publish(fill(ImpedanceProfileMsg(), out))

    def _on_save(self, request, response):
        import os
        from pathlib import Path

        from .store import save_profile
        if self.pipeline is None or not self.pipeline.counts['samples_used']:
            return self.respond(response, False, 'no profile yet: no sample has updated it')
        path = self.params['save_path'] or str(Path(os.environ.get('ROS_HOME', Path.home() / '.ros'))
                                               / 'impedance_profile.yaml')
        meta = {'joint_name': self.params['joint_name'], 'force_source': self.params['force_source'],
                'samples_used': self.pipeline.counts['samples_used']}
        return self.write_response(response, path, lambda p: save_profile(self.pipeline.profile(), p, meta),
                                   f'profile saved to {path}', log=True)

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            self.pipeline.reset()
        self.latest = None

    def diagnostics(self):
        name = self.get_name()
        if self.pipeline is None:
            return self.not_configured()
        counts = self.pipeline.status()
        out = []
        inputs = ['joint_states'] + (['wrench'] if self.params['force_source'] == 'wrench' else []) \
            + (['imu'] if self.params['acceleration_source'] == 'imu' else [])
        for inp in inputs:
            meter = self.rates[inp]
            key = 'joint' if inp == 'joint_states' else inp
            gate = {k: v for k, v in counts.items() if k.startswith(key + '.')}
            values = dict(gate)
            refused = self.refused(meter)
            before = {}
            if inp == 'joint_states':
                before = {k: counts.get(k, 0) for k in ('joint_missing', 'joint_state_empty',
                                                        'joint_state_malformed')}
                values.update({k: v + refused.get(k, 0) for k, v in before.items()})
            g, buf = {'joint_states': (self.pipeline.joint_gate, self.pipeline.joint_buffer),
                      'wrench': (self.pipeline.wrench_gate, self.pipeline.wrench_buffer),
                      'imu': (self.pipeline.imu_gate, self.pipeline.imu_buffer)}[inp]
            account, dropping = self.input_ledger(inp, meter, *gate_account(
                g, len(buf), overflow=buf.overflowed, reset=buf.discarded, **before))
            values.update(account)
            bad = sum(v for k, v in gate.items() if not k.endswith(('.accepted', '.overflowed')))
            bad += sum(refused.values())
            overflowed = gate.get(f'{key}.overflowed', 0)
            no_joint = inp == 'joint_states' and not counts.get('joint.accepted')
            out.append(self.input_status(inp, meter, values, timeout=self.params['sensor_timeout'] * 20,
                                         bad=bad + overflowed, bad_text=f'{bad} samples rejected, '
                                         f'{overflowed} overflowed',
                                         error=(self.pipeline.last_error or self.last_refusal(meter)) if no_joint
                                         else '', dropping=dropping))
        values = self.pipeline_values(counts)
        if self._sample_us:
            values['update_us_per_sample_p50'] = float(np.percentile(self._sample_us, 50))
            values['update_us_per_sample_p99'] = float(np.percentile(self._sample_us, 99))
        level = OK if self.active and not self.pipeline.last_error else WARN
        msg = self.pipeline.last_error or ('ok' if self.active else 'inactive: profile frozen')
        out.append(status(f'{name}: pipeline', level, msg, values))
        if self.latest is not None:
            f = self.latest
            nvalid = sum(f['valid_pos']) + sum(f['valid_neg'])
            sep = sum(f['mass_stiffness_separable_pos']) + sum(f['mass_stiffness_separable_neg'])
            prof = {'valid_bins': nvalid, 'bins': 2 * (len(f['edges']) - 1), 'separable_bins': sep,
                    'samples_used': f['samples_used']}
            out.append(status(f'{name}: profile', OK if f['valid'] else WARN, f['status'], prof))
        return out


main = node_main(ImpedanceProfilerNode)


if __name__ == '__main__':
    main()
