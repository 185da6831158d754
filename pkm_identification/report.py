"""`contact-dynamics pkm-identify BAG --report DIR`: identify a hexapod from a JointState bag with the same
pipeline as the pkm_identifier node (run in bag time) and write the dissertation-style report:

  DIR/report.md          table: parameter, estimate, sigma, truth (or CAD), % error, flag; warnings, status
  DIR/estimate.yaml      the final estimate (values, sigma, covariance, flags)
  DIR/convergence.png    % error of every parameter vs time (against the truth, or the final value)
  DIR/*parameters.png    each estimate with its +/-2 sigma band and the truth (contact_dynamics_common.report)

Parameters come from --config (default config/pkm_identifier.yaml) with --set name=value overrides; a
relative ``machine:`` path in the config is looked up beside the config first (as the node does).

The truth column comes from, in this order: ``--truth FILE``; ``truth.yaml`` beside the bag (inside a bag
directory, or in the directory of a single-file bag); the bag's ``custom_data['ground_truth']`` (written
by ``contact-dynamics simulate pkm``); else the column is '-'. truth.yaml (doc/pkm_machines.md#truthyaml):

  ground_truth:            # published parameter names, SI units
    m_e: 1.79              # kg          (m_e, m_b, m_p)
    Ixxp: 0.0908           # kg*m^2      (Ixxp, Iyyp, Izzp, Ix_s, Iz_s)
    fv_1: 200.0            # N*s/m       (fv_1..fv_6; fc_1..fc_6 in N)
  units: {m_e: kg, ...}    # optional; when given, each must be the unit above
  scenario: free text      # optional; also 'machine', 'notes'

The 12-parameter names of a machine file (Ixxb, Ixxe, Izzb, Izze, Iyyb, Iyye) are accepted too:
Ix_s = Ixxb + Ixxe and Iz_s = Izzb + Izze when both halves are given (Iyyb, Iyye: not identifiable, unused).
A file that breaks these rules stops the command with one line naming the file and the key (exit 2).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.bag import BagReader
from contact_dynamics_common.cli import config_dir
from contact_dynamics_common.params import ConfigError, load_params_file, validate_all
from contact_dynamics_common.ros.params import resolve_relative_file
from contact_dynamics_common.replay import replay
from contact_dynamics_common.report import plot_estimates

from . import dynamics as D
from .config import NODE_NAME, PARAMS
from .geometry import INERTIA_NAMES_12, finite_scalar
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


class TruthError(ConfigError):
    """A truth file that cannot be used; the message names the file and the key."""


class Truth(dict):
    """The true parameter values by published name (SI units); ``source`` says where they came from."""

    def __init__(self, values: dict, source: str):
        super().__init__(values)
        self.source = source


#: the published parameters and their units (pkm_identification.dynamics)
TRUTH_UNITS = dict(zip(D.ALL_NAMES, D.ALL_UNITS))
TRUTH_KEYS = ('ground_truth', 'units', 'scenario', 'machine', 'notes')
_SUMS = {'Ix_s': ('Ixxb', 'Ixxe'), 'Iz_s': ('Izzb', 'Izze')}


def truth_from_dict(doc, source: str) -> Truth:
    """The truth of a parsed truth.yaml mapping; TruthError naming ``source`` and the key otherwise."""
    def fail(msg: str):
        raise TruthError(f"truth file '{source}': {msg}")
    if not isinstance(doc, dict):
        fail(f"must be a mapping with 'ground_truth', got {type(doc).__name__}")
    unknown = [str(k) for k in doc if k not in TRUTH_KEYS]
    if unknown:
        fail(f"unknown key '{unknown[0]}' (a truth file has: {', '.join(TRUTH_KEYS)})")
    gt = doc.get('ground_truth')
    if not isinstance(gt, dict) or not gt:
        fail("'ground_truth' must be a non-empty mapping of parameter names to values (SI units)")
    units = doc.get('units') or {}
    if not isinstance(units, dict):
        fail("'units' must be a mapping of parameter names to unit strings")
    known12 = {n: ('kg' if n.startswith('m_') else 'kg*m^2') for n in INERTIA_NAMES_12}
    values, parts = {}, {}
    for k, v in gt.items():
        k = str(k)
        unit = TRUTH_UNITS.get(k) or known12.get(k)
        if unit is None:
            fail(f"unknown parameter 'ground_truth.{k}' (known: {', '.join(D.ALL_NAMES)}; or the machine "
                 f"file's {', '.join(INERTIA_NAMES_12)})")
        if finite_scalar(v) is None:
            fail(f"'ground_truth.{k}' = {v!r} must be a finite number in {unit}")
        if k in units and str(units[k]).replace(' ', '') != unit:
            fail(f"'units.{k}' = {units[k]!r}: {k} is in {unit}")
        (values if k in TRUTH_UNITS else parts)[k] = finite_scalar(v)
    extra_units = [str(k) for k in units if str(k) not in gt]
    if extra_units:
        fail(f"'units.{extra_units[0]}' names no parameter of 'ground_truth'")
    for name, (a, b) in _SUMS.items():
        if a in parts and b in parts:
            total = parts[a] + parts[b]
            if name in values and not np.isclose(values[name], total, rtol=1e-9, atol=0.0):
                fail(f"'ground_truth.{name}' = {values[name]:g} differs from {a} + {b} = {total:g}")
            values[name] = total
    return Truth(values, source)


def load_truth(path: str | Path) -> Truth:
    """A truth.yaml file (format in the module docstring); TruthError with a one-line reason."""
    try:
        with open(path, encoding='utf-8') as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        raise TruthError(f"truth file '{path}' does not exist") from None
    except (OSError, yaml.YAMLError) as exc:
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise TruthError(f"truth file '{path}' cannot be read: {problem}") from None
    return truth_from_dict(doc, str(path))


def truth_beside(bag_path: str | Path) -> Path:
    """Where a bag's truth.yaml is: inside a bag directory, else beside a single-file bag."""
    p = Path(bag_path)
    return p / 'truth.yaml' if p.is_dir() else p.parent / 'truth.yaml'


