"""impact_indicator processing without ROS: latest inputs -> one ImpactIndicator per tick (spec §7.3).

Each tick: synchronise the latest JointState and Odometry (stale or missing: no output, the reason in
``last_status``), project q̇ on the admissible set, evaluate T_c for the obstacle hypothesis (or the worst of
the virtual walls of ``beta_sweep_deg``), publish. The same class runs live and in run-bag.
"""
from __future__ import annotations

import numpy as np

from ..inputs import InputError, RoverInputs, load_model
from .indicator import evaluate
from .messages import indicator_fields


class ImpactPipeline:
    def __init__(self, params: dict, model=None):
        self.params = params
        self.model = model if model is not None else load_model(params)
        wheels = [w for w in params['contact_wheels_default'] if w]
        self.inputs = RoverInputs(self.model, params['max_state_age_s'], wheels, params['time_jump_s'])
        self.last_status = 'waiting for inputs'
        self.level = 'warn'
        self.cause = ''
        self.last = None
        self.published = 0

    def step(self, now_ns: int) -> dict | None:
        """Fields of the ImpactIndicator message for this tick, or None (reason in last_status/level)."""
        p, inp = self.params, self.inputs
        try:
            q, v = inp.state(now_ns)
        except InputError as exc:
            self.last_status, self.level = str(exc), ('error' if inp.joint_stamp or inp.odom_stamp else 'warn')
            self.cause = 'state'
            return None
        obs = inp.obstacle
        if obs is not None and p['obstacle_timeout_s'] > 0 and (now_ns - obs.stamp_ns) * 1e-9 > p['obstacle_timeout_s']:
            inp.obstacle = obs = None
        warnings = []
        try:
            if obs is not None:
                ind = evaluate(self.model, q, v, obs.beta, obs.wheels, p['ground_mode'], p['rolling_constraint'],
                               p['rank_tol'])
            else:
                best = None
                for b in p['beta_sweep_deg']:
                    cand = evaluate(self.model, q, v, np.deg2rad(b), inp.default_wheels, p['ground_mode'],
                                    p['rolling_constraint'], p['rank_tol'])
                    if best is None or cand.primary.t_c > best.primary.t_c:
                        best = cand
                ind = best
                warnings.append('no obstacle hypothesis: worst virtual wall of beta_sweep_deg')
        except (ValueError, np.linalg.LinAlgError) as exc:
            self.last_status, self.level = f'evaluation failed: {exc}', 'error'
            self.cause = 'evaluation'
            return None
        warnings += ind.warnings
        if p['rolling_constraint'] and p['ground_mode'] != 'free' and inp.slip() > p['slip_warning']:
            warnings.append(f'rolling constraint inconsistent with measured slip {inp.slip():.2f}')
        self.last = ind
        self.last_status = '; '.join(warnings) or 'ok'
        self.level = 'warn' if any('outside' in w or 'inconsistent' in w or 'not approaching' in w
                                   for w in warnings) else 'ok'
        self.published += 1
        return indicator_fields(ind, stamp_ns=inp.data_stamp_ns(), frame_id=p['base_frame'],
                                model=self.model.roles.model_name, wheel_names=self.model.wheel_names,
                                ttc=inp.time_to_contact(), status=self.last_status)

    def status(self) -> dict:
        out = dict(self.inputs.counts)
        out.update({'published': self.published, 'last_status': self.last_status})
        if self.inputs.last_error:
            out['last_input_error'] = self.inputs.last_error
        return out
