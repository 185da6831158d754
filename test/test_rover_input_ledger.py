"""rover_contact inputs: the per-input ledger in the 'inputs' status (issue 15 item 6), ordering per input by the
shared stamp gate (issue 16 item 4), bounded and rate-limited log lines (issue 16 item 5), the update timing
against the period, posture evaluations spread over ticks and stamped with data time (issue 15 item 6)."""
import numpy as np
import pytest

from contact_dynamics_common.params import validate_all
from rover_contact.impact.config import PARAMS as IMPACT_PARAMS
from rover_contact.impact.pipeline import ImpactPipeline
from rover_contact.inputs import InputError, RoverInputs, load_model
from rover_contact.validation.simulate import approach_state

MS = 1_000_000
T0 = 10**9


@pytest.fixture(scope='module')
def rover():
    model = load_model({'model_yaml': 'rover_pr3d_roles.yaml', 'urdf_path': ''})
    q, v = approach_state(model, 0.07)
    return model, q, v


def _state(model, q, v):
    names = model.joint_names
    jp = model.joint_positions(q)
    return names, [jp[n] for n in names], [v[model.idx_v[n]] for n in names]


def test_status_counts_every_input_by_cause(rover):
    """received = accepted + Σ dropped per input; rejected_total counts only the dropped samples (a JointState
    stream of good samples rejects none: the old 'joint_' prefix counted every one)."""
    model, q, v = rover
    names, pos, vel = _state(model, q, v)
    inp = RoverInputs(model, 0.2)
    good = 40
    for k in range(good):
        t = T0 + k * 20 * MS
        assert inp.push_joint_state(t, names + ['camera_pan'], pos + [0.0], vel + [0.0])    # extra name: accepted
        assert inp.push_odometry(t, q[0:3], q[3:7], v[0:3], v[3:6])
    sv = inp.status_values()
    assert sv['joint_states.received'] == sv['joint_states.accepted'] == good and sv['rejected_total'] == 0
    assert sv['unknown_names'] == good
    t = T0 + good * 20 * MS
    injected = {'joint_state_malformed': 2, 'joint_missing': 1, 'joint_nonfinite': 1, 'joint_zero_stamp': 1,
                'joint_out_of_order': 3}
    assert not inp.push_joint_state(t, names, pos[:-1], vel)
    assert not inp.push_joint_state(t, names + names[:1], pos + pos[:1], vel + vel[:1])       # repeated name
    assert not inp.push_joint_state(t, names[1:], pos[1:], vel[1:])
    assert not inp.push_joint_state(t, names, pos, [np.nan] + vel[1:])
    assert not inp.push_joint_state(0, names, pos, vel)
    for back in (0, 20, 419):                                   # same stamp, one period and 0.419 s back
        assert not inp.push_joint_state(t - 20 * MS - back * MS, names, pos, vel)
    assert not inp.push_odometry(t, q[0:3], (0, 0, 0, 0), v[0:3], v[3:6])
    assert not inp.push_odometry(t - 500 * MS, q[0:3], q[3:7], v[0:3], v[3:6])
    sv = inp.status_values()
    for cause, n in injected.items():
        assert sv[f'joint_states.dropped.{cause}'] == n
    assert sv['joint_states.received'] == good + sum(injected.values())
    assert sv['odometry.dropped.odometry_bad_quaternion'] == 1 and sv['odometry.dropped.odometry_out_of_order'] == 1
    assert sv['rejected_total'] == sum(injected.values()) + 2
    for kind, led in inp.ledger().items():
        assert led['received'] == led['accepted'] + sum(led['dropped'].values()), kind


