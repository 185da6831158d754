#!/usr/bin/env python3
"""Regenerate config/<node>.yaml of every registered offline node from its ParamSpec list.

  .venv/bin/python tools/gen_config.py        # rewrites config/contact_estimator.yaml, ...
Nodes come from the plug-in registry (contact_dynamics_common.registry): the header, file name and example
values are in each package's plugin.py.
The test suite checks that the committed file is what this script produces.
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def documented_nodes() -> dict:
    """Every registered offline node that has a documented config file (plug-in registry)."""
    from contact_dynamics_common.registry import registry
    return {name: spec for name, spec in registry().offline_nodes.items() if spec.config_file}


def _value(v) -> str:
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix('...').strip()


def render(node: str) -> str:
    spec = documented_nodes()[node]
    specs, overrides, header = spec.param_specs(), spec.config_values, spec.config_header
    out = [header.rstrip('\n'), f'{node}:', '  ros__parameters:']
    groups: dict = {}
    for s in specs:
        head, _, tail = s.name.partition('.')
        groups.setdefault(head if tail else None, []).append(s)

    def emit(s, indent: int, key: str) -> None:
        pad = ' ' * indent
        out.extend(pad + '# ' + line for line in textwrap.wrap(s.description, 100 - indent))
        extra = s.constraint_text()
        if extra or s.dynamic:
            out.append(pad + '# [' + extra + ']' + (' (dynamic)' if s.dynamic else ''))
        out.append(pad + f'{key}: {_value(overrides.get(s.name, s.default))}')
        out.append('')

    for s in groups.pop(None, []):
        emit(s, 4, s.name)
    for group, group_specs in groups.items():
        out.append(f'    {group}:')
        for s in group_specs:
            emit(s, 6, s.name.split('.', 1)[1])
    return '\n'.join(out).rstrip('\n') + '\n'


def main() -> int:
    for node, spec in documented_nodes().items():
        (ROOT / 'config' / spec.config_file).write_text(render(node))
        print(f'wrote config/{spec.config_file}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
