"""Geometry-mismatch sensitivity (agar_contact.md §3.9, thesis Fig. 5-12): keep a record's measured wrench and
trajectory, recompute the contact kinematics with perturbed payload parts (V-guides), re-estimate, and
tabulate the estimate errors in the format of §4.7 (estimate [|error| %], one column per modified guide and
one for all four; rows per modification; the two random combinations).

  contact-dynamics multipoint-sensitivity BAG [--geometry GEOMETRY.yaml] [--odom-topic T] [--wrench-topic T]
                                            --out DIR [--quick]
  contact-dynamics multipoint-sensitivity --simulate M2 --out DIR

The bag needs a payload Odometry and a wrench topic at the same stamps (default ``/payload/odom`` and
``/payload/wrench``, as ``contact-dynamics simulate multipoint`` writes them) and its truth (truth.yaml beside
it or custom_data ground_truth): the tables are errors against it (``multipoint-estimate`` needs no truth). The
geometry follows the rule of every multi-point tool (``config.geometry_source``: ``--geometry``, else
BAG/geometry.yaml, else the packaged ACU surrogate; one line says which); the sweep perturbs the ACU's V-guides
``vg1``..``vg4``, so the payload must have those parts. Wrong input: one line, exit 2.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from contact_estimation.geometry.body import CompoundBody, load_geometry
from contact_estimation.geometry.contacts import ContactKinematics, ContactSet
from contact_estimation.geometry.perturb import perturb
from contact_estimation.geometry.rotations import quat_to_matrix

from .estimator import estimate
from .simulate import Trajectory

GUIDES = ('vg1', 'vg2', 'vg3', 'vg4')
COLUMNS = GUIDES + ('all',)
#: (row label, kind, amount) of the thesis's study (m, or deg for rotations)
ROWS = (
    [('No geometry modifications', None, 0.0)]
    + [(f'{a:g} m back shift', 'back', a) for a in (1e-3, 2e-3, 5e-3)]
    + [(f'{a:g} m forward shift', 'forward', a) for a in (1e-6, 1e-5, 1e-4, 3e-4, 6e-4, 1e-3, 2e-3, 3e-3)]
    + [(f'{a:g} m side shift', 'side', a) for a in (1e-6, 1e-5, 1e-4, 1e-3)]
    + [(f'{a:g} deg rotation', 'rotation', a) for a in (1.0, 2.0, 5.0)]
    + [(f'{a:g} m size increase', 'size', a) for a in (1e-3, 2e-3)]
)
RANDOM = {
    'Random v-guide modifications 5': [('vg1', 'rotation', 1.0), ('vg2', 'side', 1e-3), ('vg3', 'forward', 1e-3),
                                       ('vg4', 'size', 2e-3)],
    'Random v-guide modifications 6': [('vg1', 'rotation', 1.0), ('vg1', 'forward', 1e-3), ('vg2', 'side', 1e-3),
                                       ('vg3', 'rotation', 1.0), ('vg3', 'forward', 1e-3), ('vg4', 'size', 1e-3),
                                       ('vg4', 'side', 1e-3)],
}
QUICK_ROWS = ('No geometry modifications', '0.001 m back shift', '0.005 m back shift', '0.0001 m forward shift',
              '0.0006 m forward shift', '0.003 m forward shift', '0.001 m side shift', '1 deg rotation',
              '0.001 m size increase')


@dataclass
class Result:
    row: str
    column: str
    values: np.ndarray       # k, b, mu
    errors: np.ndarray       # |relative error|, per parameter
    valid: bool
    reason: str


def run_sweep(trajectory: Trajectory, payload: CompoundBody, environment: CompoundBody, truth, *,
              rows=None, formulation: str = 'force', slide_eps: float = 1e-4, random: bool = True) -> list[Result]:
    """Estimate with every perturbation of ``rows`` (labels of ROWS; default all) on every column."""
    tr = trajectory
    R = quat_to_matrix(tr.q)
    env_parts = environment.world_parts()
    true = np.array([truth['stiffness'], truth['damping'], truth['friction']], float)
    cases = []
    for label, kind, amount in ROWS:
        if rows is not None and label not in rows:
            continue
        for col in COLUMNS:
            targets = GUIDES if col == 'all' else (col,)
            cases.append((label, col, [] if kind is None else [(g, kind, amount) for g in targets]))
    if random:
        cases += [(label, 'all', mods) for label, mods in RANDOM.items()]
    part_cache: dict = {}          # (part, its modifications) -> contacts of that part: unchanged parts reused

    def part_contacts(name, mods):
        key = (name, tuple(mods))
        if key not in part_cache:
            part = payload.part(name)
            for _, kind, amount in mods:
                part = perturb(part, kind, amount)
            kin = ContactKinematics([part], env_parts, slide_eps=slide_eps)
            part_cache[key] = kin.compute(R, tr.p, tr.v, tr.w)
        return part_cache[key]

    cache: dict = {}
    out = []
    for label, col, mods in cases:
        key = tuple(mods)
        if key not in cache:
            sets = [part_contacts(name, [m for m in mods if m[0] == name]) for name in payload.names]
            cs = _concat(sets, len(tr.t))
            cache[key] = estimate(cs, tr.force, tr.moment, formulation=formulation)
        e = cache[key]
        err = np.abs(e.values - true) / np.abs(true)
        out.append(Result(label, col, e.values.copy(), err, e.valid, e.reason))
    return out


def _concat(sets, T: int) -> ContactSet:
    cat = lambda name: np.concatenate([getattr(c, name) for c in sets])
    return ContactSet(cat('k'), cat('pair'), cat('r'), cat('n'), cat('t'), cat('delta'), cat('delta_dot'),
                      cat('sliding'), cat('lever'), sum(c.count for c in sets), cat('v_t'))


def _cell(r: Result | None, j: int) -> str:
    if r is None:
        return ''
    v = r.values[j]
    text = f'{v:.6g}' if j < 2 else f'{v:.4f}'
    return f'{text} [{100 * r.errors[j]:.2f}]'


def format_tables(results: list[Result], truth) -> str:
    """Three markdown tables (k, b, μ) in the layout of agar_contact.md §4.7."""
    by = {(r.row, r.column): r for r in results}
    rows = list(dict.fromkeys(r.row for r in results))
    titles = (f"Stiffness k (N/m): estimate [|error| %], truth {truth['stiffness']:g}",
              f"Damping b (kg/s): estimate [|error| %], truth {truth['damping']:g}",
              f"Friction coefficient mu (-): estimate [|error| %], truth {truth['friction']:g}")
    out = []
    for j, title in enumerate(titles):
        out += [f'**{title}**', '', '| Modification | v-guide 1 only | v-guide 2 only | v-guide 3 only | '
                'v-guide 4 only | all four |', '|---|---|---|---|---|---|']
        for row in rows:
            out.append(f'| {row} | ' + ' | '.join(_cell(by.get((row, c)), j) for c in COLUMNS) + ' |')
        out.append('')
    return '\n'.join(out)


def write_report(results: list[Result], truth, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / 'sensitivity.md').write_text(format_tables(results, truth), encoding='utf-8')
    data = [{'modification': r.row, 'column': r.column, 'stiffness': float(r.values[0]),
             'damping': float(r.values[1]), 'friction': float(r.values[2]),
             'error_percent': [float(100 * e) for e in r.errors], 'valid': bool(r.valid), 'reason': r.reason}
            for r in results]
    with open(out / 'sensitivity.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump({'truth': dict(truth), 'results': data}, f, sort_keys=False)
    return out / 'sensitivity.md'


def trajectory_from_bag(path: str | Path, odom: str = '/payload/odom', wrench: str = '/payload/wrench'):
    """(Trajectory in world axes, truth) of a bag written by ``contact-dynamics simulate multipoint``."""
    from contact_dynamics_common.bag import BagReader
    from contact_dynamics_common.params import ConfigError
    bag = BagReader(path)
    for topic in (odom, wrench):
        if topic not in bag.topics:
            raise ConfigError(f"{path}: topic '{topic}' is not in the bag (topics: {', '.join(sorted(bag.topics))})")
    o, w = bag.columns(odom), bag.columns(wrench)
    if 'orientation' not in o or 'force' not in w:
        raise ConfigError(f'{path}: {odom} must be nav_msgs/Odometry and {wrench} geometry_msgs/WrenchStamped')
    if not np.array_equal(o['stamp_ns'], w['stamp_ns']):
        raise ConfigError(f'{path}: the sensitivity replay needs {odom} and {wrench} at the same stamps')
    q = o['orientation'] / np.linalg.norm(o['orientation'], axis=1, keepdims=True)
    R = quat_to_matrix(q)
    rot = lambda a: np.einsum('nij,nj->ni', R, a)
    frame = w.get('frame_id', 'payload')
    F, M = (rot(w['force']), rot(w['torque'])) if frame != 'world' else (w['force'], w['torque'])
    t = (o['stamp_ns'] - o['stamp_ns'][0]) * 1e-9
    tr = Trajectory(t, o['position'], q, rot(o['linear']), rot(o['angular']), F, M, np.zeros(len(t), int))
    truth = bag.custom_data.get('ground_truth')
    if truth is None and (Path(path) / 'truth.yaml').is_file():
        truth = yaml.safe_load((Path(path) / 'truth.yaml').read_text())
    if truth is None:
        raise ConfigError(f'{path}: no ground truth (truth.yaml or custom_data ground_truth): the sensitivity tables '
                          'are errors against it; multipoint-estimate estimates without truth')
    return tr, truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='contact-dynamics multipoint-sensitivity', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('bag', nargs='?', help='a multi-point record (contact-dynamics simulate multipoint)')
    parser.add_argument('--simulate', choices=('M2', 'M3'), help='simulate the record instead of reading a bag')
    parser.add_argument('--geometry', help='geometry YAML (default: BAG/geometry.yaml, or the ACU surrogate)')
    parser.add_argument('--odom-topic', default='/payload/odom', help='payload Odometry topic (default /payload/odom)')
    parser.add_argument('--wrench-topic', default='/payload/wrench',
                        help='payload WrenchStamped topic (default /payload/wrench)')
    parser.add_argument('--out', required=True, help='directory for sensitivity.md and sensitivity.yaml')
    parser.add_argument('--formulation', default='force', choices=('force', 'moment', 'force_moment'))
    parser.add_argument('--quick', action='store_true', help='a subset of the rows')
    args = parser.parse_args(argv)
    if args.simulate:
        from .scenarios import gravity_drop
        rec = gravity_drop(args.simulate)
        tr, truth = rec.trajectory, rec.truth
        from .acu import acu_geometry
        payload, env = load_geometry(args.geometry) if args.geometry else acu_geometry()
    elif args.bag:
        from contact_dynamics_common.params import ConfigError

        from .config import describe_sources, geometry_source
        tr, truth = trajectory_from_bag(args.bag, odom=args.odom_topic, wrench=args.wrench_topic)
        src = geometry_source(args.geometry or '', bag=args.bag)
        payload, env = src.payload, src.environment
        print(describe_sources(src, {'odometry': args.odom_topic, 'wrench': args.wrench_topic}))
        missing = [g for g in GUIDES if g not in payload.names]
        if missing:
            raise ConfigError(f"geometry {src.path}: the sweep perturbs the ACU V-guides {', '.join(GUIDES)}; "
                              f"the payload has no {', '.join(missing)} (parts: {', '.join(payload.names)})")
    else:
        parser.error('give a BAG or --simulate')
    results = run_sweep(tr, payload, env, truth, rows=QUICK_ROWS if args.quick else None,
                        formulation=args.formulation)
    path = write_report(results, truth, args.out)
    print(path.read_text())
    print(f'wrote {path} and {path.with_suffix(".yaml")}')
    return 0
