"""contact-dynamics: the project's command line (offline tools; live nodes have their own executables).

  contact-dynamics simulate contact-1dof --out BAG [...]     write a simulated experiment with ground truth
  contact-dynamics simulate scenario S2 --out BAG [...]      write a spec scenario (S1, S2, S5-S9) as a bag
  contact-dynamics run-bag BAG --config PARAMS.yaml [--out OUTBAG] [--report DIR]
                                                            run the configured estimators over a bag offline
  contact-dynamics contact-compare BAG [--report DIR]       all nine single-point estimators, thesis-style report
  contact-dynamics play BAG [--rate R] [--clock-hz H]         publish a bag over DDS at recorded speed
  contact-dynamics info BAG                                   topics, counts, duration and metadata of a bag
  contact-dynamics demo [--workdir DIR]                       simulate, estimate offline, compare with the truth
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from .params import ConfigError, load_params_file, validate_all

#: offline nodes by ROS node name: (module with PARAMS, offline class)
OFFLINE_NODES = {
    'contact_estimator': ('contact_estimation.config', 'contact_estimation.offline:OfflineContactEstimator'),
}
#: parameters every rclpy node has; accepted in params files and ignored offline
FRAMEWORK_PARAMS = ('use_sim_time', 'start_type_description_service')


def config_dir() -> Path:
    """The project's config/ (source tree) or the installed share/contact_dynamics/config."""
    here = Path(__file__).resolve().parents[1] / 'config'
    if here.is_dir():
        return here
    return Path(sys.prefix) / 'share' / 'contact_dynamics' / 'config'


def load_offline_nodes(config_path: str | Path) -> list:
    """Every registered node that has a section in the params file, built from validated parameters."""
    nodes = []
    for node_name, (config_mod, factory) in OFFLINE_NODES.items():
        raw = load_params_file(str(config_path), node_name)
        if not raw:
            continue
        raw = {k: v for k, v in raw.items() if k not in FRAMEWORK_PARAMS and not k.startswith('qos_overrides.')}
        specs = importlib.import_module(config_mod).PARAMS
        try:
            params = validate_all(specs, raw)
        except ConfigError as exc:
            raise ConfigError(f'{config_path} [{node_name}]: {exc}') from None
        module, cls = factory.split(':')
        nodes.append(getattr(importlib.import_module(module), cls)(params))
    if not nodes:
        raise ConfigError(f"{config_path} has parameters for none of the offline nodes: {', '.join(OFFLINE_NODES)}")
    return nodes


def run_bag(bag_path: str, config: str, out: str | None = None, report: str | None = None,
            progress: bool = True, overwrite: bool = True):
    """Replay ``bag_path`` through the configured nodes; returns (ReplayResult, summary or None, seconds)."""
    from .bag import BagReader, BagWriter
    from .replay import replay
    from .report import plot_estimates, write_summary

    bag = BagReader(bag_path)
    nodes = load_offline_nodes(config)
    writer = BagWriter(out, custom_data={'source_bag': str(bag_path), 'config': str(config)},
                       overwrite=overwrite) if out else None
    t0 = time.perf_counter()
    try:
        result = replay(bag, nodes, writer, progress=progress)
    finally:
        if writer is not None:
            writer.close()
    seconds = time.perf_counter() - t0
    summary = None
    if report:
        truth = bag.custom_data.get('ground_truth')
        summary = write_summary(result, Path(report) / 'summary.yaml',
                                extra={'replay_wall_s': seconds,
                                       'speed_vs_real_time': result.bag_duration_s / max(seconds, 1e-9),
                                       'ground_truth': truth})
        plot_estimates(result, Path(report), truth)
    return result, summary, seconds


def _cmd_run_bag(args) -> int:
    result, summary, seconds = run_bag(args.bag, args.config, args.out, args.report, progress=not args.quiet)
    n_out = sum(len(v) for v in result.outputs.values())
    print(f'{args.bag}: {result.input_messages} input messages, {result.bag_duration_s:.2f} s of bag time '
          f'in {seconds:.3f} s ({result.bag_duration_s / max(seconds, 1e-9):.0f}x real time); '
          f'{n_out} estimates on {len(result.outputs)} topics')
    for topic, items in sorted(result.outputs.items()):
        last = items[-1][1]
        if 'stiffness' in last:
            print(f"  {topic}: k = {last['stiffness']:.6g} N/m, b = {last['damping']:.6g} N*s/m, "
                  f"valid = {last['valid']} ({last['status']})")
    if args.out:
        print(f'estimates written to {args.out}')
    if args.report:
        print(f'report written to {args.report}/summary.yaml and {args.report}/*.png')
    return 0


def _cmd_info(args) -> int:
    import yaml

    from .bag import BagReader
    bag = BagReader(args.bag)
    counts = bag.message_counts
    print(f'bag: {args.bag}\nduration: {bag.duration_s:.3f} s\nstart: {bag.start_ns} ns\ntopics:')
    for topic, typ in sorted(bag.topics.items()):
        print(f'  {topic:40s} {typ:45s} {counts.get(topic, 0)} msgs')
    if bag.custom_data:
        print('custom_data:\n' + yaml.safe_dump(bag.custom_data, sort_keys=False))
    return 0


