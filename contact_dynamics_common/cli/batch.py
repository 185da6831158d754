"""Fleet batch: ``run-bag`` over many bags as tasks on Dask distributed, one table, plots and a summary.

  contact-dynamics batch BAG_OR_GLOB... --config PARAMS.yaml --report DIR [--workers N | --scheduler ADDRESS]

Every bag is one task ``run_one(bag, config_text)``: the same ``cli.run.run_bag`` a single run-bag does, on a
worker process, returning the final message of every output topic reduced to its parameters
(value, σ = √diag(covariance), validity and reason), the bag's ground truth when its ``custom_data`` carries
one (``ground_truth``), or the error when the bag fails. A failing bag is a failed row; the other tasks go on.

The cluster is a ``LocalCluster`` of N single-threaded worker *processes* (the estimators are numpy-bound,
the GIL would serialise threads) bound to 127.0.0.1 with the dashboard off, or an existing cluster given by
its scheduler address (how a lab scales past one machine: the bags must then be readable at the same paths
on the workers; the parameter file travels with the task). Generic: any registered offline node and any
message with ``parameter_names`` + named fields (ContactEstimate) or ``names`` + ``values``
(ParameterEstimate), both with a row-major covariance (element 0 = -1: unknown).

Outputs in DIR: ``batch.csv`` (one row per bag x output topic x parameter; a failed bag is one row with its
error), ``batch.yaml`` (the same, nested), ``<topic>.png`` (each parameter per bag with ±2σ and the truth)
and ``summary.md``.
"""
from __future__ import annotations

import argparse
import csv
import glob
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..ros.params import ConfigError
from .report import save_topic_figure

BAG_SUFFIXES = ('.mcap', '.db3')


# ---------------------------------------------------------------------------------------------- inputs
def expand_bags(patterns: Iterable[str]) -> list[str]:
    """Bag paths from paths and glob patterns, in the given order, sorted within a pattern, no duplicates.

    A pattern that matches nothing is kept as it is, so that its task fails with 'not found' in its row.
    """
    out: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        matches = [m for m in matches if _looks_like_bag(m)] or ([pattern] if not glob.has_magic(pattern) else [])
        if not matches:
            out.append(pattern)
        for m in matches:
            if m not in out:
                out.append(m)
    return out


def _looks_like_bag(path: str) -> bool:
    p = Path(path)
    return p.is_dir() or p.suffix in BAG_SUFFIXES or not p.exists()


# ---------------------------------------------------------------------------------------------- one task
def parameter_rows(fields: dict) -> list[dict]:
    """Parameters of one estimate message: [{name, value, sigma}] (σ NaN when the covariance is unknown)."""
    names = list(fields.get('parameter_names') or fields.get('names') or [])
    if not names:
        return []
    values = fields.get('values')
    cov = list(fields.get('covariance') or [])
    p = len(names)
    known = len(cov) == p * p and cov[0] >= 0
    rows = []
    for i, name in enumerate(names):
        value = float(values[i]) if values is not None and len(values) == p else float(fields.get(name, math.nan))
        sigma = math.sqrt(max(float(cov[i * p + i]), 0.0)) if known else math.nan
        rows.append({'name': str(name), 'value': value, 'sigma': sigma})
    return rows


