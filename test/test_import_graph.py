"""The import graph of the four packages: no circles, no private names taken from another module.

The graph is built from the source (``ast``), not by importing, so it sees every import the code can execute:

- module-level imports AND imports inside functions, methods and ``if TYPE_CHECKING:`` blocks all count as an
  edge -- a circle that only closes at call time still ties the two modules together;
- an edge goes to the module the statement names: ``from a.b import c`` is an edge to ``a.b.c`` when ``c`` is
  a module (file or sub-package), otherwise to ``a.b`` (its ``__init__``); relative imports are resolved; an
  old path served by the alias finder (``contact_dynamics_common._MOVED``) resolves to its new home;
- the implicit import of a module's parent packages is NOT an edge (every sub-module would otherwise form a
  circle with the ``__init__`` that re-exports it).

A private name is one that starts with a single underscore. ``from m import _x`` and ``m._x`` (``m`` bound by
an import) are both refused when ``m`` is another module of the four packages; dunders (``__version__``) are
not private.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ('contact_dynamics_common', 'contact_estimation', 'pkm_identification', 'rover_contact')


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file of the four packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob('*.py')):
            parts = list(path.relative_to(root).with_suffix('').parts)
            if parts[-1] == '__init__':
                parts = parts[:-1]
            out['.'.join(parts)] = path
    return out


def moved_aliases(files: dict[str, Path]) -> dict[str, str]:
    """Old dotted name -> new dotted name, read from the ``_MOVED`` dict of every package ``__init__``."""
    out = {}
    for name, path in files.items():
        if path.name != '__init__.py':
            continue
        for node in ast.parse(path.read_text()).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
                node.target if isinstance(node, ast.AnnAssign) else None)
            if isinstance(target, ast.Name) and target.id == '_MOVED' and node.value is not None:
                for old, new in ast.literal_eval(node.value).items():
                    out[f'{name}.{old}'] = f'{name}.{new}'
    return out


class Import:
    """One import edge: ``source`` imports ``target`` at ``line``, taking ``names`` from it."""

    def __init__(self, source: str, target: str, line: int, names: tuple[str, ...] = ()):
        self.source, self.target, self.line, self.names = source, target, line, names

    def __repr__(self):
        names = f' ({", ".join(self.names)})' if self.names else ''
        return f'{self.source}:{self.line} -> {self.target}{names}'


def _resolve(name: str, files: dict[str, Path], aliases: dict[str, str]) -> str | None:
    """The module of the four packages that ``name`` designates (through the aliases), or None if outside."""
    for _ in range(4):
        if name in aliases:
            name = aliases[name]
    return name if name in files else None


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split('.') if is_package else module.split('.')[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return '.'.join(base + ([name] if name else []))


def imports_of(module: str, files: dict[str, Path], aliases: dict[str, str]
               ) -> tuple[list[Import], list[str]]:
    """The import edges of one module and the private names it takes from other modules (one line each)."""
    path = files[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == '__init__.py'
    edges: list[Import] = []
    bound: dict[str, str] = {}  # local name -> module it is bound to (for m._x)
    private: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, files, aliases)
                if target:
                    edges.append(Import(module, target, node.lineno))
                    if alias.asname:
                        bound[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module) if node.level else node.module
            plain = []
            for alias in node.names:
                sub = _resolve(f'{base}.{alias.name}', files, aliases)
                if sub:
                    edges.append(Import(module, sub, node.lineno))
                    bound[alias.asname or alias.name] = sub
                else:
                    plain.append(alias.name)
            target = _resolve(base, files, aliases)
            if target and plain:
                edges.append(Import(module, target, node.lineno, tuple(plain)))
                private += [f'{module}:{node.lineno} imports {n} from {target}' for n in plain
                            if _is_private(n) and target != module]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and _is_private(node.attr) and bound[node.value.id] != module):
            owner = bound[node.value.id]
            private.append(f'{module}:{node.lineno} uses {node.value.id}.{node.attr} of {owner}')
    return edges, private


def _is_private(name: str) -> bool:
    return name.startswith('_') and not (name.startswith('__') and name.endswith('__'))


def import_graph(root: Path = ROOT) -> tuple[dict[str, list[Import]], list[str]]:
    """Every module's import edges (inside the four packages) and every private-name import across modules."""
    files = module_files(root)
    aliases = moved_aliases(files)
    graph, private = {}, []
    for module in files:
        graph[module], p = imports_of(module, files, aliases)
        private += p
    return graph, private


