"""impedance_tuner: trusted ContactEstimates retune a ros2_controllers admittance_controller (ROS 2 glue).

Subscribes  estimate_topic (contact_dynamics/ContactEstimate, reliable like the estimator's output).
Calls       <controller_name>/get_parameters and <controller_name>/set_parameters (rcl_interfaces/srv/
            GetParameters, SetParameters): admittance.mass, admittance.damping_ratio, admittance.stiffness,
            six-element double arrays of which only the ``axis`` element changes (admittance_params).
Publishes   ~/gains (rcl_interfaces/msg/ParameterEvent): every set of arrays applied, or in dry run / while
            the controller cannot be called the arrays it would set; /diagnostics ('<node>: tuner').
Services    ~/enable (std_srvs/SetBool), ~/reset (forget the estimates and the applied state), lifecycle.

The decisions are ``scheduler.GainScheduler``'s (trust gate, bounds, slew limit, hysteresis, hold, revert).
A change is applied in two calls: the controller's current arrays are read (get_parameters), the axis element
replaced and the result checked (``admittance_params.request_arrays``: a wrong size, type or bound is refused
here, never sent), then set; the scheduler commits only what the controller accepted. One call is in flight
at a time; a call not answered within ``service_timeout`` counts as failed.
"""
from __future__ import annotations

import time

from rcl_interfaces.msg import Parameter, ParameterEvent, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import parameter_value_to_python
from std_srvs.srv import SetBool

from contact_dynamics.msg import ContactEstimate
from contact_dynamics_common.ros.fill import fill
from contact_dynamics_common.ros.node import OK, WARN, EstimatorNode, node_main, output_qos, status

from .admittance_params import (GAINS, SELECTED_AXES, axis_index, check_current, parameter_event,
                                request_arrays)
from .config import NODE_NAME, PARAMS
from .scheduler import EstimateSample, Proposal, scheduler_from_params

READ = (*GAINS, SELECTED_AXES)


