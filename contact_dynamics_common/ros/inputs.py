"""The sensor inputs of an estimator node: subscriptions, their ledger and their /diagnostics status.

A node's callbacks only count and copy samples; what became of every sample is accounted for per input:
received (callbacks) = accepted + pending + dropped.<cause>, plus ``dropped.queue``, the messages lost
before the callback: gaps in each publisher's publication sequence numbers, with either executor
(``with_message_info``), or the middleware's message-lost event when that reports more. Under the default
EventsExecutor the losses are in the subscription's keep-last DDS history: the executor takes, per
new-message event, one message; a message the history overwrote before its turn is gone (the take comes back
empty) and Fast DDS's message-lost event does not report it — the sequence gap does.

A message that fails its structural check (``messages.checks``: JointState array lengths, a configured joint
missing, a bad quaternion) is dropped in the callback, counted under the check's cause in its input's ledger
and logged as one line with the cause and the sizes (never the payload), at most once per cause and input every
``LOG_INTERVAL_S`` (the lines in between are counted in the next one). ``gate_account`` gives the ledger terms
of an input behind a ``StampGate``.
"""
from __future__ import annotations

import inspect
import time
from collections import Counter
from typing import Callable

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.event_handler import SubscriptionEventCallbacks, UnsupportedEventTypeError

from .meters import ERROR, OK, OVERLOAD_CAUSES, WARN, InputStats, RateMeter, message_info_callbacks, status
from .qos import sensor_qos

__all__ = ['LOG_INTERVAL_S', 'NodeInputs', 'gate_account', 'with_message_info']

#: at most one log line per input and drop cause in this many seconds
LOG_INTERVAL_S = 5.0


def gate_account(gate, pending: int = 0, **dropped: int) -> tuple[int, int, dict[str, int]]:
    """(accepted, pending, dropped by cause) of an input whose samples pass ``gate`` (a StampGate): the gate's
    accepted samples and drop causes, plus the ``dropped`` counts the caller adds (ring-buffer overflow, samples
    refused before the gate, ...), for ``NodeInputs.input_ledger``."""
    return gate.counts.accepted, pending, {**gate.counts.dropped(), **dropped}


def with_message_info(on_message: Callable) -> Callable:
    """A subscription callback that hands ``on_message(msg, info)`` the message and its MessageInfo (the
    publisher's GID and publication sequence number) under either executor.

    rclpy picks the MessageInfo form by the callback's signature (two positional parameters). The
    SingleThreadedExecutor then calls ``callback(msg, info)``; rclpy 9.1's EventsExecutor (C++) calls
    ``callback((msg, info))`` with the tuple that ``take_message`` returned. This callable declares two
    parameters (``__signature__``) and accepts both calls, so the sequence numbers reach the ledger with the
    default executor too.
    """
    def callback(*args) -> None:
        if len(args) == 1:
            msg, info = args[0]                 # EventsExecutor: the (msg, info) tuple as one argument
        else:
            msg, info = args
        on_message(msg, info)

    positional = inspect.Parameter.POSITIONAL_ONLY
    callback.__signature__ = inspect.Signature([inspect.Parameter('msg', positional),
                                                inspect.Parameter('info', positional)])
    return callback


