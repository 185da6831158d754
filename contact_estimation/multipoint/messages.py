"""MultiPointEstimate (Python) -> contact_dynamics/msg/MultiPointContactEstimate fields, shared by the node and
run-bag (a plain nested dict, so the live node and the offline writer publish the same content)."""
from __future__ import annotations

import numpy as np

from contact_dynamics_common.msgconv import ns_to_sec_nanosec

from .estimator import MultiPointEstimate

MSG_TYPE = 'contact_dynamics/msg/MultiPointContactEstimate'
TOPIC = '~/estimate'


def _xyz(v) -> dict:
    return {'x': float(v[0]), 'y': float(v[1]), 'z': float(v[2])}


def estimate_fields(est: MultiPointEstimate, latest, *, stamp_ns: int, frame_id: str) -> dict:
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    cs = latest.contacts if latest is not None else None
    extras = {k: (f'{v:.6g}' if isinstance(v, float) else str(v)) for k, v in est.extras.items() if k != 'stamp_ns'}
    cov = np.asarray(est.covariance, float)
    cov = np.where(np.isfinite(cov), cov, 1e300)
    return {
        'header': {'stamp': {'sec': sec, 'nanosec': nanosec}, 'frame_id': frame_id},
        'model': est.model,
        'algorithm': 'global_bounded_ls',
        'formulation': est.formulation,
        'stiffness': float(est.values[0]),
        'damping': float(est.values[1]),
        'friction': float(est.values[2]),
        'parameter_names': list(est.names),
        'covariance': cov.ravel().tolist(),
        'valid': bool(est.valid),
        'status': est.reason,
        'identifiable': [bool(b) for b in est.identifiable],
        'bounds_active': [bool(b) for b in est.bounds_active],
        'excitation': [float(e) for e in est.excitation],
        'rank': int(est.rank),
        'condition_number': float(min(est.condition_number, 1e300)),
        'residual_rms': float(est.residual_rms),
        'residual_fraction': float(min(est.residual_fraction, 1e300)),
        'samples_used': int(min(est.samples_used, 2**32 - 1)),
        'contact_count': 0 if cs is None else len(cs),
        'contact_points': [] if cs is None else [_xyz(r) for r in cs.r],
        'contact_normals': [] if cs is None else [_xyz(n) for n in cs.n],
        'interference': [] if cs is None else [float(d) for d in cs.delta],
        'interference_rate': [] if cs is None else [float(d) for d in cs.delta_dot],
        'extras': [{'key': k, 'value': v} for k, v in sorted(extras.items())],
    }


def publications(pipeline, params: dict) -> list[tuple[str, dict]]:
    """(relative topic, fields) of one update; nothing before the first instant with contact."""
    est = pipeline.estimate
    if est is None:
        return []
    frame = params['frame_id'] or pipeline.pose_frame or 'world'
    return [(TOPIC, estimate_fields(est, pipeline.latest, stamp_ns=pipeline.newest_ns, frame_id=frame))]
