"""pkm_identifier as a real node in its own process, fed a simulated hexapod over DDS from this test process;
the same messages through run-bag must give the same estimate. Also: services, config in sync, offline report."""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import InertiaStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from contact_dynamics.msg import ParameterEstimate  # noqa: E402
from contact_dynamics.srv import PkmSetActiveSet  # noqa: E402
from contact_dynamics_common.bag import BagWriter  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402
from contact_dynamics_common.params import load_params_file  # noqa: E402
from pkm_identification.simulate import make_record, truth_dict  # noqa: E402

from ros_harness import (ROOT, Listener, call_service, paced, run_to_exit, set_stamp, start_node,  # noqa: E402
                         stop, wait_matched)

CONFIG = str(ROOT / 'config' / 'pkm_identifier.yaml')
NAMES = [f'strut_{i}' for i in range(1, 7)]
TOPICS = {'/pkm_identifier/parameters': ParameterEstimate, '/pkm_identifier/platform_inertia': InertiaStamped,
          '/pkm_identifier/predicted_effort': JointState, '/diagnostics': DiagnosticArray}


def corrupted_stream(duration: float = 3.0):
    """The simulated multisine hexapod (1 kHz) with bad messages mixed in: NaN effort, a repeated stamp and a
    stamp from the past, each every few hundred samples. Returns (messages, counts of each kind, truth)."""
    _, rec = make_record('uf_like', 'multisine', duration)
    t0 = 1_000_000_000
    msgs, bad = [], {'nonfinite': 0, 'out_of_order': 0}
    for k in range(len(rec.t)):
        ns = t0 + int(round(rec.t[k] * 1e9))
        msgs.append((ns, rec.L[k], rec.Ld[k], rec.F[k]))
        if k % 250 == 100:
            f = rec.F[k].copy()
            f[3] = math.nan
            msgs.append((ns + 500_000, rec.L[k], rec.Ld[k], f))
            bad['nonfinite'] += 1
        if k % 300 == 200:
            msgs.append((ns, rec.L[k], rec.Ld[k], rec.F[k]))             # repeated
            msgs.append((ns - 50_000_000, rec.L[k], rec.Ld[k], rec.F[k]))  # 50 ms in the past
            bad['out_of_order'] += 2
    return msgs, bad, truth_dict(rec)


def write_stream_bag(path, msgs):
    with BagWriter(path, overwrite=True) as bag:
        for i, (ns, L, Ld, F) in enumerate(msgs):
            sec, nsec = divmod(ns, 10 ** 9)
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': {'sec': sec, 'nanosec': nsec}, 'frame_id': ''}, 'name': NAMES,
                       'position': L.tolist(), 'velocity': Ld.tolist(), 'effort': F.tolist()},
                      1_000_000_000 + i * 1_000_000)                     # log time = arrival order
    return path


def live_equals_run_bag(live_msgs, offline) -> int:
    """Every live ~/parameters message equals run-bag's at its data stamp exactly (values, covariance,
    flags, excitation, validity, status, samples); returns how many were compared."""
    by_stamp = {(f['header']['stamp']['sec'], f['header']['stamp']['nanosec']): f
                for _, f in offline.outputs['/pkm_identifier/parameters']}
    n = 0
    for m in live_msgs:
        f = by_stamp.get((m.header.stamp.sec, m.header.stamp.nanosec))
        assert f is not None, f'live estimate at {m.header.stamp} has no run-bag estimate at that stamp'
        for key in ('values', 'covariance', 'excitation'):
            np.testing.assert_array_equal(np.asarray(getattr(m, key)), np.asarray(f[key]), err_msg=key)
        assert (list(m.flags), m.valid, m.status) == (list(f['flags']), f['valid'], f['status'])
        n += 1
    return n


def publish_until(pub_node, listener, msgs, end_stamp) -> None:
    """Publish the (stamp ns, L, L_dot, F) messages at 1 kHz (paced) and wait for the estimate stamped end_stamp."""
    pub = pub_node.create_publisher(JointState, '/joint_states', 1000)
    wait_matched([pub])
    for i in paced(np.arange(len(msgs)) * 1e-3):
        ns, L, Ld, F = msgs[i]
        m = JointState()
        set_stamp(m.header, ns)
        m.name, m.position, m.velocity, m.effort = NAMES, L.tolist(), Ld.tolist(), F.tolist()
        pub.publish(m)

    def done():
        p = listener.get('/pkm_identifier/parameters')
        return p and (p[-1].header.stamp.sec, p[-1].header.stamp.nanosec) == end_stamp
    assert listener.wait_for(done, timeout=10.0), 'no estimate covering the last samples arrived'


