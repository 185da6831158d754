"""Structural checks of input messages (messages.checks) and the node's refusal of them (NodeInputs.refuse):
the cause, a text with the sizes and never the payload, one log line per topic and cause per interval."""
from types import SimpleNamespace as NS

import pytest

from contact_dynamics_common.messages.checks import joint_state_problem, odometry_problem, pose_problem


def js(names, position=(), velocity=(), effort=()):
    return NS(name=list(names), position=list(position), velocity=list(velocity), effort=list(effort))


def test_joint_state_lengths_names_and_required_arrays():
    assert joint_state_problem(js(['a', 'b'], [1, 2]), ['a']) is None
    assert joint_state_problem(js(['a', 'b', 'c'], [1, 2]), ['a']).cause == 'joint_state_malformed'
    p = joint_state_problem(js(['a', 'b', 'c'], [1, 2]), ['a'])
    assert '3 names, 2 positions' in p.text
    assert joint_state_problem(js(['a'], [1], [], [2, 3]), ['a']).cause == 'joint_state_malformed'
    assert joint_state_problem(js(['a'], [1]), ['a'], ('position', 'effort')).cause == 'joint_state_malformed'
    assert joint_state_problem(js([]), ['a']).cause == 'joint_state_empty'
    assert joint_state_problem(js(['a', 'a'], [1, 2]), ['a']).cause == 'joint_state_malformed'
    assert joint_state_problem(js(['x'], [1]), ['a']).cause == 'joint_missing'
    # extra, unknown names are good data
    assert joint_state_problem(js(['x', 'a', 'y'], [0, 1, 2], [], [3, 4, 5]), ['a'], ('position', 'effort')) is None


def test_texts_name_sizes_never_the_payload():
    names = [f'joint_{i:06d}' for i in range(100_000)]
    p = joint_state_problem(js(names, [0.0] * 100_000), ['slider'])
    assert p.cause == 'joint_missing' and len(p.text) < 400 and '100000 names' in p.text
    assert 'joint_000099' not in p.text and '(99994 more)' in p.text
    p = joint_state_problem(js(names, [0.0] * 3), ['slider'])
    assert p.cause == 'joint_state_malformed' and len(p.text) < 200 and '100000 names, 3 positions' in p.text


@pytest.mark.parametrize('q, cause', [((0, 0, 0, 1), None), ((0, 0, 0, 0), 'bad_quaternion'),
                                      ((0, 0, 0, 1.3), 'bad_quaternion'), ((0, 0, float('nan'), 1), 'nonfinite'),
                                      ((0.5, 0.5, 0.5, 0.5), None)])
def test_quaternion_norm_and_finite(q, cause):
    quat = NS(x=q[0], y=q[1], z=q[2], w=q[3])
    pose = NS(pose=NS(orientation=quat))
    odom = NS(pose=NS(pose=NS(orientation=quat)))
    for problem in (pose_problem(pose), odometry_problem(odom)):
        assert (problem.cause if problem else None) == cause


def test_refusals_are_counted_and_their_log_lines_rate_limited(monkeypatch):
    from contact_dynamics_common.ros import inputs
    lines = []
    host = NS(get_logger=lambda: NS(warning=lines.append))
    inputs.NodeInputs.init_inputs(host)
    now = [100.0]
    monkeypatch.setattr(inputs.time, 'monotonic', lambda: now[0])
    counter = host._refused.setdefault(1, inputs.Counter())
    host._refused[id(counter)] = counter
    names = [f'joint_{i:06d}' for i in range(100_000)]
    problem = joint_state_problem(js(names, [0.0] * 100_000), ['slider'])
    for k in range(50):
        inputs.NodeInputs.refuse(host, '/joint_states', counter, problem)
        now[0] += 0.2                            # 50 messages over 10 s: 5 Hz
    assert counter['joint_missing'] == 50
    assert len(lines) == 2 and all(len(ln) < 500 for ln in lines)      # t = 0 and t = 5 s
    assert '(joint_missing)' in lines[0] and '(24 more since the last line)' in lines[1]
    inputs.NodeInputs.refuse(host, '/joint_states', counter, joint_state_problem(js([]), ['slider']))
    assert len(lines) == 3 and '(joint_state_empty)' in lines[2]        # another cause: its own line
