"""Excitation design and the identifiability checks; bad input gives a clear error, never a crash or a NaN
guess."""
from __future__ import annotations

import numpy as np
import pytest

from contact_dynamics_common.params import validate_all
from contact_dynamics_common.signal import CausalLowpass, cutoff_for_band, excitation_band
from contact_estimation.impedance.conditioning import condition
from contact_estimation.impedance.config import PARAMS
from contact_estimation.impedance.excitation import (ExcitationRefused, Limits, check_design,
                                                     design_multisine,
                                                     multisine)
from contact_estimation.impedance.pipeline import ImpedancePipeline
from contact_estimation.impedance.recursive import RecursiveSegmentedLS
from contact_estimation.impedance.segmented import fit_segmented, segment_index, uniform_edges

EDGES = uniform_edges(0.0, 0.024, 8)


def _slider_samples(rng, n: int):
    """n random slider states: position x [m] in [0, 24 mm), velocity v [m/s] with |v| in [0.01, 0.2) and
    either sign, acceleration a [m/s^2] ~ N(0, 3^2) (drawn in this order from ``rng``)."""
    xs = rng.uniform(0, 0.024, n)
    vs = rng.choice([-1, 1], n) * rng.uniform(0.01, 0.2, n)
    acc = rng.normal(0, 3, n)
    return xs, vs, acc


def test_multisine_derivatives_are_exact_with_fade_in():
    t = np.arange(0, 4.0, 1e-4)
    x, v, a = multisine(t, 0.01, [0.002, 0.001], [1.5, 6.3], phases='schroeder', fade_in=2.0)
    np.testing.assert_allclose(np.gradient(x, t)[5:-5], v[5:-5], atol=2e-6)
    np.testing.assert_allclose(np.gradient(v, t)[5:-5], a[5:-5], atol=2e-3)
    assert x[0] == pytest.approx(0.01) and v[0] == pytest.approx(0.0)


def test_design_fits_stroke_and_limits_and_is_accepted():
    lim = Limits(stroke=(0.0, 0.070), velocity=3.4, acceleration=272.0, force=60.0)
    d = design_multisine([1.5, 6.3, 13.7], [0.010, 0.0015, 0.0006], limits=lim, span=(0.0, 0.024),
                         model={'mass': 0.581, 'damping': 11.5, 'stiffness': 2000.0})
    t = np.arange(0, 60.0, 1 / 4000)
    x, v, a = d.motion(t)
    assert x.min() >= 0.0 and x.max() <= 0.024 and np.abs(v).max() <= 3.4 and np.abs(a).max() <= 272
    assert abs(0.581 * a + 11.5 * v + 2000 * x).max() <= 60.0
    chk = check_design(x, v, a, EDGES, limits=lim)
    assert chk.verdict == 'ok', chk.message
    assert chk.n.min() >= 200 and chk.kappa.max() < 1e3
    chk.raise_if_refused()
    # a tight force limit scales the amplitudes down and says so
    d2 = design_multisine([1.5, 6.3, 13.7], limits=Limits(force=10.0), span=(0.0, 0.024),
                          model={'mass': 0.581, 'damping': 11.5, 'stiffness': 2000.0})
    assert d2.peak['F'] <= 10.0 and any('force' in w for w in d2.warnings)


def test_single_tone_is_refused_and_a_trajectory_outside_the_stroke_too():
    t = np.arange(0, 20.0, 1 / 4000)
    x, v, a = multisine(t, 0.012, [0.012], [1.5])
    chk = check_design(x, v, a, EDGES)
    assert chk.refused and 'cannot be separated' in chk.message
    with pytest.raises(ExcitationRefused):
        chk.raise_if_refused()
    d = design_multisine([1.5], span=(0.0, 0.024))
    assert any('single tone' in w for w in d.warnings)
    x2, v2, a2 = multisine(t, 0.012, [0.010, 0.0015, 0.0006], [1.5, 6.3, 13.7])
    chk2 = check_design(x2 + 0.06, v2, a2, uniform_edges(0.06, 0.084, 8), limits=Limits())
    assert chk2.refused and 'outside the stroke' in chk2.message


