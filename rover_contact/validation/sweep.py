"""``contact-dynamics rover-sweep``: sweep the contact angle β and the postures of a rover model and write
tables (CSV + markdown) and plots of T_c(β) (free and rigid ground) and of the simulated peak force F_max(β)
(frozen-configuration impact, four contact laws). T_c is a trend indicator, not a force magnitude.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from ..inputs import load_model
from ..posture.evaluate import Candidate, Obstacle, PostureEvaluator, grid_candidates


def sweep(model_yaml: str, betas_deg, joints, values, speed: float = 0.07, laws=(), k: float = 1e9):
    model = load_model({'model_yaml': model_yaml, 'urdf_path': ''})
    ev = PostureEvaluator(model, ground_mode='both', stability_margin=-1e9)
    cands = grid_candidates(joints, [values] * len(joints), [speed]) if joints else [Candidate({}, speed, 'reference')]
    wheels = list(model.roles.contact_wheels_default or model.wheel_names[:2])
    rows = []
    for b in betas_deg:
        res = ev.evaluate({}, cands, Obstacle(np.deg2rad(b), wheels))
        for i, c in enumerate(cands):
            row = {'posture': c.label, 'beta_deg': float(b), 't_c_free_mJ': res.t_c_free[i] * 1e3,
                   't_c_rigid_mJ': res.t_c_rigid[i] * 1e3, 'feasible': bool(res.feasible[i])}
            if laws and res.feasible[i]:
                from ..impact.geometry import n_in_ros
                from .impact_sim import frozen
                q = ev.configuration(res, i)
                M = model.mass_matrix(q)
                lam = model.contact_rows(q, wheels, n_in_ros(np.deg2rad(b)))
                v = model.rolling_velocity(q, speed)
                for law in laws:
                    row[f'f_max_{law}_N'] = frozen(M, lam, v, model.mech_rows(), law=law, e=0.9,
                                                   k=k if law != 'lee_wang' else k / 100).f_max
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics rover-sweep', description=__doc__.split('\n\n')[0])
    ap.add_argument('--model-yaml', default='rover_pr3d_roles.yaml')
    ap.add_argument('--out', default='out/rover_sweep')
    ap.add_argument('--beta-deg', type=float, nargs='+', default=list(range(10, 91, 10)))
    ap.add_argument('--joints', nargs='*', default=None,
                    help="posture joints swept together on one grid (default: the role map's first posture joint)")
    ap.add_argument('--values', type=float, nargs='*', default=[-0.2, 0.0, 0.2], help='values for every joint')
    ap.add_argument('--speed', type=float, default=0.07)
    ap.add_argument('--laws', nargs='*', default=['hunt_crossley', 'lankarani_nikravesh', 'lee_wang', 'gonthier'])
    ap.add_argument('--k', type=float, default=1e9, help='obstacle stiffness for F_max [N/m^1.5]')
    a = ap.parse_args(argv)
    model = load_model({'model_yaml': a.model_yaml, 'urdf_path': ''})
    joints = list(model.roles.posture_joints[:1]) if a.joints is None else a.joints
    rows = sweep(a.model_yaml, a.beta_deg, joints, a.values, a.speed, a.laws, a.k)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / 'sweep.csv', 'w', newline='') as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)
    with open(out / 'sweep.md', 'w') as f:
        f.write('| ' + ' | '.join(keys) + ' |\n|' + '---|' * len(keys) + '\n')
        for r in rows:
            f.write('| ' + ' | '.join(f'{r.get(k, ""):.4g}' if isinstance(r.get(k), float) else str(r.get(k, ''))
                                      for k in keys) + ' |\n')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2 if a.laws else 1, figsize=(12 if a.laws else 6, 4.5), squeeze=False)
    styles = ['-', '--', ':', '-.']
    for i, label in enumerate(dict.fromkeys(r['posture'] for r in rows)):
        rs = [r for r in rows if r['posture'] == label]
        b = [r['beta_deg'] for r in rs]
        color = f'C{i % 10}'
        axes[0, 0].plot(b, [r['t_c_free_mJ'] for r in rs], '-', color=color, label=f'{label} free')
        axes[0, 0].plot(b, [r['t_c_rigid_mJ'] for r in rs], '--', color=color, label=f'{label} rigid')
        for j, law in enumerate(a.laws):
            axes[0, 1].plot(b, [r.get(f'f_max_{law}_N', np.nan) for r in rs], styles[j % 4], color=color,
                            label=f'{label} {law}')
    axes[0, 0].set(xlabel='beta [deg]', ylabel='T_c [mJ]', title=f'{model.roles.model_name}: T_c(beta)')
    axes[0, 0].legend(fontsize=6)
    if a.laws:
        axes[0, 1].set(xlabel='beta [deg]', ylabel='F_max [N]', title='simulated peak force (free ground, e=0.9)')
        axes[0, 1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / 'tc_fmax_beta.png', dpi=120)
    print(f'wrote {out}/sweep.csv, sweep.md, tc_fmax_beta.png ({len(rows)} rows)')
    return 0
