"""The contact estimator as an offline node for run-bag: same pipeline, same messages, bag time."""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.replay import resolve_topic

from .config import NODE_NAME
from .contact_kind import force_rows, force_topic
from .messages import MSG_TYPE, publications
from .pipeline import ContactPipeline, Stream, TickReport
from .samples import ContactSamples

WRENCH = 'geometry_msgs/msg/WrenchStamped'
JOINT_STATE = 'sensor_msgs/msg/JointState'
POSE = 'geometry_msgs/msg/PoseStamped'


class OfflineContactEstimator:
    node_name = NODE_NAME

    def __init__(self, params: dict):
        self.params = params
        self.pipeline = ContactPipeline(params)
        self.period_ns = int(round(1e9 / params['publish_rate']))
        topic, self.wrench_type = force_topic(params)     # the wrench, or the JointState for joint_effort
        self.wrench_topic = resolve_topic(topic, NODE_NAME)
        if params['displacement_source'] == 'joint_state':
            self.disp_topic, self.disp_type = resolve_topic(params['joint_states_topic'], NODE_NAME), JOINT_STATE
        else:
            self.disp_topic, self.disp_type = resolve_topic(params['pose_topic'], NODE_NAME), POSE
        self._resolved: dict[str, str] = {}          # output topics, resolved once
        self._held: tuple[Stream, Stream] | None = None     # replay_chunk: samples logged after its last tick

    def inputs(self) -> dict[str, str]:
        return {self.wrench_topic: self.wrench_type, self.disp_topic: self.disp_type}

    def push(self, topic: str, cols: dict, sl: slice) -> None:
        if topic == self.wrench_topic:
            rows = force_rows(cols, self.params)
            if rows is not None:
                self.pipeline.push_wrench_columns(cols['stamp_ns'][sl], rows[sl])
            self.pipeline.wrench_frame = self.pipeline.wrench_frame or cols.get('frame_id', '')
        if topic != self.disp_topic:
            return
        if self.disp_type == JOINT_STATE:
            self.pipeline.push_joint_columns(cols['stamp_ns'][sl], cols['name'], cols['position'][sl])
        else:
            self.pipeline.push_pose_columns(cols['stamp_ns'][sl], cols['position'][sl])

    def tick(self, now_ns: int) -> list[tuple[str, str, dict]]:
        return self._outputs(self.pipeline.report(self.pipeline.step()))

    def replay_all(self, columns: dict[str, dict], ticks_ns: np.ndarray) -> list[list[tuple[str, str, dict]]]:
        """The outputs of every tick at once (``ContactPipeline.replay``): the same as pushing the messages
        logged up to each tick and calling ``tick``, on a fresh node."""
        last = int(ticks_ns[-1]) if len(ticks_ns) else np.iinfo(np.int64).min
        wrench, displacement = self.streams(columns, last)
        return [self._outputs(r) for r in self.pipeline.replay(wrench, displacement, ticks_ns)]

    def replay_chunk(self, columns: dict[str, dict], ticks_ns: np.ndarray) -> list[list[tuple[str, str, dict]]]:
        """The outputs at ``ticks_ns`` given the messages logged since the previous call
        (``ContactPipeline.replay_chunk``); messages logged after the last tick are held for the next call."""
        wrench, displacement = self.streams(columns)
        if self._held is not None:
            wrench, displacement = (_join(a, b) for a, b in zip(self._held, (wrench, displacement)))
        last = int(ticks_ns[-1]) if len(ticks_ns) else np.iinfo(np.int64).min
        now, later = zip(*(_split(s, last) for s in (wrench, displacement)))
        self._held = later
        if not len(ticks_ns):
            return []
        return [self._outputs(r) for r in self.pipeline.replay_chunk(*now, ticks_ns)]

    def contact_samples(self, columns: dict[str, dict]) -> ContactSamples:
        """Every in-contact sample of the record as the estimators receive them (for contact-compare)."""
        return self.pipeline.contact_samples(*self.streams(columns))

    def streams(self, columns: dict[str, dict], last_ns: int | None = None) -> tuple[Stream, Stream]:
        """The wrench and displacement streams of the bag columns logged up to ``last_ns`` (all: None)."""
        w = columns[self.wrench_topic]
        d = columns[self.disp_topic]
        nw = len(w['log_ns']) if last_ns is None else int(np.searchsorted(w['log_ns'], last_ns, side='right'))
        nd = len(d['log_ns']) if last_ns is None else int(np.searchsorted(d['log_ns'], last_ns, side='right'))
        if nw:
            self.pipeline.wrench_frame = self.pipeline.wrench_frame or w.get('frame_id', '')
        f = force_rows(w, self.params) if nw else None
        if f is None:                     # no effort of the joint (its position stream counts the absence)
            nw, f = 0, np.zeros((0, 3))
        wrench = Stream(w['log_ns'][:nw], w['stamp_ns'][:nw], f[:nw])
        rows = d['position'][:nd]
        if self.disp_type == JOINT_STATE:
            rows = self.pipeline.joint_rows(d['name'], rows) if nd else None
            if rows is None:              # the joint is not in the messages (counted): no displacement at all
                nd, rows = 0, np.zeros((0, 1))
        return wrench, Stream(d['log_ns'][:nd], d['stamp_ns'][:nd], rows)

    def _outputs(self, report: TickReport) -> list[tuple[str, str, dict]]:
        return [(self._resolve(topic), MSG_TYPE, fields)
                for topic, fields in publications(report, report.estimates, self.params)]

    def _resolve(self, topic: str) -> str:
        if topic not in self._resolved:
            self._resolved[topic] = resolve_topic(topic, NODE_NAME)
        return self._resolved[topic]

    def status(self) -> dict:
        return dict(self.pipeline.status())


def _split(s: Stream, last_ns: int) -> tuple[Stream, Stream]:
    """The samples logged up to ``last_ns`` and the rest."""
    k = int(np.searchsorted(s.log_ns, last_ns, side='right'))
    return Stream(*(a[:k] for a in s)), Stream(*(a[k:] for a in s))


def _join(a: Stream, b: Stream) -> Stream:
    if not len(a.log_ns):
        return b
    if not len(b.log_ns):
        return a
    return Stream(*(np.concatenate((x, y)) for x, y in zip(a, b)))
