"""pkm_feedforward: Y(q, qd, qdd) theta of the identified hexapod along a desired strut trajectory (ROS glue).

Subscribes  trajectory_topic (trajectory_msgs/JointTrajectory, the six strut lengths; header.stamp 0: start
            at receipt, as joint_trajectory_controller does), parameters_topic (contact_dynamics/
            ParameterEstimate of pkm_identifier); both reliable.
Publishes   command_topic (std_msgs/Float64MultiArray, six forces N in joint_names order) and sigma_topic (the
            1-sigma of each) at publish_rate while a trajectory executes, then the final point's forces once;
            /diagnostics ('<node>: feedforward': which parameters are identified and which configured).
Services    ~/reset, lifecycle.
The model is pkm_identification.dynamics' regressor (feedforward.model); a trajectory without the six struts,
with non-increasing times or non-finite numbers is refused with a one-line reason (counted).
"""
from __future__ import annotations

import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory

from contact_dynamics.msg import ParameterEstimate
from contact_dynamics_common.messages.convert import stamp_to_ns
from contact_dynamics_common.ros.node import OK, WARN, EstimatorNode, node_main, output_qos, status

from .. import dynamics as D
from ..geometry import load_machine
from .config import NODE_NAME, PARAMS
from .model import TrajectorySampler, feedforward, parameters_for, pose_rates


def configured_values(machine, p: dict) -> dict:
    """{name: value} of the configured parameters (theta_configured, 0 -> CAD x prior_scale; friction)."""
    cad = D.base_from_12(machine.theta12()) * p['prior_scale']
    base = np.where(np.asarray(p['theta_configured']) > 0, p['theta_configured'], cad)
    return {**dict(zip(D.BASE_NAMES, map(float, base))),
            **dict(zip(D.FRICTION_NAMES, map(float, p['friction_configured'])))}


class PkmFeedForwardNode(EstimatorNode):

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.machine = None
        self.cmd_pub = None

    def configure(self) -> None:
        p = self.params
        self.machine = load_machine(p['machine'])
        self.configured = configured_values(self.machine, p)
        self.params_ff = parameters_for(self.configured, p['configured_rel_std'])
        self.reset_estimation()
        if self.cmd_pub is None:
            qos = output_qos()
            self.create_subscription(JointTrajectory, p['trajectory_topic'], self._on_trajectory, qos)
            self.create_subscription(ParameterEstimate, p['parameters_topic'], self._on_parameters, qos)
            self.cmd_pub = self.create_lifecycle_publisher(Float64MultiArray, p['command_topic'], qos)
            self.sigma_pub = self.create_lifecycle_publisher(Float64MultiArray, p['sigma_topic'], qos)

    def reset_estimation(self) -> None:
        self.sampler = None
        self.start_ns = 0
        self.done = True
        self.q_last = None
        self.counts = {'trajectories': 0, 'refused': 0, 'commands': 0, 'estimates': 0}
        self.last_refusal = ''
        self.sigma_max = float('nan')

    # ------------------------------------------------------------------ inputs
    def _on_parameters(self, msg: ParameterEstimate) -> None:
        if not self.active:
            return
        est = {'names': list(msg.names), 'values': list(msg.values), 'covariance': list(msg.covariance),
               'flags': list(msg.flags), 'valid': msg.valid}
        missing = [n for n in est['names'] if n not in self.configured]
        if missing:
            self._refuse(f'estimate has unknown parameters {missing[:3]}')
            return
        self.params_ff = parameters_for(self.configured, self.params['configured_rel_std'], est)
        self.counts['estimates'] += 1

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not self.active:
            return
        names = list(msg.joint_names)
        want = self.params['joint_names']
        if sorted(names) != sorted(want) or len(names) != 6:
            self._refuse(f'trajectory joints {names[:7]} are not the six struts {want}')
            return
        order = [names.index(n) for n in want]
        pts = msg.points
        try:
            t = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in pts]
            pos = [[p.positions[i] for i in order] for p in pts]
            vel = ([[p.velocities[i] for i in order] for p in pts]
                   if all(len(p.velocities) == 6 for p in pts) else None)
            acc = [[p.accelerations[i] for i in order] for p in pts] \
                if vel is not None and all(len(p.accelerations) == 6 for p in pts) else None
            self.sampler = TrajectorySampler(t, pos, vel, acc)
        except (IndexError, ValueError) as exc:
            self._refuse(f'trajectory refused: {exc}'.splitlines()[0][:200])
            return
        stamp = stamp_to_ns(msg.header.stamp)
        self.start_ns = stamp if stamp > 0 else self.get_clock().now().nanoseconds
        self.done = False
        self.counts['trajectories'] += 1

    def _refuse(self, reason: str) -> None:
        self.counts['refused'] += 1
        self.last_refusal = reason
        self.log_error_once(reason)

    # ------------------------------------------------------------------ output
    def update(self) -> None:
        if self.sampler is None or self.done:
            return
        t = (self.get_clock().now().nanoseconds - self.start_ns) * 1e-9
        if t < 0:
            return
        if t >= self.sampler.duration:
            t, self.done = self.sampler.duration, True
        L, Ld, Ldd = self.sampler(t)
        if self.done:
            Ld, Ldd = np.zeros_like(Ld), np.zeros_like(Ldd)            # held at the last point
        q, qd, qdd, ok = pose_rates(self.machine, L, Ld, Ldd, q0=self.q_last)
        if not ok[0]:
            self._refuse(f'no forward kinematics for the desired lengths at t = {t:.3f} s')
            self.done = True
            return
        self.q_last = q[0]
        F, sigma = feedforward(self.machine, self.params_ff, q, qd, qdd, self.params['friction_model'])
        self.cmd_pub.publish(self._array(F[0]))
        self.sigma_pub.publish(self._array(sigma[0]))
        self.sigma_max = float(sigma[0].max())
        self.counts['commands'] += 1

    def _array(self, values) -> Float64MultiArray:
        msg = Float64MultiArray(data=[float(v) for v in values])
        msg.layout.dim = [MultiArrayDimension(label='struts', size=6, stride=6)]
        return msg

    def diagnostics(self):
        if self.machine is None:
            return self.not_configured()
        pf = self.params_ff
        conf = pf.configured()
        identified = [n for n, s in zip(pf.names, pf.source) if s != 'configured']
        values = {**self.counts, 'identified': ','.join(identified) or 'none',
                  'configured': ','.join(conf) or 'none', 'executing': not self.done,
                  'sigma_max_N': self.sigma_max, 'last_refusal': self.last_refusal, **self.cost.figures()}
        level = OK if not conf else WARN
        msg = ('all parameters identified' if not conf
               else f'configured values for {len(conf)} of {len(pf.names)}')
        return [status(f'{self.get_name()}: feedforward', level, msg, values)]


main = node_main(PkmFeedForwardNode)


if __name__ == '__main__':
    main()
