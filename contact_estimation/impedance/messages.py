"""ImpedanceProfile (Python) -> contact_dynamics/msg/ImpedanceProfile fields, shared by the node and run-bag.

Plain nested dicts, so that the live node (rclpy message) and the offline writer (mcap, no ROS) publish
exactly the same content.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from .segmented import PARAMS, UNITS, ImpedanceProfile

if TYPE_CHECKING:
    from .pipeline import ImpedancePipeline

MSG_TYPE = 'contact_dynamics/msg/ImpedanceProfile'
TOPIC = '~/profile'


def _f(a) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=float).ravel()]


def profile_fields(p: ImpedanceProfile, *, stamp_ns: int, frame_id: str, joint_name: str, force_source: str,
                   algorithm: str, samples_used: int, extras: dict | None = None) -> dict:
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    out = {'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame_id},
           'model': p.model, 'algorithm': algorithm, 'joint_name': joint_name, 'force_source': force_source,
           'edges': _f(p.edges), 'parameter_order': list(PARAMS), 'units': list(UNITS)}
    for d, dn in enumerate(('pos', 'neg')):
        for i, name in enumerate(PARAMS):
            out[f'{name}_{dn}'] = _f(p.theta[d, :, i])
        out[f'covariance_{dn}'] = _f(p.cov[d])
        out[f'kappa_{dn}'] = _f(np.minimum(p.kappa[d], 1e300))
        out[f'samples_{dn}'] = _f(p.n[d])
        out[f'residual_rms_{dn}'] = _f(p.residual_rms[d])
        out[f'valid_{dn}'] = [bool(v) for v in p.valid[d]]
        out[f'mass_stiffness_separable_{dn}'] = [bool(v) for v in p.separable[d]]
        out[f'status_{dn}'] = list(p.reason[d])
    out['friction'] = _f(p.friction())
    out['spring_offset_force'] = _f(p.spring_offset_force())
    valid = bool(p.valid.all())
    bad = int((~p.valid).sum())
    out['valid'] = valid
    out['status'] = ('ok' if valid else
                     f'{bad} of {p.valid.size} (segment, direction) bins not valid (see status_*)')
    out['samples_used'] = int(samples_used)
    out['extras'] = [{'key': k, 'value': v if isinstance(v, str) else f'{v:.6g}'}
                     for k, v in sorted((extras or {}).items())]
    return out


def summary_line(msg_type: str, fields: dict) -> str | None:
    """run-bag's one-line summary of an ImpedanceProfile."""
    if msg_type != MSG_TYPE:
        return None
    def r(name):  # noqa: E306
        return '[' + ' '.join(f'{v:.4g}' for v in fields[name]) + ']'
    return (f"valid = {fields['valid']}; k+ = {r('stiffness_pos')} N/m; b+ = {r('damping_pos')}; "
            f"m+ = {r('mass_pos')}")


def publication(pipeline: ImpedancePipeline, params: dict) -> dict | None:
    """Fields of the current profile (None before the first sample updated it)."""
    if not pipeline.counts['samples_used']:
        return None
    frame = params['frame_id'] or pipeline.wrench_frame or params['joint_name']
    extras = {'sample_rate_hz': pipeline.conditioner.measured_rate,
              'cutoff_frequency_hz': params['cutoff_frequency'],
              'forgetting_factor': params['forgetting_factor'], 'min_velocity': params['min_velocity'],
              'covariance_correlation_samples': pipeline.conditioner.correlation,
              'unpaired': float(pipeline.counts['unpaired']),
              'delay_s': pipeline.conditioner.delay_s,
              'bridged_samples': float(pipeline.conditioner.bridged)}
    return profile_fields(pipeline.profile(), stamp_ns=pipeline.newest_ns, frame_id=frame,
                          joint_name=params['joint_name'], force_source=params['force_source'],
                          algorithm='recursive_segmented_ls', samples_used=pipeline.counts['samples_used'],
                          extras=extras)