def test_band_tied_cutoff_and_streaming_filter_matches_whole_record():
    fs = 4000.0
    t = np.arange(0, 20.0, 1 / fs)
    x, _, _ = multisine(t, 0.0, [0.010, 0.0015, 0.0006], [1.5, 6.3, 13.7])
    band = excitation_band(x, fs)
    assert 13.0 <= band <= 15.0
    assert cutoff_for_band(band, fs) == pytest.approx(4 * band)
    y = np.column_stack([x, np.cos(t)])
    whole = CausalLowpass(fs, 50.0, 2, channels=2)(y)
    f = CausalLowpass(fs, 50.0, 2, channels=2)
    parts = np.vstack([f(y[:1000]), f(y[1000:1001]), f(y[1001:])])
    np.testing.assert_allclose(parts, whole, rtol=0, atol=1e-15)


def test_bad_input_gives_clear_errors():
    t = np.arange(1000) / 1000.0
    x = np.sin(t)
    with pytest.raises(ValueError, match='NaN or inf'):
        condition(t, np.where(t > 0.5, np.nan, x), x)
    with pytest.raises(ValueError, match='strictly increasing'):
        condition(t[::-1], x, x)
    with pytest.raises(ValueError, match='equal lengths'):
        fit_segmented(x, x, x, x[:-1], EDGES)
    with pytest.raises(ValueError, match='strictly increasing'):
        fit_segmented(x, x, x, x, [0.0, 0.0])
    empty = fit_segmented([], [], [], [], EDGES)
    assert not empty.valid.any() and np.isnan(empty.theta).all() and '0 samples' in empty.reason[0][0]
    # NaN samples are skipped, not propagated
    rng = np.random.default_rng(0)
    n = 20000
    xs, vs, acc = _slider_samples(rng, n)
    F = 0.5 * acc + 10 * vs + 1000 * xs + 0.2 * np.sign(vs)
    F[::97] = np.nan
    p = fit_segmented(xs, vs, acc, F, EDGES)
    assert p.valid.all()
    np.testing.assert_allclose(p.value('stiffness'), 1000.0, rtol=1e-6)
    assert segment_index(np.array([0.024, 0.0, -1e-9, 0.03]), EDGES).tolist() == [7, 0, -1, -1]


def test_recursive_equals_batch_without_forgetting_and_ignores_bad_samples():
    rng = np.random.default_rng(1)
    n = 40000
    xs, vs, acc = _slider_samples(rng, n)
    F = 0.58 * acc + 11.5 * vs + 400 * xs + 0.3 * np.sign(vs) + rng.normal(0, 0.02, n)
    batch = fit_segmented(xs, vs, acc, F, EDGES)
    r = RecursiveSegmentedLS(EDGES, forgetting=1.0, initial_covariance=1e12)
    F_bad = F.copy()
    F_bad[5] = np.inf
    r.update(xs[:5], vs[:5], acc[:5], F[:5])
    r.update(xs[5:6], vs[5:6], acc[5:6], F_bad[5:6])
    r.update(xs[6:], vs[6:], acc[6:], F[6:])
    rec = r.profile()
    batch6 = fit_segmented(np.delete(xs, 5), np.delete(vs, 5), np.delete(acc, 5), np.delete(F, 5), EDGES)
    np.testing.assert_allclose(rec.theta, batch6.theta, rtol=1e-6)
    # sigma: the recursive fit publishes the residual covariance sigma^2 A^-1, the batch fit the larger of it
    # and the HAC sandwich (trust.covariance.combine); on white-noise data they agree within the sandwich's
    # sampling error, and the batch sigma is never the smaller one
    s_rec = np.sqrt(np.diagonal(rec.cov, axis1=2, axis2=3))
    s_bat = np.sqrt(np.diagonal(batch6.cov, axis1=2, axis2=3))
    assert np.all(s_bat >= s_rec * (1 - 1e-6)) and np.all(s_bat <= 1.2 * s_rec), s_bat / s_rec
    assert np.allclose(batch.value('mass'), 0.58, rtol=0.02)
    with pytest.raises(ValueError):
        RecursiveSegmentedLS(EDGES, forgetting=1.5)


