"""ContactEstimate (Python) -> contact_dynamics/msg/ContactEstimate fields, shared by the node and run-bag.

The fields are built as a plain nested dict so that the live node (rclpy message) and the offline writer
(mcap serializer, no ROS needed) publish exactly the same content.
"""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from .contact_kind import unit_extras
from .estimate import ContactEstimate
from .models import damping_ratio

MSG_TYPE = 'contact_dynamics/msg/ContactEstimate'


def estimate_fields(est: ContactEstimate, *, stamp_ns: int, frame_id: str, apparent_mass: float = 0.0,
                    datum: float = 0.0, units: dict | None = None) -> dict:
    """Message fields of one estimate; the covariance is row-major over ``parameter_names``.

    ``units``: extras naming the contact type and units (``contact_kind.unit_extras``: ``contact_type``,
    ``units.stiffness`` N/m or N*m/rad, ...); the message's numbers are in those units.

    (Called once per estimate and tick: written with plain Python lookups, no per-field numpy calls.)
    """
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    names = est.names
    cov = np.asarray(est.covariance, dtype=float).ravel().tolist()
    if not est.extras.get('covariance_known', True):
        cov[0] = -1.0
    value = dict(zip(names, np.asarray(est.values, dtype=float).tolist()))
    stiffness, damping = value.get('stiffness', 0.0), value.get('damping', 0.0)
    identifiable_b = 'damping' in names and bool(est.identifiable[names.index('damping')])
    extras = {'bounds_active': ','.join([n for n, a in zip(names, est.bounds_active) if a]) or 'none',
              **(units or {})}
    for k, v in est.extras.items():
        if k == 'trust' and isinstance(v, dict):      # the trust checks, one key per check and figure
            for kind, figures in v.items():
                for name, x in (figures.items() if isinstance(figures, dict) else [('', figures)]):
                    key = '.'.join(filter(None, ('trust', kind, name)))
                    extras[key] = f'{x:.6g}' if isinstance(x, float) else str(x)
        elif k != 'covariance_known':
            extras[k] = f'{v:.6g}' if isinstance(v, float) else str(v)
    return {
        'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame_id},
        'algorithm': est.algorithm,
        'model': est.model,
        'stiffness_type': est.stiffness_type,
        'stiffness': stiffness,
        'damping': damping,
        'mass': value.get('mass', 0.0),
        'friction': value.get('friction', 0.0),
        'damping_ratio': damping_ratio(stiffness, damping, apparent_mass) if identifiable_b else 0.0,
        'parameter_names': list(names),
        'covariance': cov,
        'valid': bool(est.valid),
        'status': est.reason,
        'damping_identifiable': identifiable_b,
        'residual_rms': float(est.residual_rms),
        'condition_number': float(min(est.condition_number, 1e300)),
        'excitation': np.asarray(est.excitation, dtype=float).ravel().tolist(),
        'samples_used': int(min(max(est.samples_used, 0), 2**32 - 1)),
        'contact_datum': float(datum),
        'extras': [{'key': k, 'value': v} for k, v in sorted(extras.items())],
    }


def publications(pipeline, estimates: list[ContactEstimate], params: dict) -> list[tuple[str, dict]]:
    """(relative topic, fields) of one update: ~/<algorithm>/estimate for each, ~/estimate for the first."""
    if not pipeline.counts['samples_used']:
        return []
    frame = params['frame_id'] or pipeline.wrench_frame
    units = unit_extras(params)
    out = []
    for est in estimates:
        fields = estimate_fields(est, stamp_ns=pipeline.stamp_ns(est), frame_id=frame,
                                 apparent_mass=params['robot_apparent_mass'], datum=pipeline.datum,
                                 units=units)
        out.append((f'~/{est.algorithm}/estimate', fields))
        if est.algorithm == params['algorithms'][0]:
            out.append(('~/estimate', fields))
    return out
