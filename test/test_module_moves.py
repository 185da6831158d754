"""The shared home's sub-packages: old module paths still work, the command line still runs from every entry.

What the move promises (issue 20) and what can be checked in-tree:

- every old flat module path of ``contact_dynamics_common`` (``_MOVED``) is the very module object at its new
  home, whether imported as ``import a.old``, ``from a import old`` or ``importlib.import_module``; the
  names other code takes from the old paths are there;
- ``contact_dynamics_common.cli:main`` (the console script), ``python -m contact_dynamics_common.cli`` and
  the old ``cli`` names (``run_bag``, ``load_offline_nodes``, ``config_dir``) run, and run-bag through the
  module entry point writes the same output bag as the ``run_bag`` function.

The byte-identity of run-bag outputs across the move itself is shown by ``tools/compare_run_bag_outputs.py``
run on two checkouts (before / after); it cannot be a test of one checkout.
"""
import hashlib
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import contact_dynamics_common
from contact_dynamics_common import _MOVED

ROOT = Path(__file__).resolve().parents[1]

#: old path -> names callers take from it (grep of the repository when the modules moved)
USED_NAMES = {
    'msgconv': ['ns_to_sec_nanosec', 'stamp_to_ns', 'wrench_row', 'odometry_row', 'pose_row', 'COLUMN_SPECS'],
    'msgdefs': ['msgdef', 'type_hash', 'parse_definition'],
    'cdr': ['encoder'],
    'params': ['ParamSpec', 'ConfigError', 'validate_all', 'load_params_file', 'flatten'],
    'offline_node': ['OfflineNodeBase'],
    'replay': ['replay', 'resolve_topic', 'ReplayError', 'ReplayResult'],
    'report': ['plot_estimates', 'write_summary'],
    'batch': ['run_batch', 'expand_bags', 'parameter_rows', 'write_report', 'local_cluster'],
    'ros_env': ['isolated_ros_env', 'apply_isolated_ros_env'],
    'rosfill': ['fill'],
    'play': ['play', 'main'],
    'bag_sqlite': ['Db3File'],
    'bag_ros1': ['Bag1File'],
    'stamps': ['StampGate'],
    'ringbuffer': ['RingBuffer'],
}


@pytest.mark.parametrize('old', sorted(_MOVED))
def test_old_module_path_is_the_new_module(old):
    new = importlib.import_module(f'contact_dynamics_common.{_MOVED[old]}')
    assert importlib.import_module(f'contact_dynamics_common.{old}') is new
    assert getattr(contact_dynamics_common, old) is new
    exec(f'import contact_dynamics_common.{old} as via_import', globals())
    assert via_import is new                                            # noqa: F821
    assert sys.modules[f'contact_dynamics_common.{old}'] is new
    missing = [n for n in USED_NAMES.get(old, []) if not hasattr(new, n)]
    assert not missing, f'{old} -> {_MOVED[old]} lacks {missing}'


def test_every_moved_module_has_a_used_names_entry_or_is_new():
    """A module added to _MOVED without saying what callers take from it would go unchecked above."""
    assert set(_MOVED) - set(USED_NAMES) <= {'bag_storage', 'node'}


def test_old_paths_of_the_package_facades():
    from contact_dynamics_common import bag, cli
    from contact_dynamics_common.bag import reader, records, writer
    assert bag.BagReader is reader.BagReader and bag.BagWriter is writer.BagWriter
    assert bag.BagError is records.BagError and bag.Damage is records.Damage
    from contact_dynamics_common.cli import run
    from contact_dynamics_common.paths import config_dir
    assert cli.run_bag is run.run_bag and cli.load_offline_nodes is run.load_offline_nodes
    assert cli.config_dir is config_dir and config_dir() == ROOT / 'config'
    from contact_dynamics_common.registry import Plugin          # plug-ins import it from here
    assert Plugin.__module__ == 'contact_dynamics_common.registry'


def test_an_unknown_old_name_is_still_an_import_error():
    with pytest.raises(ImportError):
        importlib.import_module('contact_dynamics_common.no_such_module')
    with pytest.raises(AttributeError):
        contact_dynamics_common.no_such_module                            # noqa: B018


