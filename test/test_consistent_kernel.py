"""Consistent-kernel regressors (``derivative_filter: consistent_kernel``, issue 14's "bias at its source").

F, x, xdot and xddot through ONE Gaussian kernel and its exact derivatives make F_f = k x_f + b xdot_f + m xddot_f
hold exactly, so the local fit's attenuation of xdot and xddot at the top of the band (b +0.8 %, m several % on a
stiff wall with mass) no longer biases the estimates. Tested here on a plant written for this file (imposed
motion, closed-form force), independently of the pipeline:

* the shared function: the model holds for the kernel outputs to 1e-6 of the force (3e-5 on 30 %-jittered
  stamps), where the local-fit regressors miss it by ~2e-4 rms; a hole gives NaN, never a window across it; the output does not
  depend on how the stream is cut into blocks (bit for bit);
* the pipeline: chunked and whole steps give the same samples and estimates; the measured samples ride along for
  the checks; on a stiff wall with mass (2 um / 0.2 N noise) the local fit's m is 24 % low (its noisy xddot)
  while every consistent-kernel estimate is valid with m within 4 %, b within 1 % and its truth inside 3 sigma;
* the randomized calibration with ``--param derivative_filter=consistent_kernel`` on the hysteresis family's
  first 23 draws: no confident-wrong estimate (``--check``; the whole single-point calibration at seeds 0, 1 and
  21 is in doc/trust/single_point.md).
"""
from __future__ import annotations

import numpy as np
import pytest

from contact_dynamics_common.params import validate_all
from contact_dynamics_common.signal.conditioning import consistent_regressors
from contact_dynamics_common.signal.filters import local_derivatives
from contact_estimation.single_point.config import PARAMS
from contact_estimation.single_point.pipeline import ContactPipeline

K, B, M = 2.0e5, 500.0, 5.0


def _motion(t: np.ndarray, seed: int = 0):
    """x, xdot, xddot of a 9-tone multisine 0.3-10 Hz on a 0.5 mm preload (m, m/s, m/s^2)."""
    rng = np.random.default_rng(seed)
    f = np.geomspace(0.3, 10.0, 9)
    a = 2e-4 / np.sqrt(len(f)) * np.ones_like(f)
    ph = rng.uniform(0, 2 * np.pi, len(f))
    w = 2 * np.pi * f
    arg = np.outer(t, w) + ph
    x = 5e-4 + np.sin(arg) @ a
    xd = np.cos(arg) @ (a * w)
    xdd = -np.sin(arg) @ (a * w * w)
    return x, xd, xdd


