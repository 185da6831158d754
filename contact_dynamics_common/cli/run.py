"""run-bag as a function: the configured offline nodes built from a params file, replayed over one bag.

``load_offline_nodes`` builds every registered offline node that has a section in the params file (its
parameters validated against the node's ParamSpecs, as the live node does); ``run_bag`` replays a bag through
them, writes the output bag and the report. Both the ``run-bag`` command (``cli.main``) and the fleet batch
(``cli.batch``, on Dask workers) call these, so a bag gives the same outputs either way.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..registry import registry
from ..ros.params import ConfigError, load_params_file, validate_all

__all__ = ['FRAMEWORK_PARAMS', 'RUN_BAG_KEPT', 'load_offline_nodes', 'run_bag']

#: parameters every rclpy node has; accepted in params files and ignored offline
FRAMEWORK_PARAMS = ('use_sim_time', 'start_type_description_service')


def load_offline_nodes(config_path: str | Path) -> list:
    """Every registered node that has a section in the params file, built from validated parameters."""
    nodes = []
    offline = registry().offline_nodes
    for node_name, spec in offline.items():
        raw = load_params_file(str(config_path), node_name)
        if not raw:
            continue
        raw = {k: v for k, v in raw.items() if k not in FRAMEWORK_PARAMS and not k.startswith('qos_overrides.')}
        try:
            params = validate_all(spec.param_specs(), raw)
        except ConfigError as exc:
            raise ConfigError(f'{config_path} [{node_name}]: {exc}') from None
        nodes.append(spec.build(params))
    if not nodes:
        raise ConfigError(f"{config_path} has parameters for none of the offline nodes: {', '.join(offline)}")
    return nodes


#: outputs per topic that run-bag keeps in memory for its report (thinned evenly; all are written to --out)
RUN_BAG_KEPT = 5_000


def run_bag(bag_path: str, config: str, out: str | None = None, report: str | None = None,
            progress: bool = True, overwrite: bool = True):
    """Replay ``bag_path`` through the configured nodes; returns (ReplayResult, summary or None, seconds)."""
    from ..bag import BagReader, BagWriter
    from ..offline.replay import replay
    from .report import plot_estimates, write_summary

    bag = BagReader(bag_path)
    nodes = load_offline_nodes(config)
    writer = BagWriter(out, custom_data={'source_bag': str(bag_path), 'config': str(config)},
                       overwrite=overwrite) if out else None
    t0 = time.perf_counter()
    try:
        result = replay(bag, nodes, writer, progress=progress, max_kept=RUN_BAG_KEPT)
    finally:
        if writer is not None:
            writer.close()
    seconds = time.perf_counter() - t0
    summary = None
    if report:
        truth = bag.custom_data.get('ground_truth')
        summary = write_summary(result, Path(report) / 'summary.yaml',
                                extra={'replay_wall_s': seconds, 'bag': result.recovery.as_dict(),
                                       'speed_vs_real_time': result.bag_duration_s / max(seconds, 1e-9),
                                       'ground_truth': truth})
        plot_estimates(result, Path(report), truth)
    return result, summary, seconds
