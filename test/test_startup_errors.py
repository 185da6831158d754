"""A wrong input file or parameter ends a node in one line naming the file or parameter and what is wrong, exit
code 2, never a traceback; unknown parameter names are warned about by name; the shipped params files' bare-name
section applies under a namespace; relative file paths in a params file are resolved against its directory; and
run-bag says why it produced no estimate."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contact_dynamics_common.ros.env import isolated_ros_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.prefix) / 'bin'
NODES = ('contact_estimator', 'multipoint_contact_estimator', 'impedance_profiler', 'pkm_identifier',
         'impact_indicator', 'posture_evaluator')

pytestmark = pytest.mark.ros


def _run(exe: str, *ros_args: str, cwd: Path, timeout: float = 60.0) -> tuple[int, str, str]:
    proc = subprocess.run([str(BIN / exe), '--ros-args', *ros_args], env=isolated_ros_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _last_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ''


@pytest.mark.parametrize('exe', NODES)
def test_missing_and_unparsable_params_file(exe, tmp_path):
    code, out, err = _run(exe, '--params-file', str(tmp_path / 'nope.yaml'), cwd=tmp_path)
    assert code == 2 and 'Traceback' not in out + err, err
    assert _last_line(err) == f"[ERROR] invalid configuration: params file '{tmp_path / 'nope.yaml'}' does not exist"
    bad = tmp_path / 'bad.yaml'
    bad.write_text(f'{exe}:\n  ros__parameters:\n    publish_rate: [1\n')
    code, out, err = _run(exe, '--params-file', str(bad), cwd=tmp_path)
    assert code == 2 and 'Traceback' not in out + err, err
    last = _last_line(err)
    assert f"params file '{bad}' is not valid YAML at line 4" in last, last


@pytest.mark.parametrize('exe, param', [('multipoint_contact_estimator', 'geometry_file'),
                                        ('pkm_identifier', 'machine'),
                                        ('impact_indicator', 'model_yaml'),
                                        ('posture_evaluator', 'model_yaml')])
@pytest.mark.parametrize('content', ['a: [1\n', 'just a sentence\n'])
def test_garbage_file_named_by_a_parameter(exe, param, content, tmp_path):
    (tmp_path / 'garbage.yaml').write_text(content)
    code, out, err = _run(exe, '-p', f'{param}:=garbage.yaml', cwd=tmp_path)
    assert code == 2 and 'Traceback' not in out + err, err
    last = _last_line(err)
    assert last.startswith('[ERROR] invalid configuration: ') and 'configure failed' not in last, last
    assert 'garbage.yaml' in last, last
    assert param in last or 'machine file' in last, last
    print(last)


@pytest.mark.parametrize('exe', NODES)
def test_unknown_parameter_names_are_warned_about_by_name(exe, tmp_path):
    """Every node: a misspelt name in its params file section and one on the command line are warned about by
    name at start (publish_rate -1 then stops it: the warning comes before the parameters are declared)."""
    params = tmp_path / 'p.yaml'
    params.write_text(f'{exe}:\n  ros__parameters:\n    measurment_std: 0.2\n    publish_rate: -1.0\n')
    code, out, err = _run(exe, '--params-file', str(params), '-p', 'publsh_rate:=3.0', cwd=tmp_path)
    assert code == 2 and 'Traceback' not in out + err, err
    assert f"unknown parameter 'measurment_std' in params file '{params}': {exe} has no such parameter" in err, err
    assert f"unknown parameter 'publsh_rate' in the command line: {exe} has no such parameter" in err, err
    assert "parameter 'publish_rate'" in _last_line(err)


def test_bare_name_section_applies_under_a_namespace(tmp_path):
    """Under -r __ns:=/robot_3 the section keyed 'pkm_identifier' (the shipped form) applies: a wrong value in it
    stops the node, naming the file (before: rcl ignored the section and the node ran on code defaults)."""
    params = tmp_path / 'p.yaml'
    params.write_text('pkm_identifier:\n  ros__parameters:\n    publish_rate: -3.0\n')
    code, out, err = _run('pkm_identifier', '-r', '__ns:=/robot_3', '--params-file', str(params), cwd=tmp_path)
    assert code == 2, err
    assert f"params file '{params}'" in _last_line(err) and 'publish_rate' in _last_line(err), err


def test_relative_file_in_a_params_file_is_resolved_against_its_directory(tmp_path):
    conf = tmp_path / 'conf'
    conf.mkdir()
    (conf / 'geom.yaml').write_text('just a sentence\n')
    params = conf / 'mp.yaml'
    params.write_text('multipoint_contact_estimator:\n  ros__parameters:\n    geometry_file: geom.yaml\n')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    code, out, err = _run('multipoint_contact_estimator', '--params-file', str(params), cwd=elsewhere)
    assert code == 2 and 'Traceback' not in err, err
    assert str(conf / 'geom.yaml') in _last_line(err), _last_line(err)


def test_run_bag_says_why_it_produced_no_estimate(tmp_path):
    from contact_dynamics_common.cli import main
    bag = tmp_path / 'bag'
    assert main(['simulate', 'contact-1dof', '--out', str(bag), '--duration', '1']) in (0, None)
    config = tmp_path / 'c.yaml'
    config.write_text((ROOT / 'config' / 'contact_estimator.yaml').read_text()
                      .replace('joint_name: slider', 'joint_name: elbow'))
    proc = subprocess.run([str(BIN / 'contact-dynamics'), 'run-bag', str(bag), '--config', str(config), '--quiet'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr               # nothing estimated: the reason, exit 2
    assert '0 estimates on 0 topics' in proc.stdout
    assert 'no estimates: contact_estimator: joint_missing = 1000; input displacement accepted none' in proc.stdout, \
        proc.stdout


@pytest.mark.parametrize('content, reason', [
    (None, "params file '{config}' does not exist"),
    ('contact_estimator:\n  ros__parameters:\n    publish_rate: [1\n',
     "params file '{config}' is not valid YAML at line 4"),
    ('just a sentence\n', "params file '{config}' must be a mapping of node names to ros__parameters, got str"),
    ('dir', "params file '{config}' is a directory"),
    ('contact_estimator:\n  ros__parameters:\n    publsh_rate: 3.0\n', 'unknown parameter(s): publsh_rate'),
    ('contact_estimator:\n  ros__parameters:\n    publish_rate: -1.0\n', "parameter 'publish_rate' = -1.0 is outside"),
])
def test_run_bag_refuses_a_wrong_config_in_one_line(content, reason, tmp_path, capsys):
    """run-bag --config: missing, not YAML (was a yaml traceback, exit 1), not a mapping, a directory (was an
    IsADirectoryError traceback), an unknown or out-of-range parameter: one line naming it, exit 2."""
    from contact_dynamics_common.cli import main
    bag = tmp_path / 'bag'
    assert main(['simulate', 'contact-1dof', '--out', str(bag), '--duration', '0.2']) in (0, None)
    config = tmp_path / 'c.yaml'
    if content == 'dir':
        config.mkdir()
    elif content is not None:
        config.write_text(content)
    capsys.readouterr()
    code = main(['run-bag', str(bag), '--config', str(config), '--quiet'])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith('contact-dynamics run-bag: error: ') and reason.format(config=config) in lines[0], \
        lines[0]
