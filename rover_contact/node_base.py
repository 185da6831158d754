"""ROS 2 glue shared by impact_indicator and posture_evaluator: their inputs (joint states, odometry, obstacle
hypotheses, robot_description), the model rebuilt from robot_description, their common diagnostics (inputs
ledger, update timing against the period) and rate-limited logging."""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from contact_dynamics.msg import ObstacleHypothesis
from contact_dynamics_common.node import ERROR, OK, WARN, EstimatorNode, InputStats, latched_qos, status
from contact_dynamics_common.msgconv import stamp_to_ns
from contact_dynamics_common.params import ConfigError

from .inputs import QUIET_DROPS, model_from_urdf
from .ros_io import push_joint_state_msg, push_obstacle_msg, push_odometry_msg

LEVELS = {'ok': OK, 'warn': WARN, 'error': ERROR}


class LogLimiter:
    """At most one log line per cause every ``interval_s`` (wall time); the next line of that cause says how many
    were suppressed in between. Callers pass texts that name the cause and sizes, never a message payload."""

    def __init__(self, interval_s: float = 5.0, clock=time.monotonic):
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def __call__(self, logger, level: str, cause: str, text: str) -> bool:
        """Log ``text`` at ``level`` ('warning' | 'error') on ``logger`` unless ``cause`` was logged less than
        interval_s ago; True if logged. (rclpy forbids one call site logging at two severities: one line each.)"""
        now = self.clock()
        if cause in self._last and now - self._last[cause] < self.interval_s:
            self._suppressed[cause] = self._suppressed.get(cause, 0) + 1
            return False
        n = self._suppressed.pop(cause, 0)
        self._last[cause] = now
        line = f'{text[:300]}' + (f' ({n} more like this in the last {self.interval_s:g} s)' if n else '')
        if level == 'error':
            logger.error(line)
        else:
            logger.warning(line)
        return True


class UpdateTiming:
    """Wall time of the timer updates against the period: an update longer than the period is an overrun."""

    def __init__(self, period_s: float, window: int = 50):
        self.period_ms = period_s * 1e3
        self.recent: deque = deque(maxlen=window)
        self.overruns = 0
        self.updates = 0

    def add(self, seconds: float) -> None:
        ms = seconds * 1e3
        self.recent.append(ms)
        self.updates += 1
        self.overruns += ms > self.period_ms

    def level_message_values(self) -> tuple[bytes, str, dict]:
        recent = list(self.recent)
        over = sum(ms > self.period_ms for ms in recent)
        values = {'period_ms': self.period_ms, 'update_ms_last': recent[-1] if recent else 0.0,
                  'update_ms_max_recent': max(recent, default=0.0), 'overruns_recent': over,
                  'overruns_total': self.overruns, 'updates': self.updates}
        if not over:
            return OK, 'ok', values
        return WARN, (f'update overran its period: {over} of the last {len(recent)} updates took longer than '
                      f'{self.period_ms:.1f} ms (last {recent[-1]:.1f} ms, max {max(recent):.1f} ms)'), values