def find_truth(bag_path: str | Path, custom_data: dict | None = None, truth_file: str | None = None) -> Truth | None:
    """The truth: ``truth_file``, else truth.yaml beside the bag, else the bag's custom_data, else None."""
    if truth_file:
        return load_truth(truth_file)
    beside = truth_beside(bag_path)
    if beside.is_file():
        return load_truth(beside)
    gt = (custom_data or {}).get('ground_truth')
    if gt:
        return truth_from_dict({'ground_truth': gt}, f"{bag_path} (metadata custom_data 'ground_truth')")
    return None


def identify_bag(bag_path: str, config: str | None = None, overrides: dict | None = None,
                 truth_file: str | None = None):
    """(final fields, per-tick [(t_s, fields)], Truth or None, node status); a relative ``machine`` path of
    ``config`` is taken beside the config when it exists there (the node's rule)."""
    config = config or str(config_dir() / 'pkm_identifier.yaml')
    raw = load_params_file(config, NODE_NAME)
    raw = {k: v for k, v in raw.items() if k != 'use_sim_time'}
    if 'machine' in raw:
        raw['machine'] = resolve_relative_file(raw['machine'], config)
    params = validate_all(PARAMS, {**raw, **(overrides or {})})
    bag = BagReader(bag_path)
    truth = find_truth(bag_path, bag.custom_data, truth_file)     # a bad truth file stops before the run
    node = OfflinePkmIdentifier(params)
    result = replay(bag, [node])
    items = result.outputs.get(TOPIC, [])
    if not items:
        raise SystemExit(f'{bag_path}: no estimate (status {node.status()})')
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
    lines += ['', f"truth: {getattr(truth, 'source', 'given') if truth else 'none (no truth.yaml beside the bag)'}"]
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
    ap.add_argument('--truth', default=None, help='truth file (default: truth.yaml beside the bag, else the '
                    "bag's custom_data)")
    a = ap.parse_args(argv)
    items, truth, result, status = identify_bag(a.bag, a.config, _parse_set(a.set), a.truth)
    print(write_report(Path(a.report), items, truth, result, status))
    print(f'report written to {a.report}/report.md, estimate.yaml, convergence.png')
    return 0
