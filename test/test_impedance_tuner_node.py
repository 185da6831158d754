"""impedance_tuner over DDS (issue 18 acceptance): the tuner in its own process sets the gains of a stand-in
admittance_controller (test/admittance_standin.py, own process: the real controller's parameter names, types,
sizes and bounds, validated there independently) from the estimates of a played contact recording.

* the gains stay within bounds and slew limits as the estimates converge, only the contact axis changes, and
  they end at the rule's gains for the converged estimate;
* untrusted estimates hold the gains; a lost estimate reverts to the safe gains after loss_timeout;
* a controller whose admittance.mass is not six elements is refused by the tuner (nothing sent);
* a dry run publishes what it would set and sets nothing; ~/enable false stops it.
"""
from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict

import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterEvent, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402

from contact_dynamics.msg import ContactEstimate  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402
from contact_dynamics_common.ros.env import isolated_ros_env  # noqa: E402
from contact_dynamics_common.ros.fill import fill  # noqa: E402
from contact_dynamics_common.ros.qos import output_qos  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402
from contact_estimation.tuner.admittance_params import GAINS  # noqa: E402

from ros_harness import ROOT, Listener, call_service, paced, start_node, stop, wait_matched  # noqa: E402
from test_impedance_tuner import ESTIMATOR_CONFIG, TUNER, rule_gains  # noqa: E402

pytestmark = pytest.mark.ros

STANDIN_DEFAULT = {'admittance.mass': [8.0, 8.0, 8.0, 1.0, 1.0, 1.0], 'admittance.damping_ratio': [1.5] * 6,
                   'admittance.stiffness': [200.0, 200.0, 200.0, 50.0, 50.0, 50.0]}


def start_standin(name: str, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, str(ROOT / 'test' / 'admittance_standin.py'), *extra, '--ros-args', '-r',
           f'__node:={name}']
    return subprocess.Popen(cmd, env=isolated_ros_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT)


def start_tuner(tmp_path, name: str, **params) -> subprocess.Popen:
    cfg = tmp_path / f'{name}.yaml'
    cfg.write_text(yaml.safe_dump({name: {'ros__parameters': dict(TUNER, **params)}}))
    return start_node('contact_estimation.tuner.node', '--params-file', str(cfg), '-r', f'__node:={name}')


class Recorder(Listener):
    """The harness Listener, with the receipt time (monotonic s) of every message."""

    def __init__(self, topics: dict):
        self.times: dict[str, list] = defaultdict(list)
        super().__init__(topics, name='tuner_test_recorder')

    def _callback(self, topic):
        def cb(msg):
            with self._lock:
                self.messages[topic].append(msg)
                self.times[topic].append(time.monotonic())
        return cb

    def timed(self, topic: str) -> list:
        with self._lock:
            return list(zip(self.times[topic], self.messages[topic]))

    def sets(self, controller: str) -> list[tuple[float, dict]]:
        """(receipt time, the controller's three arrays after it) of every admittance change the controller
        announced (rclpy/rclcpp apply a SetParameters request one parameter at a time: one event each)."""
        out, state = [], {k: list(v) for k, v in STANDIN_DEFAULT.items()}
        for t, ev in self.timed('/parameter_events'):
            if ev.node == controller and ev.changed_parameters:
                for p in ev.changed_parameters:
                    state[p.name] = list(p.value.double_array_value)
                out.append((t, {k: list(v) for k, v in state.items()}))
        return out


def _estimates(tmp_path) -> list[dict]:
    sim = KelvinVoigt1Dof(duration=8.0, rate=500.0, seed=11)
    bag = write_bag(sim, tmp_path / 'bag')
    return [f for _, f in run_bag(str(bag), ESTIMATOR_CONFIG, progress=False)[0]
            .outputs['/contact_estimator/estimate']]


def _z(arrays: dict) -> tuple[float, float, float]:
    return tuple(arrays[n][2] for n in GAINS)