def test_pipeline_counts_bad_stamps_and_resets_on_a_time_jump():
    p = validate_all(PARAMS, {'joint_name': 'slider', 'force_source': 'effort', 'min_samples': 50})
    pl = ImpedancePipeline(p)
    fs = 4000
    t = np.arange(0, 6.0, 1 / fs)
    x, v, a = multisine(t, 0.012, [0.010, 0.0015, 0.0006], [1.5, 6.3, 13.7])
    F = 0.581 * a + 11.5 * v + 1000 * x
    st = 10**18 + np.round(t * 1e9).astype(np.int64)
    pl.push_joint_state(int(st[0]), ['elbow'], [0.0], [0.0])
    assert "joint 'slider' is not in the JointState names ['elbow']" in pl.last_error
    pl.push_joint_state(0, ['slider'], [0.0], [0.0])                 # zero stamp
    pl.push_joint_state(int(st[0]), ['slider'], [0.0], [])           # no effort: malformed
    pl.push_joint_state(int(st[0]) - 1, ['slider'], [float('nan')], [1.0])   # non-finite position
    pl.push_joint_columns(st, ['slider'], x[:, None], F[:, None])
    pl.step()
    s = pl.status()
    assert s['joint.zero_stamp'] == 1 and s['joint_state_malformed'] == 1 and s['joint_missing'] == 1
    assert s['joint.nonfinite'] == 1
    prof = pl.profile()
    assert np.allclose(prof.value('stiffness')[prof.valid], 1000.0, rtol=0.05)
    assert np.isfinite(prof.theta[prof.valid]).all()
    pl.push_joint_columns(st[:100] - 5 * 10**9, ['slider'], x[:100, None], F[:100, None])   # looped bag
    pl.step()
    assert pl.status()['time_jumps'] == 1 and pl.profile().n.sum() < 100     # restarted from scratch


def test_excitation_cli_designs_checks_and_refuses(tmp_path, capsys):
    from contact_dynamics_common.cli import main as cli
    out = tmp_path / 'traj.csv'
    assert cli(['impedance-excitation', '--duration', '30', '--guess', '0.581', '11.5', '2000',
                '--out', str(out)]) == 0
    text = capsys.readouterr().out
    assert 'excitation ok' in text and out.is_file()
    data = np.loadtxt(out, delimiter=',', skiprows=1)
    assert data.shape == (120000, 4) and data[:, 1].min() >= 0.0 and data[:, 1].max() <= 0.024
    assert cli(['impedance-excitation', '--frequencies', '1.5', '--duration', '30']) == 3
    text = capsys.readouterr().out
    assert 'single tone' in text and 'excitation refuse' in text


def test_recursive_forgetting_tracks_a_stiffness_change():
    """lambda = 1 - 1/(f_s T_mem): 5 s of memory at 1 kHz; k steps from 1000 to 1500 N/m at t = 20 s."""
    rng = np.random.default_rng(2)
    fs, n = 1000.0, 40000
    t = np.arange(n) / fs
    xs, vs, acc = _slider_samples(rng, n)
    k = np.where(t < 20.0, 1000.0, 1500.0)
    F = 0.58 * acc + 11.5 * vs + k * xs + rng.normal(0, 0.05, n)
    r = RecursiveSegmentedLS(EDGES, forgetting=1 - 1 / (fs / 16 * 5.0), n_min=50)   # ~fs/16 samples per bin
    r.update(xs[:20000], vs[:20000], acc[:20000], F[:20000])
    np.testing.assert_allclose(r.profile().value('stiffness'), 1000.0, rtol=0.02)
    r.update(xs[20000:], vs[20000:], acc[20000:], F[20000:])
    p = r.profile()
    np.testing.assert_allclose(p.value('stiffness'), 1500.0, rtol=0.02)
    for d in (0, 1):
        for j in range(8):
            np.linalg.cholesky(p.cov[d, j])


def test_wrench_source_memory_stays_bounded_when_one_stream_stops():
    p = validate_all(PARAMS, {'joint_name': 'slider', 'buffer_capacity': 1000})
    pl = ImpedancePipeline(p)
    st = 10**18 + np.arange(5000, dtype=np.int64) * 250_000
    for i in range(0, 2500, 500):                                     # force, no position yet
        pl.push_wrench_columns(st[i:i + 500], np.ones((500, 3)))
        pl.step()
    assert pl.status()['unpaired'] >= 1500 and len(pl._r_t) <= 1000
    for i in range(2500, 5000, 500):                                  # position only
        pl.push_joint_columns(st[i:i + 500], ['slider'], np.zeros((500, 1)))
        pl.step()
    assert len(pl.pos.t) <= 1000 and pl.profile().n.sum() == 0


