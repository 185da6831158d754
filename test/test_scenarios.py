"""Scenario generators S1-S9 (contact_estimation.single_point.scenarios) and the spec §6.1 checks done with GLS/RLS."""
import numpy as np
import pytest

from contact_estimation.single_point import preprocess as pp
from contact_estimation.single_point import scenarios as sc
from contact_estimation.single_point.gls import GlobalLeastSquares
from contact_estimation.single_point.models import KELVIN_VOIGT_MASS
from contact_estimation.single_point.rls import RecursiveLeastSquares
from contact_estimation.single_point.samples import ContactSamples

PAYLOADS = tuple(sc.POWER_LAWS)
# spec §6.1: ideal system secant stiffness k_SMT+payload (N/m) at 50..300 N, and in brackets the ratio of
# the thesis's measured Table 3-4 value to it; Table 3-4 itself (N/m).
IDEAL_TABLE = {
    'al_half_sphere': (2.41e6, 2.51e6, 2.57e6, 2.61e6, 2.64e6, 2.67e6),
    'pl_half_sphere': (1.65e6, 1.78e6, 1.86e6, 1.92e6, 1.96e6, 1.99e6),
    'pl_cone': (1.16e6, 1.30e6, 1.38e6, 1.43e6, 1.48e6, 1.52e6),
    'pl_pyramid': (8.64e5, 9.61e5, 1.02e6, 1.06e6, 1.10e6, 1.13e6),
    'pl_prism': (1.82e6, 2.00e6, 2.10e6, 2.17e6, 2.22e6, 2.26e6),
    'pl_cube': (2.17e6, 2.31e6, 2.39e6, 2.44e6, 2.48e6, 2.51e6),
}
IDEAL_RATIO = {
    'al_half_sphere': (0.83, 1.00, 1.01, 1.03, 1.04, 1.05),
    'pl_half_sphere': (0.84, 0.93, 0.94, 0.97, 0.99, 0.98),
    'pl_cone': (0.68, 0.74, 0.78, 0.78, 0.78, 0.76),
    'pl_pyramid': (0.67, 0.70, 0.71, 0.72, 0.72, 0.71),
    'pl_prism': (0.56, 0.62, 0.58, 0.48, 0.47, 0.49),
    'pl_cube': (0.41, 0.39, 0.35, 0.30, 0.25, 0.26),
}
TABLE_3_4 = {
    'al_half_sphere': (1.99e6, 2.51e6, 2.59e6, 2.70e6, 2.75e6, 2.79e6),
    'pl_half_sphere': (1.39e6, 1.66e6, 1.75e6, 1.86e6, 1.94e6, 1.96e6),
    'pl_cone': (7.93e5, 9.61e5, 1.08e6, 1.12e6, 1.16e6, 1.16e6),
    'pl_pyramid': (5.75e5, 6.68e5, 7.25e5, 7.61e5, 7.86e5, 7.96e5),
    'pl_prism': (1.02e6, 1.24e6, 1.21e6, 1.03e6, 1.04e6, 1.10e6),
    'pl_cube': (8.95e5, 8.99e5, 8.26e5, 7.32e5, 6.16e5, 6.65e5),
}


def rls(**kwargs):
    opts = dict(forgetting=0.98, initial_covariance=1e5, initial={'stiffness': 1e6, 'damping': 50.0})
    opts.update(kwargs)
    return RecursiveLeastSquares(**opts)


def per_level(s, make):
    """Stiffness per settled plateau window with a fresh estimator for each level."""
    out = []
    for window in s.plateaus:
        est = make()
        if isinstance(est, GlobalLeastSquares):
            out.append(est.fit(s.samples(window)).stiffness)
        else:
            est.update(s.samples(window))
            out.append(est.estimate().stiffness)
    return np.array(out)


