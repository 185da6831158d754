"""contact-dynamics: the project's command line (offline tools; live nodes have their own executables).

Built-in commands work on any bag and any registered node:
  contact-dynamics run-bag BAG --config PARAMS.yaml [--out OUTBAG] [--report DIR]
                                                        run the configured nodes over a bag offline
  contact-dynamics batch BAG_OR_GLOB... --config PARAMS.yaml --report DIR [--workers N | --scheduler ADDR]
                                                        run-bag over many bags on Dask: table, plots, summary
  contact-dynamics play BAG [--rate R] [--clock-hz H]   publish a bag over DDS at recorded speed
  contact-dynamics info BAG                             topics, counts, duration and metadata of a bag
  contact-dynamics simulate NAME --out BAG [...]        write a simulated experiment with its ground truth
  contact-dynamics demo [NAME...] [--workdir DIR]       simulate, estimate offline, compare with the truth
  contact-dynamics plugins                              what every installed package registered
  contact-dynamics calibrate [--runs N] [--family P]    randomized calibration of every registered family
The other commands, simulators, offline nodes and demos come from the installed packages' plug-ins
(contact_dynamics_common.registry); `contact-dynamics --help` lists them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..paths import config_dir
from ..registry import load_target, registry
from ..ros.params import ConfigError
from .run import FRAMEWORK_PARAMS, RUN_BAG_KEPT, load_offline_nodes, run_bag

__all__ = ['BUILTIN', 'FRAMEWORK_PARAMS', 'RUN_BAG_KEPT', 'build_parser', 'config_dir', 'load_offline_nodes',
           'main', 'run_bag']


def _cmd_run_bag(args) -> int:
    result, summary, seconds = run_bag(args.bag, args.config, args.out, args.report, progress=not args.quiet,
                                       strict=args.strict)
    n_out = sum(result.counts.values())
    print(f'{args.bag}: {result.input_messages} input messages, {result.bag_duration_s:.2f} s of bag time '
          f'in {seconds:.3f} s ({result.bag_duration_s / max(seconds, 1e-9):.0f}x real time); '
          f'{n_out} estimates on {len(result.outputs)} topics')
    for note in result.notes:                                # which files / topics each node used
        print(note)
    source = result.recovery.metadata if result.recovery is not None else ''
    if 'rebuilt' in source or 'unusable' in source:          # metadata.yaml missing or ignored: say so
        print(f'metadata: {source}')
    if n_out == 0:
        print(f'no estimates: {no_estimates_reason(result)}')
    for line in result.recovery.lines():
        print(line)
    functions = [load_target(n.summary) for n in registry().offline_nodes.values() if n.summary]
    for topic, items in sorted(result.outputs.items()):
        line = _summary_line(functions, result.types.get(topic, ''), items[-1][1])
        if line:
            print(f'  {topic}: {line}')
    if args.out:
        print(f'estimates written to {args.out}')
    if args.report:
        print(f'report written to {args.report}/summary.yaml and {args.report}/*.png')
    return 2 if n_out == 0 else 0       # nothing estimated (the reason printed above): a script must not go on


def no_estimates_reason(result) -> str:
    """Why a replay published nothing, from the nodes' own counters: the inputs none of whose messages was
    accepted and every non-zero rejection counter (e.g. 'contact_estimator: joint_missing = 4000 of its
    messages; input displacement accepted none')."""
    if not result.input_messages:
        return "the bag has no messages on the nodes' input topics"
    parts = []
    for node, status in result.status.items():
        counts = {k: v for k, v in status.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        empty = sorted(k.rsplit('.', 1)[0] for k, v in counts.items() if k.endswith('.accepted') and v == 0)
        refused = [f'{k} = {v:g}' for k, v in counts.items() if v and not k.endswith('.accepted')
                   and any(w in k for w in ('missing', 'reject', 'malformed', 'nonfinite', 'out_of_order',
                                            'unpaired', 'overflow', 'skipped', 'outlier', 'refused', 'error'))]
        texts = [f'{k} = {v}' for k, v in status.items() if isinstance(v, str) and v
                 and any(w in k for w in ('error', 'reason', 'note'))]
        what = refused + texts + ([f"input {', '.join(empty)} accepted none"] if empty else [])
        parts.append(f"{node}: {'; '.join(what) if what else 'no rejection counted (too little data for an estimate?)'}")
    return ' | '.join(parts)


def _summary_line(functions: list, msg_type: str, fields: dict) -> str:
    """The first registered ``summary(msg_type, fields)`` that describes this message; else validity."""
    for fn in functions:
        line = fn(msg_type, fields)
        if line:
            return line
    return f"valid = {fields['valid']} ({fields.get('status', '')})" if 'valid' in fields else ''


def _cmd_batch(args) -> int:
    from .batch import command
    return command(args)


def _cmd_info(args) -> int:
    import yaml

    from ..bag import BagReader
    bag = BagReader(args.bag, unverified=not args.strict)
    recovery = bag.recovery if args.no_verify else bag.verify()
    counts = bag.message_counts
    index = ', '.join(sorted(set(recovery.indexed_by.values())))
    print(f'bag: {args.bag}\nstorage: {bag.storage} (index: {index})\nmetadata: {bag.metadata_source}')
    print(f'duration: {bag.duration_s:.3f} s\nstart: {bag.start_ns} ns\ntopics:')
    for topic, typ in sorted(bag.topics.items()):
        print(f'  {topic:40s} {typ:45s} {counts.get(topic, 0)} msgs')
    for line in recovery.lines():
        print(line)
    if bag.custom_data:
        print('custom_data:\n' + yaml.safe_dump(bag.custom_data, sort_keys=False))
    return 0


def _cmd_demo(args) -> int:
    """Run every registered demo (or the named ones) in turn; exit code of the worst."""
    demos = registry().demos
    names = args.names or list(demos)
    unknown = [n for n in names if n not in demos]
    if unknown:
        raise ConfigError(f"no demo {', '.join(unknown)} (registered: {', '.join(demos) or 'none'})")
    code = 0
    for name in names:
        if len(names) > 1:
            print(f'=== demo {name}: {demos[name].help}')
        code = max(code, int(load_target(demos[name].target)(Path(args.workdir) / name if len(names) > 1
                                                             else Path(args.workdir)) or 0))
    return code


def _cmd_plugins(args) -> int:
    """What every installed package registered, and where it was found."""
    reg = registry()
    for name, plugin in reg.plugins.items():
        print(f'{name}: {plugin.description}\n  found via {reg.sources[name]}')
        for c in plugin.commands:
            print(f'  command       {c.name:24s} {c.target}')
        for s in plugin.simulators:
            print(f'  simulator     {s.name:24s} {s.target}')
        for n in plugin.offline_nodes:
            print(f'  offline node  {n.node_name:24s} {n.factory}  (params {n.params})')
        for d in plugin.demos:
            print(f'  demo          {d.name:24s} {d.target}')
        for c in plugin.calibrations:
            print(f'  calibration   {c.name:24s} {c.target}')
    for err in reg.errors:
        print(f'error: {err}', file=sys.stderr)
    return 1 if reg.errors else 0


def _cmd_simulate(argv: list[str]) -> int:
    sims = registry().simulators
    if not argv or argv[0] in ('-h', '--help') or argv[0] not in sims:
        lines = [f'  {n:16s} {s.help}' for n, s in sims.items()]
        print('usage: contact-dynamics simulate NAME --out BAG [options]   (NAME --help for its options)\n\n'
              'simulators:\n' + '\n'.join(lines))
        if argv and argv[0] not in ('-h', '--help'):
            print(f"contact-dynamics simulate: error: unknown simulator '{argv[0]}'", file=sys.stderr)
            return 2
        return 0
    return int(load_target(sims[argv[0]].target)(argv[1:]) or 0)


BUILTIN = {
    'run-bag': 'run the configured estimators over a bag offline',
    'batch': 'run-bag over many bags as Dask tasks: one table, per-bag plots with 2 sigma, a summary',
    'play': 'publish a bag over DDS at recorded speed with /clock (see play --help)',
    'info': 'describe a bag: topics, types, counts, duration, metadata',
    'simulate': 'write a simulated experiment bag with its ground truth (see simulate --help)',
    'demo': 'simulate, estimate offline and print estimates vs truth (every registered demo)',
    'plugins': 'list what every installed package registered (commands, simulators, offline nodes, demos)',
    'calibrate': 'randomized calibration: coverage, confident-wrong and false-refusal rates of every family',
}


STRICT_HELP = ('do not use messages recovered-unverified from MCAP chunks that fail their CRC (by default '
               'the records that still parse, agree with the file and decode are used, and counted)')


def build_parser() -> argparse.ArgumentParser:
    reg = registry()
    epilog = ['commands of the installed packages:']
    epilog += [f'  {name:18s} {c.help}' for name, c in reg.commands.items()]
    epilog += ['', 'offline nodes (run-bag, make config): ' + (', '.join(reg.offline_nodes) or 'none'),
               'simulators (simulate NAME): ' + (', '.join(reg.simulators) or 'none')]
    epilog += [f'warning: {e}' for e in reg.errors]
    parser = argparse.ArgumentParser(prog='contact-dynamics', description=__doc__, epilog='\n'.join(epilog),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    rb = sub.add_parser('run-bag', help=BUILTIN['run-bag'])
    rb.add_argument('bag')
    rb.add_argument('--config', required=True, help='ROS 2 params file with a section per offline node')
    rb.add_argument('--out', help='output bag of every published estimate')
    rb.add_argument('--report', help='directory for summary.yaml and PNG plots')
    rb.add_argument('--quiet', action='store_true', help='no progress bar')
    rb.add_argument('--strict', action='store_true', help=STRICT_HELP)
    from .batch import add_arguments as batch_arguments
    batch_arguments(sub.add_parser('batch', help=BUILTIN['batch']))
    sub.add_parser('play', help=BUILTIN['play'], add_help=False)
    info = sub.add_parser('info', help=BUILTIN['info'])
    info.add_argument('bag')
    info.add_argument('--no-verify', action='store_true',
                      help='do not read every chunk to check it (faster; damage found only in the index)')
    info.add_argument('--strict', action='store_true', help=STRICT_HELP)
    sub.add_parser('simulate', help=BUILTIN['simulate'], add_help=False)
    demo = sub.add_parser('demo', help=BUILTIN['demo'])
    demo.add_argument('names', nargs='*', help=f"demos to run (default all: {', '.join(reg.demos) or 'none'})")
    demo.add_argument('--workdir', default='out/demo')
    sub.add_parser('plugins', help=BUILTIN['plugins'])
    sub.add_parser('calibrate', help=BUILTIN['calibrate'], add_help=False)
    for name, command in reg.commands.items():
        sub.add_parser(name, help=command.help.replace('%', '%%'), add_help=False)  # argparse formats help with %
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ..threads import limit_blas_threads
    limit_blas_threads()
    parser = build_parser()
    commands = registry().commands
    if argv[:1] == ['play']:
        from ..ros.play import main as play_main
        return play_main(argv[1:])
    if argv[:1] == ['simulate']:
        return _guarded('simulate', _cmd_simulate, argv[1:])
    if argv[:1] == ['calibrate']:
        from ..trust.calibration import main as calibrate_main
        return _guarded('calibrate', calibrate_main, argv[1:])
    if argv and argv[0] in commands and argv[0] not in BUILTIN:
        return _guarded(argv[0], load_target(commands[argv[0]].target), argv[1:])
    args = parser.parse_args(argv)
    command = {'run-bag': _cmd_run_bag, 'info': _cmd_info, 'demo': _cmd_demo, 'plugins': _cmd_plugins,
               'batch': _cmd_batch}[args.command]
    return _guarded(args.command, command, args)


def _guarded(name: str, command, args) -> int:
    """Run a command; a user error (bad config, bag, path) is one line on stderr and exit code 2."""
    from ..bag import BagError
    from ..offline.replay import ReplayError
    try:
        return command(args)
    except (ConfigError, ReplayError, BagError, FileNotFoundError, FileExistsError) as exc:
        print(f'contact-dynamics {name}: error: {exc}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