def test_console_script_target_is_the_cli_main():
    text = (ROOT / 'setup.py').read_text()
    assert "'contact-dynamics = contact_dynamics_common.cli:main'" in text
    from contact_dynamics_common.cli import main
    from contact_dynamics_common.cli.main import main as real_main
    assert main is real_main


@pytest.mark.parametrize('old, new', [('play', 'ros.play')])
def test_python_m_of_an_old_module_path_runs_the_new_module(old, new):
    """``python -m contact_dynamics_common.play`` (scripts and other packages' tests start the player so) runs
    the moved module as ``__main__``, with the same result as its new path."""
    runs = [subprocess.run([sys.executable, '-m', f'contact_dynamics_common.{m}', '--help'],
                           capture_output=True, text=True, timeout=120, cwd=ROOT) for m in (old, new)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and 'usage: contact-dynamics play' in runs[0].stdout


def _sha(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir()) if p.is_file()}


def test_run_bag_through_python_m_equals_the_function(tmp_path):
    """``python -m contact_dynamics_common.cli run-bag`` (what ``make demo`` calls) and ``cli.run_bag``
    write the same bytes for the same bag and config."""
    from contact_dynamics_common.cli import main, run_bag
    bag = tmp_path / 'in'
    assert main(['simulate', 'contact-1dof', '--out', str(bag), '--duration', '3', '--seed', '3']) == 0
    config = str(ROOT / 'config' / 'contact_estimator.yaml')
    out_cli = tmp_path / 'cli' / 'out'
    argv = ['run-bag', str(bag), '--config', config, '--out', str(out_cli), '--quiet']
    proc = subprocess.run([sys.executable, '-m', 'contact_dynamics_common.cli', *argv], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert 'estimates written to' in proc.stdout
    out_fn = tmp_path / 'function' / 'out'        # same name: it is written into the bag
    run_bag(str(bag), config, str(out_fn), progress=False)
    a, b = _sha(out_cli), _sha(out_fn)
    assert set(a) == {'out_0.mcap', 'metadata.yaml'} and a == b


def test_every_import_of_the_shared_home_in_the_repository_resolves():
    """Every ``from contact_dynamics_common... import name`` in the packages, tests, benchmarks, tools and
    launch files names a module or an attribute that exists (old paths included): a re-export lost in a
    move fails here, not in the one node that needed it."""
    import ast
    files = [p for d in ('contact_dynamics_common', 'contact_estimation', 'pkm_identification', 'rover_contact',
                         'test', 'bench', 'tools', 'launch') for p in (ROOT / d).rglob('*.py')]
    missing = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split('.')[0] == 'contact_dynamics_common'):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f'{node.module}.{alias.name}')
                    except ImportError:
                        missing.append(f'{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}')
    assert len(files) > 100 and not missing, missing


def test_sweep_tool_rewrites_old_paths_to_the_new_homes():
    """tools/sweep_moved_imports.py (for the callers' sweep): every form an old path is written in."""
    sys.path.insert(0, str(ROOT / 'tools'))
    try:
        from sweep_moved_imports import rewrite
    finally:
        sys.path.remove(str(ROOT / 'tools'))
    table = {'msgconv': 'messages.convert', 'cdr': 'messages.cdr', 'play': 'ros.play', 'node': 'ros.node'}
    src = ('from contact_dynamics_common import msgconv, trust  # noqa: E402\n'
           '    from contact_dynamics_common import cdr as c\n'
           'from contact_dynamics_common.msgconv import stamp_to_ns\n'
           "argv = ['-m', 'contact_dynamics_common.play']  # see contact_dynamics_common/node.py\n"
           'from contact_dynamics_common.nodes import x; import contact_dynamics_common.ros.node\n')
    out, notes = rewrite(src, table)
    assert out == ('from contact_dynamics_common import trust  # noqa: E402\n'
                   'from contact_dynamics_common.messages import convert as msgconv\n'
                   '    from contact_dynamics_common.messages import cdr as c\n'
                   'from contact_dynamics_common.messages.convert import stamp_to_ns\n'
                   "argv = ['-m', 'contact_dynamics_common.ros.play']  # see contact_dynamics_common/ros/node.py\n"
                   'from contact_dynamics_common.nodes import x; import contact_dynamics_common.ros.node\n')
    assert rewrite(out, table) == (out, [])
    assert rewrite('from contact_dynamics_common import (cdr,\n    trust)\n', table)[1]
