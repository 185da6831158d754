"""posture_evaluator processing without ROS (spec §5.3, §7.3): candidates from the parameter grid or an explicit
list, evaluated against the obstacle hypothesis when a new one arrives, while the time to contact is below
horizon_s, or on request (the service). The same class runs live and in run-bag.
"""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.params import ConfigError

from ..inputs import RoverInputs, load_model
from .evaluate import Candidate, Obstacle, PostureEvaluator, grid_candidates
from .messages import evaluation_fields


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
        self.inputs = RoverInputs(self.model, p['max_state_age_s'], wheels)
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

    def current_joints(self) -> dict:
        if self.inputs.joint_stamp is None:
            return {}
        return dict(zip(self.inputs.names, self.inputs.jpos))

    def evaluate(self, obstacle, candidates=None, stamp_ns: int = 0) -> dict:
        """PostureEvaluation fields for ``candidates`` (default: the explicit list or the grid)."""
        cands = candidates if candidates else (self.candidates or self.grid)
        obs = Obstacle(obstacle.beta, obstacle.wheels, obstacle.distance, obstacle.k, obstacle.p, obstacle.e,
                       obstacle.contact_model)
        ev = self.evaluator.evaluate(self.current_joints(), cands, obs)
        if self.inputs.joint_stamp is None:
            ev.warnings.append('no JointState yet: held joints at 0')
        if self.params['rolling_constraint'] and self.params['ground_mode'] != 'free' \
                and self.inputs.joint_stamp is not None and self.inputs.slip() > self.params['slip_warning']:
            ev.warnings.append(f'rolling constraint inconsistent with measured slip {self.inputs.slip():.2f}')
        self.last = ev
        self.published += 1
        return evaluation_fields(ev, stamp_ns=stamp_ns, frame_id=self.params['base_frame'],
                                 model=self.model.roles.model_name, beta=obstacle.beta)

    def step(self, now_ns: int) -> dict | None:
        """An evaluation when a new hypothesis arrived or the time to contact is below horizon_s."""
        obs = self.inputs.obstacle
        if obs is None:
            return None
        new = obs.seq != self.evaluated_seq
        if not new and not self.inputs.time_to_contact() < self.params['horizon_s']:
            return None
        self.evaluated_seq = obs.seq
        try:
            fields = self.evaluate(obs, stamp_ns=now_ns)
        except (ValueError, np.linalg.LinAlgError) as exc:
            self.last_status, self.level = f'evaluation failed: {exc}', 'error'
            return None
        self.last_status = '; '.join(self.last.warnings) or 'ok'
        self.level = 'ok' if self.last.best >= 0 else 'warn'
        if self.last.best < 0:
            self.last_status = 'no feasible candidate; ' + self.last_status
        return fields

    def status(self) -> dict:
        out = dict(self.inputs.counts)
        out.update({'published': self.published, 'last_status': self.last_status, 'grid_candidates': len(self.grid)})
        if self.inputs.last_error:
            out['last_input_error'] = self.inputs.last_error
        return out
