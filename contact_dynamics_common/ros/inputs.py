"""The sensor inputs of an estimator node: subscriptions, their ledger and their /diagnostics status.

A node's callbacks only count and copy samples; what became of every sample is accounted for per input:
received (callbacks) = accepted + pending + dropped.<cause>, plus ``dropped.queue``, the messages lost
before the callback (publication sequence numbers, or the middleware's message-lost event).
"""
from __future__ import annotations

import time
from typing import Callable

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.event_handler import SubscriptionEventCallbacks, UnsupportedEventTypeError

from .meters import ERROR, OK, OVERLOAD_CAUSES, WARN, InputStats, RateMeter, message_info_callbacks, status
from .qos import sensor_qos

__all__ = ['NodeInputs']


class NodeInputs:
    """Mixin of ``EstimatorNode`` (an rclpy node with an ``active`` flag): owns the sensor-data subscriptions
    of the node's inputs, the ledger of each input's samples and the input's DiagnosticStatus. The host
    calls ``init_inputs()`` in its constructor."""

    def init_inputs(self) -> None:
        self._drops_seen: dict[str, dict[str, int]] = {}
        self._overload_logged = 0.0

    def add_input(self, msg_type, topic: str, stats: RateMeter, handler: Callable, depth: int):
        """A sensor-data subscription whose callback, while the node is active, counts the message in
        ``stats`` and calls ``handler(msg)`` (nothing while inactive). With an InputStats the losses before
        the callback are counted too (``subscribe_input``)."""
        def callback(msg) -> None:
            if self.active:
                stats.tick()
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
            def cb(msg, info):
                stats.sequence(info)
                callback(msg)
        try:
            return self.create_subscription(msg_type, topic, cb, sensor_qos(depth), event_callbacks=events)
        except UnsupportedEventTypeError:          # a middleware without the message-lost event
            return self.create_subscription(msg_type, topic, cb, sensor_qos(depth))

    def input_ledger(self, name: str, stats: InputStats, accepted: int, pending: int,
                     dropped: dict[str, int]) -> tuple[dict, str]:
        """/diagnostics values of one input's ledger, and a warning text when samples were dropped since
        the previous report ('' otherwise). Logs the overload as a WARN (at most every 5 s).

        received (callbacks) = accepted + pending + sum(dropped.<cause>); ``unaccounted`` is the difference
        (0 unless a sample went missing uncounted). ``dropped.queue``: lost before the callback (see
        InputStats), not part of received.
        """
        dropped = {**dropped, 'queue': stats.lost()}
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
