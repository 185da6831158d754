"""Machine description of a 6-UPS Stewart-Gough platform, loaded from YAML (config/pkm_machines/*.yaml).

Holds the base joints b_i in {W}, the platform joints p_i in {P}, the strut lumped-mass COM distances
(L_B from b_i; E at L_E = L - d_E), gravity, the home pose (COM position, z-x-z Euler angles) and the true or
CAD inertial parameters. ``load_machine`` rejects architecture-singular layouts (J rank-deficient at random
poses, e.g. the Griffis-Duffy self-motion pairings; spec sec. 1.4) and non-physical values.

The ``Machine`` record itself lives in ``machine.py`` (kinematics takes it from there); it is
re-exported here, so ``from pkm_identification.geometry import Machine`` keeps working.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from .kinematics import jacobian
from .machine import INERTIA_NAMES_12, GeometryError, Machine

__all__ = ['INERTIA_NAMES_12', 'GeometryError', 'Machine', 'check_architecture', 'load_machine',
           'machine_from_dict', 'machines_dir']


def machines_dir() -> Path:
    from contact_dynamics_common.cli import config_dir
    return config_dir() / 'pkm_machines'


def _array(doc: dict, key: str, shape: tuple) -> np.ndarray:
    if key not in doc:
        raise GeometryError(f"machine description has no '{key}'")
    a = np.asarray(doc[key], dtype=float)
    if a.shape != shape or not np.isfinite(a).all():
        raise GeometryError(f"'{key}' must be finite with shape {shape}, got {a.shape}")
    return a


def machine_from_dict(doc: dict, check: bool = True) -> Machine:
    """A Machine from a parsed YAML mapping; GeometryError with the reason when it cannot be used."""
    inertia = dict(doc.get('inertia') or {})
    missing = [k for k in INERTIA_NAMES_12 if k not in inertia]
    if missing:
        raise GeometryError(f"'inertia' lacks {', '.join(missing)}")
    for k in INERTIA_NAMES_12:
        v = float(inertia[k])
        if not np.isfinite(v) or v <= 0:
            raise GeometryError(f"inertia '{k}' = {v} must be finite and > 0")
        inertia[k] = v
    m = Machine(name=str(doc.get('name', 'unnamed')), base=_array(doc, 'base_joints', (6, 3)),
                platform=_array(doc, 'platform_joints', (6, 3)), L_B=float(doc.get('L_B', 0.1)),
                d_E=float(doc.get('d_E', 0.15)), gravity=_array(doc, 'gravity', (3,)),
                home_position=_array(doc, 'home_position', (3,)), home_euler=_array(doc, 'home_euler_zxz', (3,)),
                stroke=tuple(float(s) for s in doc.get('stroke', (0.0, 1e9))),
                strut_names=tuple(doc.get('strut_names', [f'strut_{i}' for i in range(1, 7)])),
                inertia=inertia)
    if len(m.strut_names) != 6 or len(set(m.strut_names)) != 6:
        raise GeometryError('strut_names must name 6 distinct struts')
    if check:
        check_architecture(m)
    return m


def load_machine(name_or_path: str, check: bool = True) -> Machine:
    """Load ``config/pkm_machines/<name>.yaml`` or a YAML file path."""
    p = Path(name_or_path)
    if not p.suffix:
        p = machines_dir() / f'{name_or_path}.yaml'
    if not p.is_file():
        known = sorted(f.stem for f in machines_dir().glob('*.yaml'))
        raise GeometryError(f"machine '{name_or_path}' not found (known: {', '.join(known)})")
    try:
        with open(p, encoding='utf-8') as f:
            doc = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise GeometryError(f"machine file '{p}' cannot be read: {problem}") from None
    if not isinstance(doc, dict):
        raise GeometryError(f"machine file '{p}' must be a mapping (joints, inertia, ...), got {type(doc).__name__}")
    return machine_from_dict(doc, check=check)


def check_architecture(m: Machine, n_poses: int = 24, seed: int = 0, tol: float = 1e-4,
                       dp: float = 0.04, da: float = np.radians(5)) -> float:
    """Smallest sigma_min/sigma_max of J over random poses around home; GeometryError if below ``tol``.

    An architecture-singular layout (Griffis-Duffy self-motion family) has rank(J) < 6 at every pose.
    Also refuses a home pose at the z-x-z Euler singularity (sin theta = 0).
    """
    if abs(np.sin(m.home_euler[1])) < 1e-3:
        raise GeometryError('home orientation is at the z-x-z Euler singularity (sin theta = 0)')
    rng = np.random.default_rng(seed)
    q = m.home_q + np.concatenate([rng.uniform(-dp, dp, (n_poses, 3)), rng.uniform(-da, da, (n_poses, 3))], axis=1)
    s = np.linalg.svd(jacobian(m, q), compute_uv=False)
    ratio = float((s[:, -1] / s[:, 0]).min())
    if not ratio > tol:
        raise GeometryError(f"machine '{m.name}' is architecture-singular: sigma_min/sigma_max of J = {ratio:.3g} "
                            f'at random poses (< {tol:g}); use another joint pairing')
    return ratio
