"""Position-varying impedance (wahl_colton.md Part B): scenarios S1-S7 against ground truth.

Truth per segment = the oracle fit of the noise-free signals of the same closed-loop simulation (equal to the
physics in every segment without a kink, checked below). Kink-free segments: all but [18, 21) mm.
Targets (B8): S2 |dm|/m <= 3 %, |db|/b <= 8 %, |dk|/k <= 3 %, |dc| <= max(0.25 N, 2 %), derived F_c within
0.1 N; S5 within twice those after 30 s online; S4 within 2 % of the oracle and continuous to 0.05 N.
"""
from __future__ import annotations

import numpy as np
import pytest

from contact_dynamics_common.params import validate_all
from contact_estimation.impedance import scenarios as sc
from contact_estimation.impedance.conditioning import condition
from contact_estimation.impedance.config import PARAMS
from contact_estimation.impedance.dashpot import dashpot_damping
from contact_estimation.impedance.excitation import ExcitationRefused, check_design
from contact_estimation.impedance.pipeline import ImpedancePipeline
from contact_estimation.impedance.plant import dashpot_drop
from contact_estimation.impedance.segmented import FitOptions, fit_segmented

KINK_FREE = [j for j in range(8) if j != sc.KINK_SEGMENT]
# [9, 12) mm ends at the 12 mm kink: within the filter kernel's reach (~1 mm of travel) the filtered force
# carries the stiffer side (h * F_s(x) != F_s(h * x) for a kinked spring); the within-segment split test
# flags it ("parameters change inside the segment"), so it is not a trusted kink-free segment
NEAR_KINK = 3
TRUSTED = [j for j in KINK_FREE if j != NEAR_KINK]
EPOCH_NS = 1_760_000_000 * 10**9


def _fit(rec, options=None, **cond_kw):
    c = condition(rec.t, rec.x_meas, rec.F_meas, rec.a_meas, t_skip=sc.FADE_IN, **cond_kw)
    return fit_segmented(c.x, c.v, c.a, c.F, rec.edges, options, noise_variance=c.noise_variance,
                         correlation=c.correlation, r=c.r), c


def _errors(p, oracle, segs=TRUSTED):
    out = {}
    for name in ('mass', 'damping', 'stiffness'):
        out[name] = np.abs(p.value(name)[:, segs] / oracle.value(name)[:, segs] - 1.0)
    c_hat, c_true = p.value('intercept')[:, segs], oracle.value('intercept')[:, segs]
    out['intercept'] = np.abs(c_hat - c_true) / np.maximum(0.25, 0.02 * np.abs(c_true))
    return out


def _assert_within(p, oracle, scale=1.0, segs=TRUSTED):
    err = _errors(p, oracle, segs)
    for name, tol in (('mass', 0.03), ('damping', 0.08), ('stiffness', 0.03), ('intercept', 1.0)):
        assert np.all(np.isfinite(err[name])), (name, p.reason)
        assert err[name].max() <= scale * tol, (name, err[name].round(4))


@pytest.fixture(scope='module')
def s2():
    return sc.simulate('S2', seed=1)


@pytest.fixture(scope='module')
def s1():
    return sc.simulate('S1', seed=2)


def test_oracle_equals_physics_outside_the_kink(s2):
    phys = s2.plant.truth(s2.edges)
    o = s2.oracle
    for d, sgn in ((0, 1), (1, -1)):
        np.testing.assert_allclose(o.value('mass')[d, KINK_FREE], phys['mass'], rtol=1e-6)
        np.testing.assert_allclose(o.value('damping')[d, KINK_FREE], 11.5, rtol=1e-6)
        np.testing.assert_allclose(o.value('stiffness')[d, KINK_FREE], np.array(phys['stiffness'])[KINK_FREE],
                                   rtol=1e-6)
    # B8's expected intercepts: +0.3 / -0.3 below 12 mm, -18.9 / -19.5 for 12-18 mm, -38.9 / -39.5 above 21 mm
    np.testing.assert_allclose(o.value('intercept')[:, [0, 3, 4, 5, 7]],
                               [[0.3, 0.3, -18.9, -18.9, -38.9], [-0.3, -0.3, -19.5, -19.5, -39.5]],
                               atol=1e-6)


