"""Machine description of a 6-UPS Stewart-Gough platform, loaded from YAML (config/pkm_machines/*.yaml).

The format is documented in doc/pkm_machines.md: the base joints b_i in {W}, the platform joints p_i in
{P}, the strut lumped-mass COM distances (L_B from b_i; E at L_E = L - d_E), gravity, the home pose (COM
position, z-x-z Euler angles), the admissible stroke and the CAD inertial parameters (12-parameter form).
``load_machine`` refuses, with one line naming the file and the key: an unknown key (a misspelt key is
never ignored), a missing required key, a wrong shape, a value that is not a finite number, a value out of
its physical range or in the wrong unit (lengths beyond ``MAX_LENGTH`` m - millimetres -, angles beyond
2 pi - degrees -, a home strut length outside the stroke), and architecture-singular layouts (J
rank-deficient at random poses, e.g. the Griffis-Duffy self-motion pairings; spec sec. 1.4).

The ``Machine`` record itself lives in ``machine.py`` (kinematics takes it from there); it is
re-exported here, so ``from pkm_identification.geometry import Machine`` keeps working.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from .kinematics import jacobian, pose
from .machine import INERTIA_NAMES_12, GeometryError, Machine

__all__ = ['INERTIA_NAMES_12', 'GeometryError', 'KEYS', 'MAX_LENGTH', 'Machine', 'check_architecture',
           'find_machine_file', 'finite_scalar', 'load_machine', 'machine_from_dict', 'machines_dir']

#: every key of a machine file: (required, what it is); anything else is refused
KEYS = {
    'name': (False, 'label of the machine (default: the file name)'),
    'strut_names': (False, '6 distinct strut joint names (default strut_1..strut_6)'),
    'base_joints': (True, '(6, 3) base joint centres b_i in {W} [m]'),
    'platform_joints': (True, '(6, 3) platform joint centres p_i in {P} [m]'),
    'L_B': (True, 'COM of the strut body B from b_i along the strut [m]'),
    'd_E': (True, 'COM of the extending body E from p_i back along the strut [m]'),
    'gravity': (True, '(3,) gravity in {W} [m/s^2]'),
    'home_position': (True, '(3,) platform COM at home in {W} [m]'),
    'home_euler_zxz': (True, '(3,) home orientation, z-x-z Euler angles [rad]'),
    'stroke': (False, '[min, max] admissible strut length [m] (default: unbounded)'),
    'inertia': (True, 'the 12 CAD inertial parameters [kg, kg*m^2]'),
}
#: a length beyond this [m] is taken for a unit error (millimetres)
MAX_LENGTH = 50.0
#: a gravity norm beyond this [m/s^2] is taken for a unit error
MAX_GRAVITY = 100.0


def machines_dir() -> Path:
    from contact_dynamics_common.paths import config_dir
    return config_dir() / 'pkm_machines'


def finite_scalar(v) -> float | None:
    """A YAML scalar as a finite float (a string such as '1e-3', which YAML 1.1 reads as text, too); None
    for anything else ('0.1 m', true, a list, nan)."""
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def _number(doc: dict, key: str, low: float, high: float, unit: str, hint: str = '') -> float:
    v = finite_scalar(doc[key])
    if v is None:
        raise GeometryError(f"'{key}' must be a finite number in {unit}, got {doc[key]!r}")
    if not low < v <= high:
        raise GeometryError(f"'{key}' = {v:g} {unit} is outside ({low:g}, {high:g}]{hint}")
    return float(v)


def _array(doc: dict, key: str, shape: tuple, unit: str, bound: float | None = None, hint: str = '') -> np.ndarray:
    try:
        a = np.asarray(doc[key], dtype=float)
        if a.dtype != float or isinstance(doc[key], (bool, str)):
            raise TypeError
    except (TypeError, ValueError):
        raise GeometryError(f"'{key}' must be numbers with shape {shape} in {unit}, got {doc[key]!r}") from None
    if a.shape != shape:
        raise GeometryError(f"'{key}' must have shape {shape} ({unit}), got {a.shape}")
    if not np.isfinite(a).all():
        raise GeometryError(f"'{key}' must be finite ({unit})")
    if bound is not None and np.abs(a).max() > bound:
        raise GeometryError(f"'{key}' has |value| {np.abs(a).max():g} > {bound:g} {unit}{hint}")
    return a


def machine_from_dict(doc: dict, check: bool = True, default_name: str = 'unnamed') -> Machine:
    """A Machine from a parsed YAML mapping; GeometryError with a one-line reason naming the key when it
    cannot be used (unknown or missing key, wrong shape, not finite, out of range, wrong unit)."""
    unknown = [str(k) for k in doc if k not in KEYS]
    if unknown:
        raise GeometryError(f"unknown key '{unknown[0]}' (a machine file has: {', '.join(KEYS)})")
    missing = [k for k, (required, _) in KEYS.items() if required and k not in doc]
    if missing:
        raise GeometryError(f"missing key '{missing[0]}': {KEYS[missing[0]][1]}")
    mm = ' (lengths are in m: millimetres?)'
    inertia = doc['inertia']
    if not isinstance(inertia, dict):
        raise GeometryError(f"'inertia' must be a mapping of {', '.join(INERTIA_NAMES_12)}, "
                            f"got {type(inertia).__name__}")
    extra = [str(k) for k in inertia if k not in INERTIA_NAMES_12]
    if extra:
        raise GeometryError(f"unknown key 'inertia.{extra[0]}' (the inertia keys: {', '.join(INERTIA_NAMES_12)})")
    lacking = [k for k in INERTIA_NAMES_12 if k not in inertia]
    if lacking:
        raise GeometryError(f"'inertia' lacks {', '.join(lacking)}")
    inertia_si = {}
    for k in INERTIA_NAMES_12:
        v = finite_scalar(inertia[k])
        unit = 'kg' if k.startswith('m_') else 'kg*m^2'
        if v is None or v <= 0:
            raise GeometryError(f"inertia '{k}' = {inertia[k]!r} must be a finite number > 0 in {unit}")
        inertia_si[k] = v
    base = _array(doc, 'base_joints', (6, 3), 'm', MAX_LENGTH, mm)
    platform = _array(doc, 'platform_joints', (6, 3), 'm', MAX_LENGTH, mm)
    gravity = _array(doc, 'gravity', (3,), 'm/s^2', MAX_GRAVITY)
    home_position = _array(doc, 'home_position', (3,), 'm', MAX_LENGTH, mm)
    home_euler = _array(doc, 'home_euler_zxz', (3,), 'rad', 2 * np.pi, ' (angles are in rad: degrees?)')
    L_B = _number(doc, 'L_B', 0.0, MAX_LENGTH, 'm', mm)
    d_E = _number(doc, 'd_E', 0.0, MAX_LENGTH, 'm', mm)
    stroke = (0.0, np.inf)
    if 'stroke' in doc:
        s = _array(doc, 'stroke', (2,), 'm', MAX_LENGTH, mm)
        if not 0.0 <= s[0] < s[1]:
            raise GeometryError(f"'stroke' = [{s[0]:g}, {s[1]:g}] m must satisfy 0 <= min < max")
        stroke = (float(s[0]), float(s[1]))
    names = doc.get('strut_names', [f'strut_{i}' for i in range(1, 7)])
    if (not isinstance(names, list) or len(names) != 6 or not all(isinstance(n, str) and n.strip() for n in names)
            or len(set(names)) != 6):
        raise GeometryError(f"'strut_names' must be a list of 6 distinct non-empty names, got {names!r}")
    name = doc.get('name', default_name)
    if not isinstance(name, str) or not name.strip():
        raise GeometryError(f"'name' must be a non-empty string, got {name!r}")
    m = Machine(name=name, base=base, platform=platform, L_B=L_B, d_E=d_E, gravity=gravity,
                home_position=home_position, home_euler=home_euler, stroke=stroke, strut_names=tuple(names),
                inertia=inertia_si)
    L_home = pose(m, m.home_q).L[0]
    if not np.isfinite(L_home).all() or L_home.min() <= 0:
        raise GeometryError("'home_position': a strut has zero length at home (b_i = R p_i + r_c)")
    if 'stroke' in doc and not ((L_home >= stroke[0]) & (L_home <= stroke[1])).all():
        i = int(np.argmax((L_home < stroke[0]) | (L_home > stroke[1])))
        raise GeometryError(f"'stroke' = [{stroke[0]:g}, {stroke[1]:g}] m does not contain the home length of "
                            f"{names[i]} ({L_home[i]:.4g} m, from the joints and the home pose)")
    if check:
        check_architecture(m)
    return m


def find_machine_file(name_or_path: str | Path, base_dir: str | Path | None = None) -> Path:
    """The machine file: a bare name (no suffix) is ``config/pkm_machines/<name>.yaml``; a relative path
    is looked up beside ``base_dir`` (the params file's directory) first, then in the working directory;
    GeometryError (one line: where it looked, the known names) when none exists."""
    p = Path(name_or_path)
    if not p.suffix and not p.is_absolute() and len(p.parts) == 1:
        q = machines_dir() / f'{p}.yaml'
        if q.is_file():
            return q
        known = sorted(f.stem for f in machines_dir().glob('*.yaml'))
        raise GeometryError(f"machine '{name_or_path}' not found (known: {', '.join(known)}; "
                            'or a path to a .yaml machine file)')
    tried = []
    if not p.is_absolute() and base_dir is not None:
        tried.append(Path(base_dir) / p)
    tried.append(p)
    for q in tried:
        if q.is_file():
            return q
    raise GeometryError(f"machine file '{name_or_path}' not found (looked for {' and '.join(str(q) for q in tried)})")


def load_machine(name_or_path: str | Path, check: bool = True, base_dir: str | Path | None = None) -> Machine:
    """Load ``config/pkm_machines/<name>.yaml`` or a YAML machine file (relative to ``base_dir``, then
    to the working directory); GeometryError naming the file and the key when it cannot be used."""
    p = find_machine_file(name_or_path, base_dir)
    try:
        with open(p, encoding='utf-8') as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f' at line {mark.line + 1}' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise GeometryError(f"machine file '{p}' cannot be read{where}: {problem}") from None
    if not isinstance(doc, dict):
        raise GeometryError(f"machine file '{p}' must be a mapping (joints, inertia, ...), got {type(doc).__name__}")
    try:
        return machine_from_dict(doc, check=check, default_name=p.stem)
    except GeometryError as exc:
        raise GeometryError(f"machine file '{p}': {exc}") from None


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
