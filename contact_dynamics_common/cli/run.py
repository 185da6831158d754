"""run-bag as a function: the configured offline nodes built from a params file, replayed over one bag.

``load_offline_nodes`` builds every registered offline node that has a section in the params file (its
parameters validated against the node's ParamSpecs, as the live node does); ``run_bag`` replays a bag through
them, writes the output bag and the report. A node may have ``bind_sources(bag=, config=)`` (called before
the replay: files it takes from beside the bag or the params file) and ``describe() -> str`` (one line: what
it used; collected in ``ReplayResult.notes`` and printed by run-bag). Both the ``run-bag`` command
(``cli.main``) and the fleet batch (``cli.batch``, on Dask workers) call these, so a bag gives the same
outputs either way.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..registry import registry
from ..ros.params import ConfigError, load_params_file, resolve_relative_file, validate_all

__all__ = ['FRAMEWORK_PARAMS', 'RUN_BAG_KEPT', 'check_usable', 'load_offline_nodes', 'run_bag']

#: parameters every rclpy node has; accepted in params files and ignored offline
FRAMEWORK_PARAMS = ('use_sim_time', 'start_type_description_service')


def load_offline_nodes(config_path: str | Path) -> list:
    """Every registered node that has a section in the params file, built from validated parameters; a
    relative file path in a text parameter is taken beside the params file when it exists there (the live
    node's rule, ``ros.node``: a params file and its machine / geometry / model files travel together)."""
    nodes = []
    offline = registry().offline_nodes
    for node_name, spec in offline.items():
        raw = load_params_file(str(config_path), node_name)
        if not raw:
            continue
        raw = {k: v for k, v in raw.items() if k not in FRAMEWORK_PARAMS and not k.startswith('qos_overrides.')}
        specs = spec.param_specs()
        text = {s.name for s in specs if isinstance(s.default, str)}     # file names: beside the params file
        raw = {k: resolve_relative_file(v, str(config_path)) if k in text else v for k, v in raw.items()}
        try:
            params = validate_all(specs, raw)
        except ConfigError as exc:
            raise ConfigError(f'{config_path} [{node_name}]: {exc}') from None
        nodes.append(spec.build(params))
    if not nodes:
        raise ConfigError(f"{config_path} has parameters for none of the offline nodes: {', '.join(offline)}")
    return nodes


#: outputs per topic that run-bag keeps in memory for its report (thinned evenly; all are written to --out).
#: A kept output is its message's fields as a dict (~14 kB with its extras): 3 topics x 5 000 held 68 MB, a
#: third of the process's peak; 2 000 points per series is still more than a plot's width in pixels
RUN_BAG_KEPT = 2_000


def check_usable(bag, nodes: list, bag_path: str) -> None:
    """BagError naming the damage when a damaged bag holds no intact message the nodes read (a bag cut
    before its first message, a lost topics table), or when a bag holds no message at all."""
    from ..bag import BagError
    rec = bag.recovery
    needed = list(dict.fromkeys(t for node in nodes for t in node.inputs()))
    missing = [t for t in needed if t not in bag.topics]
    if rec.damaged and (missing or not sum(rec.per_topic.get(t, 0) for t in needed)):
        first = sorted(rec.damage, key=lambda d: (d.file, d.offset))[0].describe()
        what = (f'input topic(s) {", ".join(missing)} not in what is left of it' if missing else
                f'no intact message of {", ".join(needed)}')
        raise BagError(f'{bag_path}: the bag is damaged: {what} ({rec.messages} intact messages in all; '
                       f'{first})')
    if not rec.damaged and rec.messages == 0:
        raise BagError(f'{bag_path}: the bag holds no messages')


def run_bag(bag_path: str, config: str, out: str | None = None, report: str | None = None,
            progress: bool = True, overwrite: bool = True, strict: bool = False):
    """Replay ``bag_path`` through the configured nodes; returns (ReplayResult, summary or None, seconds).

    ``strict``: messages recovered-unverified from MCAP chunks that failed their CRC are not used
    (``BagReader(unverified=False)``). A damaged bag that holds no intact message the nodes read is a
    BagError naming the damage (``check_usable``)."""
    from ..bag import BagReader, BagWriter
    from ..offline.replay import replay
    from .report import plot_estimates, write_summary

    bag = BagReader(bag_path, unverified=not strict)
    nodes = load_offline_nodes(config)
    for node in nodes:             # optional: a node that takes files from beside the bag or the params file
        if hasattr(node, 'bind_sources'):
            node.bind_sources(bag=bag_path, config=config)
    check_usable(bag, nodes, bag_path)
    writer = BagWriter(out, custom_data={'source_bag': str(bag_path), 'config': str(config)},
                       overwrite=overwrite) if out else None
    t0 = time.perf_counter()
    try:
        result = replay(bag, nodes, writer, progress=progress, max_kept=RUN_BAG_KEPT)
        result.notes = [node.describe() for node in nodes if hasattr(node, 'describe')]
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