def test_nonnegative_bounds_hold_and_leave_a_good_fit_unchanged():
    from contact_estimation.impedance.segmented import FitOptions
    rng = np.random.default_rng(3)
    n = 20000
    xs, vs, acc = _slider_samples(rng, n)
    F = 0.0 * acc + 11.5 * vs + 800 * xs + rng.normal(0, 0.5, n)      # massless: m-hat scatters around 0
    free = fit_segmented(xs, vs, acc, F, EDGES)
    bounded = fit_segmented(xs, vs, acc, F, EDGES, FitOptions(nonnegative=True))
    shared = fit_segmented(xs, vs, acc, F, EDGES, FitOptions(nonnegative=True, shared_mass=True))
    assert (free.value('mass') < 0).any()
    assert (bounded.value('mass') >= 0).all() and (shared.value('mass') >= 0).all()
    np.testing.assert_allclose(bounded.value('stiffness'), 800.0, rtol=0.06)       # ~3 sigma
    with pytest.raises(ValueError, match='continuity'):
        fit_segmented(xs, vs, acc, F, EDGES, FitOptions(nonnegative=True, continuity=True))


def test_profile_save_and_load_roundtrip_for_playback(tmp_path):
    from contact_estimation.impedance.store import load_profile, save_profile
    rng = np.random.default_rng(4)
    n = 20000
    xs, vs, acc = _slider_samples(rng, n)
    F = 0.58 * acc + 11.5 * vs + 800 * xs + 0.3 * np.sign(vs) + rng.normal(0, 0.05, n)
    p = fit_segmented(xs, vs, acc, F, uniform_edges(0.0, 0.03, 10))      # the last 2 segments are empty
    q = load_profile(save_profile(p, tmp_path / 'p.yaml', {'joint_name': 'slider'}))
    np.testing.assert_array_equal(q.theta, p.theta)             # NaN where empty, bit-exact elsewhere
    np.testing.assert_array_equal(q.cov, p.cov)
    assert (q.valid == p.valid).all() and q.reason == p.reason
    sl = slice(0, 100)
    np.testing.assert_array_equal(q.force(xs[sl], vs[sl], acc[sl]), p.force(xs[sl], vs[sl], acc[sl]))
    (tmp_path / 'bad.yaml').write_text('a: 1\n')
    with pytest.raises(ValueError, match='not an impedance profile'):
        load_profile(tmp_path / 'bad.yaml')


def test_tikhonov_lambda_by_gcv_smooths_a_constant_profile_but_not_a_kink():
    from contact_estimation.impedance.segmented import FitOptions
    rng = np.random.default_rng(5)
    n = 16000
    xs, vs, acc = _slider_samples(rng, n)
    noise = rng.normal(0, 2.0, n)
    flat = fit_segmented(xs, vs, acc, 0.58 * acc + 11.5 * vs + 800 * xs + noise, EDGES,
                         FitOptions(tikhonov_select='gcv'))
    k = np.where(xs < 0.012, 400.0, 2000.0)
    kink = fit_segmented(xs, vs, acc, 0.58 * acc + 11.5 * vs + k * xs - (k - 400) * 0.012 + noise, EDGES,
                         FitOptions(tikhonov_select='gcv'))
    assert flat.options['tikhonov'] > 100 * max(kink.options['tikhonov'], 1e-6)
    plain = fit_segmented(xs, vs, acc, 0.58 * acc + 11.5 * vs + 800 * xs + noise, EDGES)
    assert np.ptp(flat.value('damping')) < 0.5 * np.ptp(plain.value('damping'))
    # across the 400 -> 2000 N/m step GCV hardly smooths: k within half a standard error of the plain fit
    F_kink = 0.58 * acc + 11.5 * vs + k * xs - (k - 400) * 0.012 + noise
    plain_kink = fit_segmented(xs, vs, acc, F_kink, EDGES)
    assert np.all(np.abs(kink.value('stiffness') - plain_kink.value('stiffness'))
                  <= 0.5 * plain_kink.std('stiffness'))
    with pytest.raises(ValueError, match='tikhonov_select'):
        fit_segmented(xs, vs, acc, noise, EDGES, FitOptions(tikhonov_select='lcurve'))
