"""The plug-in registry: packages plug in, the shared home imports none of them, both install paths work."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contact_dynamics_common import registry as reg_mod
from contact_dynamics_common.registry import (Command, OfflineNodeSpec, Plugin, RegistryError, Registry,
                                              parse_plugin_list)

ROOT = Path(__file__).resolve().parents[1]
CAPABILITY_PACKAGES = ('contact_estimation', 'pkm_identification', 'rover_contact')
PLUGIN_LIST = parse_plugin_list((ROOT / 'resource' / 'contact_dynamics_plugins').read_text())
CLI = [sys.executable, '-m', 'contact_dynamics_common.cli']


def test_shared_home_imports_no_capability_package_in_its_source():
    offenders = []
    for path in sorted((ROOT / 'contact_dynamics_common').glob('*.py')):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f'{path.name}: {n}' for n in names if n.split('.')[0] in CAPABILITY_PACKAGES]
        text = path.read_text()
        offenders += [f'{path.name}: names {p!r}' for p in CAPABILITY_PACKAGES
                      if f"'{p}" in text or f'"{p}' in text]
    assert offenders == []


def test_importing_every_shared_module_loads_no_capability_package():
    code = textwrap.dedent('''
        import importlib, pkgutil, sys
        import contact_dynamics_common as c
        for m in pkgutil.iter_modules(c.__path__):
            importlib.import_module('contact_dynamics_common.' + m.name)
        print(sorted(n for n in sys.modules if n.split('.')[0] in %r))
    ''' % (CAPABILITY_PACKAGES,))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == '[]'


def test_every_listed_plugin_is_found_through_entry_points_and_through_the_ament_index():
    by_entry_points = reg_mod.discover((reg_mod._entry_point_modules,))
    by_ament = reg_mod.discover((reg_mod._ament_modules,))
    listed = {name for name, _ in PLUGIN_LIST}
    assert by_entry_points.errors == [] and by_ament.errors == []
    assert set(by_entry_points.plugins) == listed           # pip install path
    assert set(by_ament.plugins) == listed                  # colcon path (the bootstrap lays out the index)
    assert by_entry_points.commands.keys() == by_ament.commands.keys()
    assert by_entry_points.offline_nodes.keys() == by_ament.offline_nodes.keys()


def test_registered_offline_nodes_build_from_their_validated_defaults():
    from contact_dynamics_common.ros.params import validate_all
    offline = reg_mod.registry().offline_nodes
    assert 'contact_estimator' in offline
    for name, spec in offline.items():
        node = spec.build(validate_all(spec.param_specs(), {}))
        assert node.node_name == name and node.period_ns > 0 and node.inputs()


def test_help_lists_every_registered_command_simulator_and_offline_node():
    out = subprocess.run(CLI + ['--help'], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    reg = reg_mod.registry()
    assert reg.commands and reg.offline_nodes and reg.simulators
    for name in [*reg.commands, *reg.offline_nodes, *reg.simulators]:
        assert name in out, name
    assert 'warning' not in out


def test_a_new_package_plugs_in_without_any_edit_of_the_shared_home(tmp_path):
    pkg = tmp_path / 'my_capability'
    pkg.mkdir()
    (pkg / '__init__.py').write_text('')
    (pkg / 'tool.py').write_text(textwrap.dedent('''
        def main(argv):
            print('my-tool ran with', argv)
            return 3
    '''))
    (pkg / 'plugin.py').write_text(textwrap.dedent('''
        from contact_dynamics_common.registry import Command, Plugin
        PLUGIN = Plugin(name='my_capability', description='a test package',
                        commands=(Command('my-tool', 'my_capability.tool:main', 'does my thing'),))
    '''))
    env = dict(os.environ, PYTHONPATH=f'{tmp_path}{os.pathsep}{os.environ.get("PYTHONPATH", "")}',
               CONTACT_DYNAMICS_PLUGINS='my_capability = my_capability.plugin')
    helped = subprocess.run(CLI + ['--help'], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    assert 'my-tool' in helped.stdout and 'does my thing' in helped.stdout
    ran = subprocess.run(CLI + ['my-tool', 'a', 'b'], capture_output=True, text=True, cwd=ROOT, env=env)
    assert ran.returncode == 3 and "my-tool ran with ['a', 'b']" in ran.stdout


def test_a_broken_plugin_is_reported_and_hides_no_other():
    def source():
        return [('broken', 'no_such_module_xyz.plugin', 'test'), ('contact_estimation', 'contact_estimation.plugin',
                                                                   'test')]
    reg = reg_mod.discover((source,))
    assert 'contact_estimation' in reg.plugins
    assert len(reg.errors) == 1 and 'no_such_module_xyz' in reg.errors[0]


def test_two_plugins_claiming_one_command_are_refused():
    reg = Registry()
    reg.add(Plugin('a', commands=(Command('x', 'm:f', ''),)), 'test')
    with pytest.raises(RegistryError, match="command 'x'"):
        reg.add(Plugin('b', commands=(Command('x', 'm:g', ''),)), 'test')
    reg.add(Plugin('c', offline_nodes=(OfflineNodeSpec('n', 'm:P', 'm:C'),)), 'test')
    with pytest.raises(RegistryError, match="offline node 'n'"):
        reg.add(Plugin('d', offline_nodes=(OfflineNodeSpec('n', 'm:P', 'm:C'),)), 'test')


def test_plugin_list_syntax_errors_are_clear():
    assert parse_plugin_list('# c\n\na = b.c  # x\n') == [('a', 'b.c')]
    with pytest.raises(RegistryError, match='name = module'):
        parse_plugin_list('just_a_module\n')


def test_old_single_point_module_paths_still_import():
    import contact_estimation.rls as old
    import contact_estimation.single_point.rls as new
    from contact_estimation import fit
    from contact_estimation.single_point import fit as fit_new
    assert old is new and fit is fit_new
