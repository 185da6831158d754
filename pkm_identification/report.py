"""`contact-dynamics pkm-identify BAG --report DIR`: identify a hexapod from a JointState bag with the same
pipeline as the pkm_identifier node (run in bag time) and write the dissertation-style report:

  DIR/report.md          table: parameter, estimate, sigma, truth (or CAD), % error, flag; warnings, status
  DIR/estimate.yaml      the final estimate (values, sigma, covariance, flags)
  DIR/convergence.png    % error of every parameter vs time (against the truth, or the final value)
  DIR/*parameters.png    each estimate with its +/-2 sigma band and the truth (contact_dynamics_common.report)

Parameters come from --config (default config/pkm_identifier.yaml) with --set name=value overrides.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.bag import BagReader
from contact_dynamics_common.cli import config_dir
from contact_dynamics_common.params import load_params_file, validate_all
from contact_dynamics_common.replay import replay
from contact_dynamics_common.report import plot_estimates

from .config import NODE_NAME, PARAMS
from .offline import OfflinePkmIdentifier

TOPIC = f'/{NODE_NAME}/parameters'


def _parse_set(items: list[str]) -> dict:
    out = {}
    for it in items:
        k, sep, v = it.partition('=')
        if not sep:
            raise SystemExit(f'--set expects name=value, got {it!r}')
        out[k.strip()] = yaml.safe_load(v)
    return out


def identify_bag(bag_path: str, config: str | None = None, overrides: dict | None = None):
    """(final fields, per-tick [(t_s, fields)], truth dict or None, node status)."""
    raw = load_params_file(config or str(config_dir() / 'pkm_identifier.yaml'), NODE_NAME)
    raw = {k: v for k, v in raw.items() if k != 'use_sim_time'}
    params = validate_all(PARAMS, {**raw, **(overrides or {})})
    bag = BagReader(bag_path)
    node = OfflinePkmIdentifier(params)
    result = replay(bag, [node])
    items = result.outputs.get(TOPIC, [])
    if not items:
        raise SystemExit(f'{bag_path}: no estimate (status {node.status()})')
    truth = bag.custom_data.get('ground_truth')
    return items, truth, result, node.status()


def table(fields: dict, truth: dict | None) -> list[dict]:
    n = len(fields['names'])
    cov = np.array(fields['covariance']).reshape(n, n)
    rows = []
    for i, name in enumerate(fields['names']):
        v = fields['values'][i]
        t = truth.get(name) if truth else None
        rows.append({'name': name, 'unit': fields['units'][i], 'estimate': v, 'std': float(np.sqrt(max(cov[i, i], 0))),
                     'truth': t, 'error_pct': (100.0 * (v / t - 1.0)) if t else None,
                     'flag': fields['flags'][i] if fields.get('flags') else ''})
    return rows


def write_report(out: Path, items, truth, result, status) -> str:
    out.mkdir(parents=True, exist_ok=True)
    final = items[-1][1]
    rows = table(final, truth)
    lines = [f"# pkm_identifier report ({final['model']}, {final['algorithm']})", '',
             f"valid: {final['valid']} ({final['status']}); samples used {final['samples_used']}; "
             f"condition number {final['condition_number']:.3g}; residual RMS {final['residual_rms']:.3g} N", '',
             '| parameter | unit | estimate | sigma | truth | % error | flag |', '|---|---|---|---|---|---|---|']
    for r in rows:
        tr = f"{r['truth']:.6g}" if r['truth'] is not None else '-'
        er = f"{r['error_pct']:+.3f}" if r['error_pct'] is not None else '-'
        lines.append(f"| {r['name']} | {r['unit']} | {r['estimate']:.6g} | {r['std']:.3g} | {tr} | {er} "
                     f"| {r['flag']} |")
    extras = {kv['key']: kv['value'] for kv in final['extras']}
    if extras.get('warnings', 'none') != 'none':
        lines += ['', f"**warnings:** {extras['warnings']}"]
    lines += ['', 'Flags: identified (excited, sigma/|theta| < threshold), converging, not_excited (sigma >= 0.9 '
              'sigma_prior: the motion carries no information on it; the value is the prior), prior_only (held '
              'fixed), ratio_only (free fall: scale ambiguity).', '',
              'Input counts: ' + ', '.join(f'{k} {v}' for k, v in status.items() if v)]
    text = '\n'.join(lines) + '\n'
    (out / 'report.md').write_text(text)
    n = len(final['names'])
    with open(out / 'estimate.yaml', 'w', encoding='utf-8') as f:
        yaml.safe_dump({'rows': rows, 'covariance': np.array(final['covariance']).reshape(n, n).tolist(),
                        'status': final['status'], 'valid': final['valid']}, f, sort_keys=False)
    _convergence_plot(out / 'convergence.png', items, truth)
    plot_estimates(result, out, truth)
    return text


def _convergence_plot(path: Path, items, truth) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = items[-1][1]['names']
    t = np.array([f['header']['stamp']['sec'] + 1e-9 * f['header']['stamp']['nanosec'] for _, f in items])
    v = np.array([f['values'] for _, f in items])
    ref = np.array([truth[n] if truth and n in truth else v[-1, i] for i, n in enumerate(names)])
    fig, ax = plt.subplots(figsize=(9, 5))
    for i, n in enumerate(names):
        ax.plot(t - t[0], 100 * (v[:, i] / ref[i] - 1), label=f"{n} ({items[-1][1]['flags'][i]})")
    ax.axhline(0, color='k', lw=0.8)
    ax.set_xlabel('time since first estimate [s]')
    ax.set_ylabel('% error vs ' + ('truth' if truth else 'final value'))
    ax.set_ylim(-30, 30)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics pkm-identify', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('bag')
    ap.add_argument('--report', required=True, help='output directory')
    ap.add_argument('--config', default=None, help='params file with a pkm_identifier section')
    ap.add_argument('--set', nargs='*', default=[], metavar='NAME=VALUE', help='parameter overrides')
    a = ap.parse_args(argv)
    items, truth, result, status = identify_bag(a.bag, a.config, _parse_set(a.set))
    print(write_report(Path(a.report), items, truth, result, status))
    print(f'report written to {a.report}/report.md, estimate.yaml, convergence.png')
    return 0
