"""run-bag reports: ``summary.yaml`` (per output topic: message count and last message, field: value)
and PNG plots of every estimated parameter over bag time with its 2-sigma band (and the ground truth
when the bag's metadata carries one)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..offline.replay import ReplayResult


def flatten_fields(fields: Any, prefix: str = '') -> dict[str, Any]:
    """Nested message fields to 'a.b.c: value' (lists of scalars kept as lists)."""
    out: dict[str, Any] = {}
    if isinstance(fields, dict):
        for k, v in fields.items():
            out.update(flatten_fields(v, f'{prefix}{k}.'))
    elif isinstance(fields, list) and fields and isinstance(fields[0], dict):
        for i, v in enumerate(fields):
            out.update(flatten_fields(v, f'{prefix}{i}.'))
    else:
        out[prefix[:-1]] = _plain(fields)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def write_summary(result: ReplayResult, path: Path, extra: dict | None = None) -> dict:
    summary: dict[str, Any] = {'bag_duration_s': float(result.bag_duration_s),
                               'input_messages': int(result.input_messages), 'topics': {}}
    for topic, items in sorted(result.outputs.items()):
        summary['topics'][topic] = {'type': result.types[topic],
                                    'message_count': result.counts.get(topic, len(items)),
                                    'last': flatten_fields(items[-1][1])}
    summary['node_status'] = {k: {kk: _plain(vv) for kk, vv in v.items()} for k, v in result.status.items()}
    if extra:
        summary.update(extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        yaml.safe_dump(summary, f, sort_keys=False)
    return summary


def plot_estimates(result: ReplayResult, out_dir: Path, truth: dict | None = None) -> list[Path]:
    """One PNG per output topic that carries parameter estimates (parameter_names/names + covariance)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    written = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for topic, items in sorted(result.outputs.items()):
        first = items[0][1]
        names = first.get('parameter_names') or first.get('names')
        if not names:
            continue
        t = np.array([_stamp_s(f) for _, f in items])
        t = t - t[0]
        values = np.array([[f[n] if n in f else f['values'][i] for i, n in enumerate(names)] for _, f in items])
        p = len(names)
        var = np.array([[max(f['covariance'][i * p + i], 0.0) if f['covariance'][0] >= 0 else np.nan
                         for i in range(p)] for _, f in items])
        valid = np.array([bool(f.get('valid', True)) for _, f in items])
        fig, axes = plt.subplots(p, 1, figsize=(8, 2.4 * p), sharex=True, squeeze=False)
        for i, name in enumerate(names):
            ax = axes[i, 0]
            sd = np.sqrt(var[:, i])
            ax.plot(t, values[:, i], lw=1.2, label='estimate')
            ax.fill_between(t, values[:, i] - 2 * sd, values[:, i] + 2 * sd, alpha=0.25, label='±2σ')
            if (~valid).any():
                ax.plot(t[~valid], values[~valid, i], 'x', color='tab:red', ms=3, label='not valid')
            if truth and name in truth:
                ax.axhline(truth[name], color='k', ls='--', lw=1, label='truth')
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
            settled = values[len(values) // 2:, i]
            lo, hi = np.percentile(settled, [1, 99]) if len(settled) else (0, 1)
            if truth and name in truth:
                lo, hi = min(lo, truth[name]), max(hi, truth[name])
            pad = 0.2 * max(hi - lo, 1e-9 + 0.05 * abs(hi))
            ax.set_ylim(lo - pad, hi + pad)
        axes[0, 0].set_title(f"{topic}  ({first.get('algorithm', '')}, {first.get('model', '')})")
        axes[0, 0].legend(loc='upper right', fontsize=8)
        axes[-1, 0].set_xlabel('time since first estimate [s]')
        written.append(save_topic_figure(fig, out_dir, topic, dpi=110))
    return written


def save_topic_figure(fig, out_dir: Path, topic: str, dpi: int) -> Path:
    """Save (tight layout) and close the figure of one output topic as ``out_dir/<topic with / as __>.png``."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    path = out_dir / (topic.strip('/').replace('/', '__') + '.png')
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def _stamp_s(fields: dict) -> float:
    st = fields['header']['stamp']
    return st['sec'] + st['nanosec'] * 1e-9
