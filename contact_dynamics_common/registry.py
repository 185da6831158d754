"""Plug-in registry: what each capability package offers to the shared tools, found without naming it.

``contact_dynamics_common`` imports no capability package. A package describes what it offers in one
light module (by convention ``<package>/plugin.py``) holding ``PLUGIN = Plugin(...)``: its CLI commands,
simulators, offline nodes (node name -> parameter specs + offline class, for ``run-bag`` and ``make
config``), demos and calibration families (``contact-dynamics calibrate``), each named by a ``'module:attribute'`` string so that listing them imports nothing
heavy. The plug-in modules are found on both install paths:

1. setuptools entry points of the group ``contact_dynamics.plugins`` (``pip install``, editable or not);
2. ament index resources of the type ``contact_dynamics_plugins`` (``colcon build`` with ament_cmake, where
   ``ament_python_install_package`` installs no entry points): one resource per ROS package, one line
   ``name = module`` per plug-in, searched in ``AMENT_PREFIX_PATH`` and in this interpreter's prefix.

Both are written from one list, ``resource/contact_dynamics_plugins`` (setup.py and CMakeLists.txt read it),
so adding a package means one line there and its own ``plugin.py``; nothing here changes.
``CONTACT_DYNAMICS_PLUGINS=name=module,...`` adds plug-ins for a run (tests, development).
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

ENTRY_POINT_GROUP = 'contact_dynamics.plugins'
AMENT_RESOURCE_TYPE = 'contact_dynamics_plugins'


class RegistryError(RuntimeError):
    """A plug-in that cannot be loaded, or two plug-ins that claim the same name."""


def load_target(target: str) -> Any:
    """``'package.module:attr'`` -> the attribute (the module is imported now, not before)."""
    module, _, attr = target.partition(':')
    obj = importlib.import_module(module)
    for part in attr.split('.') if attr else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Command:
    """``contact-dynamics NAME ARGS...``: ``target(argv) -> exit code`` parses its own arguments."""
    name: str
    target: str
    help: str


@dataclass(frozen=True)
class Simulator:
    """``contact-dynamics simulate NAME ARGS...``: ``target(argv) -> exit code`` writes a bag with its truth."""
    name: str
    target: str
    help: str


@dataclass(frozen=True)
class Demo:
    """``contact-dynamics demo``: ``target(workdir: Path) -> exit code`` simulates, estimates, prints vs truth."""
    name: str
    target: str
    help: str


@dataclass(frozen=True)
class Calibration:
    """A family of ``contact-dynamics calibrate``: ``target(rng) -> list[trust.calibration.Outcome]`` draws one
    random experiment, estimates as the node / run-bag would and returns each published value with its truth."""
    name: str
    target: str
    help: str


@dataclass(frozen=True)
class OfflineNodeSpec:
    """A ROS node that ``run-bag`` can run offline.

    ``params``: ``'module:PARAMS'``, the node's list of ParamSpec (the same list the live node declares).
    ``factory``: ``'module:Class'``, built as ``Class(validated_params)``; see ``replay.OfflineNode``.
    ``config_file``: its documented parameter file in ``config/`` (written by ``make config`` from the specs,
    with ``config_header`` on top and ``config_values`` overriding the defaults for the shipped example).
    ``summary``: optional ``'module:function'``, ``function(msg_type, fields) -> str | None``: one line of
    run-bag output for a message of a type this node publishes (None for other types).
    """
    node_name: str
    params: str
    factory: str
    config_file: str = ''
    config_header: str = ''
    config_values: dict = field(default_factory=dict, hash=False, compare=False)
    summary: str = ''

    def param_specs(self) -> list:
        return list(load_target(self.params))

    def build(self, params: dict):
        return load_target(self.factory)(params)


@dataclass(frozen=True)
class Plugin:
    """Everything one capability package offers to the shared tools."""
    name: str
    description: str = ''
    commands: tuple[Command, ...] = ()
    simulators: tuple[Simulator, ...] = ()
    offline_nodes: tuple[OfflineNodeSpec, ...] = ()
    demos: tuple[Demo, ...] = ()
    calibrations: tuple[Calibration, ...] = ()


@dataclass
class Registry:
    """The merged view of every installed plug-in (``registry()`` builds it once per process)."""
    plugins: dict[str, Plugin] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)      # plug-in name -> where it was found
    errors: list[str] = field(default_factory=list)            # plug-ins that failed to load

    def add(self, plugin: Plugin, source: str) -> None:
        if plugin.name in self.plugins:
            return                                              # the same plug-in seen on both paths
        for kind, mine, theirs in (('command', plugin.commands, self.commands),
                                   ('simulator', plugin.simulators, self.simulators),
                                   ('offline node', plugin.offline_nodes, self.offline_nodes),
                                   ('demo', plugin.demos, self.demos),
                                   ('calibration family', plugin.calibrations, self.calibrations)):
            for item in mine:
                key = getattr(item, 'node_name', None) or item.name
                if key in theirs:
                    raise RegistryError(f"{kind} '{key}' of plug-in '{plugin.name}' is already registered")
        self.plugins[plugin.name] = plugin
        self.sources[plugin.name] = source

    @property
    def commands(self) -> dict[str, Command]:
        return {c.name: c for p in self.plugins.values() for c in p.commands}

    @property
    def simulators(self) -> dict[str, Simulator]:
        return {s.name: s for p in self.plugins.values() for s in p.simulators}

    @property
    def offline_nodes(self) -> dict[str, OfflineNodeSpec]:
        return {n.node_name: n for p in self.plugins.values() for n in p.offline_nodes}

    @property
    def demos(self) -> dict[str, Demo]:
        return {d.name: d for p in self.plugins.values() for d in p.demos}

    @property
    def calibrations(self) -> dict[str, Calibration]:
        return {c.name: c for p in self.plugins.values() for c in p.calibrations}


def _entry_point_modules() -> list[tuple[str, str, str]]:
    from importlib.metadata import entry_points
    return [(ep.name, ep.value, f'entry point {ENTRY_POINT_GROUP}') for ep in entry_points(group=ENTRY_POINT_GROUP)]


def parse_plugin_list(text: str) -> list[tuple[str, str]]:
    """Lines ``name = module`` (``#`` comments and blank lines ignored), as in resource/contact_dynamics_plugins."""
    out = []
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        name, sep, module = (s.strip() for s in line.partition('='))
        if not sep or not name or not module:
            raise RegistryError(f'plug-in list line {raw!r} is not "name = module"')
        out.append((name, module))
    return out


def ament_prefixes() -> list[Path]:
    """AMENT_PREFIX_PATH, then this interpreter's prefix (the venv the bootstrap installs into)."""
    prefixes = [Path(p) for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    prefixes.append(Path(sys.prefix))
    seen, out = set(), []
    for p in prefixes:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _ament_modules() -> list[tuple[str, str, str]]:
    found = []
    for prefix in ament_prefixes():
        index = prefix / 'share' / 'ament_index' / 'resource_index' / AMENT_RESOURCE_TYPE
        if not index.is_dir():
            continue
        for resource in sorted(index.iterdir()):
            for name, module in parse_plugin_list(resource.read_text(encoding='utf-8')):
                found.append((name, module, f'ament index {resource}'))
    return found


def _env_modules() -> list[tuple[str, str, str]]:
    spec = os.environ.get('CONTACT_DYNAMICS_PLUGINS', '')
    return [(n, m, 'CONTACT_DYNAMICS_PLUGINS') for n, m in parse_plugin_list(spec.replace(',', '\n'))]


def discover(sources: tuple[Callable[[], list], ...] | None = None) -> Registry:
    """Load every plug-in module found; one that fails to import is reported in ``errors``, not fatal."""
    reg = Registry()
    for source in sources or (_entry_point_modules, _ament_modules, _env_modules):
        for name, module, where in source():
            if name in reg.plugins:
                continue
            try:
                plugin = load_target(module if ':' in module else module + ':PLUGIN')
            except Exception as exc:  # noqa: BLE001 - a broken plug-in must not hide the others
                reg.errors.append(f"plug-in '{name}' ({module}, {where}): {type(exc).__name__}: {exc}")
                continue
            if not isinstance(plugin, Plugin):
                reg.errors.append(f"plug-in '{name}' ({module}): PLUGIN is not a registry.Plugin")
                continue
            reg.add(plugin, where)
    return reg


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The registry of this process (discovered once)."""
    return discover()