def run_one(bag: str, config_text: str, config_name: str = 'params.yaml') -> dict:
    """``run-bag`` of one bag with the parameter file's text; a row dict, never raises (errors in the row)."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {'bag': str(bag), 'ok': False, 'error': '', 'seconds': 0.0, 'bag_duration_s': 0.0,
                           'input_messages': 0, 'truth': {}, 'topics': {}}
    try:
        from ..bag import BagReader
        from .run import run_bag
        with tempfile.TemporaryDirectory(prefix='cd_batch_') as tmp:
            config = Path(tmp) / Path(config_name).name
            config.write_text(config_text, encoding='utf-8')
            result, _, _ = run_bag(str(bag), str(config), progress=False)
        truth = BagReader(str(bag)).custom_data.get('ground_truth') or {}
        row['truth'] = {k: float(v) for k, v in truth.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)}
        row['bag_duration_s'] = float(result.bag_duration_s)
        row['input_messages'] = int(result.input_messages)
        for topic, items in sorted(result.outputs.items()):
            stamp_ns, fields = items[-1]
            row['topics'][topic] = {
                'type': result.types.get(topic, ''), 'messages': result.counts.get(topic, len(items)),
                'log_ns': int(stamp_ns),
                'algorithm': str(fields.get('algorithm', '')), 'model': str(fields.get('model', '')),
                'valid': bool(fields.get('valid', True)), 'reason': str(fields.get('status', '')),
                'parameters': parameter_rows(fields)}
        row['ok'] = True
        if not row['topics']:
            row['ok'], row['error'] = False, 'no estimate published (no samples in contact?)'
    except Exception as exc:  # noqa: BLE001 - a failing bag is reported in its row, the others go on
        row['error'] = f'{type(exc).__name__}: {exc}'.strip()
    row['seconds'] = time.perf_counter() - t0
    return row


# ---------------------------------------------------------------------------------------------- the run
class BatchResult(list):
    """Rows in the order of the bags, with the run's wall time, worker count and where the cluster was."""
    wall_s: float = 0.0
    workers: int = 0
    cluster: str = ''


def run_batch(bags: list[str], config: str | Path, workers: int = 2, scheduler: str | None = None,
              progress: bool = True) -> BatchResult:
    """Run every bag as a task; rows in the order of ``bags`` (see ``run_one``)."""
    from dask.distributed import Client, as_completed

    config_text = Path(config).read_text(encoding='utf-8')
    _check_config(config)
    t0 = time.perf_counter()
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout=30)
        where = scheduler
    else:
        if workers < 1:
            raise ConfigError(f'--workers must be >= 1, not {workers}')
        cluster = local_cluster(workers)
        client = Client(cluster)
        where = f'local cluster of {workers} worker processes on 127.0.0.1'
    try:
        n_workers = len(client.scheduler_info()['workers'])
        futures = client.map(run_one, bags, config_text=config_text, config_name=str(config), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        rows: list[dict | None] = [None] * len(bags)
        bar = _bar(len(bags), progress)
        for future in as_completed(futures):
            i = index[future.key]
            try:
                rows[i] = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker lost or a task killed: that row fails
                rows[i] = {'bag': bags[i], 'ok': False, 'error': f'{type(exc).__name__}: {exc}', 'seconds': 0.0,
                           'bag_duration_s': 0.0, 'input_messages': 0, 'truth': {}, 'topics': {}}
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=sum(1 for r in rows if r is not None and not r['ok']))
        if bar is not None:
            bar.close()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    out = BatchResult(rows)
    out.wall_s, out.workers, out.cluster = time.perf_counter() - t0, n_workers, where
    return out


def local_cluster(workers: int):
    """N single-threaded worker processes, everything on 127.0.0.1, no dashboard.

    The scheduler always runs an HTTP server (dask's /health, /metrics routes): it serves no route here and
    listens on 127.0.0.1 at a free port (not 8787), like the scheduler, nannies and workers.
    """
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set({'distributed.scheduler.http.routes': [], 'distributed.worker.http.routes': []}):
        return LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host='127.0.0.1',
                            scheduler_port=0, dashboard_address=None, silence_logs=40,
                            scheduler_kwargs={'dashboard': False, 'dashboard_address': '127.0.0.1:0'})


def _check_config(config: str | Path) -> None:
    """Fail early, in the client, on a parameter file no registered node can use."""
    from .run import load_offline_nodes
    load_offline_nodes(config)


def _bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc='batch', unit='bag', file=sys.stderr)


# ---------------------------------------------------------------------------------------------- outputs
CSV_COLUMNS = ('bag', 'status', 'topic', 'algorithm', 'model', 'parameter', 'value', 'sigma', 'truth',
               'rel_error', 'valid', 'reason', 'messages', 'bag_duration_s', 'seconds', 'error')


