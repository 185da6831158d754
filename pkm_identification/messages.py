"""PkmEstimate -> message fields (plain dicts), shared by the live node (rclpy) and run-bag (mcap writer).

~/parameters        contact_dynamics/ParameterEstimate: names, values, units, row-major covariance, flags,
                    excitation, validity/status (convergence and NIS from contact_dynamics_common.trust)
~/platform_inertia  geometry_msgs/InertiaStamped: m_p and diag(Ixxp, Iyyp, Izzp) in {P} (platform_frame), only
                    when the estimate is valid and all four are identified (a pure translation leaves the
                    platform inertias not_excited: then nothing is published here, the message has no sigma
                    or flag to say so)
~/predicted_effort  sensor_msgs/JointState: effort = Y(q, qd, qdd) theta of the newest sample (feed-forward)
"""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from .pipeline import MODEL, PkmEstimate

PARAM_TYPE = 'contact_dynamics/msg/ParameterEstimate'
INERTIA_TYPE = 'geometry_msgs/msg/InertiaStamped'
JOINT_TYPE = 'sensor_msgs/msg/JointState'


def _header(stamp_ns: int, frame: str) -> dict:
    sec, nanosec = ns_to_sec_nanosec(max(int(stamp_ns), 0))
    return {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame}


def parameter_fields(est: PkmEstimate, frame_id: str, machine: str) -> dict:
    extras = {'machine': machine, 'active': ','.join(est.active), 'frozen': str(est.frozen).lower(),
              'nis_mean': f'{est.nis_mean:.6g}', 'warnings': ' | '.join(est.warnings) or 'none'}
    for n, s in zip(est.names, est.std):
        extras[f'{n}_std'] = f'{s:.6g}'
    return {
        'header': _header(est.stamp_ns, frame_id),
        'model': MODEL,
        'algorithm': 'ukf',
        'names': list(est.names),
        'values': [float(v) for v in est.values],
        'units': list(est.units),
        'covariance': [float(v) for v in np.asarray(est.covariance).ravel()],
        'valid': bool(est.valid),
        'status': est.status,
        'residual_rms': float(est.residual_rms) if np.isfinite(est.residual_rms) else -1.0,
        'condition_number': float(min(est.condition_number, 1e300)),
        'excitation': [float(e) for e in est.excitation],
        'samples_used': int(min(est.samples_used, 2 ** 32 - 1)),
        'extras': [{'key': k, 'value': v} for k, v in sorted(extras.items())],
        'flags': list(est.flags),
    }


def inertia_fields(est: PkmEstimate, platform_frame: str) -> dict:
    v = dict(zip(est.names, est.values))
    return {'header': _header(est.stamp_ns, platform_frame),
            'inertia': {'m': float(v['m_p']), 'com': {'x': 0.0, 'y': 0.0, 'z': 0.0},
                        'ixx': float(v['Ixxp']), 'ixy': 0.0, 'ixz': 0.0, 'iyy': float(v['Iyyp']), 'iyz': 0.0,
                        'izz': float(v['Izzp'])}}


def effort_fields(est: PkmEstimate, joint_names, frame_id: str) -> dict:
    return {'header': _header(est.predicted_stamp_ns, frame_id), 'name': list(joint_names),
            'position': [float(x) for x in est.lengths], 'velocity': [],
            'effort': [float(x) for x in est.predicted_effort]}


PLATFORM = ('m_p', 'Ixxp', 'Iyyp', 'Izzp')


def platform_identified(est: PkmEstimate) -> bool:
    """The platform's mass and three inertias are all identified in a valid estimate."""
    fl = dict(zip(est.names, est.flags))
    return bool(est.valid) and all(fl.get(n) == 'identified' for n in PLATFORM)


def publications(est: PkmEstimate | None, params: dict) -> list[tuple[str, str, dict]]:
    """(relative topic, type, fields) of one update; nothing before the first processed sample.
    ~/platform_inertia only when ``platform_identified``."""
    if est is None:
        return []
    out = [('~/parameters', PARAM_TYPE, parameter_fields(est, params['frame_id'], params['machine']))]
    if platform_identified(est):
        out.append(('~/platform_inertia', INERTIA_TYPE, inertia_fields(est, params['platform_frame'])))
    if est.predicted_effort is not None:
        out.append(('~/predicted_effort', JOINT_TYPE, effort_fields(est, params['joint_names'], params['frame_id'])))
    return out


def summary_line(msg_type: str, last: dict) -> str | None:
    """run-bag's one line for a ParameterEstimate of this model (None for other messages)."""
    if msg_type != PARAM_TYPE or last.get('model') != MODEL:
        return None
    parts = [f'{n} = {v:.5g} ({f})' for n, v, f in zip(last['names'], last['values'], last['flags'])]
    return ', '.join(parts[:8]) + f"; valid = {last['valid']} ({last['status']})"