def _cmd_demo(args) -> int:
    import numpy as np

    from contact_estimation.simulate import KelvinVoigt1Dof, write_bag

    work = Path(args.workdir)
    sim = KelvinVoigt1Dof()
    bag_path = work / 'bag'
    print(f'1. simulating a 1-DOF Kelvin-Voigt contact: k = {sim.stiffness:g} N/m, b = {sim.damping:g} N*s/m, '
          f'{sim.duration:g} s at {sim.rate:g} Hz, sigma_F = {sim.sigma_force:g} N, sigma_x = {sim.sigma_position:g} m')
    write_bag(sim, bag_path, overwrite=True)
    config = config_dir() / 'contact_estimator.yaml'
    print(f'2. running the estimators offline over {bag_path} with {config}')
    result, summary, seconds = run_bag(str(bag_path), str(config), str(work / 'estimates'), str(work / 'report'))
    print(f'   {result.input_messages} messages, {result.bag_duration_s:.1f} s of data in {seconds:.2f} s '
          f'({result.bag_duration_s / seconds:.0f}x real time, including reading the bag and writing '
          f'{sum(len(v) for v in result.outputs.values())} estimates; bench/bench_run_bag.py measures '
          f'long bags)')
    print('3. final estimates against the ground truth:')
    header = f"{'topic':36s} {'k [N/m]':>22s} {'truth':>8s} {'err':>8s} {'b [N*s/m]':>20s} {'truth':>7s} {'err':>8s}  valid"
    print(header)
    truth = {'stiffness': sim.stiffness, 'damping': sim.damping}
    worst = 0.0
    for topic, items in sorted(result.outputs.items()):
        last = items[-1][1]
        p = len(last['parameter_names'])
        sd = [float(np.sqrt(max(last['covariance'][i * p + i], 0))) for i in range(p)]
        ek = (last['stiffness'] - truth['stiffness']) / truth['stiffness']
        eb = (last['damping'] - truth['damping']) / truth['damping']
        worst = max(worst, abs(ek))
        print(f"{topic:36s} {last['stiffness']:10.2f} ± {2 * sd[0]:8.2f} {truth['stiffness']:8.0f} {ek:+8.3%} "
              f"{last['damping']:9.3f} ± {2 * sd[1]:7.3f} {truth['damping']:7.0f} {eb:+8.3%}  {last['valid']}")
    print(f'report: {work / "report"}/summary.yaml and PNG plots; estimates bag: {work / "estimates"}')
    return 0 if worst < 0.01 else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog='contact-dynamics', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    sim = sub.add_parser('simulate', help='write a simulated experiment bag with its ground truth')
    sim.add_argument('scenario', choices=['contact-1dof', 'scenario'],
                     help="contact-1dof: the KV multisine experiment; scenario S1..S9: a spec scenario")
    rb = sub.add_parser('run-bag', help='run the configured estimators over a bag offline')
    rb.add_argument('bag')
    rb.add_argument('--config', required=True, help='ROS 2 params file (node sections, e.g. contact_estimator)')
    rb.add_argument('--out', help='output bag of every published estimate')
    rb.add_argument('--report', help='directory for summary.yaml and PNG plots')
    rb.add_argument('--quiet', action='store_true', help='no progress bar')
    sub.add_parser('play', help='publish a bag over DDS at recorded speed (see play --help)', add_help=False)
    sub.add_parser('contact-compare', help='run all nine single-point estimators on a bag and write the '
                   'comparison report (see contact-compare --help)', add_help=False)
    info = sub.add_parser('info', help='describe a bag')
    info.add_argument('bag')
    demo = sub.add_parser('demo', help='simulate a contact, estimate it offline, print estimates vs truth')
    demo.add_argument('--workdir', default='out/demo')

    if argv[:1] == ['play']:
        from .play import main as play_main
        return play_main(argv[1:])
    if argv[:1] == ['contact-compare']:
        from contact_estimation.compare import main as compare_main
        return _guarded('contact-compare', compare_main, argv[1:])
    if argv[:1] == ['simulate'] and len(argv) > 1 and argv[1] in ('contact-1dof', 'scenario'):
        from contact_estimation.simulate import main as sim_main
        return sim_main(argv[2:] if argv[1] == 'contact-1dof' else argv[1:])
    args = parser.parse_args(argv)
    command = {'run-bag': _cmd_run_bag, 'info': _cmd_info, 'demo': _cmd_demo}[args.command]
    return _guarded(args.command, command, args)


def _guarded(name: str, command, args) -> int:
    """Run a command; a user error (bad config, bag, path) is one line on stderr and exit code 2."""
    from .bag import BagError
    from .replay import ReplayError
    try:
        return command(args)
    except (ConfigError, ReplayError, BagError, FileNotFoundError, FileExistsError) as exc:
        print(f'contact-dynamics {name}: error: {exc}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
