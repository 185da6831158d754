#!/usr/bin/env python3
"""Rewrite the old module paths of contact_dynamics_common to their new homes (``_MOVED``), in place.

  python tools/sweep_moved_imports.py [--write] [PATH ...]      (default: the whole repository)

Without ``--write`` it only lists what it would change (exit code 1 when something is left to sweep). The
old paths keep working through the alias finder for one release; this moves the callers so that the aliases
can go. What it rewrites, in ``.py`` and ``.md`` files:

- dotted names: ``contact_dynamics_common.msgconv`` -> ``contact_dynamics_common.messages.convert`` (imports,
  ``python -m`` arguments, docstrings);
- file paths: ``contact_dynamics_common/msgconv.py`` -> ``contact_dynamics_common/messages/convert.py``;
- ``from contact_dynamics_common import a, b`` where a name moved: one line per name, the moved ones as
  ``from contact_dynamics_common.<parent> import <leaf> as <old name>`` (the local name stays), or without
  ``as`` when the leaf has the old name.

Multi-line ``from contact_dynamics_common import (...)`` statements are reported, not rewritten.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = 'contact_dynamics_common'
SKIP = {'.venv', 'build', 'out', '.git', '__pycache__'}
#: files that name the old paths on purpose (the move's own record and tests)
KEEP = ('tools/sweep_moved_imports.py', 'doc/layout.md', 'test/test_module_moves.py', f'{PKG}/__init__.py')


def moved(root: Path = ROOT) -> dict[str, str]:
    """``_MOVED`` of the package, read from its source (old name -> new dotted name inside the package)."""
    tree = ast.parse((root / PKG / '__init__.py').read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == '_MOVED' for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f'{PKG}/__init__.py has no _MOVED')


def rewrite(text: str, table: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with the old paths replaced, and the notes of what could not be rewritten."""
    notes: list[str] = []
    old_names = '|'.join(sorted(map(re.escape, table), key=len, reverse=True))

    def from_import(m: re.Match) -> str:
        indent, names, comment = m.group(1), m.group(2), m.group(3) or ''
        lines = []
        keep = []
        for part in (p.strip() for p in names.split(',')):
            name, _, alias = (s.strip() for s in part.partition(' as '))
            if name in table:
                parent, _, leaf = f'{PKG}.{table[name]}'.rpartition('.')
                local = alias or name
                lines.append(f'{indent}from {parent} import {leaf}' + (f' as {local}' if local != leaf else ''))
            else:
                keep.append(part)
        if keep:
            lines.insert(0, f'{indent}from {PKG} import {", ".join(keep)}')
        lines[0] += comment
        return '\n'.join(lines)

    text = re.sub(rf'^([ \t]*)from {PKG} import (?!\()([^#\n]+?)([ \t]*#.*)?$', lambda m: (
        from_import(m) if any(p.strip().partition(' as ')[0].strip() in table for p in m.group(2).split(','))
        else m.group(0)), text, flags=re.M)
    for m in re.finditer(rf'^[ \t]*from {PKG} import \(([^)]*)\)', text, flags=re.M):
        if any(p.strip().partition(' as ')[0].strip() in table for p in m.group(1).split(',')):
            notes.append(f'multi-line import of a moved module: {m.group(0).strip()[:80]}')
    text = re.sub(rf'\b{PKG}\.({old_names})(?![\w])', lambda m: f'{PKG}.{table[m.group(1)]}', text)
    text = re.sub(rf'\b{PKG}/({old_names})\.py\b', lambda m: f'{PKG}/{table[m.group(1)].replace(".", "/")}.py', text)
    return text, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('paths', nargs='*', type=Path, default=[ROOT])
    ap.add_argument('--write', action='store_true', help='rewrite the files (default: only list them)')
    args = ap.parse_args(argv)
    table = moved()
    files = [f for p in args.paths for f in ([p] if p.is_file() else sorted(p.rglob('*')))
             if f.suffix in ('.py', '.md') and f.is_file() and not SKIP & set(f.parts)
             and not any(f.resolve() == (ROOT / k).resolve() for k in KEEP)]
    left = 0
    for f in files:
        text = f.read_text(encoding='utf-8')
        new, notes = rewrite(text, table)
        for note in notes:
            print(f'{f}: {note}')
        if new != text:
            left += 1
            print(f'{"rewrote" if args.write else "would rewrite"} {f}')
            if args.write:
                f.write_text(new, encoding='utf-8')
    return 1 if left and not args.write else 0


if __name__ == '__main__':
    sys.exit(main())
