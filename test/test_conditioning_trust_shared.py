"""The shared conditioning layer (signal/conditioning) and honest-sigma / verdict pieces (trust/covariance,
trust/verdict) on signals written here, against closed-form truths."""
import numpy as np
import pytest

from contact_dynamics_common.signal.conditioning import (CausalKernel, choose_bandwidth, filtered_derivatives,
                                                         hole_segments, kernel_filter, kernel_half, noise_std,
                                                         parallel_filter, stamp_jitter)
from contact_dynamics_common.trust import covariance as hc
from contact_dynamics_common.trust.checks import Check
from contact_dynamics_common.trust.verdict import identified, judge


def _tones(t, amps, freqs, phases):
    w = 2 * np.pi * np.asarray(freqs)
    x = sum(a * np.sin(wi * t + p) for a, wi, p in zip(amps, w, phases))
    xd = sum(a * wi * np.cos(wi * t + p) for a, wi, p in zip(amps, w, phases))
    xdd = sum(-a * wi ** 2 * np.sin(wi * t + p) for a, wi, p in zip(amps, w, phases))
    return x, xd, xdd


@pytest.mark.parametrize('jitter', [0.0, 0.3])
def test_parallel_filtering_is_exact_for_a_linear_model_on_real_stamps(jitter):
    rng = np.random.default_rng(3)
    h = 1e-3
    t = np.arange(0, 4, h) + rng.uniform(-jitter, jitter, 4000) * h
    x, xd, xdd = _tones(t, [2e-4, 1e-4, 5e-5, 3e-5], [0.4, 2.9, 7.7, 12.0], [0.1, 1.0, 2.0, 3.0])
    k, b, m = 3e5, 700.0, 4.0
    F = k * x + b * xd + m * xdd
    bw = choose_bandwidth(t, x)
    assert 11.0 <= bw.excitation_hz <= 14.0 and bw.cutoff_hz > 2 * bw.excitation_hz > 0
    assert bw.alternative_hz < bw.cutoff_hz
    xf, xdf, xddf = filtered_derivatives(t, x, bw.width_s)
    Ff = kernel_filter(t, F, bw.width_s)
    ok = np.isfinite(Ff)
    theta = np.linalg.lstsq(np.column_stack([xf, xdf, xddf])[ok], Ff[ok], rcond=None)[0]
    assert np.allclose(theta, [k, b, m], rtol=2e-5 if jitter == 0 else 1e-4)
    # the same through parallel_filter on built columns
    cols, tgt, okp = parallel_filter(t, np.column_stack([x, xd, xdd]), F, bw.width_s)
    theta2 = np.linalg.lstsq(cols[okp], tgt[okp], rcond=None)[0]
    assert np.allclose(theta2, [k, b, m], rtol=1e-6)
    assert (stamp_jitter(t) > 0.1) == (jitter > 0)


def test_no_kernel_spans_a_hole_and_streaming_equals_offline():
    h = 1e-3
    t = np.concatenate([np.arange(0, 1, h), np.arange(1.05, 2, h)])
    x, _, _ = _tones(t, [1e-4], [3.0], [0.0])
    assert hole_segments(t) == [(0, 1000), (1000, 1950)]
    width = 0.004
    xf, xd = filtered_derivatives(t, x, width, orders=(0, 1))
    half = kernel_half(width, h)
    assert np.isnan(xf[1000 - half:1000 + half]).all() and np.isfinite(xf[half:1000 - half]).all()
    ck = CausalKernel(width, h)
    parts = [ck(t[i:i + 77], x[i:i + 77], x[i:i + 77]) for i in range(0, len(t), 77)]
    ts = np.concatenate([p[0] for p in parts])
    xs = np.concatenate([p[3] for p in parts])
    ok = np.isfinite(xd)
    assert np.array_equal(ts, t[ok]) and np.allclose(xs, xd[ok], rtol=1e-10, atol=1e-14)


def test_noise_std_of_a_smooth_signal():
    rng = np.random.default_rng(1)
    t = np.arange(0, 5, 1e-3)
    x = _tones(t, [1e-3], [2.0], [0.0])[0] + 2e-6 * rng.standard_normal(len(t))
    assert noise_std(x) == pytest.approx(2e-6, rel=0.05)


def test_eiv_bias_matches_attenuation_and_combine_keeps_own_sigma():
    rng = np.random.default_rng(2)
    n = 20000
    z = rng.standard_normal((n, 2))
    theta = np.array([2.0, -1.0])
    y = z @ theta + 0.1 * rng.standard_normal(n)
    noise = np.array([0.5, 0.0])
    X = z + rng.standard_normal((n, 2)) * noise
    est = np.linalg.lstsq(X, y, rcond=None)[0]
    bias = hc.eiv_bias(X, est, noise ** 2)
    # first-order prediction of the attenuation (truth - est ~ -bias of the estimate)
    assert est[0] - theta[0] == pytest.approx(bias[0], rel=0.25)
    own = np.diag([1e-6, 1e-6])
    r = y - X @ est
    out = hc.combine(own, sandwich=hc.sandwich(X, r), eiv=bias, conditioning=hc.conditioning(est, est + 0.01))
    assert np.all(out.sigma >= np.sqrt(np.diagonal(own))) and abs(est[0] - theta[0]) < 3 * out.sigma[0]
    np.linalg.cholesky(out.covariance)
    assert set(out.as_dict(('a', 'b'))) == {'own', 'sandwich', 'eiv', 'conditioning', 'combined'}


def test_identified_flag_is_off_while_sigma_exceeds_the_value():
    flags, notes = identified(('stiffness', 'damping'), [1e4, 5.0], np.diag([1e2 ** 2, 3200.0 ** 2]), (True, True))
    assert flags == (True, False) and notes and notes[0].startswith('damping not identified')
    v = judge(('stiffness', 'damping'), [1e4, 5.0], np.diag([1e2 ** 2, 3200.0 ** 2]), flags=(True, True))
    assert v.valid and v.identified == (True, False)
    v = judge(('stiffness', 'damping'), [1e4, 5.0], np.diag([4e3 ** 2, 1.0]))
    assert not v.valid and v.reason.startswith('not identified: stiffness')
    v = judge(('stiffness',), [1e4], np.diag([1.0]), checks=[Check(False, 'model mismatch suspected: x')])
    assert not v.valid and v.reason == 'model mismatch suspected: x'
    v = judge(('stiffness',), [1e4], np.diag([1.0]), residual_rms=3.0, signal_rms=4.0)
    assert not v.valid and v.reason.startswith('model error dominates')