def test_tuner_follows_a_converging_recording_holds_and_reverts(tmp_path, ros_context):
    fields = _estimates(tmp_path)
    ctrl = start_standin('admittance_controller')
    tuner = start_tuner(tmp_path, 'impedance_tuner')
    rec = Recorder({'/parameter_events': ParameterEvent, '/diagnostics': DiagnosticArray,
                    '/impedance_tuner/gains': ParameterEvent})
    pub_node = Node('tuner_test_publisher')
    pub = pub_node.create_publisher(ContactEstimate, '/contact_estimator/estimate', output_qos())
    try:
        wait_matched([pub])
        assert rec.wait_for(lambda: 'applied.mass_kg' in rec.diag('impedance_tuner: tuner'), 20.0), \
            'tuner never read the controller'
        # A: the recording's estimates at their 20 Hz
        for i in paced([0.05 * i for i in range(len(fields))]):
            pub.publish(fill(ContactEstimate(), fields[i]))
        time.sleep(0.3)
        end_a = time.monotonic()
        # B: untrusted estimates (a tempting k) for 1.5 s: hold
        bad = dict(fields[-1], valid=False, status='not excited', stiffness=3 * fields[-1]['stiffness'])
        for _ in paced([0.05 * i for i in range(30)]):
            pub.publish(fill(ContactEstimate(), bad))
        end_b = time.monotonic()
        # C: silence: revert after loss_timeout (1 s)
        safe = (TUNER['safe_mass'], TUNER['safe_damping_ratio'], TUNER['safe_stiffness'])
        reverted = lambda: any(_z(a) == safe for _, a in rec.sets('/admittance_controller'))  # noqa: E731
        assert rec.wait_for(reverted, 10.0), 'no revert to the safe gains'
        time.sleep(1.5)                                       # a diagnostics period after the revert
    finally:
        pub_node.destroy_node()
        tuner_log = stop(tuner)
        ctrl_log = stop(ctrl)
        rec.close()
    sets = rec.sets('/admittance_controller')
    assert 'REJECTED' not in ctrl_log, ctrl_log
    assert len(sets) >= 5, (tuner_log, ctrl_log)
    a_sets = [(t, a) for t, a in sets if t <= end_a]
    last = [(None, v) for v in (8.0, 1.5, 200.0)]             # per gain: (time of its last change, value)
    for t, arrays in a_sets:
        g = _z(arrays)
        assert 0.5 <= g[0] <= 200.0 and 0.3 <= g[1] <= 20.0 and 1.0 <= g[2] <= 1e4, g
        for name, arr in arrays.items():                      # only the contact axis changes
            assert arr[:2] + arr[3:] == STANDIN_DEFAULT[name][:2] + STANDIN_DEFAULT[name][3:], name
        for i, (x, (t0, y)) in enumerate(zip(g, last)):
            if x != y:
                if t0 is not None:                            # slew per gain; 0.1 s receipt jitter allowance
                    assert abs(x - y) <= TUNER['slew_rate'] * (t - t0 + 0.1) * abs(y), (i, x, y, t - t0)
                last[i] = (t, x)
    prev = tuple(v for _, v in last)
    last_valid = [f for f in fields if f['valid']][-1]
    want = rule_gains(last_valid['stiffness'], last_valid['damping'])
    assert prev == pytest.approx(want, rel=0.06), (prev, want)
    during_b = [(t, _z(a)) for t, a in sets if end_a + 0.3 < t <= end_b]
    assert not during_b, f'gains changed on untrusted estimates: {during_b}'
    reverts = [t for t, a in sets if _z(a) == safe]
    assert len(reverts) == 1 and reverts[0] - end_b >= TUNER['loss_timeout'] - 0.2, (reverts, end_b)
    diag = rec.diag('impedance_tuner: tuner')
    assert int(diag['refused.not_valid']) >= 30, diag
    assert diag['reverts'] == '1' and diag['state'] == 'reverted', diag
    gains_topic = rec.get('/impedance_tuner/gains')
    assert 3 * len(gains_topic) == len(sets), 'every applied request (3 arrays) is published on ~/gains'
    print(f'DDS: {len(a_sets) // 3} requests while converging, final z M {prev[0]:.4g} kg '
          f'zeta {prev[1]:.4g} K '
          f'{prev[2]:.4g} (rule {want[0]:.4g}, {want[1]:.4g}); 0 changes on 30 untrusted estimates; revert '
          f'{reverts[0] - end_b:.2f} s after the last message; refused.not_valid {diag["refused.not_valid"]}')


