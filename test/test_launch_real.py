"""Every launch file of launch/ under the real ROS 2 launch system (``ros2 launch`` = launch_ros' LaunchService in
its own process), a simulated bag played into it under sim time, its live estimates equal to run-bag at the same
data stamps — without and with ``namespace:=`` (the shipped params files apply there too), with the documented
arguments ``params_file``, the ``*_topic`` remaps and ``use_sim_time``; and the end of the bag: the last estimate
of the played bag equals run-bag's last one (the sim-time drain, ros/node.py).

Needs the launch stack (launch, launch_ros, ros2cli) that tools/bootstrap.sh installs from ../shared/ros2-launch;
skipped with that reason when it is absent (a robot's ROS 2 installation provides it).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_bags import CASES, matched, offline, run_live, simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROS2 = Path(sys.prefix) / 'bin' / 'ros2'

pytestmark = [pytest.mark.ros,
              pytest.mark.skipif(importlib.util.find_spec('launch_ros') is None or not ROS2.is_file(),
                                 reason='needs the ROS 2 launch stack (launch, launch_ros, ros2cli): '
                                        'tools/bootstrap.sh installs it from ../shared/ros2-launch, absent here')]

#: launch file -> the nodes it starts here (CASES of live_bags.py)
LAUNCHES = {
    'contact_estimation.launch.py': ('contact_estimator',),
    'impedance_profiler.launch.py': ('impedance_profiler',),
    'multipoint_contact_estimation.launch.py': ('multipoint_contact_estimator',),
    'pkm_identification.launch.py': ('pkm_identifier',),
    'rover_contact.launch.py': ('impact_indicator', 'posture_evaluator'),
}


def _env() -> dict:
    from contact_dynamics_common.ros.env import isolated_ros_env
    env = isolated_ros_env()
    env['PATH'] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    prefixes = [p for p in env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    env['AMENT_PREFIX_PATH'] = os.pathsep.join([sys.prefix] + [p for p in prefixes if p != sys.prefix])
    return env


def test_every_launch_file_is_covered():
    assert sorted(LAUNCHES) == sorted(p.name for p in (ROOT / 'launch').glob('*.launch.py'))
    installed = Path(sys.prefix) / 'share' / 'contact_dynamics' / 'launch'
    for name in LAUNCHES:
        assert (installed / name).read_text() == (ROOT / 'launch' / name).read_text(), f'{name}: run make env'


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp('launch_real')


def _params_file(workdir: Path, name: str) -> Path:
    """The node's documented params file copied to a directory of its own, with the files it names by a
    relative path (multipoint's geometry_file) beside it: launched with params_file:= from there."""
    d = workdir / f'params_{name}'
    d.mkdir(exist_ok=True)
    shutil.copy(ROOT / 'config' / CASES[name].config, d)
    if name == 'multipoint_contact_estimator':
        shutil.copy(ROOT / 'config' / 'multipoint_acu_geometry.yaml', d)
    if name in ('impact_indicator', 'posture_evaluator'):      # the bag's hypotheses, whatever the namespace
        text = (d / CASES[name].config).read_text().replace('obstacle_topic: ~/obstacle',
                                                             'obstacle_topic: /impact_indicator/obstacle')
        (d / CASES[name].config).write_text(text)
    return d / CASES[name].config


@pytest.mark.parametrize('namespace', ['', 'robot_7'])
@pytest.mark.parametrize('launch_file', sorted(LAUNCHES))
def test_launch_file_live_equals_run_bag(launch_file, namespace, workdir):
    names = LAUNCHES[launch_file]
    cases = [CASES[n] for n in names]
    bag = simulate(cases[0], workdir / f'bag_{cases[0].simulate[0]}')
    args = ['use_sim_time:=true']
    offline_out, types, ignore, data_count = {}, {}, (), ''
    for name, case in zip(names, cases):
        config = ROOT / 'config' / case.config
        if namespace:                      # the documented params_file argument, a copy elsewhere
            config = _params_file(workdir, name)
            key = 'impact_params_file' if name == 'impact_indicator' else (
                'posture_params_file' if name == 'posture_evaluator' else 'params_file')
            args.append(f'{key}:={config}')
        out, ty = offline(bag, config)
        offline_out.update(out)
        types.update(ty)
        ignore += case.ignore
        data_count = data_count or case.data_count
    if launch_file != 'rover_contact.launch.py':
        args += list(cases[0].launch_args)
    if namespace:
        args.append(f'namespace:={namespace}')
    prefix = f'/{namespace}' if namespace else ''
    topics = {prefix + t: types[t] for t in offline_out}
    run = run_live([str(ROS2), 'launch', 'contact_dynamics', launch_file, *args], bag, topics, _env(),
                   start_timeout=90.0, rate=min(c.rate for c in cases))
    assert 'Traceback' not in run.log, run.log[-4000:]
    live = {t[len(prefix):]: msgs for t, msgs in run.outputs.items()}
    for topic in offline_out:
        assert live[topic], f'{topic}: nothing published\n{run.log[-4000:]}'
    lost = []
    n, diffs = matched(live, offline_out, ignore, data_count, lost)
    print(f'{launch_file} namespace={namespace!r}: {sum(len(v) for v in live.values())} live messages, '
          f'{n} at run-bag data stamps, {len(diffs)} differences, {len(lost)} on other data (samples lost)')
    assert not diffs, '\n'.join(diffs[:10])
    assert n >= 1
    if launch_file == 'pkm_identification.launch.py':
        # fixed update_block blocks: every live estimate has run-bag's twin at its data stamp (equal to it, above)
        # until the live node loses a sample (best-effort input on a loaded machine); from there its block
        # boundaries are shifted and it has used fewer samples than run-bag at the next run-bag stamp
        par, off_par = live['/pkm_identifier/parameters'], offline_out['/pkm_identifier/parameters']
        key = [(m['header']['stamp']['sec'], m['header']['stamp']['nanosec']) for m in par]
        twin = [k in off_par and off_par[k]['samples_used'] == m['samples_used'] for k, m in zip(key, par)]
        first_lost = twin.index(False) if False in twin else len(par)
        print(f'pkm: {first_lost} of {len(par)} live estimates equal to run-bag before the first lost sample')
        assert first_lost >= 1
        for k, m in zip(key[first_lost:], par[first_lost:]):
            later = [s for s in sorted(off_par) if s >= k]
            assert later and m['samples_used'] < off_par[later[0]]['samples_used'], (k, m['samples_used'])
    if namespace and 'applied under namespace' not in run.log:
        pytest.fail('the params file section was not applied under the namespace:\n' + run.log[-3000:])


@pytest.mark.parametrize('name', ['contact_estimator', 'pkm_identifier', 'impedance_profiler',
                                  'multipoint_contact_estimator', 'impact_indicator', 'posture_evaluator'])
def test_played_bag_ends_with_run_bags_last_estimate(name, workdir):
    """Under use_sim_time the last period of a played bag is processed (the drain when /clock stops), so the last
    live estimate is run-bag's last one: same data stamp, same values."""
    case = CASES[name]
    bag = simulate(case, workdir / f'bag_{case.simulate[0]}')
    config = ROOT / 'config' / case.config
    off, types = offline(bag, config)
    main_topic = {'contact_estimator': '/contact_estimator/estimate',
                  'pkm_identifier': '/pkm_identifier/parameters',
                  'impedance_profiler': '/impedance_profiler/profile',
                  'multipoint_contact_estimator': '/multipoint_contact_estimator/estimate',
                  'impact_indicator': '/impact_indicator/impact_indicator',
                  'posture_evaluator': '/posture_evaluator/posture_evaluation'}[name]
    launch_file = next(f for f, ns in LAUNCHES.items() if name in ns)
    run = run_live([str(ROS2), 'launch', 'contact_dynamics', launch_file, 'use_sim_time:=true',
                    *case.launch_args], bag, {main_topic: types[main_topic]}, _env(), start_timeout=90.0,
                   rate=case.rate)
    live = run.outputs[main_topic]
    assert live, run.log[-3000:]
    last_off_stamp = max(off[main_topic])
    last = live[-1]
    stamp = (last['header']['stamp']['sec'], last['header']['stamp']['nanosec'])
    drained = 'buffered input drained by one update' in run.log
    print(f'{name}: last live stamp {stamp}, last run-bag stamp {last_off_stamp}; drain logged: {drained}')
    assert drained, run.log[-3000:]
    assert stamp == last_off_stamp
    lost = []
    n, diffs = matched({main_topic: [last]}, {main_topic: off[main_topic]}, case.ignore,
                       case.data_count, lost)
    assert n == 1 and not diffs, (diffs, f'{len(lost)} on other data (samples lost)')