def test_an_old_sample_resent_late_is_dropped_not_made_current(rover):
    """A good 50 Hz stream with one JointState, one Odometry and one obstacle hypothesis re-sent 0.419 s late
    (different content): each is dropped and counted, the state stays the latest and is not stale, the
    published T_c equals the one of the good stream alone."""
    model, q, v = rover
    names, pos, vel = _state(model, q, v)
    params = validate_all(IMPACT_PARAMS, {})
    clean, dirty = ImpactPipeline(params, model), ImpactPipeline(params, model)
    out_clean, out_dirty = [], []
    for k in range(60):
        t = T0 + k * 20 * MS
        for pl in (clean, dirty):
            pl.inputs.push_joint_state(t, names, pos, vel)
            pl.inputs.push_odometry(t, q[0:3] + [0.07 * k * 0.02, 0, 0], q[3:7], v[0:3], v[3:6])
            if k % 25 == 0:
                pl.inputs.push_obstacle(t, 'odom', (0, 0, 0), np.deg2rad(70), 0.0, 0.5 - 0.07 * k * 0.02, [], False)
        if k == 40:                                             # the glitch, in the dirty copy only
            old = t - 419 * MS
            assert not dirty.inputs.push_joint_state(old, names, pos, [2 * x for x in vel])
            assert not dirty.inputs.push_odometry(old, q[0:3] - [1.0, 0, 0], q[3:7], 3 * v[0:3], v[3:6])
            assert not dirty.inputs.push_obstacle(old, 'odom', (0, 0, 0), np.deg2rad(30), 0.0, 0.5, [], False)
        out_clean.append(clean.step(t))
        out_dirty.append(dirty.step(t))
    assert all(f is not None for f in out_dirty) and 'stale' not in dirty.last_status
    for a, b in zip(out_clean, out_dirty):
        assert {k: a[k] for k in ('t_c', 'v_c', 'time_to_contact', 'beta_rad', 'header')} == \
               {k: b[k] for k in ('t_c', 'v_c', 'time_to_contact', 'beta_rad', 'header')}
    sv = dirty.inputs.status_values()
    assert (sv['joint_states.dropped.joint_out_of_order'], sv['odometry.dropped.odometry_out_of_order'],
            sv['obstacle.dropped.obstacle_out_of_order']) == (1, 1, 1)
    assert sv['rejected_total'] == 3 and clean.inputs.status_values()['rejected_total'] == 0
    assert 'out of order' in dirty.inputs.last_error and 's before the last accepted one' in dirty.inputs.last_error


def test_time_jump_restarts_the_input(rover):
    """A backward step larger than time_jump_s is the gate's time jump (a looped bag) once the stream continues
    from the new time (the gate's confirm_samples, 3: the first two are dropped as its evidence): counted."""
    model, q, v = rover
    names, pos, vel = _state(model, q, v)
    inp = RoverInputs(model, 0.2, time_jump_s=1.0)
    for t, kept in ((T0 + 5000 * MS, True), (T0 + 5020 * MS, True), (T0, False), (T0 + 20 * MS, False),
                    (T0 + 40 * MS, True)):
        assert inp.push_joint_state(t, names, pos, vel) == kept
        assert inp.push_odometry(t, q[0:3], q[3:7], v[0:3], v[3:6]) == kept
    sv = inp.status_values()
    assert sv['time_jumps'] == 2 and sv['rejected_total'] == 4
    inp.state(T0 + 40 * MS)
    with pytest.raises(InputError, match='stale'):
        inp.state(T0 + 5040 * MS)


def test_error_texts_name_sizes_never_the_payload(rover):
    model, q, v = rover
    inp = RoverInputs(model, 0.2)
    names = [f'joint_{i:06d}' for i in range(100_000)]
    assert not inp.push_joint_state(T0, names, np.zeros(len(names)), np.zeros(len(names)))
    assert len(inp.last_error) < 400 and '100000 names' in inp.last_error and 'joint_000099' not in inp.last_error
    assert not inp.push_joint_state(T0, names, np.zeros(3), np.zeros(2))
    assert len(inp.last_error) < 200 and '100000 names' in inp.last_error


def test_log_limiter_one_line_per_cause_and_interval():
    from rover_contact.node_base import LogLimiter
    now = [0.0]
    lines = []

    class Sink:
        def warning(self, text):
            lines.append(('warning', text))

        def error(self, text):
            lines.append(('error', text))

    lim = LogLimiter(5.0, clock=lambda: now[0])
    for k in range(1000):
        now[0] = k * 0.01                                      # 10 s of a flood at 100 Hz
        lim(Sink(), 'warning', 'joint_missing', 'JointState lacks joint(s) a, b, c')
        lim(Sink(), 'error', 'state', 'stale Odometry: 0.419 s old')
    assert [lv for lv, _ in lines] == ['warning', 'error'] * 2   # 2 causes x (t = 0 s, t = 5 s)
    assert '(499 more like this in the last 5 s)' in lines[2][1]
    lim(Sink(), 'warning', 'x', 'y' * 100_000)
    assert len(lines[-1][1]) <= 300


def test_update_timing_warns_with_figures():
    from contact_dynamics_common.node import OK, WARN
    from rover_contact.node_base import UpdateTiming
    t = UpdateTiming(0.05, window=10)
    for _ in range(10):
        t.add(0.01)
    assert t.level_message_values()[0] == OK
    t.add(0.34)
    level, msg, values = t.level_message_values()
    assert level == WARN and '1 of the last 10 updates' in msg and '340.0 ms' in msg and '50.0 ms' in msg
    assert values['overruns_total'] == 1 and values['update_ms_max_recent'] == pytest.approx(340.0)
    for _ in range(10):
        t.add(0.01)
    assert t.level_message_values()[0] == OK and t.level_message_values()[2]['overruns_total'] == 1