def circles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), plus modules importing themselves."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for e in graph.get(v, ()):
            w = e.target
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or any(e.target == v for e in graph.get(v, ())):
                out.append(sorted(comp))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _describe(comp: list[str], graph: dict[str, list[Import]]) -> str:
    members = set(comp)
    return '\n  '.join(repr(e) for v in comp for e in graph[v] if e.target in members)


def test_no_import_circles():
    graph, _ = import_graph()
    found = circles(graph)
    assert not found, 'import circles:\n' + '\n'.join(f'- {c}:\n  {_describe(c, graph)}' for c in found)


def test_no_private_names_across_modules():
    _, private = import_graph()
    assert not private, 'private names imported from another module:\n' + '\n'.join(private)


def test_common_imports_no_capability_package():
    graph, _ = import_graph()
    up = [e for m, es in graph.items() if m.split('.')[0] == 'contact_dynamics_common' for e in es
          if e.target.split('.')[0] != 'contact_dynamics_common']
    assert not up, f'contact_dynamics_common imports a capability package: {up}'


#: the shared home's sub-packages and top-level modules, top-down as its ``__init__.py`` and doc/layout.md
#: list them: each may import only those after it
COMMON_LAYERS = ('cli', 'offline', 'ros', 'bag', 'messages', 'signal', 'trust', 'registry', 'paths', 'threads')


def test_shared_home_arrows_point_down():
    """Between the sub-packages of contact_dynamics_common every import goes down the documented order (a
    newcomer reading the layout top-down never meets a module that needs one further down the page)."""
    graph, _ = import_graph()

    def layer(module: str) -> str | None:
        parts = module.split('.')
        return parts[1] if parts[0] == 'contact_dynamics_common' and len(parts) > 1 else None

    layers = {layer(m) for m in graph} - {None}
    assert layers <= set(COMMON_LAYERS), f'not in the documented order: {layers - set(COMMON_LAYERS)}'
    rank = {name: i for i, name in enumerate(COMMON_LAYERS)}
    up = [e for m, es in graph.items() for e in es
          if layer(m) and layer(e.target) and rank[layer(m)] > rank[layer(e.target)]]
    assert not up, 'imports pointing up the layout:\n' + '\n'.join(map(repr, up))
    doc = (ROOT / 'contact_dynamics_common' / '__init__.py').read_text()
    where = [doc.find(f'``{name}``') for name in COMMON_LAYERS]
    assert min(where) >= 0 and where == sorted(where), 'the package docstring lists them in this order'


# ---- the checker itself, on small made-up trees: it must see what it claims to see ----

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir(exist_ok=True)
        (tmp_path / pkg / '__init__.py').touch()
    return tmp_path


def test_checker_finds_a_function_level_circle(tmp_path):
    root = _tree(tmp_path, {
        'pkm_identification/a.py': 'from .b import f\n',
        'pkm_identification/b.py': 'def f():\n    from .a import g\n',
    })
    graph, _ = import_graph(root)
    assert circles(graph) == [['pkm_identification.a', 'pkm_identification.b']]


def test_checker_follows_aliases_and_finds_private_names(tmp_path):
    root = _tree(tmp_path, {
        'contact_dynamics_common/__init__.py': "_MOVED = {'old': 'new.mod'}\n",
        'contact_dynamics_common/new/__init__.py': '',
        'contact_dynamics_common/new/mod.py': 'from contact_estimation import x\n_p = 1\n',
        'contact_estimation/x.py': ('from contact_dynamics_common.old import _p\n'
                                    'import contact_dynamics_common.old as o\nq = o._p\n'),
    })
    graph, private = import_graph(root)
    assert circles(graph) == [['contact_dynamics_common.new.mod', 'contact_estimation.x']]
    assert len(private) == 2 and all('contact_dynamics_common.new.mod' in p for p in private)


@pytest.mark.parametrize('source', ['from . import b\n', 'from .b import c\n',
                                    'import pkm_identification.b\n'])
def test_checker_resolves_each_import_form(tmp_path, source):
    root = _tree(tmp_path, {'pkm_identification/a.py': source,
                            'pkm_identification/b.py': 'c = 1\n'})
    graph, _ = import_graph(root)
    assert [e.target for e in graph['pkm_identification.a']] == ['pkm_identification.b']
