"""Bad input loses no good data, rover nodes (issue 16, acceptance of the node items, the fuzz of
test_fuzz_nodes.py for impact_indicator and posture_evaluator): each node runs as a real process over DDS and gets
a good approach stream (JointState and Odometry at 100 Hz, an obstacle hypothesis at 20 Hz) with every bad class
of each input interleaved by test_fuzz_nodes.fuzz_plan - NaN and inf values, empty and mismatched JointState
arrays, unknown joints (and one 10 000-name JointState), a zero quaternion, zero stamps,
out-of-order stamps, ONE stamp years in the future and ONE 1.5 s in the past per input, hypotheses that are NaN,
infinite, behind the rover or name an unknown wheel - and a burst of 10x the input's queue depth published at once.

Asserted per node: the process is alive; every float it published is finite (the documented exception:
ImpactIndicator.time_to_contact is +inf while no hypothesis with a distance is in use) and every effective mass
matrix (ImpactIndicator.m_eff, the rover's matrix output) symmetric positive definite; no output carries the
stamp of a bad sample; each input's ledger counts exactly what was injected: the callbacks' ``received`` +
``dropped.queue`` (publication sequence gaps) = published, the drained ledger ('<node>: inputs') has the same
``received``, ``accepted`` = the good messages, ``dropped.<cause>`` = the injected messages of that class (the
rover's causes carry the input's prefix: ``joint_nonfinite``, ``odometry_stamp_outlier``, ...), the burst's
copies are either dropped as re-sent (``*_out_of_order``; a hypothesis re-sent with its stamp is
``obstacle_repeated``) or counted lost before the callback; no time jump; the final output equals, to 1e-6
relative, run-bag of a bag holding exactly the good messages; no log line longer than 1000 characters, one line
per refusal cause per 5 s.

The rover evaluates the latest state at the node's clock; both runs use max_state_age_s = 1e9 s so that the
comparison is in data time only (staleness against the clock is tested in test_rover_nodes.py).
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from contact_dynamics.msg import ImpactIndicator, ObstacleHypothesis, PostureEvaluation  # noqa: E402
from contact_dynamics_common.bag import BagWriter  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402

from ros_harness import ROOT, Listener, set_stamp, start_node, stop, wait_matched  # noqa: E402
from test_fuzz_nodes import (T0, Case, Input, _as_dict, _compare, _floats, _joint_classes,  # noqa: E402
                             _odometry_classes, _restamped, _stamp_ns, _with, fuzz_plan, publish_events)

pytestmark = pytest.mark.ros

QUEUE = 200                     # joint_states / odom input_queue_size in this test (shipped: 50)
OBSTACLE_QUEUE = 10             # the nodes' fixed obstacle queue depth
RATE_HZ = 500.0                 # good and bad messages per second
WHEELS = ['front_left', 'front_right']
SPEED, D0, BETA = 0.07, 0.3, np.deg2rad(70.0)
N = 200                         # JointState / Odometry samples (2 s at 100 Hz); a hypothesis every 5th

TYPES = {JointState: 'sensor_msgs/msg/JointState', Odometry: 'nav_msgs/msg/Odometry',
         ObstacleHypothesis: 'contact_dynamics/msg/ObstacleHypothesis'}


@dataclass
class RoverInput:
    """Input of a rover node: its ledger name ('<node>: input <kind>', '<kind>.dropped.<cause>'), the prefix of
    its causes and its queue depth."""
    kind: str
    prefix: str
    depth: int


def _obstacle_classes() -> dict:
    """Hypotheses the node must refuse (``obstacle_rejected``), made from a good one (restamped just after it, so
    only their content refuses them)."""
    def edit(field_name, value):
        def f(m):
            setattr(m, field_name, value)
        return f
    after = 500_000
    return {'obstacle_nan_beta': lambda m, last: _with(_restamped(m, last + after), edit('beta_rad', math.nan)),
            'obstacle_inf_height': lambda m, last: _with(_restamped(m, last + after), edit('height_m', math.inf)),
            'obstacle_behind': lambda m, last: _with(_restamped(m, last + after), edit('distance_m', -0.3)),
            'obstacle_unknown_wheel': lambda m, last: _with(_restamped(m, last + after),
                                                            edit('contact_wheels', ['no_such_wheel']))}


def _cause(inp: RoverInput, kind: str) -> str:
    """The rover ledger cause an injected class is counted under."""
    if kind.startswith('obstacle_'):
        return 'obstacle_rejected'
    if kind in ('joint_state_empty', 'joint_state_malformed', 'joint_missing', 'joint_missing_huge'):
        return 'joint_missing' if kind == 'joint_missing_huge' else kind
    if kind.startswith('nonfinite'):
        return f'{inp.prefix}_nonfinite'
    if kind.startswith('bad_quaternion'):
        return f'{inp.prefix}_bad_quaternion'
    if kind.endswith('_outlier'):
        return f'{inp.prefix}_stamp_outlier'
    return f'{inp.prefix}_{kind}'                      # zero_stamp, out_of_order


def _approach_stream(obstacle_topic: str):
    """The rover rolling towards a 70 deg face at 0.07 m/s (test_rover_nodes' state), its speed rising 30 % over
    the 2 s so that every sample differs; a hypothesis with the distance left every 5th sample."""
    from rover_contact.inputs import load_model
    from rover_contact.validation.simulate import approach_state
    model = load_model({'model_yaml': 'rover_pr3d_roles.yaml', 'urdf_path': ''})
    q, v = approach_state(model, SPEED)
    names = model.joint_names
    jp = model.joint_positions(q)
    out = []
    for k in range(N):
        t = k * 0.01
        s = 1.0 + 0.3 * k / N
        ns = T0 + k * 10_000_000
        j = JointState()
        set_stamp(j.header, ns)
        j.name = list(names)
        j.position = [float(jp[n]) for n in names]
        j.velocity = [float(s * v[model.idx_v[n]]) for n in names]
        o = Odometry()
        o.header.stamp, o.header.frame_id, o.child_frame_id = j.header.stamp, 'odom', 'base_link'
        p, r = o.pose.pose.position, o.pose.pose.orientation
        p.x, p.y, p.z = float(q[0] + SPEED * t), float(q[1]), float(q[2])
        r.x, r.y, r.z, r.w = (float(x) for x in q[3:7])
        tw = o.twist.twist
        tw.linear.x, tw.linear.y, tw.linear.z = (float(s * x) for x in v[0:3])
        tw.angular.x, tw.angular.y, tw.angular.z = (float(s * x) for x in v[3:6])
        out += [('/joint_states', j), ('/odom', o)]
        if k % 5 == 0:
            h = ObstacleHypothesis()
            h.header.stamp, h.header.frame_id = j.header.stamp, 'odom'
            h.beta_rad, h.distance_m, h.contact_wheels = float(BETA), float(D0 - SPEED * t), list(WHEELS)
            h.k, h.p, h.e_restitution, h.contact_model = 2.0e5, 1.5, 0.9, 'hunt_crossley'
            out.append((obstacle_topic, h))
    return out


def _case(node: str, module: str, output: str, output_type, overrides: dict) -> tuple[Case, dict]:
    obstacle = f'/{node}/obstacle'
    case = Case(node, module, output, output_type, overrides, [
        Input('/joint_states', JointState, f'{node}: input joint_states', _joint_classes('velocity')),
        Input('/odom', Odometry, f'{node}: input odometry', _odometry_classes()),
        Input(obstacle, ObstacleHypothesis, f'{node}: input obstacle', _obstacle_classes())],
        lambda: _approach_stream(obstacle))
    return case, {'/joint_states': RoverInput('joint_states', 'joint', QUEUE),
                  '/odom': RoverInput('odometry', 'odometry', QUEUE),
                  obstacle: RoverInput('obstacle', 'obstacle', OBSTACLE_QUEUE)}


CASES = {
    'impact_indicator': _case('impact_indicator', 'rover_contact.impact.node', '/impact_indicator/impact_indicator',
                              ImpactIndicator, {}),
    # energy budget and the hypotheses' stiffness set: v_max and f_max_estimate are finite (NaN documented without)
    'posture_evaluator': _case('posture_evaluator', 'rover_contact.posture.node',
                               '/posture_evaluator/posture_evaluation', PostureEvaluation, {'energy_budget_j': 1.0}),
}


def _params_file(case: Case, tmp_path):
    doc = yaml.safe_load((ROOT / 'config' / f'{case.node}.yaml').read_text())
    doc[case.node]['ros__parameters'].update({**case.overrides, 'input_queue_size': QUEUE, 'max_state_age_s': 1e9})
    path = tmp_path / f'{case.node}.yaml'
    path.write_text(yaml.safe_dump(doc))
    return path


def _good_bag(events, path):
    """The good messages in publication order, logged at their stamps (as a recorder on the rover would)."""
    with BagWriter(path, overwrite=True) as bag:
        for _, topic, msg in (e for e in events if e[0] == 'good'):
            bag.write(topic, TYPES[type(msg)], msg, _stamp_ns(msg))
    return path


@pytest.mark.parametrize('name', list(CASES))
def test_bad_input_is_counted_and_loses_no_good_data(name, tmp_path, monkeypatch, ros_context):
    case, rover_inputs = CASES[name]
    monkeypatch.delenv('CONTACT_DYNAMICS_EXECUTOR', raising=False)      # the default executor (events)
    monkeypatch.delenv('CONTACT_DYNAMICS_MESSAGE_INFO', raising=False)
    events = fuzz_plan(case)
    params = _params_file(case, tmp_path)
    proc = start_node(case.module, '--params-file', str(params))
    started = time.monotonic()
    listener = Listener({case.output: case.output_type, '/diagnostics': DiagnosticArray}, name='fuzz_listener')
    node = Node('fuzz_publisher')
    published = {i.topic: 0 for i in case.inputs}
    bursts = {t: 10 * ri.depth for t, ri in rover_inputs.items()}
    try:
        pubs = {i.topic: node.create_publisher(i.type, i.topic, 2 * max(bursts.values())) for i in case.inputs}
        wait_matched(list(pubs.values()), timeout=60.0)
        publish_events(events, pubs, published, bursts, RATE_HZ)

        def settled():
            ledger = listener.diag(f'{case.node}: inputs')
            for t, ri in rover_inputs.items():
                v = listener.diag(f'{case.node}: input {ri.kind}')
                if not v or not ledger or int(v['received']) + int(v['dropped.queue']) < published[t] \
                        or int(ledger.get(f'{ri.kind}.received', -1)) != int(v['received']):
                    return False
            return True
        ok = listener.wait_for(settled, timeout=30.0)
        time.sleep(1.5)                         # the updates after the last sample, one more diagnostics round
        alive = proc.poll() is None
    finally:
        node.destroy_node()
        log = stop(proc)
        listener.close()
    elapsed = time.monotonic() - started
    assert alive, log[-3000:]
    ledger = listener.diag(f'{case.node}: inputs')
    assert ok, ({ri.kind: listener.diag(f'{case.node}: input {ri.kind}') for ri in rover_inputs.values()}, ledger)

    # ---- the ledger of each input: exactly what was injected
    assert int(ledger['time_jumps']) == 0, ledger
    for inp in case.inputs:
        ri = rover_inputs[inp.topic]
        rate = listener.diag(f'{case.node}: input {ri.kind}')
        received, lost = int(rate['received']), int(rate['dropped.queue'])
        assert received + lost == published[inp.topic], (inp.topic, published[inp.topic], rate)
        assert int(ledger[f'{ri.kind}.received']) == received, (inp.topic, received, ledger)
        injected: dict[str, int] = {}
        for kind, topic, _ in events:
            if topic == inp.topic and kind not in ('good', 'burst'):
                injected[_cause(ri, kind)] = injected.get(_cause(ri, kind), 0) + 1
        n_good = sum(1 for kind, topic, _ in events if kind == 'good' and topic == inp.topic)
        prefix = f'{ri.kind}.dropped.'
        dropped = {k[len(prefix):]: int(x) for k, x in ledger.items() if k.startswith(prefix)}
        assert int(ledger[f'{ri.kind}.accepted']) == n_good, (inp.topic, n_good, dropped)
        assert lost > 0, ('the burst lost nothing: no loss to count', inp.topic, rate)
        huge = any(k == 'joint_missing_huge' and t == inp.topic for k, t, _ in events)
        huge_lost = injected.get('joint_missing', 0) - dropped.get('joint_missing', 0)
        assert huge_lost in ((0, 1) if huge else (0,)), (inp.topic, dropped, injected)
        if huge:
            injected['joint_missing'] -= huge_lost
        resent = 'obstacle_repeated' if ri.kind == 'obstacle' else f'{ri.prefix}_out_of_order'
        assert dropped.get(resent, 0) + lost == injected.get(resent, 0) + bursts[inp.topic] + huge_lost, \
            (inp.topic, dropped, injected)
        injected.pop(resent, None)
        for cause, n in injected.items():
            assert dropped.get(cause, 0) == n, (inp.topic, cause, n, dropped)
        assert sum(dropped.values()) == received - n_good, (inp.topic, dropped, received, n_good)
        print(f'{case.node} {inp.topic}: published {published[inp.topic]}, received {received}, dropped.queue {lost}, '
              f'accepted {n_good}, dropped {dropped}, huge JointState lost in transport: {bool(huge_lost)}')

    # ---- outputs: finite, stamped with good data time; the final one equals run-bag of the good messages alone
    outputs = listener.get(case.output)
    assert outputs, f'{case.node} published nothing'
    good_stamps = {_stamp_ns(m) for kind, t, m in events if kind == 'good' and t in ('/joint_states', '/odom')}
    stamps = [_stamp_ns(m) for m in outputs]
    assert set(stamps) <= good_stamps and stamps == sorted(stamps), sorted(set(stamps) - good_stamps)[:5]
    for i, msg in enumerate(outputs):
        bad = [p for p, x in _floats(_as_dict(msg)) if not math.isfinite(x)
               and not (p == '.time_to_contact' and x == math.inf and i < len(outputs) - 1)]
        assert not bad, (case.node, i, bad[:5])
        if isinstance(msg, ImpactIndicator):            # the effective mass matrix: symmetric positive definite
            n = int(round(math.sqrt(len(msg.m_eff))))
            m_eff = np.array(msg.m_eff).reshape(n, n)
            assert n >= 1 and np.allclose(m_eff, m_eff.T, rtol=1e-9, atol=0.0), m_eff
            np.linalg.cholesky(m_eff)
    result, _, _ = run_bag(str(_good_bag(events, tmp_path / 'good')), str(params), progress=False)
    offline = result.outputs[case.output][-1][1]
    assert stamps[-1] == max(good_stamps)
    _compare(_as_dict(outputs[-1]), offline)
    print(f'{case.node}: {len(outputs)} outputs, the last at the last good stamp equals run-bag\'s last '
          f'({len(result.outputs[case.output])} outputs)')

    # ---- log lines: the cause and the sizes, never the payload; one per cause per 5 s
    lines = log.splitlines()
    assert max(map(len, lines)) < 1000, max(lines, key=len)[:300]
    per_cause = 1 + math.ceil(elapsed / 5.0)
    for text in ('lacks joint', 'no joint names', 'NaN/inf', 'norm', 'obstacle rejected', 'stamp outlier',
                 'out of order', 'zero stamp'):
        n = sum(text in ln for ln in lines)
        assert n <= per_cause * 3, (text, n, [ln for ln in lines if text in ln][:5])