# ------------------------------------------------------------------------------------------ S2
@pytest.mark.parametrize('payload', PAYLOADS)
def test_s2_ideal_secant_matches_model_and_spec_table(payload):
    s = sc.s2_staircase(payload)
    k_nl, n = sc.POWER_LAWS[payload]
    f = np.arange(50.0, 301.0, 50.0)
    np.testing.assert_allclose(s.level_loads, f)
    np.testing.assert_allclose(s.ideal_secant, f / (f / sc.K_SMT + (f / k_nl) ** (1 / n)), rtol=1e-14)
    printed = np.array(IDEAL_TABLE[payload])
    half_ulp = 0.5 * 10 ** (np.floor(np.log10(printed)) - 2)
    assert np.all(np.abs(s.ideal_secant - printed) <= half_ulp * 1.0001)           # printed precision
    ratio = np.array(TABLE_3_4[payload]) / s.ideal_secant
    assert np.all(np.abs(ratio - IDEAL_RATIO[payload]) <= 0.005 + 1e-9)              # bracketed ratios
    # the recorded x is the static law of the recorded F in contact, and starts at the exact datum
    i0 = s.extras['datum_index']
    c = slice(i0 + 1, None)
    np.testing.assert_allclose(s.x[c], s.force[c] / sc.K_SMT + (s.force[c] / k_nl) ** (1 / n), rtol=1e-12)
    assert s.x[i0] == 0.0 and s.force[i0] == 0.0 and np.all(s.x[:i0] < 0)
    # analytic rate is the derivative of x (away from the kinks at the steps)
    kink = np.zeros(len(s.t), bool)
    for t_step in s.extras['level_starts']:
        kink[np.abs(s.t - t_step) < 1.5 / s.rate_hz] = True
    smooth = ~kink[c]
    smooth[:5] = smooth[-5:] = False
    np.testing.assert_allclose(np.gradient(s.x[c], s.t[c])[smooth], s.xd[c][smooth], rtol=0.02, atol=1e-7)
    np.testing.assert_allclose(np.gradient(s.xd[c], s.t[c])[smooth], s.xdd[c][smooth], rtol=0.05, atol=1e-6)


@pytest.mark.parametrize('rate', [100.0, 1000.0])
@pytest.mark.parametrize('payload', PAYLOADS)
def test_s2_noise_free_gls_and_rls_recover_ideal_system_secant(payload, rate):
    """Spec S2 acceptance (GLS, RLS lambda = 0.98, P0 = 1e5 I): per-level k within 0.5 % of the ideal
    (measured: GLS <= 7e-12, RLS <= 5e-6 relative), levels 50..350 N; damping not identifiable."""
    s = sc.s2_staircase(payload, rate, max_load=350.0)
    for make in (GlobalLeastSquares, rls):
        k = per_level(s, make)
        assert np.all(np.abs(k / s.ideal_secant - 1) < 5e-3)
        assert np.all(np.abs(k / s.ideal_secant - 1) < 1e-4)        # what is actually achieved
    est = GlobalLeastSquares().fit(s.samples(s.plateaus[0]))
    assert est.valid and not est.is_identifiable('damping')


def test_s2_noisy_variant_and_bias():
    s = sc.s2_staircase('pl_half_sphere', 100.0, sigma_f=0.6, sigma_x=5e-6, seed=3)
    clean = sc.s2_staircase('pl_half_sphere', 100.0)
    assert np.std(s.force - clean.force) == pytest.approx(0.6, rel=0.05)
    assert np.std(s.x - clean.x) == pytest.approx(5e-6, rel=0.05)
    # a 0.2 mm displacement bias exceeds the 30-150 um deflections: k error 57-87 % (k'/k = x / (x + bias))
    biased = sc.s2_staircase('pl_half_sphere', 100.0, x_bias=0.2e-3)
    k = per_level(biased, GlobalLeastSquares)
    x_level = biased.level_loads / biased.ideal_secant
    # (1e-4: GLS fixes the unidentifiable damping at 0, so the e^-10 transition tail left in each settled
    # window shows at the 1e-5 level instead of being absorbed by a spurious damping)
    np.testing.assert_allclose(k / biased.ideal_secant, x_level / (x_level + 0.2e-3), rtol=1e-4)


def test_s2_argument_errors():
    with pytest.raises(ValueError):
        sc.s2_staircase('steel_cube')
    with pytest.raises(ValueError):
        sc.s2_staircase(experiment=3)
    with pytest.raises(ValueError):
        sc.s2_staircase(hold_s=2.0)                   # settle window (10 tau = 3 s) longer than the hold
    with pytest.raises(ValueError):
        sc.s3_datum_shift(sc.s2_staircase(), -10_000)


# ------------------------------------------------------------------------------------------ S4
def sweep(s, **kwargs):
    """Worst per-level relative k error for every k0 of S4_INITIAL_GUESSES."""
    out = []
    for k0 in sc.S4_INITIAL_GUESSES:
        k = per_level(s, lambda: rls(initial={'stiffness': k0, 'damping': 50.0}, **kwargs))
        out.append(np.max(np.abs(k / s.ideal_secant - 1)))
    return np.array(out)


