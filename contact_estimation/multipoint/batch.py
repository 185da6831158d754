"""Offline multi-point identification of a recorded bag (agar_contact.md §3.6 modes, F17–F19):

  contact-dynamics multipoint-estimate BAG [--config PARAMS.yaml] [--geometry G.yaml] [--wrench-topic T]
                                           [--odom-topic T] [--report DIR] [--formulation force]
                                           [--kinematics FILE.npz] [--mode both|kinematics|estimate]

Inputs as the node and run-bag take them: the ``multipoint_contact_estimator`` section of ``--config``
(topics, ``wrench_expressed_in``, ``geometry_file``, ``formulation``, ``moment_scale``,
``slide_speed_threshold`` and the verdict thresholds; the streaming-only ones — rates, windows, queues, gaps —
do not apply to a whole-record fit), then the flags over it. Geometry by the one rule
(``config.geometry_source``): ``--geometry`` / ``geometry_file``, else ``BAG/geometry.yaml``, else the
packaged default; the first line printed names the file, the rule and the topics. The pose is
nav_msgs/Odometry (``pose_source: pose`` is refused: run-bag differentiates and interpolates PoseStamped);
wrench and pose samples are paired on equal stamps (the count is printed). No ground truth is needed: when the
bag has one (``custom_data`` ``ground_truth`` or ``BAG/truth.yaml``) the truth and the errors are printed and
written too. A missing topic, a topic of another type, no equal stamps or a bad geometry file: one line on
stderr, exit 2.

- ``kinematics``: compute the contact kinematics of every sample (pose + twist from the Odometry topic) and
  save them (``--kinematics FILE.npz``), the toolbox's cached intermediate data;
- ``estimate``: estimate from saved kinematics plus the bag's wrench;
- ``both`` (default): one after the other.
The report: ``summary.yaml`` (global estimate with covariance, verdict, rank, condition, residual, the
geometry file and topics used, the truth when known), ``local.csv`` (per instant: contact count, local rank,
local k, b, μ; rank < 3 = not identifiable at that instant, e.g. a one-contact phase), ``contacts.png``
(contact count and local estimates over time, final contact points).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.params import ConfigError
from contact_estimation.geometry.contacts import ContactKinematics, ContactSet
from contact_estimation.geometry.rotations import quat_to_matrix

from .config import NODE_NAME, PARAMS, describe_sources, geometry_source
from .estimator import Thresholds, estimate, local_fits, measurement, regressor, robust_noise
from .simulate import Trajectory

WRENCH = 'geometry_msgs/msg/WrenchStamped'
ODOM = 'nav_msgs/msg/Odometry'

FIELDS = ('k', 'pair', 'r', 'n', 't', 'delta', 'delta_dot', 'sliding', 'lever', 'count', 'v_t')


def save_kinematics(cs: ContactSet, path: str | Path, stamps_ns: np.ndarray) -> None:
    np.savez_compressed(path, stamp_ns=stamps_ns, **{f: getattr(cs, f) for f in FIELDS})


def load_kinematics(path: str | Path) -> tuple[ContactSet, np.ndarray]:
    d = np.load(path)
    return ContactSet(*(d[f] for f in FIELDS)), d['stamp_ns']


def plot(path: Path, t, cs: ContactSet, fits, est) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    ax[0, 0].step(t, cs.count, where='post')
    ax[0, 0].set(xlabel='t [s]', ylabel='contacts', title='contact count')
    ok = fits.rank == 3
    for j, (name, value) in enumerate((('k [N/m]', est.values[0]), ('b [N s/m]', est.values[1]))):
        a = ax[0, 1] if j == 0 else ax[1, 0]
        a.plot(t[ok], fits.theta[ok, j], '.', ms=2, label='local (rank 3)')
        a.axhline(value, color='k', lw=1, label='global')
        a.set(xlabel='t [s]', ylabel=name, yscale='symlog')
        a.legend(fontsize=8)
    last = cs.k == cs.k.max() if len(cs) else np.zeros(0, bool)
    ax[1, 1].plot(cs.r[last, 0], cs.r[last, 1], 'o')
    ax[1, 1].quiver(cs.r[last, 0], cs.r[last, 1], cs.n[last, 0], cs.n[last, 1], scale=20)
    ax[1, 1].set(xlabel='x [m]', ylabel='y [m]', title='contacts at the last sample', aspect='equal')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def settings(config: str | None, overrides: dict) -> dict:
    """The node's parameters from the params file's ``multipoint_contact_estimator`` section (validated as the
    node and run-bag validate them) with the command-line values over them."""
    from contact_dynamics_common.cli.run import FRAMEWORK_PARAMS
    from contact_dynamics_common.ros.params import load_params_file, read_params_file, validate_all
    raw = {}
    if config:
        read_params_file(config)                        # missing / not YAML / not a mapping: one line
        raw = {k: v for k, v in load_params_file(config, NODE_NAME).items()
               if k not in FRAMEWORK_PARAMS and not k.startswith('qos_overrides.')}
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return validate_all(PARAMS, raw)
    except ConfigError as exc:
        raise ConfigError(f'{config} [{NODE_NAME}]: {exc}' if config else str(exc)) from None


def read_record(bag_path: str, wrench_topic: str, odom_topic: str, wrench_expressed_in: str = 'payload'):
    """(Trajectory in world axes, stamps ns, wrench samples, truth or None) of a bag: Odometry poses and twists
    and the WrenchStamped samples at equal stamps. ConfigError naming the topic or what is missing."""
    from contact_dynamics_common.bag import BagReader
    bag = BagReader(bag_path)
    for topic, type_name in ((wrench_topic, WRENCH), (odom_topic, ODOM)):
        if topic not in bag.topics:
            raise ConfigError(f"input topic {topic} is not in the bag (topics: {', '.join(sorted(bag.topics))}); "
                              'set wrench_topic / odom_topic in --config or --wrench-topic / --odom-topic')
        if bag.topics[topic] != type_name:
            raise ConfigError(f'{topic} has type {bag.topics[topic]} in the bag, expected {type_name}')
    o, w = bag.columns(odom_topic), bag.columns(wrench_topic)
    _, io, iw = np.intersect1d(o['stamp_ns'], w['stamp_ns'], assume_unique=False, return_indices=True)
    if len(io) < 7:
        raise ConfigError(f'{len(io)} of the {len(w["stamp_ns"])} {wrench_topic} samples have a {odom_topic} '
                          'sample at the same stamp (multipoint-estimate pairs equal stamps; run-bag '
                          'interpolates the pose at the wrench stamps)')
    q = o['orientation'][io]
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    if not np.all(np.isfinite(q)) or np.any(norm < 1e-6):
        raise ConfigError(f'{odom_topic}: a zero or non-finite orientation quaternion')
    q = q / norm
    R = quat_to_matrix(q)
    rot = lambda a: np.einsum('nij,nj->ni', R, a)       # noqa: E731  payload (child) axes -> world
    F, M = w['force'][iw], w['torque'][iw]
    if wrench_expressed_in == 'payload':
        F, M = rot(F), rot(M)
    stamps = o['stamp_ns'][io]
    t = (stamps - stamps[0]) * 1e-9
    tr = Trajectory(t, o['position'][io], q, rot(o['linear'][io]), rot(o['angular'][io]), F, M,
                    np.zeros(len(t), int))
    truth = bag.custom_data.get('ground_truth')
    if truth is None and (Path(bag_path) / 'truth.yaml').is_file():
        truth = yaml.safe_load((Path(bag_path) / 'truth.yaml').read_text())
    return tr, stamps, len(w['stamp_ns']), truth


def main(argv: list[str] | None = None) -> int:
    from contact_dynamics_common.offline.replay import resolve_topic
    parser = argparse.ArgumentParser(prog='contact-dynamics multipoint-estimate', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('bag')
    parser.add_argument('--config', help=f'ROS 2 params file with a {NODE_NAME} section (the one the node and '
                                          'run-bag take)')
    parser.add_argument('--report', help='directory for summary.yaml, local.csv, contacts.png')
    parser.add_argument('--geometry', help="geometry YAML (default: the params file's geometry_file, else "
                                           'BAG/geometry.yaml, else the packaged default)')
    parser.add_argument('--wrench-topic', help='geometry_msgs/WrenchStamped topic (default: wrench_topic)')
    parser.add_argument('--odom-topic', help='nav_msgs/Odometry topic (default: odom_topic)')
    parser.add_argument('--formulation', choices=('force', 'moment', 'force_moment'),
                        help='regression rows (default: formulation, force)')
    parser.add_argument('--moment-scale', type=float, help='m (default: moment_scale, 0.1)')
    parser.add_argument('--kinematics', help='.npz file of the contact kinematics (written or read)')
    parser.add_argument('--mode', default='both', choices=('both', 'kinematics', 'estimate'))
    args = parser.parse_args(argv)
    if args.mode == 'estimate' and not args.kinematics:
        parser.error('--mode estimate needs --kinematics FILE.npz')
    p = settings(args.config, {'wrench_topic': args.wrench_topic, 'odom_topic': args.odom_topic,
                               'geometry_file': args.geometry, 'formulation': args.formulation,
                               'moment_scale': args.moment_scale})
    if p['pose_source'] != 'odometry':
        raise ConfigError(f"pose_source '{p['pose_source']}': multipoint-estimate reads nav_msgs/Odometry (pose "
                          'and twist); for PoseStamped use run-bag, which differentiates and interpolates them')
    wrench_topic, odom_topic = resolve_topic(p['wrench_topic'], NODE_NAME), resolve_topic(p['odom_topic'], NODE_NAME)
    params_dir = Path(args.config).resolve().parent if args.config and not args.geometry else None
    src = geometry_source(p['geometry_file'], bag=args.bag, params_dir=params_dir)
    print(describe_sources(src, {'wrench': wrench_topic, 'pose (odometry)': odom_topic}))
    tr, stamps, n_wrench, truth = read_record(args.bag, wrench_topic, odom_topic, p['wrench_expressed_in'])
    if len(stamps) < n_wrench:
        print(f'{len(stamps)} of {n_wrench} wrench samples paired with a pose at the same stamp (the others '
              'are not used)')
    if args.mode == 'estimate':
        cs, cached = load_kinematics(args.kinematics)
        if len(cached) != len(stamps) or not np.array_equal(cached, stamps):
            raise ConfigError('the cached kinematics do not belong to this bag (stamps differ)')
    else:
        cs = ContactKinematics(src.payload.parts, src.environment.world_parts(),
                               slide_eps=p['slide_speed_threshold']).compute(quat_to_matrix(tr.q), tr.p, tr.v, tr.w)
        if args.kinematics:
            save_kinematics(cs, args.kinematics, stamps)
        if args.mode == 'kinematics':
            print(f'wrote {args.kinematics}: {len(cs)} contacts over {len(stamps)} samples')
            return 0
    if not len(cs):
        raise ConfigError(f'no contact in any of the {len(stamps)} samples with the geometry {src.path} (another '
                          'payload or environment, or poses in another frame?)')
    formulation, moment_scale = p['formulation'], p['moment_scale']
    # the twist's robust noise level (slip σ term), as the node does from the same stream
    noise = tuple(robust_noise(np.abs(np.diff(a, 4, axis=0))) for a in (tr.v, tr.w))
    q = tr.q * np.sign(np.einsum('ni,i->n', tr.q, tr.q[0]) + 1e-300)[:, None]
    pose_noise = (robust_noise(np.abs(np.diff(tr.p, 4, axis=0))), robust_noise(np.abs(2 * np.diff(q[:, :3], 4, axis=0))))
    thresholds = Thresholds(max_condition=p['max_condition'], min_excitation=p['min_excitation'],
                            max_residual_fraction=p['max_residual_fraction'], significance=p['significance'])
    est = estimate(cs, tr.force, tr.moment, formulation=formulation, moment_scale=moment_scale,
                   thresholds=thresholds, twist_noise=noise, pose_noise=pose_noise)
    T = len(tr.t)
    fits = local_fits(regressor(cs, T, formulation, moment_scale),
                      measurement(tr.force, tr.moment, formulation, moment_scale), cs.count)
    print(f'k = {est.stiffness:.6g} N/m, b = {est.damping:.6g} N*s/m, mu = {est.friction:.6g}; valid = {est.valid} '
          f'({est.reason}); rank {est.rank}, condition {est.condition_number:.3g}, '
          f'{int(fits.rank_deficient.sum())} of {int((cs.count > 0).sum())} contact instants rank deficient')
    names = ('stiffness', 'damping', 'friction')
    known = isinstance(truth, dict) and all(isinstance(truth.get(n), (int, float)) for n in names)
    if known:
        errs = [(est.values[j] - truth[n]) / truth[n] if truth[n] else float('nan') for j, n in enumerate(names)]
        print('truth (from the bag): k = {:.6g}, b = {:.6g}, mu = {:.6g}; errors {:+.3%}, {:+.3%}, {:+.3%}'.format(
            *(truth[n] for n in names), *errs))
    if args.report:
        out = Path(args.report)
        out.mkdir(parents=True, exist_ok=True)
        summary = {'stiffness': float(est.values[0]), 'damping': float(est.values[1]),
                   'friction': float(est.values[2]), 'std': [float(s) for s in est.std()],
                   'covariance': est.covariance.tolist(), 'valid': bool(est.valid), 'status': est.reason,
                   'rank': est.rank, 'condition_number': float(est.condition_number),
                   'residual_rms': est.residual_rms, 'residual_fraction': est.residual_fraction,
                   'bounds_active': [bool(b) for b in est.bounds_active],
                   'identifiable': [bool(b) for b in est.identifiable], 'samples_used': est.samples_used,
                   'rank_deficient_instants': int(fits.rank_deficient.sum()), 'formulation': formulation,
                   'geometry_file': str(src.path), 'geometry_rule': src.rule,
                   'wrench_topic': wrench_topic, 'odom_topic': odom_topic, 'samples_paired': int(len(stamps))}
        if truth is not None:
            summary['truth'] = truth
        (out / 'summary.yaml').write_text(yaml.safe_dump(summary, sort_keys=False))
        with np.errstate(invalid='ignore', divide='ignore'):
            mu_local = np.where(fits.theta[:, 0] != 0, fits.theta[:, 2] / fits.theta[:, 0], np.nan)
        table = np.c_[tr.t, cs.count, fits.rank, fits.theta[:, 0], fits.theta[:, 1], mu_local]
        np.savetxt(out / 'local.csv', table, delimiter=',', header='t_s,contacts,rank,k,b,mu', comments='',
                   fmt=['%.6f', '%d', '%d', '%.8g', '%.8g', '%.8g'])
        plot(out / 'contacts.png', tr.t, cs, fits, est)
        print(f'wrote {out}/summary.yaml, local.csv, contacts.png')
    return 0