def _stamps(n: int, rate: float, jitter: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (np.arange(n) + jitter * rng.uniform(-0.5, 0.5, n)) / rate


@pytest.mark.parametrize('jitter, tol', [(0.0, 1e-6), (0.3, 3e-5)])
def test_the_model_holds_for_the_kernel_outputs_where_the_local_fit_misses_it(jitter, tol):
    t = _stamps(6000, 1000.0, jitter)
    x, xd, xdd = _motion(t)
    F = K * x + B * xd + M * xdd
    h = 20
    f_k, x_k, xd_k, xdd_k = consistent_regressors(t, F, x, h, 1e-3, second=True)
    assert len(f_k) == len(t) - 2 * h
    miss = f_k - (K * x_k + B * xd_k + M * xdd_k)
    rms = np.sqrt(np.mean(F ** 2))
    assert np.max(np.abs(miss)) < tol * rms, np.max(np.abs(miss)) / rms      # measured: 3.5e-7, 1.05e-5
    # the local fit next to the unfiltered force misses the model by far more (its attenuation of xdot, xddot)
    ld, ldd = local_derivatives(t, x, 5, second=True)
    miss_local = F[5:-5] - (K * x[5:-5] + B * ld + M * ldd)
    assert np.sqrt(np.mean(miss_local ** 2)) > 1e-4 * rms                    # measured: 1.9e-4


def test_a_hole_gives_no_window_across_it_and_blocks_do_not_change_a_bit():
    t = _stamps(3000, 1000.0, 0.2)
    t[1500:] += 0.2                                           # a 200 ms hole
    x, xd, _ = _motion(t, seed=3)
    F = K * x + B * xd
    h = 10
    f_k, x_k, xd_k, _ = consistent_regressors(t, F, x, h, 1e-3)
    centres = np.arange(h, len(t) - h)
    across = (centres + h >= 1500) & (centres - h < 1500)
    assert np.isnan(xd_k[across]).all() and np.isfinite(xd_k[~across]).all()
    # the same centres from two blocks that overlap by 2h (as the pipeline keeps its tail): identical bits
    cut = 1200
    a = consistent_regressors(t[:cut], F[:cut], x[:cut], h, 1e-3)
    b = consistent_regressors(t[cut - 2 * h:], F[cut - 2 * h:], x[cut - 2 * h:], h, 1e-3)
    for whole, first, second in zip((f_k, x_k, xd_k), a[:3], b[:3]):
        np.testing.assert_array_equal(np.concatenate((first, second)), whole)


def _params(mode: str, model: str = 'kelvin_voigt_mass') -> dict:
    return validate_all(PARAMS, dict(joint_name='slider', model=model, algorithms=['rls', 'kalman', 'gls'],
                                     datum_mode='fixed', datum=0.0, derivative_filter=mode))


def _wall(noise_x: float = 2e-6, noise_f: float = 0.2, seconds: float = 20.0, seed: int = 4):
    """Stamps (ns), measured force rows and positions of the stiff wall with mass at 1 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 1000)) / 1000.0 + 1.0
    x, xd, xdd = _motion(t, seed=seed)
    F = K * x + B * xd + M * xdd + noise_f * rng.standard_normal(len(t))
    force = np.zeros((len(t), 3))
    force[:, 2] = F
    return (t * 1e9).astype(np.int64), force, (x + noise_x * rng.standard_normal(len(t)))[:, None]


def test_pipeline_chunks_give_the_same_samples_and_estimates_and_carry_the_measurement():
    ns, force, q = _wall(seconds=4.0)
    whole, chunked = ContactPipeline(_params('consistent_kernel')), ContactPipeline(_params('consistent_kernel'))
    whole.push_wrench_columns(ns, force)
    whole.push_joint_columns(ns, ['slider'], q)
    ref = whole.step()
    for lo in range(0, len(ns), 777):
        chunked.push_wrench_columns(ns[lo:lo + 777], force[lo:lo + 777])
        chunked.push_joint_columns(ns[lo:lo + 777], ['slider'], q[lo:lo + 777])
        out = chunked.step()
    assert whole.counts['samples_used'] == chunked.counts['samples_used'] > 3800
    for a, b in zip(ref, out):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12)
        assert a.valid == b.valid and a.reason == b.reason
    window = whole.recent.window()
    assert window.measured is not None and window.kernel_half == 20 and len(window.measured) == len(window)
    # the measured force is the sample as recorded; the regressor force is the kernel's (smoother)
    assert not np.array_equal(window.measured.force, window.force)


@pytest.mark.parametrize('seed', [4, 5])
def test_stiff_wall_with_mass_no_derivative_bias_and_truth_within_three_sigma(seed):
    """Measured (seeds 4, 5): the local fit's m is 24-25 % low (errors in its noisy xddot, covered by a wide
    sigma), b 0.1-1.1 % high; the consistent kernel's m is 0.9-3.0 % low and b within 0.8 %, all within 1.3
    sigma. (Seed 6 is refused in both modes' borderline band test only with the kernel: 'damping differs between
    frequency bands', doc/trust/single_point.md.)"""
    ns, force, q = _wall(seed=seed)
    est = {}
    for mode in ('local_fit', 'consistent_kernel'):
        p = ContactPipeline(_params(mode))
        p.push_wrench_columns(ns, force)
        p.push_joint_columns(ns, ['slider'], q)
        est[mode] = {e.algorithm: e for e in p.step()}
    assert all(e.mass / M - 1 < -0.15 for e in est['local_fit'].values())
    valid = [e for e in est['consistent_kernel'].values() if e.valid]
    assert len(valid) == 3, [(e.algorithm, e.reason) for e in est['consistent_kernel'].values()]
    for e in valid:
        sig = np.sqrt(np.diagonal(e.covariance))
        z = (e.values - np.array([K, B, M])) / sig
        assert abs(e.damping / B - 1) < 0.01 and abs(e.mass / M - 1) < 0.04, (e.algorithm, e.values)
        assert np.all(np.abs(z) < 3.0), (e.algorithm, e.values, sig)


def test_calibration_with_the_consistent_kernel_has_no_confident_wrong_estimate(capsys):
    """Run 22 of kv_hysteresis (seed 0: 308 Hz, top tone 17 Hz, a Jenkins loop) is the draw where the kernel fit's
    own sigma is not enough: b +22 %, at 3.4-4.5 sigma when the reference gaps were pre-tested even under a
    significant omitted term; the rule keeps every reference in full there."""
    from contact_dynamics_common.cli.main import main
    code = main(['calibrate', '--runs', '23', '--seed', '0', '--check', '--param',
                 'derivative_filter=consistent_kernel', '--family', 'single_point/kv_hysteresis'])
    out = capsys.readouterr().out
    assert 'node parameters set: derivative_filter=consistent_kernel' in out
    assert code == 0 and 'confident-wrong goal: met in every cell' in out, out