@pytest.mark.ros
def test_live_node_converges_and_equals_run_bag(tmp_path, ros_context):
    msgs, bad, truth = corrupted_stream()
    bag = write_stream_bag(tmp_path / 'bag', msgs)
    save = tmp_path / 'estimate.yaml'
    proc = start_node('pkm_identification.node', '--params-file', CONFIG, '-p', f'save_path:={save}')
    listener = Listener(TOPICS)
    pub_node = Node('test_pkm_publisher')
    offline, _, _ = run_bag(str(bag), CONFIG, progress=False)
    last_off = offline.outputs['/pkm_identifier/parameters'][-1][1]
    end_stamp = (last_off['header']['stamp']['sec'], last_off['header']['stamp']['nanosec'])
    try:
        publish_until(pub_node, listener, msgs, end_stamp)
        assert listener.wait_for(lambda: int(listener.diag('pkm_identifier: input joint_states')
                                             .get('received', 0)) >= len(msgs), timeout=5.0), 'messages lost'
        # services: save, set_active_set, freeze
        cli = pub_node.create_client(Trigger, '/pkm_identifier/save')
        assert cli.wait_for_service(timeout_sec=5.0)
        r = call_service(pub_node, cli, Trigger.Request())
        assert r.success, r.message
        sa = pub_node.create_client(PkmSetActiveSet, '/pkm_identifier/set_active_set')
        assert sa.wait_for_service(timeout_sec=5.0)
        r = call_service(pub_node, sa, PkmSetActiveSet.Request(preset='friction'))
        assert not r.success and 'estimate_friction' in r.message
        r = call_service(pub_node, sa, PkmSetActiveSet.Request(names=['m_p', 'Iyyp']))
        assert r.success and list(r.active) == ['m_p', 'Iyyp']
        fr = pub_node.create_client(SetBool, '/pkm_identifier/freeze')
        assert fr.wait_for_service(timeout_sec=5.0)
        assert call_service(pub_node, fr, SetBool.Request(data=True)).success
        rs = pub_node.create_client(Trigger, '/pkm_identifier/reset')
        assert rs.wait_for_service(timeout_sec=5.0)
        assert call_service(pub_node, rs, Trigger.Request()).success
        assert listener.wait_for(lambda: listener.diag('pkm_identifier: estimate').get('message')
                                 == 'no estimate yet', timeout=5.0)
    finally:
        pub_node.destroy_node()
        log = stop(proc)
        listener.close()
    live = [p for p in listener.get('/pkm_identifier/parameters')
            if (p.header.stamp.sec, p.header.stamp.nanosec) == end_stamp][0]
    names = list(live.names)
    err = {n: 100 * (v / truth[n] - 1) for n, v in zip(names, live.values)}
    assert all(abs(e) < 0.1 for e in err.values()), err              # converged to the truth (S11 gate)
    assert list(live.flags) == ['identified'] * 8, list(live.flags)
    assert live.valid, live.status
    cov = np.array(live.covariance).reshape(8, 8)
    np.linalg.cholesky(cov)
    # same data offline: the same estimates at the same data stamps, bit for bit (fixed update_block blocks:
    # the tick split does not matter), every one of them, not only the last
    assert last_off['names'] == names
    n_live = len(listener.get('/pkm_identifier/parameters'))
    assert live_equals_run_bag(listener.get('/pkm_identifier/parameters'), offline) == n_live
    assert n_live == len(offline.outputs['/pkm_identifier/parameters'])
    # rejections counted the same way live and offline
    d = listener.diag('pkm_identifier: input joint_states')
    assert int(d['joint_states.nonfinite']) == bad['nonfinite'], (d, log)
    assert int(d['joint_states.out_of_order']) == bad['out_of_order']
    st = offline.status['pkm_identifier']
    assert st['joint_states.nonfinite'] == bad['nonfinite'] and st['joint_states.out_of_order'] == bad['out_of_order']
    # the platform inertia and the feed-forward forces
    inertia = listener.get('/pkm_identifier/platform_inertia')[-1]
    assert inertia.header.frame_id == 'platform' and abs(inertia.inertia.m / truth['m_p'] - 1) < 1e-3
    ff = listener.get('/pkm_identifier/predicted_effort')[-1]
    assert list(ff.name) == NAMES and len(ff.effort) == 6
    saved = yaml.safe_load(save.read_text())
    assert saved['parameters']['m_p']['flag'] == 'identified'
    assert abs(saved['parameters']['m_p']['value'] / truth['m_p'] - 1) < 1e-3
    twelve = saved['twelve_parameter_form']
    assert twelve['Iyye']['flag'] == twelve['Ixxb']['flag'] == 'never_identifiable'
    assert twelve['Ixxb']['value'] + twelve['Ixxe']['value'] == pytest.approx(saved['parameters']['Ix_s']['value'])


