#!/usr/bin/env python3
"""Fingerprint run-bag: simulate one bag per package, run-bag it, print the sha256 of every output bag file.

  python tools/compare_run_bag_outputs.py --workdir /tmp/rb_fp [--json FILE] [--against FILE]

Used to show that a refactoring changes no output: run it on two checkouts (e.g. two ``git worktree``s, each
with ``PYTHONPATH=<worktree>`` so that its sources win over the installed package) with the SAME
``--workdir`` (the source-bag and config paths are written into the output bag's metadata, so they must be
equal), save the first run with ``--json`` and compare the second with ``--against``: exit code 1 and the
differing files when any output differs. The simulators are seeded, so the input bags are identical too
(their hashes are printed as well).

Every case is a registered simulator run through ``contact-dynamics simulate`` and the shipped params file of
the package's offline node(s), both called through the command line entry point of the checkout that runs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

#: package -> (simulate argv after NAME, params files in config/ whose sections run-bag runs)
CASES = {
    'single_point': (['contact-1dof', '--duration', '4'], ['contact_estimator.yaml']),
    'impedance': (['impedance-plant', '--scenario', 'S2', '--duration', '6'], ['impedance_profiler.yaml']),
    'multipoint': (['multipoint', 'M2'], ['multipoint_contact_estimator.yaml']),
    'pkm': (['pkm', '--trajectory', 'multisine', '--duration', '3'], ['pkm_identifier.yaml']),
    'rover': (['rover-approach', '--duration', '3'], ['impact_indicator.yaml', 'posture_evaluator.yaml']),
}


def sha256_tree(path: Path) -> dict[str, str]:
    """sha256 of every file under ``path`` (a bag directory), by relative path."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob('*')) if p.is_file()}


def run_case(name: str, workdir: Path, config_dir: Path) -> dict[str, dict[str, str]]:
    from contact_dynamics_common.cli import main
    sim_argv, configs = CASES[name]
    case = workdir / name
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    bag, out, params = case / 'input', case / 'output', case / 'params.yaml'
    params.write_text('\n'.join((config_dir / c).read_text() for c in configs))
    code = main(['simulate', *sim_argv[:1], '--out', str(bag), *sim_argv[1:]])
    if code:
        raise SystemExit(f'{name}: simulate exited {code}')
    code = main(['run-bag', str(bag), '--config', str(params), '--out', str(out), '--quiet'])
    if code:
        raise SystemExit(f'{name}: run-bag exited {code}')
    return {'input': sha256_tree(bag), 'output': sha256_tree(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--workdir', required=True, type=Path)
    ap.add_argument('--cases', nargs='*', default=list(CASES), choices=list(CASES))
    ap.add_argument('--json', type=Path, help='write the fingerprints here')
    ap.add_argument('--against', type=Path, help='compare with fingerprints written by an earlier --json')
    args = ap.parse_args(argv)
    import contact_dynamics_common
    source = Path(contact_dynamics_common.__file__).resolve().parents[1]
    print(f'contact_dynamics_common from {contact_dynamics_common.__file__}')
    result = {name: run_case(name, args.workdir.resolve(), source / 'config') for name in args.cases}
    for name, parts in result.items():
        for part, files in parts.items():
            for rel, digest in files.items():
                print(f'{name:13s} {part:6s} {digest}  {rel}')
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True))
    if args.against:
        before = json.loads(args.against.read_text())
        diff = [f'{n} {p} {f}' for n in result for p in result[n]
                for f in set(result[n][p]) | set(before.get(n, {}).get(p, {}))
                if result[n][p].get(f) != before.get(n, {}).get(p, {}).get(f)]
        print(f'identical to {args.against}' if not diff else 'DIFFERENT:\n  ' + '\n  '.join(sorted(diff)))
        return 1 if diff else 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