def table_rows(rows: list[dict]) -> list[dict]:
    """Flat table: one line per bag x output topic x parameter; a failed bag is one line with its error."""
    out = []
    for r in rows:
        base = {'bag': r['bag'], 'status': 'ok' if r['ok'] else 'failed', 'bag_duration_s': r['bag_duration_s'],
                'seconds': round(r['seconds'], 3), 'error': r['error']}
        if not r['ok'] or not r['topics']:
            out.append({c: base.get(c, '') for c in CSV_COLUMNS})
            continue
        for topic, t in r['topics'].items():
            for p in t['parameters'] or [{'name': '', 'value': math.nan, 'sigma': math.nan}]:
                truth = r['truth'].get(p['name'], math.nan)
                rel = (p['value'] - truth) / truth if truth and math.isfinite(truth) else math.nan
                out.append({**{c: '' for c in CSV_COLUMNS}, **base, 'topic': topic, 'algorithm': t['algorithm'],
                            'model': t['model'], 'parameter': p['name'], 'value': p['value'],
                            'sigma': p['sigma'], 'truth': truth, 'rel_error': rel, 'valid': t['valid'],
                            'reason': t['reason'], 'messages': t['messages']})
    return out


def write_report(result: BatchResult, out_dir: str | Path, config: str | Path = '') -> dict[str, Path]:
    """batch.csv, batch.yaml, one PNG per output topic and summary.md in ``out_dir``; their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {'table': out_dir / 'batch.csv', 'yaml': out_dir / 'batch.yaml', 'summary': out_dir / 'summary.md'}
    with open(paths['table'], 'w', newline='', encoding='utf-8') as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for line in table_rows(result):
            w.writerow({k: (f'{v:.9g}' if isinstance(v, float) else v) for k, v in line.items()})
    with open(paths['yaml'], 'w', encoding='utf-8') as f:
        yaml.safe_dump({'config': str(config), 'cluster': result.cluster, 'workers': result.workers,
                        'wall_s': float(result.wall_s), 'bags': list(result)}, f, sort_keys=False)
    for i, p in enumerate(plot_parameters(result, out_dir)):
        paths[f'plot{i}'] = p
    paths['summary'].write_text(summary_markdown(result, config), encoding='utf-8')
    return paths


def plot_parameters(rows: list[dict], out_dir: Path) -> list[Path]:
    """Per output topic: each parameter's final value per bag with a ±2σ bar, invalid ones in red, truth."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    topics: dict[str, list[str]] = {}
    for r in rows:
        for topic, t in r['topics'].items():
            names = topics.setdefault(topic, [])
            names += [p['name'] for p in t['parameters'] if p['name'] not in names]
    labels = [_short(r['bag']) for r in rows]
    written = []
    for topic, names in sorted(topics.items()):
        if not names:
            continue
        fig, axes = plt.subplots(len(names), 1, figsize=(max(6.0, 0.45 * len(rows) + 2), 2.4 * len(names)),
                                 sharex=True, squeeze=False)
        for ax, name in zip(axes[:, 0], names):
            for i, r in enumerate(rows):
                t = r['topics'].get(topic)
                p = next((p for p in t['parameters'] if p['name'] == name), None) if t else None
                if p is None:
                    if not r['ok']:
                        ax.plot(i, 0.02, 'x', color='0.5', transform=ax.get_xaxis_transform())
                    continue
                color = 'tab:blue' if t['valid'] else 'tab:red'
                err = 2 * p['sigma'] if math.isfinite(p['sigma']) else None
                ax.errorbar(i, p['value'], yerr=err, fmt='o', color=color, ms=4, capsize=3)
                if name in r['truth']:
                    ax.plot(i, r['truth'][name], '_', color='k', ms=14, mew=2)
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
        axes[0, 0].set_title(f'{topic}: final estimate per bag with ±2σ\n'
                             '(red: not valid, black bar: truth, grey x: bag failed)', fontsize=9)
        axes[-1, 0].set_xticks(range(len(rows)))
        axes[-1, 0].set_xticklabels(labels, rotation=60, ha='right', fontsize=7)
        written.append(save_topic_figure(fig, out_dir, topic, dpi=100))
    return written


