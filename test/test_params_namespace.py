"""A params file keyed by the bare node name (the shipped files' form) applies to a node started under a namespace,
read back over DDS from the running node's parameter service (issue 15 item 3: rcl alone applies that section
only in the root namespace, and the node ran on code defaults).

Real processes: the six executables (``-r __ns:=/robot_7 --params-file FILE``, as ``ros2 run`` starts them) and
two launch files under ``ros2 launch ... namespace:=robot_7`` (the one-params-file and the two-params-file form).
Each params file sets non-default values in the bare-name section; a ``/**`` section of the same file sets
``input_queue_size`` too, and must keep priority (doc/install.md, "Namespaces and params files").
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.node import Node  # noqa: E402

from contact_dynamics_common.ros.env import isolated_ros_env  # noqa: E402

from ros_harness import ROOT, call_service  # noqa: E402

pytestmark = pytest.mark.ros
BIN = Path(sys.prefix) / 'bin'
NS = 'robot_7'
NODES = {'contact_estimator': 'contact_estimator.yaml',
         'multipoint_contact_estimator': 'multipoint_contact_estimator.yaml',
         'impedance_profiler': 'impedance_profiler.yaml',
         'pkm_identifier': 'pkm_identifier.yaml',
         'impact_indicator': 'impact_indicator.yaml',
         'posture_evaluator': 'posture_evaluator.yaml'}
#: bare-name section values (none is a code default: publish_rate defaults are 5, 10 or 20 Hz) and the /** one
BARE = {'publish_rate': 7.25, 'input_queue_size': 333}
WILDCARD = {'input_queue_size': 444}


def _params_file(directory: Path, name: str) -> Path:
    """The shipped params file of ``name`` with BARE in its bare-name section and a /** section with WILDCARD,
    in a directory of its own (multipoint's relative geometry_file beside it)."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = yaml.safe_load((ROOT / 'config' / NODES[name]).read_text())
    assert list(doc) == [name]                           # the shipped form: keyed by the bare node name
    doc[name]['ros__parameters'].update(BARE)
    doc['/**'] = {'ros__parameters': dict(WILDCARD)}
    if name == 'multipoint_contact_estimator':
        shutil.copy(ROOT / 'config' / 'multipoint_acu_geometry.yaml', directory)
    path = directory / f'{name}.yaml'
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _get(node: Node, fqn: str, names: list[str], deadline: float) -> dict:
    """The values of ``names`` from the running node ``fqn`` (its ~/get_parameters service)."""
    client = node.create_client(GetParameters, f'{fqn}/get_parameters')
    try:
        while not client.wait_for_service(timeout_sec=0.5):
            if time.monotonic() > deadline:
                return {}
        # GetParameters is idempotent: ask again every 2 s. A server whose response writer has not yet matched
        # this client's reader drops the reply (seen in a CI rehearsal under load: 'failed to send response
        # (timeout)' from rmw, and the one call waited its whole 10 s for nothing)
        response = None
        give_up = max(deadline, time.monotonic() + 10.0)
        while response is None and time.monotonic() < give_up:
            response = call_service(node, client, GetParameters.Request(names=names), timeout=2.0)
    finally:
        node.destroy_client(client)
    if response is None:
        return {}
    from rclpy.parameter import parameter_value_to_python
    return {n: parameter_value_to_python(v) for n, v in zip(names, response.values)}


def _stop_all(procs: dict) -> dict:
    import os
    import signal
    logs = {}
    for key, proc in procs.items():
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
    for key, proc in procs.items():
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        logs[key] = proc.stdout.read() if proc.stdout else ''
    return logs


def _check(values: dict, logs: str, name: str) -> None:
    assert values, f'{name}: no parameter service under /{NS} within the time-out\n{logs[-3000:]}'
    assert values['publish_rate'] == BARE['publish_rate'], (name, values)
    assert values['input_queue_size'] == WILDCARD['input_queue_size'], (name, values)     # /** keeps priority
    assert f"section '{name}' applied under namespace /{NS}" in logs, logs[-3000:]
    assert 'Traceback' not in logs, logs[-3000:]


def test_bare_name_section_applies_to_every_executable_under_a_namespace(tmp_path, ros_context):
    procs = {}
    try:
        for name in NODES:
            params = _params_file(tmp_path / name, name)
            procs[name] = subprocess.Popen(
                [str(BIN / name), '--ros-args', '-r', f'__ns:=/{NS}', '--params-file', str(params)],
                env=isolated_ros_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True)
        node = Node('params_namespace_probe')
        deadline = time.monotonic() + 60.0
        values = {name: _get(node, f'/{NS}/{name}', list(BARE), deadline) for name in NODES}
        node.destroy_node()
    finally:
        logs = _stop_all(procs)
    for name in NODES:
        print(f'{name} under /{NS}: {values[name]}')
        _check(values[name], logs[name], name)


@pytest.mark.skipif(importlib.util.find_spec('launch_ros') is None or not (BIN / 'ros2').is_file(),
                    reason='needs the ROS 2 launch stack (tools/bootstrap.sh installs it from ../shared/ros2-launch)')
def test_launch_files_apply_their_params_files_under_a_namespace(tmp_path, ros_context):
    """ros2 launch with namespace:= and the documented params-file arguments: pkm_identification.launch.py
    (params_file) and rover_contact.launch.py (impact_params_file and posture_params_file)."""
    import os
    env = isolated_ros_env()
    env['PATH'] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    prefixes = [p for p in env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p and p != sys.prefix]
    env['AMENT_PREFIX_PATH'] = os.pathsep.join([sys.prefix] + prefixes)
    launches = {'pkm_identification.launch.py': [f"params_file:={_params_file(tmp_path / 'pkm', 'pkm_identifier')}"],
                'rover_contact.launch.py': [
                    f"impact_params_file:={_params_file(tmp_path / 'impact', 'impact_indicator')}",
                    f"posture_params_file:={_params_file(tmp_path / 'posture', 'posture_evaluator')}"]}
    procs = {}
    try:
        for launch_file, args in launches.items():
            procs[launch_file] = subprocess.Popen(
                [str(BIN / 'ros2'), 'launch', 'contact_dynamics', launch_file, f'namespace:={NS}', *args], env=env,
                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        node = Node('params_namespace_launch_probe')
        deadline = time.monotonic() + 90.0
        values = {name: _get(node, f'/{NS}/{name}', list(BARE), deadline)
                  for name in ('pkm_identifier', 'impact_indicator', 'posture_evaluator')}
        node.destroy_node()
    finally:
        logs = _stop_all(procs)
    for name, launch_file in (('pkm_identifier', 'pkm_identification.launch.py'),
                              ('impact_indicator', 'rover_contact.launch.py'),
                              ('posture_evaluator', 'rover_contact.launch.py')):
        print(f'{launch_file} {name} under /{NS}: {values[name]}')
        _check(values[name], logs[launch_file], name)
