"""posture_evaluator processing without ROS (spec §5.3, §7.3): candidates from the parameter grid or an explicit
list, evaluated against the obstacle hypothesis when a new one arrives, while the time to contact is below
horizon_s, or on request (the service). A long candidate list is evaluated across timer ticks
(candidates_per_update per tick) so that an update's cost stays bounded; the ticks are the same live and in
run-bag, so are the outputs. Outputs are stamped with data time (the latest JointState/Odometry stamp).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contact_dynamics_common.params import ConfigError

from ..inputs import RoverInputs, load_model
from .evaluate import Candidate, Obstacle, PostureEvaluator, grid_candidates, merge_evaluations
from .messages import evaluation_fields


@dataclass
class _Job:
    """An evaluation spread over ticks: its hypothesis, candidates, held joints, data stamp and warnings."""
    obstacle: object
    candidates: list
    current: dict
    stamp_ns: int
    warnings: list
    parts: list = field(default_factory=list)
    done: int = 0


def _per_joint(values: list, n: int, name: str) -> list:
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ConfigError(f"parameter '{name}' needs 1 or {n} values (one per posture joint), got {len(values)}")
    return values


class PosturePipeline:
    def __init__(self, params: dict, model=None):
        self.params = p = params
        self.model = model if model is not None else load_model(p)
        wheels = [w for w in p['contact_wheels_default'] if w]
        self.inputs = RoverInputs(self.model, p['max_state_age_s'], wheels, p['time_jump_s'])
        self.evaluator = PostureEvaluator(self.model, p['ground_mode'], p['rolling_constraint'],
                                          p['stability_margin_m'], p['energy_budget_j'], p['rank_tol'])
        joints = [j for j in p['posture_joints'] if j] or list(self.model.roles.posture_joints)
        bad = [j for j in joints if j not in self.model.jid]
        if bad:
            raise ConfigError(f"posture_joints {bad} are not joints of the model")
        n = len(joints)
        lo = _per_joint(p['posture_grid_min'], n, 'posture_grid_min')
        hi = _per_joint(p['posture_grid_max'], n, 'posture_grid_max')
        st = _per_joint(p['posture_grid_steps'], n, 'posture_grid_steps')
        grid = [list(np.linspace(a, b, int(s))) for a, b, s in zip(lo, hi, st)]
        self.grid = grid_candidates(joints, grid, p['speed_grid']) if n else \
            [Candidate({}, float(v), f'v={v:g}') for v in p['speed_grid']]
        self.candidates = None            # explicit list from the candidates topic
        self.evaluated_seq = 0
        self.last_status, self.level = 'waiting for an obstacle hypothesis', 'ok'
        self.last = None
        self.published = 0
        self.job: _Job | None = None      # the evaluation in progress (spread over ticks)
        self.evaluated_per_tick = 0

    def current_joints(self) -> dict:
        if self.inputs.joint_stamp is None:
            return {}
        return dict(zip(self.inputs.names, self.inputs.jpos))

    def _obstacle(self, h) -> Obstacle:
        return Obstacle(h.beta, h.wheels, h.distance, h.k, h.p, h.e, h.contact_model)

    def _warnings(self, has_joints: bool) -> list:
        out = [] if has_joints else ['no JointState yet: held joints at 0']
        if self.params['rolling_constraint'] and self.params['ground_mode'] != 'free' and has_joints \
                and self.inputs.slip() > self.params['slip_warning']:
            out.append(f'rolling constraint inconsistent with measured slip {self.inputs.slip():.2f}')
        return out

    def _fields(self, ev, obstacle, stamp_ns: int, warnings: list) -> dict:
        ev.warnings += [w for w in warnings if w not in ev.warnings]
        self.last = ev
        self.published += 1
        return evaluation_fields(ev, stamp_ns=stamp_ns, frame_id=self.params['base_frame'],
                                 model=self.model.roles.model_name, beta=obstacle.beta)

    def evaluate(self, obstacle, candidates=None, stamp_ns: int | None = None) -> dict:
        """PostureEvaluation fields for ``candidates`` (default: the explicit list or the grid), all at once (the
        service), stamped with ``stamp_ns`` or the data time of the inputs."""
        cands = candidates if candidates else (self.candidates or self.grid)
        ev = self.evaluator.evaluate(self.current_joints(), cands, self._obstacle(obstacle))
        stamp = stamp_ns if stamp_ns is not None else (self.inputs.data_stamp_ns() or obstacle.stamp_ns)
        return self._fields(ev, obstacle, stamp, self._warnings(self.inputs.joint_stamp is not None))

    def step(self, now_ns: int) -> dict | None:
        """One timer tick. An evaluation starts when a new hypothesis arrived or the time to contact is below
        horizon_s; it covers at most candidates_per_update candidates per tick and is published (stamped with the
        data time when it started) at the tick that completes it. Its inputs are held from the start."""
        if self.job is None:
            obs = self.inputs.obstacle
            if obs is None:
                return None
            new = obs.seq != self.evaluated_seq
            if not new and not self.inputs.time_to_contact() < self.params['horizon_s']:
                return None
            self.evaluated_seq = obs.seq
            self.job = _Job(obs, list(self.candidates or self.grid), self.current_joints(),
                            self.inputs.data_stamp_ns() or obs.stamp_ns,
                            self._warnings(self.inputs.joint_stamp is not None))
        job = self.job
        n = self.params['candidates_per_update']
        chunk = job.candidates[job.done:job.done + n]
        try:
            job.parts.append(self.evaluator.evaluate(job.current, chunk, self._obstacle(job.obstacle)))
        except (ValueError, np.linalg.LinAlgError) as exc:
            self.job = None
            self.last_status, self.level = f'evaluation failed: {exc}', 'error'
            return None
        job.done += len(chunk)
        self.evaluated_per_tick = len(chunk)
        if job.done < len(job.candidates):
            return None
        self.job = None
        fields = self._fields(merge_evaluations(job.parts), job.obstacle, job.stamp_ns, job.warnings)
        self.last_status = '; '.join(self.last.warnings) or 'ok'
        self.level = 'ok' if self.last.best >= 0 else 'warn'
        if self.last.best < 0:
            self.last_status = 'no feasible candidate; ' + self.last_status
        return fields

    def status(self) -> dict:
        out = dict(self.inputs.counts)
        out.update({'published': self.published, 'last_status': self.last_status, 'grid_candidates': len(self.grid),
                    'candidates_last_tick': self.evaluated_per_tick,
                    'evaluation_in_progress': f'{self.job.done}/{len(self.job.candidates)}' if self.job else 'none'})
        if self.inputs.last_error:
            out['last_input_error'] = self.inputs.last_error
        return out
