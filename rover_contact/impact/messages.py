"""Indicator (Python) -> contact_dynamics/msg/ImpactIndicator fields, shared by the node and run-bag."""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

MSG_TYPE = 'contact_dynamics/msg/ImpactIndicator'


def indicator_fields(ind, *, stamp_ns: int, frame_id: str, model: str, wheel_names: list, ttc: float,
                     status: str = 'ok') -> dict:
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    r = ind.primary
    mode = ind.ground_mode if ind.ground_mode != 'both' else ('rigid' if r is ind.rigid else 'free')
    return {
        'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame_id},
        'model': model,
        't_total': float(r.t_total), 't_c': float(r.t_c), 't_a': float(r.t_a),
        'impact_fraction': float(r.impact_fraction),
        'm_eff': [float(x) for x in np.asarray(r.m_eff).ravel()],
        'v_c': [float(x) for x in r.v_c],
        't_c_per_contact': [float(x) for x in r.t_c_per_contact],
        'contact_wheels': list(ind.wheels),
        'beta_rad': [float(ind.beta)] * len(ind.wheels),
        'ground_mode': mode,
        't_c_free': float(ind.free.t_c) if ind.free is not None else float('nan'),
        't_c_rigid': float(ind.rigid.t_c) if ind.rigid is not None else float('nan'),
        'ground_active': [w for w, a in zip(wheel_names, ind.ground_active) if a],
        'time_to_contact': float(ttc),
        'constraint_residual_energy': float(ind.residual_energy),
        'rank_jc': float(r.rank_jc),
        'valid': True,
        'status': status,
    }