def test_s1_single_tone_is_refused_at_design_and_flagged_after_the_fit(s1):
    k = s1.analysed
    check = check_design(s1.x_ref[k], s1.v_ref[k], s1.a_ref[k], s1.edges)
    assert check.verdict == 'refuse' and np.nanmax(check.kappa[check.n >= 200]) > 1e12, check.message
    assert 'cannot be separated' in check.message
    with pytest.raises(ExcitationRefused):
        check.raise_if_refused()
    p, _ = _fit(s1)
    has_data = p.n >= 200
    assert has_data.all()
    floor = np.maximum(10 * p.noise_variance[0], 0.01 * p.column_variance[:, :, 0])
    flagged_a = p.unique_variance[:, :, 0] < floor
    assert flagged_a.all(), p.unique_variance[:, :, 0]
    # not answered with numbers: no mass, stiffness or intercept anywhere, every bin invalid with the reason
    assert np.isnan(p.theta).all() and not p.valid.any()
    assert all('not separable' in r for row in p.reason for r in row)


def test_s2_multisine_meets_the_accuracy_targets(s2):
    check = check_design(s2.x_ref[s2.analysed], s2.v_ref[s2.analysed], s2.a_ref[s2.analysed], s2.edges)
    assert check.verdict == 'ok' and check.kappa.max() < 200, check.message
    p, c = _fit(s2)
    assert 40.0 <= c.cutoff_hz <= 70.0          # tied to the 13.7 Hz top tone (4x), from the PSD of x
    assert p.valid[:, TRUSTED].all(), p.reason
    # the segment holding the 20 mm kink (2000 -> 3000 N/m) and the one the kernel smears the 12 mm kink into
    # are flagged with the reason (issue 14: a segment holding a stiffness step is not reported valid)
    for j in (sc.KINK_SEGMENT, NEAR_KINK):
        assert not p.valid[:, j].any()
        assert all('parameters change inside the segment' in p.reason[d][j] for d in (0, 1)), p.reason
    _assert_within(p, s2.oracle)
    np.testing.assert_allclose(p.friction()[TRUSTED], 0.3, atol=0.1)         # derived F_c (assumption label)
    for d in (0, 1):
        for j in range(8):
            np.linalg.cholesky(p.cov[d, j])                                    # SPD
            assert np.allclose(p.cov[d, j], p.cov[d, j].T)
    # the reported standard errors (scaled for the residual correlation of the low-passed record) are honest
    # for k; m and b carry systematic biases (-0.3 % on m from the 1 kHz charge-amplifier lag on a and F but
    # not on x; a few % on b from low-pass smearing across segment edges) that no noise covariance describes
    for name in ('stiffness',):
        z = np.abs(p.value(name) - s2.oracle.value(name)) / p.std(name)
        assert np.median(z[:, TRUSTED]) < 3.0, (name, z)


def test_s3_raw_central_difference_velocity(s1, s2):
    p2, _ = _fit(s2, filtered=False)
    err = _errors(p2, s2.oracle)
    assert err['damping'].max() <= 0.08, err['damping']
    p1, _ = _fit(s1, filtered=False)
    assert not p1.valid.any() and np.isnan(p1.value('damping')).all()
    assert all('not separable' in r for row in p1.reason for r in row)


