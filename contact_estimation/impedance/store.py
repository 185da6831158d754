"""Save and load an impedance profile as YAML (the table of ``ImpedanceProfile.rows()`` plus the edges),
for haptic playback with ``ImpedanceProfile.force(x, v, a)`` or a controller; NaN stays NaN (YAML .nan)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from .segmented import DIRECTIONS, PARAMS, UNITS, ImpedanceProfile

FORMAT = 'contact_dynamics/impedance_profile/1'


def save_profile(p: ImpedanceProfile, path: str | Path, meta: dict | None = None) -> Path:
    """Write the profile (edges, per-row values, standard errors, covariances, validity) to ``path``."""
    rows = p.rows()
    for r, (d, j) in zip(rows, [(d, j) for d in range(2) for j in range(p.segments)]):
        r['covariance'] = [float(v) for v in p.cov[d, j].ravel()]
        r['unique_variance_a_v_x'] = [float(v) for v in p.unique_variance[d, j, :3]]
    doc = {'format': FORMAT, 'model': p.model, 'units': dict(zip(PARAMS, UNITS)),
           'edges': [float(e) for e in p.edges], 'options': plain(p.options), **plain(meta or {}),
           'segments': rows}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + '.tmp')
    with open(tmp, 'w', encoding='utf-8') as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    tmp.replace(path)                          # atomic: a reader never sees half a file
    return path


def load_profile(path: str | Path) -> ImpedanceProfile:
    """The profile written by :func:`save_profile` (ValueError if the file is not one)."""
    with open(path, encoding='utf-8') as fh:
        doc = yaml.safe_load(fh)
    if not isinstance(doc, dict) or doc.get('format') != FORMAT:
        raise ValueError(f'{path} is not an impedance profile ({FORMAT})')
    edges = np.asarray(doc['edges'], dtype=float)
    nseg = len(edges) - 1
    shp = (2, nseg)
    theta = np.full(shp + (4,), np.nan)
    cov = np.full(shp + (4, 4), np.nan)
    n, kappa, rms, r2 = (np.zeros(shp) for _ in range(4))
    uv = np.full(shp + (4,), np.nan)
    valid, sep, damp = (np.zeros(shp, bool) for _ in range(3))
    reason = [[''] * nseg for _ in range(2)]
    for r in doc['segments']:
        d, j = DIRECTIONS.index(r['direction']), int(r['segment'])
        theta[d, j] = [r[name] for name in PARAMS]
        cov[d, j] = np.asarray(r['covariance'], dtype=float).reshape(4, 4)
        n[d, j], kappa[d, j], rms[d, j], r2[d, j] = r['n'], r['kappa'], r['residual_rms'], r['r2']
        uv[d, j, :3] = r['unique_variance_a_v_x']
        valid[d, j], sep[d, j] = r['valid'], r['mass_stiffness_separable']
        damp[d, j], reason[d][j] = r['damping_identifiable'], r['reason']
    return ImpedanceProfile(edges=edges, theta=theta, cov=cov, n=n.astype(np.int64), kappa=kappa,
                            residual_rms=rms, r2=r2, unique_variance=uv,
                            column_variance=np.full(shp + (4,), np.nan), valid=valid, separable=sep,
                            damping_identifiable=damp, reason=reason,
                            options=doc.get('options', {}), model=doc.get('model', ''))


def plain(v):
    """numpy values and containers to plain Python (str keys), for YAML."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    return v