class NodeInputs:
    """Mixin of ``EstimatorNode`` (an rclpy node with an ``active`` flag): owns the sensor-data subscriptions
    of the node's inputs, the ledger of each input's samples and the input's DiagnosticStatus. The host
    calls ``init_inputs()`` in its constructor."""

    def init_inputs(self) -> None:
        #: messages the active node's inputs have received (all inputs): the sim-time drain waits for it to rest
        self.inputs_received = 0
        self._drops_seen: dict[str, dict[str, int]] = {}
        self._overload_logged = 0.0
        self._refused: dict[int, Counter] = {}             # per input (id of its meter): structural drops
        self._refusal_log: dict[tuple[str, str], list] = {}  # (topic, cause) -> [time logged, not logged since]
        self._last_refusal: dict[int, str] = {}

    def add_input(self, msg_type, topic: str, stats: RateMeter, handler: Callable, depth: int,
                  check: Callable | None = None):
        """A sensor-data subscription whose callback, while the node is active, counts the message in
        ``stats`` and calls ``handler(msg)`` (nothing while inactive). With an InputStats the losses before
        the callback are counted too (``subscribe_input``). ``check(msg)`` (``messages.checks``), when given,
        runs first: a message it finds a Problem in is refused (``refuse``), not handed on."""
        refused = self._refused.setdefault(id(stats), Counter())

        def callback(msg) -> None:
            if self.active:
                self.inputs_received += 1
                stats.tick()
                problem = check(msg) if check is not None else None
                if problem is not None:
                    self.refuse(topic, refused, problem)
                    return
                handler(msg)

        if isinstance(stats, InputStats):
            return self.subscribe_input(msg_type, topic, callback, stats, depth)
        return self.create_subscription(msg_type, topic, callback, sensor_qos(depth))

    def subscribe_input(self, msg_type, topic: str, callback, stats: InputStats, depth: int):
        """A sensor-data subscription whose losses before the callback are counted in ``stats``."""
        def on_lost(event) -> None:
            stats.lost_reported = int(event.total_count)

        events = SubscriptionEventCallbacks(message_lost=on_lost)
        cb = callback
        if message_info_callbacks():
            def on_message(msg, info) -> None:
                stats.sequence(info)
                callback(msg)
            cb = with_message_info(on_message)
        try:
            return self.create_subscription(msg_type, topic, cb, sensor_qos(depth), event_callbacks=events)
        except UnsupportedEventTypeError:          # a middleware without the message-lost event
            return self.create_subscription(msg_type, topic, cb, sensor_qos(depth))

    def refuse(self, topic: str, refused: Counter, problem) -> None:
        """Count a message refused by its structural check under the problem's cause and log it: one line
        naming the topic, the cause and the sizes, at most once per topic and cause every LOG_INTERVAL_S."""
        refused[problem.cause] += 1
        self._last_refusal[id(refused)] = problem.text
        now = time.monotonic()
        entry = self._refusal_log.setdefault((topic, problem.cause), [-float('inf'), 0])
        if now - entry[0] < LOG_INTERVAL_S:
            entry[1] += 1
            return
        more = f' ({entry[1]} more since the last line)' if entry[1] else ''
        entry[0], entry[1] = now, 0
        self.get_logger().warning(f'{topic}: message dropped ({problem.cause}): {problem.text[:300]}{more}')

    def last_refusal(self, stats: RateMeter) -> str:
        """The text of the last message of the input counted in ``stats`` its structural check refused ('')."""
        return self._last_refusal.get(id(self._refused.get(id(stats))), '')

    def refused(self, stats: RateMeter) -> dict[str, int]:
        """The messages of the input counted in ``stats`` refused by its structural check, by cause."""
        return dict(self._refused.get(id(stats), {}))

    def input_ledger(self, name: str, stats: InputStats, accepted: int, pending: int,
                     dropped: dict[str, int]) -> tuple[dict, str]:
        """/diagnostics values of one input's ledger, and a warning text when samples were dropped since
        the previous report ('' otherwise). Logs the overload as a WARN (at most every 5 s).

        received (callbacks) = accepted + pending + sum(dropped.<cause>); ``unaccounted`` is the difference
        (0 unless a sample went missing uncounted). ``dropped`` are the causes after the callback; the
        messages refused by the input's structural check (``add_input``'s ``check``) are added here, by cause.
        ``dropped.queue``: lost before the callback (see InputStats), not part of received.
        """
        dropped = dict(dropped)
        for cause, n in self.refused(stats).items():
            dropped[cause] = dropped.get(cause, 0) + n
        dropped['queue'] = stats.lost()
        after_callback = sum(v for k, v in dropped.items() if k != 'queue')
        values = {'received': stats.count, 'accepted': accepted, 'pending': pending,
                  'dropped_total': after_callback + dropped['queue'],
                  **{f'dropped.{k}': v for k, v in dropped.items()},
                  'unaccounted': stats.count - accepted - pending - after_callback}
        seen = self._drops_seen.get(name, {})
        new = {k: v - seen.get(k, 0) for k, v in dropped.items() if v > seen.get(k, 0)}
        self._drops_seen[name] = dict(dropped)
        if not new:
            return values, ''
        overload = {k: n for k, n in new.items() if k in OVERLOAD_CAUSES}
        parts = ', '.join(f'{k} {n}' for k, n in sorted(new.items(), key=lambda kv: -kv[1]))
        text = f'{sum(new.values())} samples dropped since the last report ({parts})'
        if overload:
            text = 'overload: ' + text
            now = time.monotonic()
            if now - self._overload_logged >= 5.0:
                self._overload_logged = now
                self.get_logger().warning(f'input {name}: {text}; rate {stats.rate():.0f} Hz, {pending} pending')
        return values, text

    def input_status(self, input_name: str, meter: RateMeter, values: dict | None = None, *,
                     timeout: float | None = None, bad: int = 0, bad_text: str = '', error: str = '',
                     dropping: str = '') -> DiagnosticStatus:
        """'<node>: input <name>' with rate_hz, received, age_s (then ``values``). Level, first match:
        ERROR ``error``; WARN no messages; WARN ``dropping`` when it reports an overload; WARN stale (age >
        ``timeout`` s, if given); WARN ``bad_text`` (default '<bad> samples rejected (see counts)') when
        ``bad``; else OK."""
        age = meter.age()
        v = {'rate_hz': meter.rate(), 'received': meter.count, 'age_s': age, **(values or {})}
        if error:
            level, msg = ERROR, error
        elif meter.count == 0:
            level, msg = WARN, 'no messages received'
        elif dropping.startswith('overload'):
            level, msg = WARN, dropping
        elif timeout is not None and age > timeout:
            level, msg = WARN, f'stale: no message for {age:.2f} s'
        elif bad:
            level, msg = WARN, bad_text or f'{bad} samples rejected (see counts)'
        else:
            level, msg = OK, 'ok'
        return status(f'{self.get_name()}: input {input_name}', level, msg, v)