@pytest.mark.ros
def test_live_pure_translation_publishes_no_platform_inertia(tmp_path, ros_context):
    """Issue 14 class 2 live: a heavy platform in pure translation with strut friction, noisy forces, quantised
    lengths and a noisy velocity channel (test_pkm_trust.heavy_translation), sent over DDS to the node with the
    shipped config: the platform inertias are flagged not_excited in every estimate, ~/platform_inertia never
    carries a message, and the final flags / verdict equal run-bag's on the same messages."""
    from test_pkm_trust import heavy_translation
    stamps, L, Ld, F, truth = heavy_translation(duration=2.5)
    msgs = [(int(stamps[k]), L[k], Ld[k], F[k]) for k in range(len(stamps))]
    bag = write_stream_bag(tmp_path / 'bag', msgs)
    offline, _, _ = run_bag(str(bag), CONFIG, progress=False)
    assert '/pkm_identifier/platform_inertia' not in offline.outputs
    last_off = offline.outputs['/pkm_identifier/parameters'][-1][1]
    end_stamp = (last_off['header']['stamp']['sec'], last_off['header']['stamp']['nanosec'])
    proc = start_node('pkm_identification.node', '--params-file', CONFIG)
    listener = Listener(TOPICS)
    pub_node = Node('test_pkm_translation_publisher')
    try:
        publish_until(pub_node, listener, msgs, end_stamp)
    finally:
        pub_node.destroy_node()
        stop(proc)
        listener.close()
    params = listener.get('/pkm_identifier/parameters')
    assert len(params) >= 10
    for p in params:
        flags = dict(zip(p.names, p.flags))
        assert [flags[n] for n in ('Ixxp', 'Iyyp', 'Izzp')] == ['not_excited'] * 3, flags
    assert not listener.get('/pkm_identifier/platform_inertia')
    live = params[-1]
    assert list(live.flags) == last_off['flags'] and live.valid == last_off['valid']
    assert live.status == last_off['status']
    assert live_equals_run_bag(params, offline) == len(params) == len(offline.outputs['/pkm_identifier/parameters'])


@pytest.mark.ros
def test_wrong_parameter_or_machine_stops_the_node(ros_context):
    returncode, log = run_to_exit('pkm_identification.node', '--params-file', CONFIG,
                                  '-p', 'measurement_std:=-1.0')
    assert returncode == 2 and "parameter 'measurement_std' = -1.0 is outside its range" in log
    returncode, log = run_to_exit('pkm_identification.node', '--params-file', CONFIG,
                                  '-p', 'machine:=no_such_machine')
    assert returncode == 2 and 'no_such_machine' in log


def test_documented_config_is_generated():
    spec = importlib.util.spec_from_file_location('gen_config', ROOT / 'tools' / 'gen_config.py')
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / 'config' / 'pkm_identifier.yaml').read_text() == gen.render('pkm_identifier')
    values = load_params_file(CONFIG, 'pkm_identifier')
    assert values['prior_scale'] == 0.8


def test_launch_file_names_the_installed_executable_and_config():
    import ast
    import sys
    from pathlib import Path
    tree = ast.parse((ROOT / 'launch/pkm_identification.launch.py').read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {'contact_dynamics', 'pkm_identifier', 'pkm_identifier.yaml', 'config', 'joint_states'} <= strings
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description' for n in ast.walk(tree))
    share = Path(sys.prefix) / 'share' / 'contact_dynamics'
    assert (share / 'launch' / 'pkm_identification.launch.py').is_file()
    assert (share / 'config' / 'pkm_identifier.yaml').is_file()
    assert (share / 'config' / 'pkm_machines' / 'uf_like.yaml').is_file()
    assert (Path(sys.prefix) / 'lib' / 'contact_dynamics' / 'pkm_identifier').is_file()