def test_s4_kink_segment_and_continuity(s2):
    o = s2.oracle
    k_oracle = o.value('stiffness')[:, sc.KINK_SEGMENT]
    assert np.all((k_oracle > 2000) & (k_oracle < 3000)), k_oracle
    p, _ = _fit(s2)
    k = p.value('stiffness')[:, sc.KINK_SEGMENT]
    assert np.all(np.abs(k / k_oracle - 1) <= 0.02), (k, k_oracle)
    pc, _ = _fit(s2, FitOptions(continuity=True))
    inner = s2.edges[1:-1]
    for d in (0, 1):
        kk, cc = pc.value('stiffness')[d], pc.value('intercept')[d]
        jump = (kk[:-1] * inner + cc[:-1]) - (kk[1:] * inner + cc[1:])
        assert np.abs(jump).max() <= 0.05, jump
        for j in range(8):
            np.linalg.cholesky(pc.cov[d, j])                 # constrained covariances stay SPD
        # without the constraint the profile is not forced to be continuous
    pu, _ = _fit(s2)
    kk, cc = pu.value('stiffness')[0], pu.value('intercept')[0]
    assert np.abs((kk[:-1] * inner + cc[:-1]) - (kk[1:] * inner + cc[1:])).max() > 0.05
    # continuity keeps the kink-free stiffness within the S2 target except next to the kink
    far = [0, 1, 2]
    assert np.all(np.abs(pc.value('stiffness')[:, far] / o.value('stiffness')[:, far] - 1) <= 0.03)


def test_shared_mass_and_tikhonov_options(s2):
    ps, _ = _fit(s2, FitOptions(shared_mass=True))
    m = ps.value('mass')
    assert np.ptp(m) < 1e-9 and abs(m[0, 0] / 0.581 - 1) <= 0.03
    _assert_within(ps, s2.oracle, segs=[0, 1, 2, 4, 5, 7])
    pt, _ = _fit(s2, FitOptions(tikhonov=10.0, tikhonov_weights=(1.0, 1.0, 0.0, 0.0)))
    p0, _ = _fit(s2)
    spread = lambda p: np.ptp(p.value('damping'), axis=1).max()   # noqa: E731
    assert spread(pt) < 0.5 * spread(p0)
    for d in (0, 1):
        for j in range(8):
            np.linalg.cholesky(pt.cov[d, j])


def _stream(pipeline, rec, n, chunk, source='effort'):
    stamps = EPOCH_NS + np.round(rec.t[:n] * 1e9).astype(np.int64)
    for i in range(0, n, chunk):
        sl = slice(i, min(i + chunk, n))
        if source == 'effort':
            pipeline.push_joint_columns(stamps[sl], ['slider'], rec.x_meas[sl, None], rec.F_meas[sl, None])
        else:
            pipeline.push_joint_columns(stamps[sl], ['slider'], rec.x_meas[sl, None])
            force = np.zeros((sl.stop - sl.start, 3))
            force[:, 0] = rec.F_meas[sl]
            pipeline.push_wrench_columns(stamps[sl], force)
        pipeline.step()
    return pipeline.profile()


def test_s5_online_with_the_measured_acceleration(s2):
    """The spec's S5 exactly: the same causal 2nd-order 50 Hz Butterworth on x, a (accelerometer) and F."""
    params = validate_all(PARAMS, {'joint_name': 'slider', 'force_source': 'effort',
                                   'acceleration_source': 'imu', 'imu_axis': [0.0, 1.0, 0.0]})
    n = int(32 * s2.rate)
    stamps = EPOCH_NS + np.round(s2.t[:n] * 1e9).astype(np.int64)
    profiles = []
    for chunk in (500, 1999):
        pl = ImpedancePipeline(params)
        for i in range(0, n, chunk):
            sl = slice(i, min(i + chunk, n))
            imu = np.zeros((sl.stop - sl.start, 3))
            imu[:, 1] = s2.a_meas[sl]
            pl.push_imu_columns(stamps[sl] + 50_000, imu)          # its own clock phase: interpolated
            pl.push_joint_columns(stamps[sl], ['slider'], s2.x_meas[sl, None], s2.F_meas[sl, None])
            pl.step()
        profiles.append(pl.profile())
    p = profiles[0]
    assert p.valid[:, TRUSTED].all(), p.reason
    _assert_within(p, s2.oracle, scale=2.0)
    np.testing.assert_allclose(profiles[1].theta, p.theta, rtol=1e-9, atol=1e-12)