class RoverNode(EstimatorNode):
    """EstimatorNode with the rover inputs. Subclasses set ``pipeline_class`` (built as
    ``pipeline_class(params, model=None)``, with ``inputs``, ``model``), call ``subscribe_rover_inputs()``
    from ``configure()``, implement ``work()`` (the timer update; ``drain_inputs()`` first) and add
    ``timing_status()`` and ``model_and_input_statuses()`` to their diagnostics. The input callbacks only queue
    the message; validation and the push into ``pipeline.inputs`` run, in arrival order, in ``drain_inputs``."""

    pipeline_class: type = None

    def __init__(self, name: str, specs, **kwargs):
        super().__init__(name, specs, **kwargs)
        self.pipeline = None
        self.pub = None
        self.description_error = ''
        self.description_state = "waiting for robot_description (using the role map's URDF)"
        # InputStats: the messages lost before the callback are counted too (publication sequence numbers)
        self.rates = {'joint_states': InputStats(), 'odometry': InputStats(), 'obstacle': InputStats()}
        self._pending: list = []                 # (push function, message, wall arrival) in arrival order
        self._arrived: dict = {}                 # per state stream: wall time of its newest arrival
        self._cadence: dict = {}                 # per state stream: its last stamps (median period)
        self._queue_seen: dict[str, int] = {}    # per input: dropped.queue at the previous report
        self.timing = UpdateTiming(1.0 / self.params['publish_rate'])
        self.log_limited = LogLimiter()

    def subscribe_rover_inputs(self) -> None:
        p = self.params
        d = p['input_queue_size']
        self.add_input(JointState, p['joint_states_topic'], self.rates['joint_states'],
                       lambda msg: self._pending.append((self._push_joint_state, msg, time.monotonic())), d)
        self.add_input(Odometry, p['odom_topic'], self.rates['odometry'],
                       lambda msg: self._pending.append((self._push_odometry, msg, time.monotonic())), d)
        self.add_input(ObstacleHypothesis, p['obstacle_topic'], self.rates['obstacle'],
                       lambda msg: self._pending.append((self._push_obstacle, msg, time.monotonic())), 10)
        if p['robot_description_topic']:
            self.create_subscription(String, p['robot_description_topic'], self._on_description,
                                     latched_qos())

    def update(self) -> None:
        t0 = time.perf_counter()
        self.work()
        self.timing.add(time.perf_counter() - t0)

    def work(self) -> None:
        raise NotImplementedError

    #: wall seconds at most a JointState / Odometry sample is held back for the other stream (and the silence
    #: after which a stream holds nothing back)
    ALIGN_HOLD_S = 0.25
    #: a sample of one state stream is held while the other's next sample is due by its cadence: stamped at or
    #: after the other's newest stamp + ALIGN_DUE x its median period
    ALIGN_DUE = 0.75

    def drain_inputs(self) -> None:
        """Validate and push the queued input messages into ``pipeline.inputs`` in arrival order; a dropped
        sample is logged (WARN, rate-limited per cause, with sizes, never the payload).

        The two state streams are aligned in data time. A JointState or Odometry stamped at or after the time
        the other stream's next sample is due (its newest stamp, delivered or queued, + ALIGN_DUE x its median
        period) is held back, queued in order, until that sample arrives: an output never joins this stream's
        newer state with the other's older one only because the other's sample was still on the way (run-bag,
        which pushes by bag time, has both; live under load once published v_c 0.066 instead of 0.070 at the
        same data stamp). Streams stamped in the same cycle (a small offset) or at other rates are not held
        beyond the other's cadence. A stream silent for ALIGN_HOLD_S wall seconds holds nothing back; a sample
        held for ALIGN_HOLD_S, or when the input has ended (a played bag's last update), is released."""
        pending, self._pending = self._pending, []
        wall = time.monotonic()
        due = {} if self.draining else self._next_due(pending, wall)
        held, holding = [], set()
        for item in pending:
            push, msg, arrived = item
            if push in due and (push in holding or stamp_to_ns(msg.header.stamp) >= due[push]) \
                    and wall - arrived < self.ALIGN_HOLD_S:
                held.append(item)
                holding.add(push)
                continue
            if not push(msg):
                inp = self.pipeline.inputs
                if inp.last_cause not in QUIET_DROPS:
                    self.log_limited(self.get_logger(), 'warning', inp.last_cause, inp.last_error)
        if held:
            self._pending[:0] = held            # before what arrived meanwhile: arrival order kept

    def _next_due(self, pending: list, wall: float) -> dict:
        """Per state stream (its push function): the stamp (ns) from which its samples wait for the other
        stream's next sample; a stream is absent when the other is silent or its cadence is not known yet."""
        inp = self.pipeline.inputs
        joint, odom = self._push_joint_state, self._push_odometry
        newest = {joint: inp.joint_stamp, odom: inp.odom_stamp}
        for push, msg, arrived in pending:
            if push in newest:
                t = stamp_to_ns(msg.header.stamp)
                newest[push] = t if newest[push] is None else max(newest[push], t)
                self._arrived[push] = max(arrived, self._arrived.get(push, arrived))
                stamps = self._cadence.setdefault(push, deque(maxlen=16))
                if not stamps or t > stamps[-1]:        # a held sample comes round again: counted once
                    stamps.append(t)
        due = {}
        for mine, other in ((joint, odom), (odom, joint)):
            stamps = self._cadence.get(other)
            if newest[other] is None or stamps is None or len(stamps) < 3 \
                    or wall - self._arrived.get(other, -1e300) >= self.ALIGN_HOLD_S:
                continue
            period = float(np.median(np.diff(np.asarray(stamps, dtype=np.int64))))
            due[mine] = newest[other] + int(self.ALIGN_DUE * period)
        return due

    def log_status_error(self, cause: str, text: str) -> None:
        """An evaluation error (no output this tick): ERROR, rate-limited per cause."""
        if text:
            self.log_limited(self.get_logger(), 'error', cause, text)

    def _push_joint_state(self, msg) -> bool:
        return push_joint_state_msg(self.pipeline.inputs, msg)

    def _push_odometry(self, msg) -> bool:
        return push_odometry_msg(self.pipeline.inputs, msg)

    def _push_obstacle(self, msg) -> bool:
        now = self.get_clock().now().nanoseconds          # at or after its arrival (0: sim time before /clock)
        return push_obstacle_msg(self.pipeline.inputs, msg, self.params['base_frame'], now or None)

    def _on_description(self, msg) -> None:
        try:
            model = model_from_urdf(self.params, msg.data)
        except ConfigError as exc:
            self.description_error = str(exc)[:500]
            self.log_limited(self.get_logger(), 'error', 'robot_description', f'{self.description_error}; keeping '
                             f'the previous model (description of {len(msg.data)} characters)')
            return
        self._pending.clear()                   # inputs queued for the previous model are dropped with it
        self.pipeline = self.pipeline_class(self.params, model)
        self.description_error = ''
        self.description_state = 'model built from the latest robot_description'
        self.get_logger().info(f"model rebuilt from robot_description ({model.nv} DOF)")

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            # keeps a model built from robot_description
            self._pending.clear()
            self.pipeline = self.pipeline_class(self.params, self.pipeline.model)

    def rate_statuses(self) -> list:
        """'<node>: input <name>' per input: rate, received (callbacks), ``dropped.queue`` (lost before the
        callback: received + dropped.queue = published); OK once messages arrive, WARN before and while new
        messages are lost before the callback."""
        out = []
        for k, meter in self.rates.items():
            lost = meter.lost()
            seen = self._queue_seen.get(k, 0)
            self._queue_seen[k] = lost
            dropping = f'overload: {lost - seen} messages lost before the callback since the last report' \
                if lost > seen else ''
            out.append(self.input_status(k, meter, {'dropped.queue': lost}, dropping=dropping))
        return out

    def timing_status(self):
        """'<node>: timing': WARN with the figures when a recent update took longer than the period."""
        level, msg, values = self.timing.level_message_values()
        return status(f'{self.get_name()}: timing', level, msg, values)

    def model_and_input_statuses(self) -> list:
        """'<node>: robot_description' (when subscribed) and '<node>: inputs' (the ledger of every input: received,
        accepted, dropped by cause; the last error)."""
        name = self.get_name()
        out = []
        if self.params['robot_description_topic']:
            out.append(status(f'{name}: robot_description', ERROR if self.description_error else OK,
                              self.description_error or self.description_state, {}))
        inp = self.pipeline.inputs
        out.append(status(f'{name}: inputs', WARN if inp.last_error else OK, inp.last_error or 'ok',
                          inp.status_values()))
        return out
