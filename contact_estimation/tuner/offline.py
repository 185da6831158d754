"""impedance_tuner as an offline node for run-bag: the gain schedule it would have applied (always a dry run).

Reads the ContactEstimate topic of a bag (a recorded session, or the ``--out`` of a run-bag of
contact_estimator), ticks at ``publish_rate`` in bag time, and writes every change it would have made as
``rcl_interfaces/msg/ParameterEvent`` on ``/impedance_tuner/gains`` (the controller's three arrays, the other
axes from ``offline_*``). Message arrival is the log time, as the live node uses its receipt time.
"""
from __future__ import annotations

from contact_dynamics_common.offline.node import OfflineNodeBase

from .admittance_params import GAINS, axis_index, parameter_event, request_arrays
from .config import NODE_NAME
from .scheduler import EstimateSample, scheduler_from_params

ESTIMATE = 'contact_dynamics/msg/ContactEstimate'
PARAMETER_EVENT = 'rcl_interfaces/msg/ParameterEvent'
GAINS_TOPIC = '~/gains'


class OfflineImpedanceTuner(OfflineNodeBase):
    node_name = NODE_NAME

    def __init__(self, params: dict):
        super().__init__(params, scheduler_from_params(params))
        self.estimate_topic = self.resolve(params['estimate_topic'])
        self.out_topic = self.resolve(GAINS_TOPIC)
        self.index = axis_index(params['axis'])
        self.controller = params['controller_name']
        self.current = {'admittance.mass': list(params['offline_mass']),
                        'admittance.damping_ratio': list(params['offline_damping_ratio']),
                        'admittance.stiffness': list(params['offline_stiffness'])}
        self._queue: list[EstimateSample] = []
        # the slew limit starts from the controller's values (here the assumed offline_* arrays)
        self.pipeline.applied = tuple(self.current[n][self.index] for n in GAINS)

    def inputs(self) -> dict[str, str]:
        return {self.estimate_topic: ESTIMATE}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        log, kbm, flags = cols['log_ns'][sl], cols['kbm'][sl], cols['flags'][sl]
        statuses = cols.get('statuss')
        statuses = statuses[sl] if statuses is not None else [cols.get('status', '')] * len(log)
        frames = cols.get('frame_ids')
        frames = frames[sl] if frames is not None else [cols.get('frame_id', '')] * len(log)
        want = self.params['estimate_frame']
        for t, (k, b, _), (valid, ident), st, fr in zip(log, kbm, flags, statuses, frames):
            if want and fr != want:                  # as the live node: another frame is not trusted
                valid, st = False, f"frame '{fr}' is not estimate_frame '{want}'"
            self._queue.append(EstimateSample(float(t) * 1e-9, float(k), float(b), bool(valid), bool(ident),
                                              st))

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        sched = self.pipeline
        for est in self._queue:
            sched.observe(est)
        self._queue.clear()
        p = sched.step(now_ns * 1e-9)
        if p is None:
            return []
        arrays, reason = request_arrays(self.current, self.index, p.gains)
        if reason:
            sched.refuse('request', reason)
            return []
        sched.commit(p)
        self.current = arrays
        return [(self.out_topic, PARAMETER_EVENT, parameter_event(self.controller, arrays, now_ns))]

    def status(self) -> dict:
        return dict(self.pipeline.counts)