class ImpedanceTunerNode(EstimatorNode):

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, PARAMS, **kwargs)
        self.scheduler = None
        self.pub = None
        self._pending: tuple[float, object] | None = None      # (wall start, future) of the call in flight
        self._last_sync = time.monotonic()
        self._controller_read = False                           # the controller answered get_parameters once
        self.create_service(SetBool, '~/enable', self._on_enable)

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        p = self.params
        self.index = axis_index(p['axis'])
        self.scheduler = scheduler_from_params(p)
        self.offline_arrays = {'admittance.mass': list(p['offline_mass']),
                               'admittance.damping_ratio': list(p['offline_damping_ratio']),
                               'admittance.stiffness': list(p['offline_stiffness'])}
        if self.pub is None:
            ctrl = p['controller_name'].rstrip('/')
            self.get_client = self.create_client(GetParameters, f'{ctrl}/get_parameters')
            self.set_client = self.create_client(SetParameters, f'{ctrl}/set_parameters')
            self.create_subscription(ContactEstimate, p['estimate_topic'], self._on_estimate, output_qos())
            self.pub = self.create_lifecycle_publisher(ParameterEvent, '~/gains', output_qos())
        mode = (' (dry run)' if p['dry_run'] else '') + ('' if p['enabled'] else ' (disabled)')
        self.get_logger().info(f"tuning axis {p['axis']} of '{p['controller_name']}' from "
                               f"{p['estimate_topic']}{mode}")

    def reset_estimation(self) -> None:
        if self.scheduler is not None:
            self.scheduler = scheduler_from_params(self.params)

    # ------------------------------------------------------------------ inputs and services
    def _on_estimate(self, msg: ContactEstimate) -> None:
        if not self.active or self.scheduler is None:
            return
        frame = self.params['estimate_frame']
        if frame and msg.header.frame_id != frame:
            why = f"frame '{msg.header.frame_id}' is not estimate_frame '{frame}'"
            self.scheduler.observe(EstimateSample(self.now_s(), msg.stiffness, msg.damping, False,
                                                  msg.damping_identifiable, why))
            return
        self.scheduler.observe(EstimateSample(self.now_s(), msg.stiffness, msg.damping, msg.valid,
                                              msg.damping_identifiable, msg.status))

    def _on_enable(self, request, response):
        self.params['enabled'] = bool(request.data)
        word = 'enabled' if request.data else 'disabled'
        self.get_logger().info(f'tuning {word} by ~/enable')
        return self.respond(response, True, f'tuning {word}')

    # ------------------------------------------------------------------ decisions
    def update(self) -> None:
        if self._pending is not None:
            start, _ = self._pending
            if time.monotonic() - start > self.params['service_timeout']:
                self._pending = None
                self._refuse('timeout', f"controller '{self.params['controller_name']}' did not answer "
                                        f"within {self.params['service_timeout']:g} s")
            return
        if not self.params['enabled']:
            return
        if self.scheduler.applied is None:           # the slew limit starts from the controller's own values
            self._sync()
            return
        now = time.monotonic()
        if (not self.params['dry_run'] or not self._controller_read) and \
                now - self._last_sync > self.params['resync_period']:
            self._last_sync = now                    # a change made by someone else is seen while settled too
            if self.get_client.service_is_ready():
                self._sync()
                return
        proposal = self.scheduler.step(self.now_s())
        if proposal is None:
            return
        if self.params['dry_run']:
            if self.get_client.service_is_ready():
                self._read_then(proposal, apply=False)
            else:
                self._finish(proposal, self.offline_arrays, apply=False)
            return
        if not self.get_client.service_is_ready() or not self.set_client.service_is_ready():
            self._refuse('unreachable', f"controller '{self.params['controller_name']}' parameter services "
                                        'not available')
            return
        self._read_then(proposal, apply=True)

    def _sync(self) -> None:
        """Take the controller's current axis gains as the applied state (offline_* in a dry run without a
        reachable controller); nothing until the controller answers."""
        if not self.get_client.service_is_ready():
            if self.params['dry_run']:
                self.scheduler.applied = tuple(self.offline_arrays[n][self.index] for n in GAINS)
            return
        future = self.get_client.call_async(GetParameters.Request(names=list(READ)))
        self._pending = (time.monotonic(), future)
        future.add_done_callback(self._on_sync)

    def _on_sync(self, future) -> None:
        self._pending = None
        current = self._values(future)
        if current is None:
            return
        reason = check_current(current, self.index)
        if reason:
            self._refuse('request', reason)
            return
        first = self.scheduler.applied is None or not self._controller_read
        if not self._controller_read:                # a dry run's offline_* start replaced by the real values
            self.scheduler.applied = None
        self._controller_read = True
        self._resync(tuple(float(current[n][self.index]) for n in GAINS))
        if first:
            a = self.scheduler.applied
            self.get_logger().info(f"controller '{self.params['controller_name']}' axis "
                                   f"{self.params['axis']}: M {a[0]:g} kg, zeta {a[1]:g}, K {a[2]:g} N/m")

    def _resync(self, actual: tuple) -> bool:
        """Take the controller's actual axis gains as the applied state when they differ from what the tuner
        set (someone else changed them): the slew limit restarts from them. True when they differed."""
        applied = self.scheduler.applied
        if applied is not None and all(abs(a - b) <= 1e-9 * max(abs(b), 1.0)
                                       for a, b in zip(actual, applied)):
            return False
        self.scheduler.applied = actual
        if applied is not None:
            self.scheduler.counts['resynced'] += 1
            self.get_logger().warning(f'controller axis gains changed outside the tuner: M {actual[0]:g} kg, '
                                      f'zeta {actual[1]:g}, K {actual[2]:g} N/m; slew restarts from them')
        return True

    def _values(self, future) -> dict | None:
        """The controller's arrays from a GetParameters answer ({name: list}); None (refusal counted) on a
        failed call."""
        try:
            values = future.result().values
        except Exception as exc:                           # noqa: BLE001 - a failed call is a counted refusal
            self._refuse('unreachable', f'get_parameters failed: {exc}')
            return None
        current = {}
        for name, v in zip(READ, values):
            value = parameter_value_to_python(v)
            if value is not None:
                current[name] = list(value) if not isinstance(value, (bool, int, float, str)) else value
        return current

    def _read_then(self, proposal: Proposal, apply: bool) -> None:
        future = self.get_client.call_async(GetParameters.Request(names=list(READ)))
        self._pending = (time.monotonic(), future)
        future.add_done_callback(lambda f: self._on_read(f, proposal, apply))

    def _on_read(self, future, proposal: Proposal, apply: bool) -> None:
        self._pending = None
        current = self._values(future)
        if current is not None:
            self._finish(proposal, current, apply)

    def _finish(self, proposal: Proposal, current: dict, apply: bool) -> None:
        arrays, reason = request_arrays(current, self.index, proposal.gains)
        if reason:
            self._refuse('request', reason)
            return
        if apply and proposal.kind != 'revert':
            actual = tuple(float(current[n][self.index]) for n in GAINS)
            if self._resync(actual):
                return
        if not apply:
            self._applied(proposal, arrays)
            return
        req = SetParameters.Request(parameters=[
            Parameter(name=n, value=ParameterValue(type=8, double_array_value=a)) for n, a in arrays.items()])
        future = self.set_client.call_async(req)
        self._pending = (time.monotonic(), future)
        future.add_done_callback(lambda f: self._on_set(f, proposal, arrays))

    def _on_set(self, future, proposal: Proposal, arrays: dict) -> None:
        self._pending = None
        try:
            results = future.result().results
        except Exception as exc:                           # noqa: BLE001
            self._refuse('unreachable', f'set_parameters failed: {exc}')
            return
        refused = [f'{n}: {r.reason}' for n, r in zip(arrays, results) if not r.successful]
        if refused:
            self._refuse('controller', 'controller refused ' + '; '.join(refused))
            return
        self._applied(proposal, arrays)

    def _applied(self, proposal: Proposal, arrays: dict) -> None:
        self.scheduler.commit(proposal)
        now = self.get_clock().now().nanoseconds
        self.pub.publish(fill(ParameterEvent(), parameter_event(self.params['controller_name'], arrays, now)))
        verb = 'would set' if self.params['dry_run'] else ('reverted' if proposal.kind == 'revert' else 'set')
        if proposal.kind == 'revert' or self.scheduler.counts['changes'] <= 3:
            self.get_logger().info(f'{verb}: {proposal.reason}')

    def _refuse(self, cause: str, reason: str) -> None:
        self.scheduler.refuse(cause, reason)
        self.log_error_once(f'refused: {reason}')

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self):
        if self.scheduler is None:
            return self.not_configured()
        s, p = self.scheduler, self.params
        mode = 'disabled' if not p['enabled'] else ('dry run' if p['dry_run'] else 'applying')
        values = {'controller': p['controller_name'], 'axis': p['axis'], 'mode': mode,
                  'controller_read': self._controller_read,
                  'last_change': s.last_reason, 'last_refusal': s.last_refusal, **s.figures()}
        values.update(self.cost.figures())
        reachable = self.get_client.service_is_ready()
        values['controller_reachable'] = reachable
        level = OK if mode == 'applying' and s.state in ('settled', 'tracking') else WARN
        msg = f'{mode}, {s.state}' + (f'; last refusal: {s.last_refusal}' if s.last_refusal else '')
        if not reachable and not p['dry_run']:
            msg = f"controller '{p['controller_name']}' not reachable (its get_parameters service); " + msg
        return [status(f'{self.get_name()}: tuner', level, msg, values)]


main = node_main(ImpedanceTunerNode)


if __name__ == '__main__':
    main()
