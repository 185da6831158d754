"""What a node measures about itself for /diagnostics: input rates and ages (``RateMeter``), messages lost
before the callback (``InputStats``, from publication sequence numbers), the cost of its updates
(``CostMeter``), and the DiagnosticStatus it reports them in (``status``, ``status_fields``).

ROS-free except for the DiagnosticStatus message type (no node, no executor).
"""
from __future__ import annotations

import os
import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

__all__ = ['ERROR', 'OK', 'OVERLOAD_CAUSES', 'STALE', 'WARN', 'CostMeter', 'InputStats', 'RateMeter',
           'message_info_callbacks', 'status', 'status_fields']

OK, WARN, ERROR, STALE = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR,
                           DiagnosticStatus.STALE)


class RateMeter:
    """Message rate over a sliding window of receipt times (monotonic wall clock, s: cheap in callbacks)."""

    def __init__(self, window: int = 200):
        self._times: deque = deque(maxlen=window)
        self.count = 0

    def tick(self) -> None:
        self._times.append(time.monotonic())
        self.count += 1

    def rate(self) -> float:
        if len(self._times) < 2 or self._times[-1] <= self._times[0]:
            return 0.0
        return (len(self._times) - 1) / (self._times[-1] - self._times[0])

    def age(self) -> float:
        return time.monotonic() - self._times[-1] if self._times else float('inf')


class InputStats(RateMeter):
    """One input's counters at the callback: received (``count``), rate, age, and the samples lost before the
    callback (the subscription queue overflowing, transport losses).

    ``lost_in_queue``: gaps in each publisher's publication sequence numbers (callbacks with MessageInfo,
    ``message_info_callbacks()``): exact for every message lost after the first one taken from that publisher,
    wherever it was lost — in transport (best effort), or overwritten in the subscription's keep-last DDS
    history (depth ``input_queue_size``) before the executor took it. ``lost_reported``: what the middleware's
    message-lost event reports (Fast DDS: transport-level losses only, not keep-last overwrites). Messages a
    publisher sent before the first one this subscription took cannot be told from messages sent before it
    matched, and are not counted.
    """

    #: MessageInfo dicts kept by the callback before they are counted (bounds the pending list)
    FOLD_AT = 4096

    def __init__(self, window: int = 200):
        super().__init__(window)
        self._lost_in_queue = 0
        self.lost_reported = 0
        self._seq_span: dict[bytes, tuple[int, int]] = {}
        self._infos: list = []

    def sequence(self, info) -> None:
        """Keep a message's MessageInfo dict (callback side: only a copy); counted when the losses are read."""
        self._infos.append(info)
        if len(self._infos) >= self.FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        """Count the publications skipped since each publisher's previous message, over the kept infos."""
        infos, self._infos = self._infos, []
        for info in infos:
            seq = info.get('publication_sequence_number')
            if seq is None:
                continue
            gid = info.get('publisher_gid')
            key = bytes(gid['data']) if gid else b''
            span = self._seq_span.get(key)          # (first, last) sequence number taken from this publisher
            if span is None:
                self._seq_span[key] = (seq, seq)
            elif seq > span[1]:
                self._lost_in_queue += seq - span[1] - 1
                self._seq_span[key] = (span[0], seq)
            elif span[0] < seq < span[1]:
                self._lost_in_queue -= 1            # arrived out of order: counted in a gap before, received now

    @property
    def lost_in_queue(self) -> int:
        self._fold()
        return self._lost_in_queue

    def lost(self) -> int:
        return max(self.lost_in_queue, self.lost_reported)


def message_info_callbacks() -> bool:
    """Whether the input callbacks take each message's MessageInfo (publication sequence numbers), which
    counts every message lost before the callback exactly: yes with both executors (``inputs.with_message_info``
    adapts to the EventsExecutor's one-argument call). CONTACT_DYNAMICS_MESSAGE_INFO=0 turns it off (then only
    the middleware's message-lost event is counted; for cost comparisons in bench/bench_node_overload.py)."""
    return os.environ.get('CONTACT_DYNAMICS_MESSAGE_INFO', '1') != '0'


#: drop causes that mean the node did not keep up (the others are rejected input)
OVERLOAD_CAUSES = ('queue', 'overflow')


class CostMeter:
    """Cost of the estimation updates: p50 / p99 / max over the last N updates (ms) of wall-clock time and,
    when given, of the thread's CPU time (the work itself, without the time other processes held the CPU)."""

    def __init__(self, window: int = 1000):
        self._ms: deque = deque(maxlen=window)
        self._cpu_ms: deque = deque(maxlen=window)

    def add(self, seconds: float, cpu_seconds: float | None = None) -> None:
        self._ms.append(seconds * 1e3)
        if cpu_seconds is not None:
            self._cpu_ms.append(cpu_seconds * 1e3)

    def figures(self) -> dict[str, float]:
        out = {'update_ms_p50': 0.0, 'update_ms_p99': 0.0, 'update_ms_max': 0.0}
        for prefix, ms in (('update_ms', self._ms), ('update_cpu_ms', self._cpu_ms)):
            if ms:
                a = np.fromiter(ms, float)
                out.update({f'{prefix}_p50': float(np.percentile(a, 50)), f'{prefix}_p99': float(np.percentile(a, 99)),
                            f'{prefix}_max': float(a.max())})
        return out


def status(name: str, level: bytes, message: str, values: dict, hardware_id: str = '') -> DiagnosticStatus:
    """A DiagnosticStatus with the values as KeyValue pairs (floats printed with 6 significant digits)."""
    kv = [KeyValue(key=str(k), value=(f'{v:.6g}' if isinstance(v, float) else str(v))) for k, v in values.items()]
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id, values=kv)


def status_fields(st: DiagnosticStatus) -> dict:
    """A received DiagnosticStatus as {'level', 'message', key: value...} (values as the strings sent)."""
    return {'level': st.level, 'message': st.message, **{kv.key: kv.value for kv in st.values}}