def test_s5_online_profile_after_30_s(s2):
    params = validate_all(PARAMS, {'joint_name': 'slider', 'force_source': 'effort',
                                   'forgetting_factor': 1 - 1 / (4000 * 10), 'cutoff_frequency': 50.0,
                                   })
    pl = ImpedancePipeline(params)
    n = int(32 * s2.rate)                     # 2 s fade-in + 30 s
    p = _stream(pl, s2, n, 400)
    assert pl.status()['sample_rate_hz'] == pytest.approx(4000.0)
    assert p.valid[:, TRUSTED].all(), p.reason
    _assert_within(p, s2.oracle, scale=2.0)
    # batching does not change the estimate; neither does pairing the force from a WrenchStamped stream
    p2 = _stream(ImpedancePipeline(params), s2, n, 1733)
    np.testing.assert_allclose(p2.theta, p.theta, rtol=1e-9, atol=1e-12)
    pw = _stream(ImpedancePipeline(dict(params, force_source='wrench')), s2, n, 977, source='wrench')
    np.testing.assert_allclose(pw.theta, p.theta, rtol=1e-9, atol=1e-12)
    # the reversal hold-off (samples just after a reversal carry the filter-delayed friction step) is
    # batching-independent too, and drops samples
    ph = dict(params, reversal_holdoff=0.005)
    h1, h2 = _stream(ImpedancePipeline(ph), s2, n, 400), _stream(ImpedancePipeline(ph), s2, n, 1733)
    np.testing.assert_allclose(h1.theta, h2.theta, rtol=1e-9, atol=1e-12)
    assert h1.n.sum() < p.n.sum()
    _assert_within(h1, s2.oracle, scale=2.0)


def test_s6_dashpot_drop_terminal_velocity():
    t, x = dashpot_drop(mass=0.5, damping=11.5, rate=100.0, duration=0.6, sigma_x=1e-4, seed=3)
    r = dashpot_damping(t, x, mass=0.5)
    assert r.terminal_velocity == pytest.approx(0.5 * 9.81 / 11.5, rel=0.01)     # 0.4265 m/s
    assert r.time_constant == pytest.approx(0.5 / 11.5, rel=0.02)                  # ~43 ms
    assert r.travel >= 0.1 and not r.warning
    assert abs(r.damping / 11.5 - 1) <= 0.01 and r.damping_std < 0.05
    with pytest.raises(ValueError):
        dashpot_damping(t, -x, mass=0.5)


def test_s7_direction_asymmetry_without_leakage():
    rec = sc.simulate('S7', seed=4)
    p, _ = _fit(rec)
    _assert_within(p, rec.oracle)
    b = p.value('damping')[:, TRUSTED]
    assert np.all(np.abs(b[0] / 11.5 - 1) <= 0.08) and np.all(np.abs(b[1] / 15.0 - 1) <= 0.08), b


def test_s1_online_profiler_gives_no_numbers_for_a_single_tone(s1):
    params = validate_all(PARAMS, {'joint_name': 'slider', 'force_source': 'effort'})
    p = _stream(ImpedancePipeline(params), s1, int(32 * s1.rate), 800)
    assert (p.n >= 200).all()
    assert np.isnan(p.theta).all() and not p.valid.any() and not p.separable.any()
    assert all('single-tone' in r for row in p.reason for r in row)