def test_posture_grid_spread_over_ticks_equals_one_evaluation(rover):
    """candidates_per_update bounds the candidates evaluated per tick; the evaluation published when the list is
    complete equals the one-shot evaluation, and is stamped with the data time at its start."""
    from rover_contact.posture.config import PARAMS
    from rover_contact.posture.pipeline import PosturePipeline
    model, q, v = rover
    names, pos, vel = _state(model, q, v)
    base = {'ground_mode': 'both', 'posture_grid_min': [-0.25], 'posture_grid_max': [0.2],
            'posture_grid_steps': [23], 'speed_grid': [0.05, 0.07]}
    one = PosturePipeline(validate_all(PARAMS, {**base, 'candidates_per_update': 1000}), model)
    split = PosturePipeline(validate_all(PARAMS, {**base, 'candidates_per_update': 10}), model)
    calls = []
    inner = split.evaluator.evaluate
    split.evaluator.evaluate = lambda cur, cands, obs: calls.append(len(cands)) or inner(cur, cands, obs)
    results = {}
    for name, pl in (('one', one), ('split', split)):
        pl.inputs.push_joint_state(T0, names, pos, vel)
        pl.inputs.push_odometry(T0 + 3 * MS, q[0:3], q[3:7], v[0:3], v[3:6])
        pl.inputs.push_obstacle(T0 + 1 * MS, 'odom', (0, 0, 0), np.deg2rad(60), 0.0, 2.0, [], False)
        out = []
        for k in range(8):
            now = T0 + (10 + 50 * k) * MS
            if k == 2:                                          # newer data arrives while the grid is evaluated
                pl.inputs.push_joint_state(now, names, pos, vel)
                pl.inputs.push_odometry(now, q[0:3], q[3:7], v[0:3], v[3:6])
            out.append(pl.step(now))
        results[name] = out
    assert results['one'][0] is not None and all(f is None for f in results['one'][1:])
    assert [f is not None for f in results['split']] == [False] * 4 + [True] + [False] * 3
    assert calls == [10, 10, 10, 10, 6]
    a, b = results['one'][0], results['split'][4]
    np.testing.assert_equal(a, b)                               # every field (NaN == NaN), stamp included
    assert (a['header']['stamp']['sec'], a['header']['stamp']['nanosec']) == (1, 3 * MS)   # data time, not now
    assert len(a['candidates']) == 46 and a['best_index'] == 0


@pytest.mark.parametrize('order', ['bag', 'obstacle_first', 'odometry_late'])
def test_time_to_contact_depends_on_data_time_not_arrival(rover, order):
    """time_to_contact at the output's data stamp t equals (d0 - v t) / v whichever input arrives first: in the bag's
    order (joint state, odometry, hypothesis), with the hypothesis before the odometry of its stamp, and with the
    odometry one sample behind the joint states (issue 15: the distance driven was counted from the hypothesis's
    arrival, 0.04 s shorter live than in run-bag)."""
    model, q, v = rover
    names, pos, vel = _state(model, q, v)
    speed, d0, period = 0.07, 0.3, 20 * MS
    pipeline = ImpactPipeline(validate_all(IMPACT_PARAMS, {}), model)
    inp = pipeline.inputs

    def odom(k):
        inp.push_odometry(T0 + k * period, q[0:3] + [speed * k * period * 1e-9, 0, 0], q[3:7], v[0:3], v[3:6])

    def obstacle(k):
        if k % 25 == 0:
            assert inp.push_obstacle(T0 + k * period, 'odom', (0, 0, 0), np.deg2rad(70), 0.0,
                                     d0 - speed * k * period * 1e-9, [], False)

    def joint(k):
        inp.push_joint_state(T0 + k * period, names, pos, vel)

    steps = {'bag': lambda k: (joint(k), odom(k), obstacle(k)),
             'obstacle_first': lambda k: (obstacle(k), joint(k), odom(k)),
             'odometry_late': lambda k: (joint(k), obstacle(k), odom(k - 1) if k else None)}[order]
    checked = 0
    for k in range(120):
        steps(k)
        f = pipeline.step(T0 + k * period)
        if f is None or k < 2:
            continue
        t = (f['header']['stamp']['sec'] * 10**9 + f['header']['stamp']['nanosec'] - T0) * 1e-9
        assert t == pytest.approx(k * period * 1e-9, abs=1e-12)
        assert f['time_to_contact'] == pytest.approx((d0 - speed * t) / speed, rel=1e-9), (order, k)
        checked += 1
    assert checked > 100
