"""contact-compare: all nine single-point estimators on one experiment, reported as in Agar (2004) ch. 3.

The record's in-contact samples (from the same pipeline as the live node: stamp hygiene, pairing, datum,
differentiation) are cut into windows: one per quasi-static load plateau when the record is a staircase,
or the whole record otherwise. Every algorithm runs on every window. The report has

* ``summary.yaml``: per window and algorithm k, b (SI), their standard deviations, validity and reason,
  damping identifiability, and the window verdict;
* ``comparison.md``: the same as thesis-style tables plus the verdict in words;
* ``force_displacement.png`` (F against x with each algorithm's model line), ``convergence.png`` (the
  recursive estimators' k and b over time), ``stiffness_by_window.png`` (k with 2-sigma bars).

Verdict rule (spec §7: never fold a bound-active or failed result into averages silently): an estimate is
valid only by the estimator's own rules and the shared trust verdict (``assess``, run by
``algorithms.run``: converged and settled, no significant model mismatch, honest sigma); the consensus
stiffness is the median of the valid estimates; an estimate is trusted when valid and within
``agreement`` (5 %) of the consensus. Damping is trusted only when at least two algorithms find it
identifiable and agree within 2 ``agreement``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from .algorithms import ALGORITHMS, RECURSIVE, make, run
from .assess import run_monitored
from .contact_kind import contact_units
from .estimate import ContactEstimate
from .preprocess import drift_warnings, find_plateaus
from .samples import ContactSamples


@dataclass
class Window:
    start: int
    stop: int
    t0: float
    t1: float
    mean_load: float


@dataclass
class WindowVerdict:
    consensus_stiffness: float
    trusted: list[str]
    distrusted: dict[str, str]
    damping: float | None
    damping_note: str


@dataclass
class Comparison:
    windows: list[Window]
    results: dict[str, list[ContactEstimate]]           # algorithm -> one estimate per window
    verdicts: list[WindowVerdict]
    warnings: list[str] = field(default_factory=list)
    segmentation: str = 'whole'
    units: dict = field(default_factory=lambda: contact_units(None))   # N/m or N*m/rad, ... (contact_type)


def windows_of(samples: ContactSamples, segmentation: str = 'auto') -> tuple[list[Window], str]:
    """Plateau windows ('plateaus'), the whole record ('whole'), or plateaus when there are >= 2 ('auto')."""
    if segmentation not in ('auto', 'plateaus', 'whole'):
        raise ValueError(f"segmentation must be 'auto', 'plateaus' or 'whole', got '{segmentation}'")
    if segmentation != 'whole' and len(samples) >= 3:
        plateaus = find_plateaus(samples.t, samples.force, min_load=1e-9)
        if len(plateaus) >= (1 if segmentation == 'plateaus' else 2):
            return [Window(p.start, p.stop, float(samples.t[p.start]), float(samples.t[p.stop - 1]), p.mean_load)
                    for p in plateaus], 'plateaus'
    n = len(samples)
    if n == 0:
        return [], 'whole'
    return [Window(0, n, float(samples.t[0]), float(samples.t[-1]), float(samples.force.mean()))], 'whole'


def compare(samples: ContactSamples, *, segmentation: str = 'auto', names=None, options: dict | None = None,
            agreement: float = 0.05, params: dict | None = None) -> Comparison:
    """Every algorithm of ``names`` on every window. With the node's ``params``, the estimators the live
    node can run (rls, ils, ia, kalman and the sliding-window gls) are built and judged exactly as the node
    builds and judges them (``pipeline.build_estimators``, ``assess.run_monitored``): the same samples and
    config give the node's, run-bag's and contact-compare's verdict alike. The batch-only ones
    (etfe, oem, eem, gmle) use ``algorithms.run``."""
    names = list(names or ALGORITHMS)
    options = options or {}
    windows, mode = windows_of(samples, segmentation)
    results: dict[str, list[ContactEstimate]] = {n: [] for n in names}
    live = {}
    if params is not None:
        from .models import get_model
        from .pipeline import build_estimators
        online = [n for n in names if n in RECURSIVE or n == 'gls']
        live = build_estimators(dict(params, algorithms=online), get_model(params['model'])) if online else {}
    for w in windows:
        part = samples.slice(slice(w.start, w.stop))
        for n in names:
            if n in live:
                results[n].append(run_monitored(live[n], part))
            else:
                results[n].append(run(make(n, **options.get(n, {})), part))
    verdicts = [_verdict({n: results[n][i] for n in names}, agreement) for i in range(len(windows))]
    warnings = []
    if mode == 'plateaus':
        from .preprocess import Plateau
        plateaus = [Plateau(w.start, w.stop, w.mean_load, 0.0) for w in windows]
        warnings = drift_warnings(samples.t, samples.x, samples.force, plateaus)
    return Comparison(windows, results, verdicts, warnings, mode, contact_units(params))


def _verdict(estimates: dict[str, ContactEstimate], agreement: float) -> WindowVerdict:
    valid = {n: e for n, e in estimates.items() if e.valid}
    distrusted = {n: f'not valid: {e.reason}' for n, e in estimates.items() if not e.valid}
    if not valid:
        return WindowVerdict(float('nan'), [], distrusted, None, 'no valid estimate')
    consensus = float(np.median([e.stiffness for e in valid.values()]))
    trusted = []
    for n, e in valid.items():
        off = abs(e.stiffness / consensus - 1)
        if off <= agreement:
            trusted.append(n)
        else:
            distrusted[n] = f'stiffness {off:.1%} from the consensus'
    damp = {n: valid[n].damping for n in trusted if valid[n].is_identifiable('damping')}
    if len(damp) >= 2:
        med = float(np.median(list(damp.values())))
        agree = [n for n, b in damp.items() if med != 0 and abs(b / med - 1) <= 2 * agreement]
        if len(agree) >= 2:
            return WindowVerdict(consensus, trusted, distrusted, med,
                                 f'damping identifiable; {", ".join(sorted(agree))} agree')
        return WindowVerdict(consensus, trusted, distrusted, None, 'damping estimates disagree: not trusted')
    return WindowVerdict(consensus, trusted, distrusted, None,
                         'damping not identifiable (no deformation-rate excitation in this window)')


# ------------------------------------------------------------------------------------------------ report
def write_report(cmp: Comparison, samples: ContactSamples, out_dir: str | Path, truth: dict | None = None,
                 options: dict | None = None) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {'segmentation': cmp.segmentation, 'samples': len(samples), 'warnings': cmp.warnings,
               'ground_truth': truth, 'units': dict(cmp.units), 'windows': []}
    for i, w in enumerate(cmp.windows):
        v = cmp.verdicts[i]
        entry = {'t0': w.t0, 't1': w.t1, 'mean_load': w.mean_load, 'samples': w.stop - w.start,
                 'verdict': {'consensus_stiffness': v.consensus_stiffness, 'trusted': v.trusted,
                             'distrusted': v.distrusted, 'damping': v.damping, 'damping_note': v.damping_note},
                 'algorithms': {}}
        for n, ests in cmp.results.items():
            e = ests[i]
            entry['algorithms'][n] = {
                'stiffness': float(e.stiffness), 'stiffness_std': e.std('stiffness'),
                'damping': float(e.damping), 'damping_std': e.std('damping'),
                'damping_identifiable': e.is_identifiable('damping'), 'valid': bool(e.valid), 'reason': e.reason,
                'residual_rms': float(e.residual_rms), 'condition_number': float(min(e.condition_number, 1e300))}
        summary['windows'].append(entry)
    paths = [out / 'summary.yaml', out / 'comparison.md']
    paths[0].write_text(yaml.safe_dump(summary, sort_keys=False))
    paths[1].write_text(_markdown(cmp, truth))
    paths += _plots(cmp, samples, out, options or {})
    return paths


def _markdown(cmp: Comparison, truth: dict | None) -> str:
    u = cmp.units
    uk, ub, uf = u['stiffness'], u['damping'], u['force']
    lines = ['# Single-point contact estimation: comparison of the nine algorithms', '',
             f'Segmentation: {cmp.segmentation}, {len(cmp.windows)} window(s); units: k {uk}, b {ub}, '
             f"x {u['displacement']}, F {uf}.", '']
    if truth:
        lines += [f"Ground truth: k = {truth.get('stiffness', float('nan')):.6g} {uk}, "
                  f"b = {truth.get('damping', float('nan')):.6g} {ub}", '']
    for i, w in enumerate(cmp.windows):
        v = cmp.verdicts[i]
        lines += [f'## Window {i + 1}: {w.t0:.2f}-{w.t1:.2f} s, mean load {w.mean_load:.1f} {uf}', '',
                  f'| algorithm | k [{uk}] | sigma_k | b [{ub}] | sigma_b | b identifiable | valid | note |',
                  '|---|---|---|---|---|---|---|---|']
        for n, ests in cmp.results.items():
            e = ests[i]
            lines.append(f'| {n} | {e.stiffness:.6g} | {e.std("stiffness"):.3g} | {e.damping:.6g} | '
                         f'{e.std("damping"):.3g} | {"yes" if e.is_identifiable("damping") else "no"} | '
                         f'{"yes" if e.valid else "no"} | {e.reason} |')
        trusted = ', '.join(v.trusted) or 'none'
        lines += ['', f'**Verdict.** Consensus stiffness {v.consensus_stiffness:.6g} {uk}; trust {trusted}.']
        for n, why in v.distrusted.items():
            lines.append(f'- do not use {n}: {why}')
        damping = f' (b = {v.damping:.6g} {ub})' if v.damping is not None else ''
        lines += [f'- damping: {v.damping_note}' + damping,
                  '']
    if cmp.warnings:
        lines += ['## Warnings', ''] + [f'- {w}' for w in cmp.warnings] + ['']
    return '\n'.join(lines)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plots(cmp: Comparison, samples: ContactSamples, out: Path, options: dict) -> list[Path]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    paths = []
    names = list(cmp.results)
    last = len(cmp.windows) - 1
    # force-displacement with each algorithm's model line (last window's estimates)
    fig, ax = plt.subplots(figsize=(7, 5))
    step = max(1, len(samples) // 4000)
    ax.plot(samples.x[::step] * 1e3, samples.force[::step], '.', ms=2, color='0.6', label='measured')
    xs = np.linspace(0, samples.x.max() if len(samples) else 1.0, 50)
    for n in names:
        if last >= 0:
            ax.plot(xs * 1e3, cmp.results[n][last].stiffness * xs, lw=1, label=f'{n}: k x')
    ax.set_xlabel(f"deformation x [m{cmp.units['displacement']}]")        # mm or mrad
    ax.set_ylabel(f"normal force F [{cmp.units['force']}]")
    ax.set_title('force-displacement and secant stiffness (last window)')
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out / 'force_displacement.png'))
    # convergence of the recursive estimators over the whole record
    fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    for n in [n for n in names if n in RECURSIVE]:
        est = make(n, record=True, **options.get(n, {}))
        est.update(samples)
        t, theta = est.trajectory()
        if len(t):
            stride = max(1, len(t) // 4000)
            axes[0].plot(t[::stride], theta[::stride, 0], lw=1, label=n)
            axes[1].plot(t[::stride], theta[::stride, 1], lw=1, label=n)
    labels = (f"stiffness [{cmp.units['stiffness']}]", f"damping [{cmp.units['damping']}]")
    for ax, label in zip(axes, labels):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_title('recursive estimators over the record')
    axes[1].set_xlabel('time [s]')
    paths.append(_save(fig, out / 'convergence.png'))
    # stiffness per window with 2-sigma bars
    fig, ax = plt.subplots(figsize=(8, 4))
    loads = np.array([w.mean_load for w in cmp.windows])
    for j, n in enumerate(names):
        k = np.array([e.stiffness for e in cmp.results[n]])
        sd = np.array([e.std('stiffness') for e in cmp.results[n]])
        ok = np.array([e.valid for e in cmp.results[n]], dtype=bool)
        offset = (j - len(names) / 2) * 0.4
        ax.errorbar(loads[ok] + offset, k[ok], yerr=2 * sd[ok], fmt='o', ms=3, capsize=2, label=n)
    ax.set_xlabel(f"mean load of the window [{cmp.units['force']}]")
    ax.set_ylabel(f"stiffness [{cmp.units['stiffness']}]")
    ax.set_title('stiffness by window (valid estimates, 2-sigma bars)')
    ax.legend(fontsize=7, ncol=3)
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out / 'stiffness_by_window.png'))
    return paths


# ------------------------------------------------------------------------------------------------ command
def main(argv: list[str] | None = None) -> int:
    """contact-dynamics contact-compare BAG [--config PARAMS.yaml] [--report DIR] [--segment ...]"""
    import argparse

    from contact_dynamics_common.bag import BagReader
    from contact_dynamics_common.params import load_params_file, validate_all

    from .config import NODE_NAME, PARAMS
    from .offline import OfflineContactEstimator
    from .pipeline import estimator_options

    ap = argparse.ArgumentParser(prog='contact-dynamics contact-compare', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('bag')
    ap.add_argument('--config', help='params file with a contact_estimator section (topics, joint, datum, '
                    'estimator options); default: the package config')
    ap.add_argument('--report', default='contact_compare', help='output directory (default: ./contact_compare)')
    ap.add_argument('--segment', choices=('auto', 'plateaus', 'whole'), default='auto',
                    help='one window per load plateau, the whole record, or plateaus when there are >= 2')
    ap.add_argument('--algorithms', nargs='+', choices=list(ALGORITHMS), default=list(ALGORITHMS))
    args = ap.parse_args(argv)
    if args.config is None:
        from contact_dynamics_common.cli import config_dir
        args.config = str(config_dir() / 'contact_estimator.yaml')
    raw = {k: v for k, v in load_params_file(args.config, NODE_NAME).items() if k != 'use_sim_time'}
    params = validate_all(PARAMS, raw)
    node = OfflineContactEstimator(params)
    bag = BagReader(args.bag)
    missing = [t for t in node.inputs() if t not in bag.topics]
    if missing:
        raise FileNotFoundError(f"{args.bag} has no {', '.join(missing)} (topics: {', '.join(sorted(bag.topics))})")
    samples = node.contact_samples({t: bag.columns(t) for t in node.inputs()})
    options = estimator_options(params, node.pipeline.model)
    options = {n: o for n, o in options.items() if n in args.algorithms}
    cmp = compare(samples, segmentation=args.segment, names=args.algorithms, options=options, params=params)
    truth = bag.custom_data.get('ground_truth')
    paths = write_report(cmp, samples, args.report, truth, options)
    print(f'{args.bag}: {len(samples)} in-contact samples, {len(cmp.windows)} window(s) ({cmp.segmentation})')
    for line in bag.recovery.lines():          # a damaged bag: what was used
        print(line)
    u = cmp.units
    print(f"units ({params['contact_type']} contact): k {u['stiffness']}, b {u['damping']}, "
          f"x {u['displacement']}, F {u['force']}")
    for i, w in enumerate(cmp.windows):
        v = cmp.verdicts[i]
        print(f"window {i + 1} ({w.t0:.2f}-{w.t1:.2f} s, {w.mean_load:.1f} {u['force']}): consensus k = "
              f"{v.consensus_stiffness:.6g} {u['stiffness']}; trusted: {', '.join(v.trusted) or 'none'}; "
              f'{v.damping_note}')
        for n in args.algorithms:
            e = cmp.results[n][i]
            print(f'  {n:7s} k = {e.stiffness:12.6g} ± {e.std("stiffness"):9.3g}  b = {e.damping:11.5g} '
                  f'± {e.std("damping"):9.3g}  {"valid" if e.valid else "NOT valid"}: {e.reason}')
        resampled = [n for n in args.algorithms if (cmp.results[n][i].extras or {}).get('resampled')]
        if resampled:
            r = cmp.results[resampled[0]][i].extras['resampled']
            print(f"  note: {', '.join(resampled)}: jittered stamps resampled to a uniform "
                  f"{r['rate_hz']:.6g} Hz clock ({r['from_samples']} -> {r['to_samples']} samples; "
                  f"{r['reason']})")
    for w in cmp.warnings:
        print(f'warning: {w}')
    print('report: ' + ', '.join(str(p) for p in paths))
    return 0
