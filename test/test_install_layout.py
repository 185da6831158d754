"""The environment lays the package out as colcon would in the venv prefix, so that `ros2 run` and
`ros2 launch` on an install that has ros2cli/launch find it; and the console scripts exist."""
import ast
import os
import sys
from pathlib import Path

PREFIX = Path(sys.prefix)
ROOT = Path(__file__).resolve().parents[1]


def test_ament_index_share_and_lib_layout():
    assert (PREFIX / 'share/ament_index/resource_index/packages/contact_dynamics').is_file()
    share = PREFIX / 'share/contact_dynamics'
    assert (share / 'package.xml').read_text() == (ROOT / 'package.xml').read_text()
    assert (share / 'launch/contact_estimation.launch.py').is_file()
    assert (share / 'config/contact_estimator.yaml').read_text() == (ROOT / 'config/contact_estimator.yaml').read_text()
    exe = PREFIX / 'lib/contact_dynamics/contact_estimator'
    assert exe.is_file() and os.access(exe, os.X_OK)
    assert (share / 'msg/ContactEstimate.msg').is_file() and (share / 'msg/ContactEstimate.json').is_file()


def test_console_scripts_are_installed():
    for name in ('contact-dynamics', 'contact_estimator'):
        assert os.access(PREFIX / 'bin' / name, os.X_OK), name


def test_cli_and_nodes_in_lib_run_with_the_builds_interpreter():
    """lib/contact_dynamics holds the contact-dynamics CLI too (ros2 run contact_dynamics contact-dynamics), and
    every executable there starts with the interpreter the package was built for (not whatever python3 is)."""
    lib = PREFIX / 'lib/contact_dynamics'
    for exe in sorted(lib.iterdir()):
        assert os.access(exe, os.X_OK), exe
        first = exe.read_text().splitlines()[0]
        assert first.startswith('#!') and Path(first[2:]).resolve() == Path(sys.executable).resolve(), (exe, first)
    assert (lib / 'contact-dynamics').is_file()


def test_config_found_through_the_ament_index_outside_the_source_tree(tmp_path, monkeypatch):
    """Installed elsewhere (colcon): config_dir() is get_package_share_directory('contact_dynamics')/config."""
    from contact_dynamics_common import paths
    prefix = tmp_path / 'install'
    share = prefix / 'share/contact_dynamics'
    (share / 'config').mkdir(parents=True)
    (share / 'package.xml').write_text((ROOT / 'package.xml').read_text())
    (prefix / 'share/ament_index/resource_index/packages').mkdir(parents=True)
    (prefix / 'share/ament_index/resource_index/packages/contact_dynamics').write_text('')
    (share / 'config' / 'm.yaml').write_text('x: 1\n')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(prefix))
    assert paths.package_share_dir() == share
    monkeypatch.setattr(paths, '__file__', str(tmp_path / 'elsewhere/contact_dynamics_common/paths.py'))
    assert paths.config_dir() == share / 'config'
    assert paths.resolve_config_file('m.yaml') == share / 'config' / 'm.yaml'
    assert paths.resolve_config_file('nope.yaml') is None


def _launch_strings(path: Path) -> set:
    tree = ast.parse(path.read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description' for n in ast.walk(tree))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_registered_node_has_an_installed_executable_a_launch_file_and_its_config():
    """Each offline node of the registry is also a live node: console script, colcon executable in
    lib/contact_dynamics, a launch file naming it, and its documented config installed in share/."""
    from contact_dynamics_common.registry import registry
    launch_strings = {p.name: _launch_strings(p) for p in sorted((ROOT / 'launch').glob('*.launch.py'))}
    assert launch_strings
    for name, spec in registry().offline_nodes.items():
        assert os.access(PREFIX / 'bin' / name, os.X_OK), f'console script {name}'
        assert os.access(PREFIX / 'lib/contact_dynamics' / name, os.X_OK), f'lib/contact_dynamics/{name}'
        assert (ROOT / 'scripts' / name).is_file(), f'scripts/{name}'
        assert spec.config_file and (PREFIX / 'share/contact_dynamics/config' / spec.config_file).is_file(), name
        naming = [f for f, strings in launch_strings.items() if name in strings and 'contact_dynamics' in strings]
        assert naming, f'no launch file starts {name}'
        assert any(spec.config_file in launch_strings[f] for f in naming), f'no launch file loads {spec.config_file}'