def test_s4_initial_guess_sweep():
    """P0 = 1e5 I, lambda = 0.98, fresh RLS per settled plateau (Pl half-sphere, true k 1.65e6-1.99e6).

    Measured worst-level errors (k0 = 0, 1e4 ... 1e12):
      project RLS, 100 Hz (200-sample windows): <= 4e-6 up to 1e6, then 2e-5, 2.4e-4, 2.5e-3, 2.5e-2,
                                                 0.25, 2.5 (k0 = 1e7 ... 1e12)
      unscaled, no floor (thesis RLS), 500 Hz (1000 samples): 3.7e-7 ... 2.2e-4 @1e9, 2.2e-3 @1e10,
                                                 2.2e-2 @1e11, 0.22 @1e12
      scaled, no floor, 500 Hz:                  <= 3e-7 for every k0
      project RLS (scaled, floor 1/max_covariance anchored at zero), 500 Hz: <= 1e-7 for every k0
      (with the floor anchored at k0, as first written, it was 1.3e-3 @1e10, 1.3e-2 @1e11, 0.13 @1e12)
    Thesis: < 0.5 % up to 1e10, 4.5 % at 1e11, 45 % at 1e12.
    """
    s100 = sc.s4_initial_guess_sweep('pl_half_sphere', 100.0)
    k0 = np.array(sc.S4_INITIAL_GUESSES)
    above = k0 >= 1e7                                  # guesses above the truth
    # the project's RLS: insensitive (< 0.5 %) over >= 4 decades, monotone degradation above the truth
    err = sweep(s100)
    good = k0[err < 5e-3]
    assert 0.0 in good and np.log10(good[good > 0].max() / good[good > 0].min()) >= 4
    assert np.all(np.diff(err[above]) > 0) and err[-1] > 0.5
    # the thesis's unscaled RLS (scales = 1, no covariance floor) on 1000-sample windows: thesis-like
    s500 = sc.s4_initial_guess_sweep('pl_half_sphere', 500.0)
    raw = sweep(s500, scales={'stiffness': 1.0, 'damping': 1.0}, max_covariance=np.inf)
    assert np.all(raw[k0 <= 1e10] < 5e-3)
    assert 5e-3 < raw[k0 == 1e11][0] < 0.1 and 0.1 < raw[k0 == 1e12][0] < 1.0
    assert np.all(np.diff(raw[above]) > 0)
    # column scaling removes the sensitivity (same windows, no floor)
    scaled = sweep(s500, max_covariance=np.inf)
    assert np.all(scaled < 1e-5)
    # the default covariance floor is anchored at zero: no lasting pull towards k0 either
    floored = sweep(s500)
    assert np.all(floored < 1e-5)


# ------------------------------------------------------------------------------------------ S5
@pytest.mark.parametrize('rate', [100.0, 1000.0])
def test_s5_damping_interval_contains_truth_or_flagged(rate):
    """GLS (measured velocity xd, sigma_F = 0.5 N, sigma_x = 1 um) on the first 0.05 / 0.1 / 0.5 s:
    the 3-sigma interval for b contains the truth, or b is flagged not identifiable.
    Measured (1 kHz, b = 2000): 1699 +- 592 (0.05 s), 1637 +- 579 (0.1 s), 0.5 s flagged."""
    outcomes = []
    for b in (0.0, 500.0, 2000.0, 5000.0):
        for speed in (2e-3, 5e-3, 10e-3):
            s = sc.s5_onset(b, speed, rate, sigma_f=0.5, sigma_x=1e-6, seed=1)
            i0 = s.extras['onset_index']
            for window_s in (0.05, 0.1, 0.5):
                est = GlobalLeastSquares(min_samples=3).fit(s.samples((i0, i0 + int(round(window_s * rate)))))
                identifiable = est.is_identifiable('damping')
                if est.valid:
                    assert abs(est.stiffness / 2e6 - 1) < 0.05
                else:       # unexcited damping that still carries force: the whole estimate is distrusted
                    assert not identifiable and 'carries' in est.reason, est.reason
                contains = abs(est.damping - b) <= 3 * est.std('damping')
                assert contains or not identifiable, (b, speed, window_s)
                outcomes.append(identifiable)
    assert any(outcomes) and not all(outcomes)
    if rate == 1000.0:
        s = sc.s5_onset(2000.0, 5e-3, rate, sigma_f=0.5, sigma_x=1e-6, seed=1)
        i0 = s.extras['onset_index']
        est = GlobalLeastSquares().fit(s.samples((i0, i0 + 50)))
        assert est.is_identifiable('damping') and abs(est.damping - 2000.0) <= 3 * est.std('damping')


