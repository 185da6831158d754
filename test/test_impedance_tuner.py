"""impedance_tuner (issue 18 item 1): the gain rule, the admittance_controller parameter check, the safety
scheduler, run-bag's gain schedule, and the node over DDS against a stand-in admittance_controller
(test/admittance_standin.py: the real controller's parameter names, types, sizes and bounds).

The closed-loop figures are checked independently of the rule: the eigenvalues of the coupled axis
M xdd + (D + b_e) xd + (K + k_e) x = 0 with the controller's own D = 2 zeta sqrt(M K).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from contact_dynamics_common.cli import run_bag
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag
from contact_estimation.tuner.admittance_params import GAINS, check_array, request_arrays
from contact_estimation.tuner.rule import GainBounds, RuleConfig, admittance_gains
from contact_estimation.tuner.scheduler import EstimateSample, GainScheduler, SafetyConfig

from ros_harness import ROOT

ESTIMATOR_CONFIG = str(ROOT / 'config' / 'contact_estimator.yaml')
WIDE = GainBounds((1e-3, 1e5), (0.0, 1e3), (1e-3, 1e7))
TUNER = {'estimate_topic': '/contact_estimator/estimate', 'controller_name': '/admittance_controller',
         'axis': 'z', 'bandwidth_hz': 2.0, 'target_damping_ratio': 1.0, 'admittance_stiffness': 200.0,
         'slew_rate': 0.5, 'hysteresis': 0.05, 'loss_timeout': 1.0, 'invalid_timeout': 0.0,
         'publish_rate': 20.0, 'safe_mass': 12.0, 'safe_damping_ratio': 2.5, 'safe_stiffness': 300.0}


def coupled_axis(M: float, zeta_a: float, K: float, k: float, b: float) -> tuple[float, float]:
    """(omega_n, zeta) of the coupled axis from its eigenvalues (independent of the rule's algebra)."""
    D = 2.0 * zeta_a * math.sqrt(M * K)
    lam = np.linalg.eigvals(np.array([[0.0, 1.0], [-(K + k) / M, -(D + b) / M]]))
    wn = math.sqrt(abs(np.prod(lam)))
    return wn, -float(np.sum(lam).real) / (2.0 * wn)


def rule_gains(k: float, b: float, p: dict = TUNER) -> tuple[float, float, float]:
    cfg = RuleConfig(p['bandwidth_hz'], p['target_damping_ratio'], p['admittance_stiffness'], 0.0,
                     GainBounds((0.5, 200.0), (0.3, 20.0), (1.0, 10000.0)))
    return admittance_gains(k, b, cfg)


@pytest.mark.parametrize('k,b,f,zeta', [(4800.0, 200.0, 2.0, 1.0), (50.0, 0.0, 0.5, 0.7),
                                        (2e5, 50.0, 10.0, 0.9), (1000.0, 5.0, 1.0, 2.0)])
def test_rule_gives_the_target_bandwidth_and_damping_against_the_environment(k, b, f, zeta):
    M, za, K = admittance_gains(k, b, RuleConfig(f, zeta, 300.0, 0.0, WIDE))
    wn, zc = coupled_axis(M, za, K, k, b)
    assert wn == pytest.approx(2 * math.pi * f, rel=1e-9)
    assert zc == pytest.approx(zeta, rel=1e-9)


def test_rule_respects_bounds_and_the_robot_mass():
    bounds = GainBounds((2.0, 50.0), (0.5, 3.0), (10.0, 1000.0))
    for k in np.geomspace(1.0, 1e7, 40):
        for b in (0.0, 10.0, 1e4):
            M, za, K = admittance_gains(k, b, RuleConfig(1.0, 1.0, 5000.0, 8.0, bounds))
            assert 8.0 <= M <= 50.0 and 0.5 <= za <= 3.0 and K == 1000.0
    # environment damping larger than needed: the controller's damping goes to its lower bound, not negative
    M, za, K = admittance_gains(100.0, 1e5, RuleConfig(1.0, 1.0, 100.0, 0.0, bounds))
    assert za == 0.5


def test_request_check_refuses_what_the_controller_would():
    current = {'admittance.mass': [8.0] * 6, 'admittance.damping_ratio': [1.5] * 6,
               'admittance.stiffness': [200.0] * 6, 'admittance.selected_axes': [True] * 6}
    arrays, reason = request_arrays(current, 2, (20.0, 3.0, 200.0))
    assert reason == '' and arrays['admittance.mass'] == [8.0, 8.0, 20.0, 8.0, 8.0, 8.0]
    bad = [({**current, 'admittance.mass': [8.0] * 5}, '6 elements'),
           ({**current, 'admittance.stiffness': 200.0}, 'double_array'),
           ({**current, 'admittance.damping_ratio': [1, 2, 'x', 4, 5, 6]}, 'double_array'),
           ({**current, 'admittance.selected_axes': [True, True, False, True, True, True]}, 'selected_axes'),
           ({k: v for k, v in current.items() if k != 'admittance.mass'}, "no parameter 'admittance.mass'")]
    for cur, words in bad:
        arrays, reason = request_arrays(cur, 2, (20.0, 3.0, 200.0))
        assert arrays is None and words in reason, reason
    for gains, words in (((0.0, 1.0, 200.0), 'below'), ((20.0, 1.0, 2e8), 'above'),
                         ((math.nan, 1, 1), 'finite')):
        arrays, reason = request_arrays(current, 2, gains)
        assert arrays is None and words in reason, reason
    assert check_array('admittance.selected_axes', [1, 1, 1, 1, 1, 1]) is not None


def _scheduler(**kw) -> GainScheduler:
    safety = dict(safe_gains=(12.0, 2.5, 300.0), slew_rate=0.5, hysteresis=0.05, loss_timeout=1.0,
                  invalid_timeout=0.0)
    safety.update(kw)
    cfg = RuleConfig(2.0, 1.0, 200.0, 0.0, GainBounds((0.5, 200.0), (0.3, 20.0), (1.0, 10000.0)))
    s = GainScheduler(cfg, SafetyConfig(**safety))
    s.applied = (8.0, 1.5, 200.0)
    return s


def test_scheduler_slew_hysteresis_hold_and_revert():
    s = _scheduler()
    rng = np.random.default_rng(3)
    dt, t, applied = 0.05, 0.0, [s.applied]
    target = rule_gains(4800.0, 200.0)
    for i in range(400):                                      # 20 s: converge, then +-2 % noise around k
        t = i * dt
        k = 4800.0 * (1 + 0.02 * rng.uniform(-1, 1))
        s.observe(EstimateSample(t, k, 200.0, True, True))
        p = s.step(t)
        if p is not None:
            prev = s.applied
            for a, b in zip(p.gains, prev):
                assert abs(a - b) <= 0.5 * dt * abs(b) * (1 + 1e-9)      # slew
            s.commit(p)
            applied.append((t, p.gains))
    assert s.applied == pytest.approx(target, rel=0.05)
    late = [a for a in applied[1:] if a[0] > 8.0]
    assert not late, f'{len(late)} changes while the estimate only jittered within the hysteresis'
    held = s.applied
    for i in range(10):                                       # untrusted estimates: hold
        t += dt
        reason = s.observe(EstimateSample(t, 100.0, 1.0, False, True, 'not excited'))
        assert reason == 'estimate not valid: not excited'
        assert s.step(t) is None and s.state == 'hold' and s.applied == held
    p = s.step(t + 1.01)                                      # lost: revert to the safe gains at once
    assert p.kind == 'revert' and p.gains == (12.0, 2.5, 300.0)
    s.commit(p)
    assert s.step(t + 1.2) is None and s.state == 'reverted'
    assert s.counts['refused.not_valid'] == 10 and s.counts['reverts'] == 1


def test_scheduler_refuses_untrusted_numbers():
    s = _scheduler()
    assert 'finite' in s.observe(EstimateSample(0.0, math.nan, 1.0, True, True))
    assert 'negative' in s.observe(EstimateSample(0.1, -5.0, 1.0, True, True))
    assert s.step(0.1) is None and s.applied == (8.0, 1.5, 200.0)


def test_run_bag_writes_the_gain_schedule(tmp_path):
    sim = KelvinVoigt1Dof(duration=8.0, rate=500.0, seed=11)
    bag = write_bag(sim, tmp_path / 'bag')
    run_bag(str(bag), ESTIMATOR_CONFIG, out=str(tmp_path / 'estimates'), progress=False)
    cfg = tmp_path / 'tuner.yaml'
    cfg.write_text(yaml.safe_dump({'impedance_tuner': {'ros__parameters': dict(TUNER, publish_rate=10.0)}}))
    result, _, _ = run_bag(str(tmp_path / 'estimates'), str(cfg), out=str(tmp_path / 'gains'), progress=False)
    events = result.outputs['/impedance_tuner/gains']
    estimates = run_bag(str(bag), ESTIMATOR_CONFIG, progress=False)[0].outputs['/contact_estimator/estimate']
    assert len(events) >= 5
    prev_t, prev = None, (10.0, 2.0, 200.0)                   # offline_* defaults, axis z
    for log_ns, ev in events:
        assert ev['node'] == '/admittance_controller'
        arrays = {p['name']: p['value']['double_array_value'] for p in ev['changed_parameters']}
        assert all(len(a) == 6 for a in arrays.values())
        g = tuple(arrays[n][2] for n in GAINS)
        assert 0.5 <= g[0] <= 200 and 0.3 <= g[1] <= 20 and 1 <= g[2] <= 1e4
        if prev_t is not None:
            dt = (log_ns - prev_t) * 1e-9
            assert all(abs(a - b) <= 0.5 * dt * abs(b) * (1 + 1e-5) for a, b in zip(g, prev)), (g, prev, dt)
        assert arrays['admittance.mass'][:2] == [10.0, 10.0]  # only the contact axis changes
        prev_t, prev = log_ns, g
    final = [f for _, f in estimates if f['valid']][-1]
    want = rule_gains(final['stiffness'], final['damping'])
    assert prev == pytest.approx(want, rel=0.06)
    # estimates of another contact frame are not trusted: no change at all
    other_frame = dict(TUNER, estimate_frame='other')
    cfg.write_text(yaml.safe_dump({'impedance_tuner': {'ros__parameters': other_frame}}))
    other, _, _ = run_bag(str(tmp_path / 'estimates'), str(cfg), progress=False)
    assert not other.outputs.get('/impedance_tuner/gains')
    assert other.status['impedance_tuner']['refused.not_valid'] == len(estimates)
    print(f"run-bag: {len(events)} gain changes, final M {prev[0]:.4g} kg zeta {prev[1]:.4g} "
          f"(rule on the last valid estimate: {want[0]:.4g}, {want[1]:.4g}); truth k {sim.stiffness}, "
          f"estimate k {final['stiffness']:.5g}")


def test_untrusted_for_longer_than_invalid_timeout_reverts():
    s = _scheduler(invalid_timeout=2.0)
    s.observe(EstimateSample(0.0, 4800.0, 200.0, True, True))
    for i in range(1, 40):                                    # 2 s of trusted estimates: gains move
        s.observe(EstimateSample(0.05 * i, 4800.0, 200.0, True, True))
        p = s.step(0.05 * i)
        if p:
            s.commit(p)
    moved = s.applied
    assert moved != (8.0, 1.5, 200.0)
    t = 2.0
    while t < 3.9:                                            # untrusted, still arriving: hold for 2 s
        t += 0.05
        s.observe(EstimateSample(t, 9999.0, 1.0, False, True, 'diverged'))
        assert s.step(t) is None and s.applied == moved
    s.observe(EstimateSample(4.1, 9999.0, 1.0, False, True, 'diverged'))
    p = s.step(4.1)
    assert p is not None and p.kind == 'revert' and 'invalid_timeout' in p.reason
