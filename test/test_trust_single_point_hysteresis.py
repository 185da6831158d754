"""Issue 14, single point: a hysteretic spring's loss must not be published as a confident damping.

Own plant (written here): a position-driven tool on a spring with viscous damping and a Jenkins element beside it
(a spring k_h in series with a slider that slips at k_h r), F = k x + b xdot + k_h (x - y), y the backlash of x
with half-width r. On a narrow excitation band the loop's energy loss looks viscous: least squares puts it into
b (here ~ +45 %), and neither the band test nor the sign-of-rate friction regressor resolve it on a 2000-sample
window. Before the play-operator regressors of ``assess._omitted_directional`` the node published b valid and
identified with the truth 3.6-4.4 sigma away (calibration seed 0, kv_hysteresis runs 21 and 37).
"""
import math

import numpy as np
import pytest

from contact_dynamics_common.params import validate_all
from contact_estimation.single_point import assess
from contact_estimation.single_point.config import PARAMS
from contact_estimation.single_point.models import get_model
from contact_estimation.single_point.pipeline import ContactPipeline, Stream

K, B = 3500.0, 28.0


def backlash(x, half_width):
    out = np.empty_like(x)
    y = x[0]
    for i in range(len(x)):
        y = min(max(y, x[i] - half_width), x[i] + half_width)
        out[i] = y
    return out


def hysteretic_record(seed, rate=900.0, duration=8.5, tones=(1.3, 1.85, 2.6), r_share=0.15, noise_f=0.02):
    """(t, F, x) of the spring pressed to a 10 N preload and driven by three tones; r = r_share x std(x)."""
    rng = np.random.default_rng(seed)
    t = 0.2 + np.arange(int(duration * rate)) / rate
    x0 = 10.0 / K
    w = 2 * np.pi * np.asarray(tones)
    ph = rng.uniform(0, 2 * np.pi, len(w))
    amp = 0.2 * x0
    x = x0 + amp * np.sin(np.outer(t, w) + ph).sum(axis=1)
    xd = amp * (w * np.cos(np.outer(t, w) + ph)).sum(axis=1)
    r = r_share * float(np.std(x))
    force = K * x + B * xd + 0.5 * K * (x - backlash(x, r))
    force = force + noise_f * float(np.std(force)) * rng.standard_normal(len(t))
    x_meas = x + 1e-3 * float(np.std(x)) * rng.standard_normal(len(t))
    ramp = np.clip((t - 0.2) / 0.3, 0, 1)
    return t, force * ramp, x_meas * ramp


def node_estimates(t, force, x):
    params = validate_all(PARAMS, dict(joint_name='joint1', model='kelvin_voigt', datum_mode='fixed', datum=0.0,
                                       algorithms=['rls', 'ils', 'kalman', 'gls']))
    pipe = ContactPipeline(params)
    ns = (t * 1e9).astype(np.int64)
    f3 = np.zeros((len(t), 3))
    f3[:, 2] = force
    pipe.push_wrench_columns(ns, f3)
    pipe.push_joint_columns(ns, ['joint1'], x[:, None])
    return pipe.step(), pipe


@pytest.mark.parametrize('seed', [3, 4])
def test_hysteretic_loss_is_covered_or_flagged(seed, monkeypatch):
    t, force, x = hysteretic_record(seed)
    # the failure reproduced: without the hysteresis regressors some estimator publishes b valid, identified
    # and more than 3 sigma off (the loop's loss in b)
    monkeypatch.setattr(assess, 'PLAY_WIDTHS', ())
    assess._WINDOW_MEMO.clear()
    before, _ = node_estimates(t, force, x)
    wrong = [e.algorithm for e in before if e.valid and e.identifiable[1]
             and abs(e.values[1] - B) > 3 * math.sqrt(e.covariance[1, 1])]
    assert wrong, [(e.algorithm, e.valid, e.values, np.sqrt(np.diagonal(e.covariance))) for e in before]
    monkeypatch.undo()
    assess._WINDOW_MEMO.clear()
    after, pipe = node_estimates(t, force, x)
    for e in after:
        sig = np.sqrt(np.diagonal(e.covariance))
        assert abs(e.values[0] - K) <= 3 * sig[0] or not e.valid, (e.algorithm, e.values, sig, e.reason)
        if e.valid and e.identifiable[1]:
            assert abs(e.values[1] - B) <= 3 * sig[1], (e.algorithm, e.values, sig, e.reason)
        assert abs(e.values[1] - B) > 0.2 * B       # the estimate itself still holds the loss: sigma covers it


def test_play_regressors_find_the_loop_and_recover_the_viscous_damping():
    """The omitted direction-dependent force test (its play-operator columns) is significant on the window and
    the augmented fit's damping is the viscous one within 10 % (least squares alone: ~ +45 %)."""
    t, force, x = hysteretic_record(5)
    _, pipe = node_estimates(t, force, x)
    window = pipe.recent.window()
    model = get_model('kelvin_voigt')
    X = model.regressor(window.x, window.xd, None)
    ls = np.linalg.lstsq(X, window.force, rcond=None)[0]
    check = assess._omitted_directional(window, X, window.force, assess.ALPHA)
    assert not check.ok and check.p_value < 1e-6, check
    aug = np.asarray(check.details['augmented'])
    assert abs(ls[1] - B) > 0.3 * B, ls
    assert abs(aug[1] - B) < 0.1 * B, (aug, ls)
    assert abs(aug[0] - K) < 0.01 * K, (aug, ls)


def test_model_consistent_spring_is_not_flagged_by_the_play_regressors():
    """No loop (k_h = 0 through r_share -> the Jenkins element absent): the test stays quiet and the node's
    estimates are valid, covering k and b."""
    rng = np.random.default_rng(11)
    t = 0.2 + np.arange(7000) / 900.0
    x0 = 10.0 / K
    w = 2 * np.pi * np.array([0.7, 1.6, 3.5, 7.0])
    ph = rng.uniform(0, 2 * np.pi, len(w))
    x = x0 + 0.12 * x0 * np.sin(np.outer(t, w) + ph).sum(axis=1)
    xd = 0.12 * x0 * (w * np.cos(np.outer(t, w) + ph)).sum(axis=1)
    force = K * x + B * xd
    force = force + 0.005 * float(np.std(force)) * rng.standard_normal(len(t))
    x = x + 1e-3 * float(np.std(x)) * rng.standard_normal(len(t))
    ramp = np.clip((t - 0.2) / 0.3, 0, 1)
    estimates, pipe = node_estimates(t, force * ramp, x * ramp)
    window = pipe.recent.window()
    X = get_model('kelvin_voigt').regressor(window.x, window.xd, None)
    check = assess._omitted_directional(window, X, window.force, assess.ALPHA)
    assert check.ok, check
    for e in estimates:
        sig = np.sqrt(np.diagonal(e.covariance))
        assert e.valid, (e.algorithm, e.reason)
        assert np.all(np.abs(e.values - [K, B]) <= 3 * sig), (e.algorithm, e.values, sig)