def test_s5_model_consistent_noise_free():
    s = sc.s5_onset(2000.0, 5e-3, 1000.0)
    i0 = s.extras['onset_index']
    c = slice(i0, None)
    assert np.all(s.force[c] > 0) and np.all(s.force[:i0] == 0) and np.all(np.diff(s.x) >= 0)
    est = GlobalLeastSquares().fit(s.samples((i0, i0 + 100)))            # F is the contact force k x + b xd
    np.testing.assert_allclose(est.values, [2e6, 2000.0], rtol=1e-6)
    assert s.force[-1] == pytest.approx(s.extras['steady_force'], rel=1e-6)       # F -> c v
    np.testing.assert_allclose(np.gradient(s.xd[c], s.t[c])[2:-2], s.xdd[c][2:-2], rtol=0.05, atol=2e-3)


# ------------------------------------------------------------------------------------------ S1, S6-S9
@pytest.mark.parametrize('rate', [100.0, 1000.0])
def test_s1_model_consistency_and_central_difference_bias(rate):
    s = sc.s1_kelvin_voigt(rate)
    assert s.x.min() > 1.9e-3
    est = GlobalLeastSquares().fit(s.samples())
    np.testing.assert_allclose(est.values, [4800.0, 200.0], rtol=1e-6)
    xd, _ = pp.differentiate(s.t, s.x, half_window=1)                 # central difference
    est = GlobalLeastSquares().fit(ContactSamples.make(s.t, s.force, s.x, xd))
    bias = abs(est.damping / 200.0 - 1)
    assert bias < (0.0165 if rate == 100.0 else 2e-4)                  # 1.64 % bound for 5 Hz at 100 Hz
    m = sc.s1_kelvin_voigt(rate, mass=2.0)
    est = GlobalLeastSquares(KELVIN_VOIGT_MASS).fit(m.samples(acceleration=True))
    np.testing.assert_allclose(est.values, [4800.0, 200.0, 2.0], rtol=1e-6)


def test_s6_creep_ordering_and_s7_truth():
    clean = sc.s6_creep('pl_cube', 100.0, level=2, creep=20e-6)
    a, b = clean.plateaus[2]
    assert clean.x[b - 1] - clean.x[a] == pytest.approx(20e-6, rel=1e-3)
    assert np.ptp(clean.force[a:b]) < 0.01                               # settled: e^-10 of the step
    # thesis-like input: velocity by central differences of the noisy position
    s = sc.s6_creep('pl_cube', 100.0, level=2, creep=20e-6, sigma_f=0.6, sigma_x=1e-6, seed=5)
    xd, _ = pp.differentiate(s.t, s.x, half_window=1)
    window = ContactSamples.make(s.t[a:b], s.force[a:b], s.x[a:b], xd[a:b])
    k_gls = GlobalLeastSquares().fit(window).stiffness
    r = rls()
    r.update(window)
    assert r.estimate().stiffness < k_gls < s.ideal_secant[2]          # {RLS} < {GLS} under creep
    # with the exact (constant) creep rate as xd, the damping column acts as an intercept: k collapses,
    # and the verdict refuses it (unidentifiable damping carrying the force), instead of calling it valid
    collapsed = GlobalLeastSquares().fit(clean.samples((a, b)))
    assert collapsed.stiffness < 0.01 * clean.ideal_secant[2]
    assert not collapsed.valid and 'damping is not identifiable yet carries' in collapsed.reason
    s7 = sc.s7_zero_damping()
    assert s7.name == 'S7' and s7.truth['damping'] == 0.0


def test_s8_instron_record_shape():
    s = sc.s8_instron('plastic', 1e7)
    u, f = s.x, s.force
    assert np.all(f[u < sc.INSTRON_DEAD_BAND] == 0.0) and f[-1] == pytest.approx(400.0, abs=0.1)
    assert np.all(np.diff(f) >= 0)
    on_plateau = (f > 41.0) & (f < 47.0)
    assert np.ptp(u[on_plateau]) == pytest.approx(0.5e-3 * 6 / 8, rel=0.01)  # clearance plateau 40-48 N
    np.testing.assert_allclose(s.extras['specimen_deflection'], (f / s.truth['k_nl']) ** (1 / 1.5))


def test_s9_hertz_record():
    s = sc.s9_hertz('al')
    np.testing.assert_allclose(s.force, s.truth['k_nl'] * s.x ** 1.5)
    assert s.force[-1] == pytest.approx(400.0, rel=0.01)
    with pytest.raises(ValueError):
        sc.s9_hertz('steel')
