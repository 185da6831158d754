"""Multi-point tools on a geometry of our own, with our own topic names and no truth files (issue 17 item 4).

The plant is not the ACU surrogate: a 1.5 kg sled (a deck box on two 120° V-runners) pitched 0.2 rad, sliding
down a ramp (a slab under a pitched environment frame) into an end stop; KV contacts + sliding friction, the
estimator's model, k = 2e4 N/m, b = 0.05 critical, mu = 0.15. Its bag carries /sled/odometry and
/sled/ft/wrench (wrench in the sled frame) and geometry.yaml beside it, no truth.yaml and no ground truth in
the bag's metadata: the truth is known here only. run-bag, multipoint-estimate and the live node over DDS
take the topics from the params file and the geometry by the one rule (geometry_file, else the bag's
geometry.yaml, else the packaged default), print which, agree with each other and with the truth; a wrong topic
or geometry is one line and exit 2.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from contact_dynamics_common.cli import main as cli_main
from contact_dynamics_common.cli import run_bag
from contact_estimation.geometry.body import body_from_spec, load_geometry
from contact_estimation.geometry.rotations import quat_to_matrix
from contact_estimation.multipoint.simulate import ContactLaw, RigidBodySim

ROOT = Path(__file__).resolve().parents[1]
TOPIC = '/multipoint_contact_estimator/estimate'
WRENCH, ODOM = '/sled/ft/wrench', '/sled/odometry'
MASS, DECK, PITCH = 1.5, (0.24, 0.14, 0.03), 0.2
K, MU = 2e4, 0.15
B = 2 * 0.05 * np.sqrt(K * MASS)
EPOCH_NS = 1_770_000_000 * 10**9


def _rot(axis: int, a: float) -> np.ndarray:
    """Elementary rotation about x (0), y (1) or z (2) by a rad (independent of the loader's scipy call)."""
    c, s = np.cos(a), np.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def _quat(R: np.ndarray) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix with trace > -1."""
    w = np.sqrt(1.0 + np.trace(R)) / 2
    return np.array([(R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w), w])


def sled_geometry() -> dict:
    inertia = [MASS * (DECK[1] ** 2 + DECK[2] ** 2) / 12, MASS * (DECK[0] ** 2 + DECK[2] ** 2) / 12,
               MASS * (DECK[0] ** 2 + DECK[1] ** 2) / 12]
    runner = {'type': 'tent', 'length': 0.2, 'height': 0.01, 'apex_angle_deg': 120.0}
    payload = {'name': 'sled', 'mass': MASS, 'com': [0.0, 0.0, 0.0], 'inertia': inertia,
               'parts': [{'name': 'deck', 'type': 'box', 'size': list(DECK)},
                         {'name': 'runner_left', **runner, 'position': [0.0, 0.05, -0.015]},
                         {'name': 'runner_right', **runner, 'position': [0.0, -0.05, -0.015]}]}
    environment = {'name': 'ramp', 'position': [0.0, 0.0, 0.0], 'rpy': [0.0, PITCH, 0.0],
                   'parts': [{'name': 'slab', 'type': 'box', 'size': [1.0, 0.6, 0.05], 'position': [0.0, 0.0, -0.025]},
                             {'name': 'stop', 'type': 'box', 'size': [0.05, 0.6, 0.1], 'position': [0.325, 0.0, 0.04]}]}
    return {'payload': payload, 'environment': environment}


def write_sled_bag(path: Path, tr, geometry: dict) -> Path:
    """/sled/odometry (twist in the child frame) and /sled/ft/wrench (sled axes, about its origin) at the same
    stamps, geometry.yaml beside; no truth anywhere."""
    from contact_dynamics_common.bag import BagWriter
    from contact_dynamics_common.msgconv import ns_to_sec_nanosec
    R = quat_to_matrix(tr.q)
    body = lambda a: np.einsum('nji,nj->ni', R, a)     # noqa: E731  world -> sled axes
    vb, wb, fb, mb = body(tr.v), body(tr.w), body(tr.force), body(tr.moment)
    stamps = EPOCH_NS + np.round(tr.t * 1e9).astype(np.int64)
    xyz = lambda a: {'x': float(a[0]), 'y': float(a[1]), 'z': float(a[2])}   # noqa: E731
    with BagWriter(path) as bag:
        bag.add_topic(ODOM, 'nav_msgs/msg/Odometry', qos='sensor_data')
        bag.add_topic(WRENCH, 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        for i, ns in enumerate(stamps):
            sec, nsec = ns_to_sec_nanosec(int(ns))
            stamp = {'sec': sec, 'nanosec': nsec}
            q = tr.q[i]
            pose = {'position': xyz(tr.p[i]), 'orientation': {'x': float(q[0]), 'y': float(q[1]), 'z': float(q[2]),
                                                               'w': float(q[3])}}
            bag.write(ODOM, 'nav_msgs/msg/Odometry',
                      {'header': {'stamp': stamp, 'frame_id': 'ramp_world'}, 'child_frame_id': 'sled',
                       'pose': {'pose': pose, 'covariance': [0.0] * 36},
                       'twist': {'twist': {'linear': xyz(vb[i]), 'angular': xyz(wb[i])}, 'covariance': [0.0] * 36}},
                      int(ns) + 100_000)
            bag.write(WRENCH, 'geometry_msgs/msg/WrenchStamped',
                      {'header': {'stamp': stamp, 'frame_id': 'sled'}, 'wrench': {'force': xyz(fb[i]),
                                                                                  'torque': xyz(mb[i])}},
                      int(ns) + 100_000)
    (path / 'geometry.yaml').write_text(yaml.safe_dump(geometry, sort_keys=False), encoding='utf-8')
    return path


@pytest.fixture(scope='module')
def sled(tmp_path_factory):
    """(bag, params file with the topics and no geometry_file, params file with a relative geometry_file
    beside it, the simulated trajectory)."""
    work = tmp_path_factory.mktemp('sled')
    geo = sled_geometry()
    sim = RigidBodySim(body_from_spec(geo['payload'], 'sled'), body_from_spec(geo['environment'], 'ramp'),
                       ContactLaw(K, B, MU, normal='kv', friction_law='sliding'))
    ramp = _rot(1, PITCH)
    tr = sim.run(ramp @ [0.0, 0.0, 0.028], _quat(ramp @ _rot(0, 0.02)), v0=ramp @ [0.3, 0.0, 0.0],
                 duration=0.5, dt=2e-4, rate=1000.0)
    assert (tr.count >= 2).sum() > 300 and tr.count.max() == 3     # two runners on the slab, the deck on the stop
    bag = write_sled_bag(work / 'sled_bag', tr, geo)
    topics = {'wrench_topic': WRENCH, 'odom_topic': ODOM, 'publish_rate': 20.0}
    params = work / 'sled_params.yaml'
    params.write_text(yaml.safe_dump({'multipoint_contact_estimator': {'ros__parameters': topics}}))
    conf = work / 'conf'
    conf.mkdir()
    (conf / 'sled_geometry.yaml').write_text(yaml.safe_dump(geo, sort_keys=False))
    params_geo = conf / 'sled_params.yaml'
    params_geo.write_text(yaml.safe_dump({'multipoint_contact_estimator': {'ros__parameters': {
        **topics, 'geometry_file': 'sled_geometry.yaml'}}}))
    return bag, params, params_geo, tr


def _final(result) -> dict:
    return result.outputs[TOPIC][-1][1]


def test_run_bag_and_multipoint_estimate_take_the_topics_and_the_bags_geometry_without_truth(sled, tmp_path,
                                                                                            capsys):
    bag, params, params_geo, tr = sled
    assert not (bag / 'truth.yaml').exists()
    code = cli_main(['run-bag', str(bag), '--config', str(params), '--quiet'])
    out = capsys.readouterr().out
    assert code == 0, out
    line = (f"multipoint_contact_estimator: geometry {bag / 'geometry.yaml'} [the bag's own, geometry_file being "
            f'empty], 3 payload and 2 environment parts; inputs: wrench {WRENCH}, pose {ODOM}')
    assert line in out, out
    result, _, _ = run_bag(str(bag), str(params), progress=False)
    off = _final(result)
    assert result.notes == [line]
    assert off['valid'], off['status']
    # model-consistent simulation, exact twist: measured 3e-15 relative; 1e-9 leaves room for summation order
    np.testing.assert_allclose([off['stiffness'], off['damping'], off['friction']], [K, B, MU], rtol=1e-9)

    code = cli_main(['multipoint-estimate', str(bag), '--config', str(params), '--report', str(tmp_path / 'r')])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0] == line.replace(f'pose {ODOM}', f'pose (odometry) {ODOM}'), out
    assert 'truth' not in out
    s = yaml.safe_load((tmp_path / 'r' / 'summary.yaml').read_text())
    assert 'truth' not in s and s['valid'] and s['rank'] == 3, s
    assert (s['wrench_topic'], s['odom_topic'], s['geometry_file']) == (WRENCH, ODOM, str(bag / 'geometry.yaml'))
    # the whole-record fit and the streaming one at its last tick: the same samples, the same model
    np.testing.assert_allclose([s['stiffness'], s['damping'], s['friction']],
                               [off['stiffness'], off['damping'], off['friction']], rtol=1e-9)
    np.testing.assert_allclose([s['stiffness'], s['damping'], s['friction']], [K, B, MU], rtol=1e-9)

    # geometry_file set in the params file (relative: beside it) wins over the bag's own; same numbers
    with_file, _, _ = run_bag(str(bag), str(params_geo), progress=False)
    assert with_file.notes[0].startswith(f"multipoint_contact_estimator: geometry {params_geo.parent / 'sled_geometry.yaml'}"
                                         ' [set by geometry_file]'), with_file.notes
    assert _final(with_file)['stiffness'] == pytest.approx(off['stiffness'], rel=1e-12)


def _one_line_error(capsys, code) -> str:
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and 'Traceback' not in cap.err + cap.out, cap
    return lines[0]


def test_wrong_topic_or_geometry_is_one_line_and_exit_2(sled, tmp_path, capsys):
    bag, params, _, _ = sled
    shipped = str(ROOT / 'config' / 'multipoint_contact_estimator.yaml')           # payload/wrench, payload/odom
    err = _one_line_error(capsys, cli_main(['run-bag', str(bag), '--config', shipped, '--quiet']))
    assert 'input topic /payload/wrench is not in the bag' in err and ODOM in err, err
    err = _one_line_error(capsys, cli_main(['multipoint-estimate', str(bag)]))
    assert 'input topic /payload/wrench is not in the bag' in err and '--wrench-topic' in err, err
    err = _one_line_error(capsys, cli_main(['multipoint-estimate', str(bag), '--config', str(params),
                                            '--odom-topic', WRENCH]))
    assert f'{WRENCH} has type geometry_msgs/msg/WrenchStamped in the bag, expected nav_msgs/msg/Odometry' in err
    pose = tmp_path / 'pose.yaml'
    pose.write_text(params.read_text().replace('publish_rate', 'pose_source: pose\n    publish_rate'))
    err = _one_line_error(capsys, cli_main(['multipoint-estimate', str(bag), '--config', str(pose)]))
    assert "pose_source 'pose': multipoint-estimate reads nav_msgs/Odometry" in err, err

    bad = tmp_path / 'bad'
    bad.mkdir()
    geo = sled_geometry()
    geo['payload']['parts'][1]['postion'] = geo['payload']['parts'][1].pop('position')          # a typo
    (bad / 'typo.yaml').write_text(yaml.safe_dump(geo))
    away = sled_geometry()
    away['environment']['position'] = [0.0, 0.0, -1.0]                          # the ramp a metre below the sled
    (bad / 'away.yaml').write_text(yaml.safe_dump(away))
    for name, reason in (('typo.yaml', "part 'runner_left' (tent): unknown key(s) postion"),
                         ('nowhere.yaml', "geometry_file 'nowhere.yaml' not found")):
        conf = bad / f'p_{name}'
        conf.write_text(params.read_text().replace('publish_rate', f'geometry_file: {name}\n    publish_rate'))
        err = _one_line_error(capsys, cli_main(['run-bag', str(bag), '--config', str(conf), '--quiet']))
        assert reason in err, err
        err = _one_line_error(capsys, cli_main(['multipoint-estimate', str(bag), '--config', str(conf)]))
        assert reason in err, err
    # a geometry that never touches: run-bag says why it has no estimate, multipoint-estimate refuses
    conf = bad / 'p_away.yaml'
    conf.write_text(params.read_text().replace('publish_rate', 'geometry_file: away.yaml\n    publish_rate'))
    assert cli_main(['run-bag', str(bag), '--config', str(conf), '--quiet']) == 2      # nothing estimated
    out = capsys.readouterr().out
    assert '0 estimates on 0 topics' in out and 'no estimates: multipoint_contact_estimator: note = no contact ' \
        f"in any of {len(sled[3].t)} paired instants with the geometry {bad / 'away.yaml'}" in out, out
    err = _one_line_error(capsys, cli_main(['multipoint-estimate', str(bag), '--config', str(conf)]))
    assert f"no contact in any of the {len(sled[3].t)} samples with the geometry {bad / 'away.yaml'}" in err, err

    # no geometry.yaml beside the bag, no geometry_file: the packaged default, said so
    bare = tmp_path / 'bare'
    shutil.copytree(bag, bare)
    (bare / 'geometry.yaml').unlink()
    result, _, _ = run_bag(str(bare), str(params), progress=False)
    assert result.notes[0].startswith(f"multipoint_contact_estimator: geometry "
                                      f"{ROOT / 'config' / 'multipoint_acu_geometry.yaml'} [the packaged default, "
                                      'geometry_file being empty and no geometry.yaml beside the bag]'), result.notes


def test_sensitivity_takes_topics_and_the_geometry_rule_and_refuses_in_one_line(sled, tmp_path, capsys):
    """multipoint-sensitivity: custom topics by flag, the geometry by the tools' rule (the bag's own here, said
    in the printed line), and one line + exit 2 for a missing topic, a bag without truth (its tables are errors
    against it) and a payload without the ACU V-guides it perturbs."""
    bag, _, _, _ = sled
    out = ['--out', str(tmp_path / 'sens')]
    err = _one_line_error(capsys, cli_main(['multipoint-sensitivity', str(bag), *out]))
    assert "topic '/payload/odom' is not in the bag" in err and ODOM in err, err
    err = _one_line_error(capsys, cli_main(['multipoint-sensitivity', str(bag), '--odom-topic', ODOM,
                                            '--wrench-topic', WRENCH, *out]))
    assert 'no ground truth' in err and 'multipoint-estimate' in err, err
    truthful = tmp_path / 'with_truth'
    shutil.copytree(bag, truthful)
    (truthful / 'truth.yaml').write_text(yaml.safe_dump({'stiffness': K, 'damping': float(B), 'friction': MU}))
    code = cli_main(['multipoint-sensitivity', str(truthful), '--odom-topic', ODOM, '--wrench-topic', WRENCH, *out])
    cap = capsys.readouterr()
    assert f"geometry {truthful / 'geometry.yaml'} [the bag's own" in cap.out, cap
    err = cap.err.strip()
    assert code == 2 and '\n' not in err and 'Traceback' not in err, cap
    assert 'the sweep perturbs the ACU V-guides vg1, vg2, vg3, vg4' in err and 'runner_left' in err, err


def test_geometry_file_conventions(tmp_path):
    """Parts: box centred on its frame, tent base centred with the ridge along x at z = -height, prism and
    vertices as written; rpy = Rz(yaw) Ry(pitch) Rx(roll) about fixed axes, then position; environment
    position/rpy move every environment part; a payload position/rpy is refused."""
    rpy, pos = [0.3, -0.2, 1.1], np.array([0.5, -0.25, 0.125])
    R = _rot(2, rpy[2]) @ _rot(1, rpy[1]) @ _rot(0, rpy[0])
    poly = [[0.0, 0.0], [0.04, 0.0], [0.0, 0.03]]
    hull = [[0.1, 0.1, 0.1], [0.2, 0.1, 0.1], [0.1, 0.2, 0.1], [0.1, 0.1, 0.2]]
    doc = {'payload': {'parts': [
        {'name': 'b', 'type': 'box', 'size': [0.2, 0.1, 0.04], 'position': pos.tolist(), 'rpy': rpy},
        {'name': 't', 'type': 'tent', 'length': 0.06, 'height': 0.015, 'apex_angle_deg': 90.0},
        {'name': 'p', 'type': 'prism', 'polygon_xz': poly, 'length': 0.08},
        {'name': 'v', 'type': 'vertices', 'vertices': hull}]},
        'environment': {'position': pos.tolist(), 'rpy': rpy,
                        'parts': [{'name': 'e', 'type': 'vertices', 'vertices': hull}]}}
    path = tmp_path / 'g.yaml'
    path.write_text(yaml.safe_dump(doc))
    payload, env = load_geometry(path)
    corners = np.array([[sx * 0.1, sy * 0.05, sz * 0.02] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])

    def same(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return len(a) == len(b) and all(np.min(np.linalg.norm(b - x, axis=1)) < 1e-12 for x in a)
    assert same(payload.part('b').vertices, corners @ R.T + pos)
    assert same(payload.part('t').vertices, [[sx * 0.03, sy * 0.015, 0.0] for sx in (-1, 1) for sy in (-1, 1)]
                + [[sx * 0.03, 0.0, -0.015] for sx in (-1, 1)])
    assert same(payload.part('p').vertices, [[x, sy * 0.04, z] for x, z in poly for sy in (-1, 1)])
    assert same(payload.part('v').vertices, hull)
    assert same(env.world_parts()[0].vertices, np.array(hull) @ R.T + pos)
    # moving axes would be Rx Ry Rz: a different matrix for these angles (the convention matters here)
    assert np.abs(R - _rot(0, rpy[0]) @ _rot(1, rpy[1]) @ _rot(2, rpy[2])).max() > 0.1
    doc['payload']['position'] = [0.0, 0.0, 0.1]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match='payload position/rpy: the payload frame is the measured pose frame'):
        load_geometry(path)


@pytest.mark.ros
def test_live_node_takes_the_params_files_topics_and_geometry_and_equals_run_bag(sled, tmp_path):
    """The node started as a robot starts it (its own process, --params-file from another directory whose
    geometry_file names a file beside it), the bag played over DDS under sim time: it logs the geometry and
    topics it used, and its estimates equal run-bag's at the same data stamps and the truth."""
    from contact_dynamics_common.ros.env import isolated_ros_env
    from live_bags import matched, offline, run_live
    bag, _, params_geo, _ = sled
    off, types = offline(bag, params_geo)
    elsewhere = tmp_path / 'cwd'
    elsewhere.mkdir()
    env = {**isolated_ros_env(), 'LIVE_CWD': str(elsewhere)}
    cmd = [sys.executable, '-m', 'contact_estimation.multipoint.node', '--ros-args', '--params-file',
           str(params_geo), '-p', 'use_sim_time:=true']
    run = run_live(cmd, bag, {t: types[t] for t in off}, env, settle=1.5, tail=5.0)
    assert 'Traceback' not in run.log, run.log[-3000:]
    assert (f"geometry {params_geo.parent / 'sled_geometry.yaml'} [set by geometry_file], 3 payload and 2 "
            f'environment parts; inputs: wrench {WRENCH}, pose (odometry) {ODOM}') in run.log, run.log[-3000:]
    live = run.outputs[TOPIC]
    assert live, run.log[-3000:]
    # the live timer ticks at other data stamps than run-bag's; the drained end of the bag is one they share
    n, diffs = matched(run.outputs, off)
    assert n >= 1 and not diffs, (diffs[:10], [m['header']['stamp'] for m in live], sorted(off[TOPIC]))
    last = live[-1]
    assert (last['header']['stamp']['sec'], last['header']['stamp']['nanosec']) == max(off[TOPIC])
    assert last['valid'], last['status']
    np.testing.assert_allclose([last['stiffness'], last['damping'], last['friction']], [K, B, MU], rtol=1e-6)