def test_playback_force_model(s2):
    p, c = _fit(s2)
    f = p.force(c.x, c.v, c.a, v_deadband=5e-3)
    moving = (np.abs(c.v) > 5e-3) & (c.x >= 0) & (c.x <= 0.024)
    nrmse = np.sqrt(np.mean((f[moving] - c.F[moving]) ** 2)) / np.ptp(c.F[moving])
    assert nrmse < 0.01, nrmse
    # inside the deadband the two directions are averaged (no jump of 2 F_c at v = 0)
    f0 = p.force(np.array([0.005]), np.array([0.0]), np.array([0.0]), v_deadband=1e-3)
    fp = p.force(np.array([0.005]), np.array([0.002]), np.array([0.0]))
    fn = p.force(np.array([0.005]), np.array([-0.002]), np.array([0.0]))
    assert fn[0] < f0[0] < fp[0]
    # blending between segment centres removes the steps at the edges and agrees at the centres
    inner = s2.edges[1:-1]
    vv, aa = np.full(len(inner), 0.05), np.zeros(len(inner))
    step = np.abs(p.force(inner + 1e-7, vv, aa) - p.force(inner - 1e-7, vv, aa))
    smooth = np.abs(p.force(inner + 1e-7, vv, aa, blend=True) - p.force(inner - 1e-7, vv, aa, blend=True))
    assert step.max() > 0.05 and smooth.max() < 1e-3, (step, smooth)
    mid, vm, am = p.centres, np.full(8, 0.05), np.zeros(8)
    np.testing.assert_allclose(p.force(mid, vm, am, blend=True), p.force(mid, vm, am))


def test_quantised_encoder_differentiation_is_filtered(s2):
    c = condition(s2.t, s2.x_meas, s2.F_meas, s2.a_meas, t_skip=sc.FADE_IN)
    v_true = np.interp(c.t, s2.t, s2.v)          # at the kernel centres (the kernel's ends are dropped)
    assert np.sqrt(np.mean((c.v - v_true) ** 2)) < 0.015 * np.sqrt(np.mean(v_true ** 2))
    raw = condition(s2.t, s2.x_meas, s2.F_meas, s2.a_meas, t_skip=sc.FADE_IN, filtered=False)
    v_raw = np.interp(raw.t, s2.t, s2.v)
    assert np.sqrt(np.mean((raw.v - v_raw) ** 2)) > 5 * np.sqrt(np.mean((c.v - v_true) ** 2))


def test_adaptive_segmentation_finds_the_spring_kinks(s2):
    from contact_estimation.impedance.segmentation import adaptive_edges
    c = condition(s2.t, s2.x_meas, s2.F_meas, s2.a_meas, t_skip=sc.FADE_IN)
    e = adaptive_edges(c.x, c.v, c.a, c.F, 0.0, 0.024, cells=48, correlation=c.correlation, r=c.r)
    assert e[0] == 0.0 and e[-1] == pytest.approx(0.024)
    for kink in (0.012, 0.020):
        assert np.min(np.abs(e - kink)) <= 0.5e-3, (kink, e)
    # no cut inside the stiff linear stretch (14-19 mm: 2000 N/m); in the soft one (400 N/m) at most one, and
    # the profile on these edges gives the right stiffness there (with the Gaussian kernel one extra cut at
    # 3 mm appears: the plant's 1 kHz charge-amplifier lag on F and a, not on x, is a model error that
    # changes along the stroke)
    assert not np.any((e > 0.0141) & (e < 0.0189)), e
    assert np.sum((e > 0.0021) & (e < 0.0099)) <= 1, e
    p = fit_segmented(c.x, c.v, c.a, c.F, e, noise_variance=c.noise_variance, correlation=c.correlation,
                      r=c.r)
    soft = (p.edges[:-1] >= 0.0019) & (p.edges[1:] <= 0.0111)
    k_soft = p.value('stiffness')[:, soft]
    assert soft.any() and np.all(np.abs(k_soft / 400.0 - 1) <= 0.03), p.value('stiffness')
    with pytest.raises(ValueError):
        adaptive_edges(c.x, c.v, c.a, c.F, 0.030, 0.040)