def summary_markdown(result: BatchResult, config: str | Path = '') -> str:
    ok = [r for r in result if r['ok']]
    failed = [r for r in result if not r['ok']]
    bag_s = sum(r['bag_duration_s'] for r in ok)
    lines = ['# Batch run-bag summary', '',
             f'{len(result)} bags, {len(ok)} ok, {len(failed)} failed; config `{config}`; {result.cluster} '
             f'({result.workers} workers); {result.wall_s:.1f} s wall, '
             f'{60 * len(result) / max(result.wall_s, 1e-9):.1f} bags/min, {bag_s:.1f} s of bag time.', '']
    topics = sorted({t for r in ok for t in r['topics']})
    for topic in topics:
        lines += [f'## {topic}', '', '| bag | ' + ' | '.join(_param_names(ok, topic)) + ' | valid | reason |',
                  '|---|' + '---|' * (len(_param_names(ok, topic)) + 2)]
        for r in ok:
            t = r['topics'].get(topic)
            if t is None:
                continue
            cells = []
            for name in _param_names(ok, topic):
                p = next((p for p in t['parameters'] if p['name'] == name), None)
                cell = '' if p is None else f"{p['value']:.6g} ± {p['sigma']:.3g}"
                if p is not None and name in r['truth'] and r['truth'][name]:
                    cell += f" (truth {r['truth'][name]:.6g}, {100 * (p['value'] / r['truth'][name] - 1):+.2f} %)"
                cells.append(cell)
            lines.append(f"| {_short(r['bag'])} | " + ' | '.join(cells) + f" | {t['valid']} | {t['reason']} |")
        valid = sum(1 for r in ok if topic in r['topics'] and r['topics'][topic]['valid'])
        lines += ['', f'{valid} of {len(ok)} final estimates valid.', '']
    if failed:
        lines += ['## Failed bags', '', '| bag | error |', '|---|---|']
        lines += [f"| {r['bag']} | {r['error'].replace('|', '/')} |" for r in failed]
        lines.append('')
    return '\n'.join(lines)


def _param_names(rows: list[dict], topic: str) -> list[str]:
    names: list[str] = []
    for r in rows:
        for p in r['topics'].get(topic, {}).get('parameters', []):
            if p['name'] not in names:
                names.append(p['name'])
    return names


def _short(bag: str) -> str:
    p = Path(bag)
    return p.name if p.name not in ('', '.') else str(p)


# ---------------------------------------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bags', nargs='+', metavar='BAG_OR_GLOB', help="bags or quoted glob patterns ('trials/*')")
    parser.add_argument('--config', required=True, help='ROS 2 params file with a section per offline node')
    parser.add_argument('--report', required=True, help='directory for batch.csv, batch.yaml, PNGs, summary.md')
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--workers', type=int, default=min(os.cpu_count() or 1, 4),
                       help='worker processes of the local Dask cluster (default: CPUs, at most 4)')
    where.add_argument('--scheduler', help='address of an existing Dask scheduler, e.g. tcp://10.0.0.5:8786')
    parser.add_argument('--quiet', action='store_true', help='no progress bar')


def command(args) -> int:
    """The ``batch`` command: exit 0 when every bag ran, 1 when some failed (their rows say why)."""
    if not Path(args.config).is_file():
        raise FileNotFoundError(f'config {args.config} not found')
    bags = expand_bags(args.bags)
    result = run_batch(bags, args.config, workers=args.workers, scheduler=args.scheduler, progress=not args.quiet)
    paths = write_report(result, args.report, args.config)
    failed = [r for r in result if not r['ok']]
    print(f'{len(result)} bags on {result.cluster} in {result.wall_s:.1f} s '
          f'({60 * len(result) / max(result.wall_s, 1e-9):.1f} bags/min); {len(failed)} failed')
    for r in failed:
        print(f"  failed: {r['bag']}: {r['error']}")
    print(f"table {paths['table']}, summary {paths['summary']}, plots in {args.report}")
    return 1 if failed else 0