def test_wrong_size_refused_by_the_tuner_and_dry_run_sets_nothing(tmp_path, ros_context):
    bad_ctrl = start_standin('ctrl_bad', '--mass-size', '5')
    ok_ctrl = start_standin('ctrl_ok')
    tuner_bad = start_tuner(tmp_path, 'tuner_bad', controller_name='/ctrl_bad')
    tuner_dry = start_tuner(tmp_path, 'tuner_dry', controller_name='/ctrl_ok', dry_run=True)
    rec = Recorder({'/parameter_events': ParameterEvent, '/diagnostics': DiagnosticArray,
                    '/tuner_dry/gains': ParameterEvent})
    pub_node = Node('tuner_test_publisher2')
    pub = pub_node.create_publisher(ContactEstimate, '/contact_estimator/estimate', output_qos())
    est = {'stiffness': 4800.0, 'damping': 200.0, 'valid': True, 'status': 'ok', 'damping_identifiable': True,
           'algorithm': 'rls', 'model': 'kelvin_voigt'}
    try:
        wait_matched([pub])
        assert rec.wait_for(lambda: rec.diag('tuner_bad: tuner').get('refused.request'), 20.0), \
            rec.diag('tuner_bad: tuner')
        assert rec.wait_for(lambda: rec.diag('tuner_dry: tuner').get('controller_read') == 'True', 10.0)
        # the recorder must hear the dry run's first would-set event: its subscription matched before the
        # estimates start (on a loaded machine discovery of this late topic can lag the estimate publisher's)
        assert rec.wait_for(lambda: rec.node.count_publishers('/tuner_dry/gains') > 0, 10.0)
        time.sleep(0.5)
        for _ in paced([0.05 * i for i in range(60)]):
            pub.publish(fill(ContactEstimate(), est))
        assert rec.wait_for(lambda: len(rec.get('/tuner_dry/gains')) >= 3, 5.0)
        client = pub_node.create_client(SetBool, '/tuner_dry/enable')
        assert client.wait_for_service(timeout_sec=5.0)
        assert call_service(pub_node, client, SetBool.Request(data=False)).success
        time.sleep(0.3)
        n_disabled = len(rec.get('/tuner_dry/gains'))
        for _ in paced([0.05 * i for i in range(20)]):
            pub.publish(fill(ContactEstimate(), est))
        time.sleep(1.2)
    finally:
        pub_node.destroy_node()
        logs = [stop(p) for p in (tuner_bad, tuner_dry)]
        bad_log, ok_log = stop(bad_ctrl), stop(ok_ctrl)
        rec.close()
    assert 'SET' not in bad_log and 'REJECTED' not in bad_log, bad_log
    assert 'SET' not in ok_log and not rec.sets('/ctrl_ok') and not rec.sets('/ctrl_bad'), ok_log
    diag = rec.diag('tuner_bad: tuner')
    assert int(diag['refused.request']) >= 1 and '6 elements' in diag['last_refusal'], (diag, logs[0])
    dry = [_z({p.name: list(p.value.double_array_value) for p in ev.changed_parameters})
           for ev in rec.get('/tuner_dry/gains')]
    assert dry[0][0] == pytest.approx(8.0 * 1.0, rel=0.06)   # slew starts from the controller's own 8 kg
    assert all(b[0] > a[0] for a, b in zip(dry, dry[1:]))     # moving towards the rule's 31.6 kg
    assert len(rec.get('/tuner_dry/gains')) == n_disabled, 'published while disabled'
    assert rec.diag('tuner_dry: tuner')['mode'] == 'disabled'
    print(f"DDS: wrong-size controller refused by the tuner ({diag['last_refusal']}); dry run published "
          f'{len(dry)} would-set events, controller untouched')


def test_a_gain_changed_by_hand_restarts_the_slew_from_it(tmp_path, ros_context):
    ctrl = start_standin('ctrl_hand')
    tuner = start_tuner(tmp_path, 'tuner_hand', controller_name='/ctrl_hand', slew_rate=2.0)
    rec = Recorder({'/parameter_events': ParameterEvent, '/diagnostics': DiagnosticArray})
    pub_node = Node('tuner_test_publisher3')
    pub = pub_node.create_publisher(ContactEstimate, '/contact_estimator/estimate', output_qos())
    est = fill(ContactEstimate(), {'stiffness': 4800.0, 'damping': 200.0, 'valid': True, 'status': 'ok',
                                   'damping_identifiable': True})
    want = rule_gains(4800.0, 200.0)
    try:
        wait_matched([pub])
        for _ in paced([0.05 * i for i in range(60)]):                      # 3 s: converge (slew 2/s)
            pub.publish(est)
        assert rec.wait_for(lambda: rec.sets('/ctrl_hand') and
                            abs(_z(rec.sets('/ctrl_hand')[-1][1])[0] / want[0] - 1) < 0.06, 5.0)
        setp = pub_node.create_client(SetParameters, '/ctrl_hand/set_parameters')
        assert setp.wait_for_service(timeout_sec=5.0)
        hand = Parameter(name='admittance.mass', value=ParameterValue(
            type=8, double_array_value=[8.0, 8.0, 80.0, 1.0, 1.0, 1.0]))
        t_hand = time.monotonic()
        assert call_service(pub_node, setp, SetParameters.Request(parameters=[hand])).results[0].successful
        for _ in paced([0.05 * i for i in range(60)]):                      # 3 s more of the same estimate
            pub.publish(est)
        time.sleep(0.5)
    finally:
        pub_node.destroy_node()
        tuner_log = stop(tuner)
        stop(ctrl)
        rec.close()
    after = [(t, _z(a)[0]) for t, a in rec.sets('/ctrl_hand') if t > t_hand]
    assert after and after[0][1] == 80.0, after[:3]                          # the hand change itself
    moved = [m for _, m in after[1:]]
    if moved and moved[-1] == TUNER['safe_mass']:            # the revert after the last estimate
        moved = moved[:-1]
    assert moved and moved[0] < 80.0 and moved[0] >= 80.0 * (1 - 2.0 * 0.5), (moved[:3], tuner_log)
    assert all(b <= a for a, b in zip(moved, moved[1:])) and moved[-1] == pytest.approx(want[0], rel=0.06)
    assert int(rec.diag('tuner_hand: tuner')['resynced']) >= 1
    print(f'DDS: mass set by hand to 80 kg; the tuner read it back and slewed down from it to '
          f'{moved[-1]:.4g} kg '
          f'in {len(moved)} steps')
