"""Offline multi-point identification of a recorded bag (agar_contact.md §3.6 modes, F17–F19):

  contact-dynamics multipoint-estimate BAG --report DIR [--geometry G.yaml] [--formulation force]
                                           [--kinematics FILE.npz] [--mode both|kinematics|estimate]

- ``kinematics``: compute the contact kinematics of every sample (pose + twist from the Odometry topic) and
  save them (``--kinematics FILE.npz``), the toolbox's cached intermediate data;
- ``estimate``: estimate from saved kinematics plus the bag's wrench;
- ``both`` (default): one after the other.
The report: ``summary.yaml`` (global estimate with covariance, verdict, rank, condition, residual), ``local.csv``
(per instant: contact count, local rank, local k, b, μ; rank < 3 = not identifiable at that instant, e.g. a
one-contact phase), ``contacts.png`` (contact count and local estimates over time, final contact points).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_estimation.geometry.body import load_geometry
from contact_estimation.geometry.contacts import ContactKinematics, ContactSet
from contact_estimation.geometry.rotations import quat_to_matrix

from .estimator import estimate, local_fits, measurement, regressor, robust_noise
from .sensitivity import trajectory_from_bag

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
    for j, (name, truth) in enumerate((('k [N/m]', est.values[0]), ('b [N s/m]', est.values[1]))):
        a = ax[0, 1] if j == 0 else ax[1, 0]
        a.plot(t[ok], fits.theta[ok, j], '.', ms=2, label='local (rank 3)')
        a.axhline(truth, color='k', lw=1, label='global')
        a.set(xlabel='t [s]', ylabel=name, yscale='symlog')
        a.legend(fontsize=8)
    last = cs.k == cs.k.max() if len(cs) else np.zeros(0, bool)
    ax[1, 1].plot(cs.r[last, 0], cs.r[last, 1], 'o')
    ax[1, 1].quiver(cs.r[last, 0], cs.r[last, 1], cs.n[last, 0], cs.n[last, 1], scale=20)
    ax[1, 1].set(xlabel='x [m]', ylabel='y [m]', title='contacts at the last sample', aspect='equal')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='contact-dynamics multipoint-estimate', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('bag')
    parser.add_argument('--report', help='directory for summary.yaml, local.csv, contacts.png')
    parser.add_argument('--geometry', help='geometry YAML (default BAG/geometry.yaml)')
    parser.add_argument('--formulation', default='force', choices=('force', 'moment', 'force_moment'))
    parser.add_argument('--moment-scale', type=float, default=0.1)
    parser.add_argument('--kinematics', help='.npz file of the contact kinematics (written or read)')
    parser.add_argument('--mode', default='both', choices=('both', 'kinematics', 'estimate'))
    args = parser.parse_args(argv)
    tr, truth = trajectory_from_bag(args.bag)
    stamps = np.round(tr.t * 1e9).astype(np.int64)
    if args.mode == 'estimate':
        if not args.kinematics:
            parser.error('--mode estimate needs --kinematics FILE.npz')
        cs, cached = load_kinematics(args.kinematics)
        if len(cached) != len(stamps) or not np.array_equal(cached, stamps):
            raise SystemExit('the cached kinematics do not belong to this bag (stamps differ)')
    else:
        payload, env = load_geometry(args.geometry or Path(args.bag) / 'geometry.yaml')
        cs = ContactKinematics(payload.parts, env.world_parts()).compute(quat_to_matrix(tr.q), tr.p, tr.v, tr.w)
        if args.kinematics:
            save_kinematics(cs, args.kinematics, stamps)
        if args.mode == 'kinematics':
            print(f'wrote {args.kinematics}: {len(cs)} contacts over {len(stamps)} samples')
            return 0
    # the twist's robust noise level (slip σ term), as the node does from the same stream
    noise = tuple(robust_noise(np.abs(np.diff(a, 4, axis=0))) for a in (tr.v, tr.w))
    q = tr.q * np.sign(np.einsum('ni,i->n', tr.q, tr.q[0]) + 1e-300)[:, None]
    pose_noise = (robust_noise(np.abs(np.diff(tr.p, 4, axis=0))), robust_noise(np.abs(2 * np.diff(q[:, :3], 4, axis=0))))
    est = estimate(cs, tr.force, tr.moment, formulation=args.formulation, moment_scale=args.moment_scale,
                   twist_noise=noise, pose_noise=pose_noise)
    T = len(tr.t)
    fits = local_fits(regressor(cs, T, args.formulation, args.moment_scale),
                      measurement(tr.force, tr.moment, args.formulation, args.moment_scale), cs.count)
    print(f'k = {est.stiffness:.6g} N/m, b = {est.damping:.6g} N*s/m, mu = {est.friction:.6g}; valid = {est.valid} '
          f'({est.reason}); rank {est.rank}, condition {est.condition_number:.3g}, '
          f'{int(fits.rank_deficient.sum())} of {int((cs.count > 0).sum())} contact instants rank deficient')
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
                   'rank_deficient_instants': int(fits.rank_deficient.sum()), 'formulation': args.formulation,
                   'truth': truth}
        (out / 'summary.yaml').write_text(yaml.safe_dump(summary, sort_keys=False))
        with np.errstate(invalid='ignore', divide='ignore'):
            mu_local = np.where(fits.theta[:, 0] != 0, fits.theta[:, 2] / fits.theta[:, 0], np.nan)
        table = np.c_[tr.t, cs.count, fits.rank, fits.theta[:, 0], fits.theta[:, 1], mu_local]
        np.savetxt(out / 'local.csv', table, delimiter=',', header='t_s,contacts,rank,k,b,mu', comments='',
                   fmt=['%.6f', '%d', '%d', '%.8g', '%.8g', '%.8g'])
        plot(out / 'contacts.png', tr.t, cs, fits, est)
        print(f'wrote {out}/summary.yaml, local.csv, contacts.png')
    return 0
