"""ROS 2 glue shared by every estimator node: parameters, QoS, diagnostics, reset service, timing, main().

The QoS profiles are in ``qos``, the meters and DiagnosticStatus helpers in ``meters``; both are re-exported
here, where the nodes take them from.

An estimator node declares its parameters from a list of ParamSpec (with descriptions and ranges),
validates them at start (a bad value stops the node with the reason), subscribes with sensor-data QoS,
lets callbacks only copy samples into buffers, runs the estimation on a timer and reports its health on
/diagnostics. The estimation itself lives in ROS-free modules.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from std_srvs.srv import Trigger

from .params import (FRAMEWORK_PARAMETERS, ConfigError, ParamSpec, bare_sections, flatten,
                     params_files_in_args, read_params_file, resolve_relative_file)
# re-exported: the nodes of the packages take them from here
from .meters import (ERROR, OK, OVERLOAD_CAUSES, STALE, WARN, CostMeter, InputStats, RateMeter,  # noqa: F401
                     message_info_callbacks, status, status_fields)
from .qos import latched_qos, output_qos, sensor_qos  # noqa: F401
from .inputs import NodeInputs


def _descriptor(spec: ParamSpec) -> ParameterDescriptor:
    desc = ParameterDescriptor(description=spec.description, additional_constraints=spec.constraint_text(),
                               read_only=not spec.dynamic)
    scalar = spec.default if not isinstance(spec.default, list) else None
    if spec.low is not None and spec.high is not None and not isinstance(scalar, bool):
        if isinstance(scalar, float):
            desc.floating_point_range = [FloatingPointRange(from_value=float(spec.low), to_value=float(spec.high))]
        elif isinstance(scalar, int):
            desc.integer_range = [IntegerRange(from_value=int(spec.low), to_value=int(spec.high), step=1)]
    return desc


#: the ``--params-file`` arguments of the command line ``run`` started with (None: read sys.argv)
_PARAMS_FILES: list[str] | None = None

#: wall seconds a stopped /clock must stay stopped (under use_sim_time) before the buffered input is drained
SIM_TIME_DRAIN_S = 0.5


class EstimatorNode(NodeInputs, LifecycleNode):
    """Base of the estimator nodes: a managed (lifecycle) node with validated parameters, a reset
    service, /diagnostics and an update timer.

    Parameters are declared and validated at construction, so a bad value stops the node with the
    reason. The lifecycle then follows ros2_control's pattern: ``configure`` builds the estimation
    (subclass ``configure()``: pipeline, subscriptions, lifecycle publishers), ``activate`` starts
    consuming and publishing, ``deactivate`` freezes the estimate, ``cleanup`` forgets all samples.
    With ``autostart`` (default) the node configures and activates itself at start; otherwise a lifecycle
    manager drives it through ``~/change_state``. /diagnostics and ``~/reset`` work in every state.
    Subclasses implement ``configure()``, ``update()`` (estimation + publishing), ``reset_estimation()``
    and ``diagnostics() -> list[DiagnosticStatus]``; their callbacks check ``self.active``.

    This class owns the parameters, the lifecycle, the timers and the services; the sensor inputs (their
    subscriptions, ledger and /diagnostics status) are ``NodeInputs``'s (``ros/inputs.py``).
    """

    def __init__(self, name: str, specs: Sequence[ParamSpec], **kwargs):
        super().__init__(name, **kwargs)
        self.specs = {s.name: s for s in specs}
        self._apply_params_files()
        self.params = self._declare(specs)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.cost = CostMeter()
        self.updates = 0
        self.active = False
        self._timers_started = False
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 1)
        self.init_inputs()
        self._reported_error = ''
        self.create_service(Trigger, '~/reset', self._on_reset)

    # ------------------------------------------------------------------ parameters
    def _declare(self, specs: Sequence[ParamSpec]) -> dict:
        values = {}
        for spec in specs:
            try:
                param = self.declare_parameter(spec.name, spec.default, _descriptor(spec))
            except (ParameterException, TypeError, ValueError) as exc:
                override = getattr(self, '_parameter_overrides', {}).get(spec.name)
                if override is not None:
                    spec.validate(override.value)      # raises ConfigError with our own wording
                raise ConfigError(f"parameter '{spec.name}': {exc}") from None
            values[spec.name] = spec.validate(param.value)
        return values

    def _apply_params_files(self) -> None:
        """What rcl does not do with the ``--params-file`` files, before the parameters are declared.

        * A section keyed by the bare node name (the shipped files' form) applies under any namespace:
          rcl applies it only in the root namespace, so under ``namespace:=`` / ``-r __ns:=`` its
          values are added here (values rcl applied from ``/**`` or ``/ns/name`` sections keep priority).
        * A relative file path (``geometry_file``, ``machine``, ``model_yaml``, ``urdf_path``) that names a
          file beside the params file that set it is made absolute (the working directory is irrelevant).
        * A parameter name the node does not have (a typo) is warned about by name.
        """
        files = _PARAMS_FILES if _PARAMS_FILES is not None else params_files_in_args(sys.argv)
        overrides = getattr(self, '_parameter_overrides', None)
        if overrides is None:
            return
        name, in_root = self.get_name(), self.get_namespace() == '/'
        source: dict[str, str] = {}          # parameter -> the (last) params file that set it for this node
        for path in files:
            try:
                doc = read_params_file(path)
            except ConfigError:
                continue                        # run() refused it already; a node built in a test ignores it
            for key, section in doc.items():
                if str(key) in ('/**', '**') or str(key).rstrip('/').split('/')[-1] == name:
                    for param in flatten(section.get('ros__parameters') or {}):
                        source[param] = path
            if not in_root:
                applied = []
                for param, value in bare_sections(doc, name).items():
                    if param in overrides and overrides[param].value is not None:
                        continue
                    spec = self.specs.get(param)
                    if spec is not None:
                        try:
                            value = spec.validate(value)
                        except ConfigError as exc:
                            raise ConfigError(f"params file '{path}': {exc}") from None
                    try:
                        overrides[param] = Parameter(param, value=value)
                    except (TypeError, ValueError) as exc:
                        raise ConfigError(f"params file '{path}': parameter '{param}': {exc}") from None
                    applied.append(param)
                if applied:
                    self.get_logger().info(f"params file '{path}': section '{name}' applied under namespace "
                                           f"{self.get_namespace()} ({len(applied)} parameters)")
        for param, path in source.items():
            spec = self.specs.get(param)
            if spec is not None and isinstance(spec.default, str) and param in overrides:
                value = overrides[param].value
                resolved = resolve_relative_file(value, path)
                if resolved != value:
                    overrides[param] = Parameter(param, value=resolved)
        unknown = sorted(p for p in overrides if p not in self.specs and p not in FRAMEWORK_PARAMETERS
                         and not p.startswith('qos_overrides.'))
        for param in unknown:
            where = f"params file '{source[param]}'" if param in source else 'the command line'
            self.get_logger().warning(f"unknown parameter '{param}' in {where}: {name} has no such "
                                      f"parameter (ignored)")

    def _on_set_parameters(self, params) -> SetParametersResult:
        updates = {}
        for p in params:
            spec = self.specs.get(p.name)
            if spec is None:
                continue                        # use_sim_time and other framework parameters
            if not spec.dynamic:
                return SetParametersResult(successful=False, reason=f"'{p.name}' is read-only; restart the node")
            try:
                updates[p.name] = spec.validate(p.value)
            except ConfigError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        self.params.update(updates)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ lifecycle
    def autostart(self) -> None:
        """configure + activate when the ``autostart`` parameter is true; ConfigError if configure fails."""
        if not self.params.get('autostart', True):
            self.get_logger().info('waiting for a lifecycle manager (autostart is false)')
            return
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise ConfigError(self._configure_error or 'configure failed')
        self.trigger_activate()

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._configure_error = ''
        try:
            self.configure()
        except ConfigError as exc:
            self._configure_error = str(exc)
        except (yaml.YAMLError, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            # a file a parameter names that does not parse into what the pipeline needs: one line, no traceback
            self._configure_error = self._file_error_text(exc)
        if self._configure_error:
            self.get_logger().error(f'configure failed: {self._configure_error}')
            return TransitionCallbackReturn.FAILURE
        if not self._timers_started:
            self.create_timer(1.0 / self.params['publish_rate'], self._on_timer)
            self.create_timer(1.0, self._publish_diagnostics)
            if self.get_parameter('use_sim_time').value:
                self._drain = {'sim_ns': -1, 'since': 0.0, 'drained_ns': -1, 'count': 0}
                self.create_timer(0.1, self._drain_if_clock_stopped, clock=Clock(clock_type=ClockType.STEADY_TIME))
            self._timers_started = True
        return TransitionCallbackReturn.SUCCESS

    def _file_error_text(self, exc: Exception) -> str:
        """One line for an error raised while a file a parameter names was read: the parameter, its value and
        what is wrong (a YAML error's line and problem)."""
        mark = getattr(exc, 'problem_mark', None)
        if isinstance(exc, yaml.YAMLError):
            where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark is not None else ''
            what = f"not valid YAML{where}: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
        else:
            what = f'{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ""}'.rstrip(': ')
        name = Path(getattr(mark, 'name', '') or getattr(exc, 'filename', '') or '').name
        for param, value in self.params.items():
            if isinstance(value, str) and value and name and Path(value).name == name:
                return f"parameter '{param}' = '{value}': {what}"
        files = [f"{p} = '{v}'" for p, v in self.params.items()
                 if isinstance(v, str) and Path(v).suffix in ('.yaml', '.yml', '.urdf', '.xml')]
        return what + (f" (files: {', '.join(files)})" if files else '')

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = True
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.reset_estimation()
        return TransitionCallbackReturn.SUCCESS

    # ------------------------------------------------------------------ timers and services
    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_timer(self) -> None:
        if not self.active:
            return
        t0, c0 = time.perf_counter(), time.thread_time()
        self.update()
        self.cost.add(time.perf_counter() - t0, time.thread_time() - c0)
        self.updates += 1

    #: True during the drain's update (under use_sim_time, /clock stopped): the input has ended
    draining = False
    #: wall seconds without a new sample (and two ticks) before ``input_ended`` says so on the wall clock
    IDLE_END_S = 0.5

    def input_ended(self, fresh: int) -> bool:
        """Whether this update may finish what waits for more data (a pipeline's incomplete last data-time
        block), given ``fresh`` = the samples that arrived since the previous update.

        Under use_sim_time: only in the drain's update (a played bag's /clock stopped; a sim-time timer can fire
        twice in a row before the data callbacks of a loaded node run). On the wall clock: after two updates
        and IDLE_END_S seconds without a sample. Finishing a block while samples still wait in DDS would put an
        extra block boundary into the stream, so the rule errs on the late side.
        """
        wall = time.monotonic()
        if not hasattr(self, '_idle'):
            self._idle = [0, wall]                      # consecutive updates without a sample, time of the last one
        if fresh:
            self._idle = [0, wall]
        else:
            self._idle[0] += 1
        if self.get_parameter('use_sim_time').value:
            return self.draining
        return self._idle[0] >= 2 and wall - self._idle[1] >= self.IDLE_END_S

    def _drain_if_clock_stopped(self) -> None:
        """Under use_sim_time: one update when /clock has stood still for SIM_TIME_DRAIN_S wall seconds.

        A played bag ends with its /clock: the sim-time timer never fires again, so the samples that arrived
        after its last tick would stay in the buffers. run-bag ticks once past the bag's end and processes
        them; this wall-clock (steady) check gives the live node the same last update. It runs once per
        stop, when neither /clock nor any input has moved for SIM_TIME_DRAIN_S (not again until one of them
        moves: a sample that arrives after the drain, late on a loaded machine, gets a drain of its own), so
        a paused player costs one update on what has arrived.
        """
        d = self._drain
        now_ns = self.get_clock().now().nanoseconds
        received = getattr(self, 'inputs_received', 0)
        wall = time.monotonic()
        if now_ns != d['sim_ns'] or received != d.get('received', 0):
            d['sim_ns'], d['received'], d['since'] = now_ns, received, wall
            d['drained_ns'] = -1
            return
        if now_ns <= 0 or d['drained_ns'] == now_ns or wall - d['since'] < SIM_TIME_DRAIN_S:
            return
        d['drained_ns'] = now_ns
        d['count'] += 1
        before = self.updates
        self.draining = True             # update() may finish what waits for more data (the input has ended)
        try:
            self._on_timer()
        finally:
            self.draining = False
        if d['count'] <= 3 and self.updates > before:
            self.get_logger().info(f'/clock stopped at {now_ns * 1e-9:.3f} s for {SIM_TIME_DRAIN_S:g} s of wall time: '
                                   f'buffered input drained by one update (end of a played bag)')

    def _on_reset(self, request, response):
        self.reset_estimation()
        response.success = True
        response.message = 'estimators reset'
        self.get_logger().info('estimators reset by ~/reset')
        return response

    def _publish_diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = self.diagnostics()
        self._diag_pub.publish(msg)

    def log_error_once(self, text: str) -> None:
        """Log ``text`` as an ERROR unless it is empty or the same as the previous one logged here."""
        if text and text != self._reported_error:
            self._reported_error = text
            self.get_logger().error(text)

    @staticmethod
    def respond(response, success: bool, message: str):
        """Fill a service response's ``success`` and ``message`` and return it."""
        response.success, response.message = success, message
        return response

    def write_response(self, response, path: str, write: Callable[[str], None], done: str, log: bool = False):
        """A service that writes a file: ``write(path)``; 'cannot write <path>: <reason>' on OSError, else
        ``done`` (logged at INFO when ``log``)."""
        try:
            write(path)
        except OSError as exc:
            return self.respond(response, False, f'cannot write {path}: {exc}')
        if log:
            self.get_logger().info(done)
        return self.respond(response, True, done)

    # ------------------------------------------------------------------ diagnostics helpers
    def not_configured(self, message: str = 'not configured (lifecycle state unconfigured)') -> list:
        """The /diagnostics of a node whose pipeline is not built yet (WARN '<node>: pipeline')."""
        return [status(f'{self.get_name()}: pipeline', WARN, message, {})]

    def pipeline_values(self, counts: dict) -> dict:
        """The pipeline's own counters (keys without a '.'), the update cost figures and ``updates``."""
        values = {k: v for k, v in counts.items() if '.' not in k}
        values.update(self.cost.figures())
        values['updates'] = self.updates
        if getattr(self, '_drain', None):
            values['sim_time_drains'] = self._drain['count']
        return values

    # ------------------------------------------------------------------ subclass interface
    def configure(self) -> None:
        raise NotImplementedError

    def update(self) -> None:
        raise NotImplementedError

    def reset_estimation(self) -> None:
        raise NotImplementedError

    def diagnostics(self) -> list[DiagnosticStatus]:
        raise NotImplementedError


def make_executor():
    """rclpy's EventsExecutor (C++ event queue, about half the CPU per callback) when available.

    Driven by spin_once: in rclpy 9.1.2 its spin() never fires timers here, while spin_once does.
    CONTACT_DYNAMICS_EXECUTOR=single selects the SingleThreadedExecutor.
    """
    import os
    if os.environ.get('CONTACT_DYNAMICS_EXECUTOR', 'events') != 'single':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
    return SingleThreadedExecutor()


def node_main(factory: Callable[[], Node]) -> Callable[..., None]:
    """A console-script ``main(args=None)`` that runs ``factory()`` (``run``) and exits with its code."""
    def main(args: list[str] | None = None) -> None:
        raise SystemExit(run(factory, args))
    return main


def run(factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """rclpy.init, build the node (exit 2 with the reason on a bad parameter), spin, shut down cleanly.

    SIGINT and SIGTERM (what launch sends) both end the spin loop; callbacks stop before the node goes.
    """
    global _PARAMS_FILES
    from ..threads import limit_blas_threads
    limit_blas_threads()
    stop = []
    _PARAMS_FILES = params_files_in_args(sys.argv if args is None else args)
    try:
        for path in _PARAMS_FILES:
            read_params_file(path)
    except ConfigError as exc:
        print(f'[ERROR] invalid configuration: {exc}', file=sys.stderr, flush=True)
        return 2
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:          # rcl's own argument / params-file parser: its first line, no traceback
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f'[ERROR] invalid arguments: {text}', file=sys.stderr, flush=True)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(True))
    node = executor = None
    try:
        try:
            node = factory()
            if isinstance(node, EstimatorNode):
                node.autostart()
        except ConfigError as exc:
            print(f'[ERROR] invalid configuration: {exc}', file=sys.stderr, flush=True)
            return 2
        executor = make_executor()
        executor.add_node(node)
        while not stop and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
