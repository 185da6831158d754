"""Evaluation (Python) -> contact_dynamics/msg/PostureEvaluation fields, shared by node, service and run-bag."""
from __future__ import annotations

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

MSG_TYPE = 'contact_dynamics/msg/PostureEvaluation'


def candidate_fields(c) -> dict:
    return {'joint_names': list(c.joints), 'positions': [float(x) for x in c.joints.values()],
            'approach_speed': float(c.speed), 'label': c.label}


def evaluation_fields(ev, *, stamp_ns: int, frame_id: str, model: str, beta: float) -> dict:
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    o = [int(i) for i in ev.order]
    f = lambda a: [float(a[i]) for i in o]
    return {
        'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame_id},
        'model': model,
        'candidates': [candidate_fields(ev.candidates[i]) for i in o],
        't_c_free': f(ev.t_c_free), 't_c_rigid': f(ev.t_c_rigid), 'score': f(ev.score),
        'f_max_estimate': f(ev.f_max_estimate), 'v_max': f(ev.v_max),
        'feasible': [bool(ev.feasible[i]) for i in o],
        'reject_reason': [ev.reject_reason[i] for i in o],
        'best_index': 0 if ev.best >= 0 else -1,
        'ground_mode': ev.ground_mode,
        'beta_rad': float(beta),
        'warnings': list(ev.warnings),
    }
