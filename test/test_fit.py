"""Characterisation tools (contact_estimation.single_point.fit) against the spec's numbers and synthetic ground truth."""
import numpy as np
import pytest

from contact_estimation.single_point import fit
from contact_estimation.single_point import scenarios as sc
from contact_estimation.single_point.gls import GlobalLeastSquares
from contact_estimation.single_point.rls import RecursiveLeastSquares

PAYLOADS = tuple(sc.POWER_LAWS)
# Table 3-7 (experiment set 1) and Table C-1 (set 2): payload secant stiffness (N/m), rows 50..300 N.
TABLE_3_7 = {
    'al_half_sphere': (7.99e6, 9.20e6, 1.00e7, 1.06e7, 1.11e7, 1.16e7),
    'pl_half_sphere': (3.17e6, 3.67e6, 4.00e6, 4.25e6, 4.47e6, 4.64e6),
    'pl_cone': (1.76e6, 2.06e6, 2.27e6, 2.43e6, 2.57e6, 2.68e6),
    'pl_pyramid': (1.16e6, 1.33e6, 1.44e6, 1.52e6, 1.60e6, 1.66e6),
    'pl_prism': (3.87e6, 4.70e6, 5.29e6, 5.75e6, 6.13e6, 6.48e6),
    'pl_cube': (5.83e6, 6.90e6, 7.64e6, 8.22e6, 8.70e6, 9.12e6),
}
TABLE_C_1 = {
    'al_half_sphere': (7.94e6, 9.14e6, 9.94e6, 1.06e7, 1.11e7, 1.15e7),
    'pl_half_sphere': (3.17e6, 3.67e6, 4.00e6, 4.26e6, 4.47e6, 4.65e6),
    'pl_cone': (1.76e6, 2.06e6, 2.27e6, 2.43e6, 2.56e6, 2.68e6),
    'pl_pyramid': (1.16e6, 1.33e6, 1.44e6, 1.52e6, 1.60e6, 1.66e6),
    'pl_prism': (3.87e6, 4.71e6, 5.29e6, 5.75e6, 6.14e6, 6.48e6),
    'pl_cube': (5.86e6, 6.93e6, 7.66e6, 8.23e6, 8.71e6, 9.12e6),
}
# Table 3-7's 300 N cells for prism and cube equal the set-2 values (C-1), not the set-1 mean loads of
# Appendix C (290.23 N -> 6.47e6, 288.40 N -> 9.10e6, as Tables C-6/C-7 print): compared against set 2.
TABLE_3_7_FROM_SET_2 = {('pl_prism', 5), ('pl_cube', 5)}


def round_sig(v, digits=3):
    v = np.asarray(v, dtype=float)
    e = np.floor(np.log10(np.abs(v)))
    return np.round(v / 10 ** (e - digits + 1)) * 10 ** (e - digits + 1)


# ------------------------------------------------------------------------------------------ Hertz
def test_hertz_constants_reproduce_spec_recomputation():
    steel = fit.MATERIALS['steel']
    e_al = fit.effective_modulus(*steel, *fit.MATERIALS['al6061'])
    e_pl = fit.effective_modulus(*steel, *fit.MATERIALS['acetal'])
    k_al = fit.hertz_coefficient(fit.HERTZ_RADIUS, e_al)
    k_pl = fit.hertz_coefficient(fit.HERTZ_RADIUS, e_pl)
    assert k_al == pytest.approx(1.305e10, rel=5e-4)
    assert k_pl == pytest.approx(6.73e8, rel=5e-4)
    assert round_sig(k_al, 2) == 1.3e10                       # thesis value
    assert k_pl / 7.0e8 - 1 == pytest.approx(-0.038, abs=2e-3)  # thesis 7.0e8 is 3.8 % high (§4.8 item 8)
    # without the outer inverse (the printed footnote) E* would be ~1e-11, absurd: the inverse is needed
    assert 1e9 < e_pl < e_al < 1e11


def test_hertz_deformation_inverts_force():
    e_star = fit.effective_modulus(*fit.MATERIALS['steel'], *fit.MATERIALS['al6061'])
    f = np.array([1.0, 50.0, 400.0])
    d = fit.hertz_deformation(f, fit.HERTZ_RADIUS, e_star)
    np.testing.assert_allclose(fit.hertz_force(d, fit.HERTZ_RADIUS, e_star), f, rtol=1e-12)
    with pytest.raises(ValueError):
        fit.effective_modulus(-1.0, 0.3, 1e9, 0.3)


# ------------------------------------------------------------------------------------------ power law
def test_power_law_noise_free_exact():
    d = np.linspace(0.0, 1e-4, 200)
    r = fit.fit_power_law(d, 7.0e7 * d ** 1.28)
    assert r.ok and r.points == 200
    assert r.k == pytest.approx(7.0e7, rel=1e-9) and r.n == pytest.approx(1.28, abs=1e-10)


@pytest.mark.parametrize('material', ['al', 'plastic'])
def test_power_law_s9_hertz(material):
    """S9: n = 1.5 +- 0.01 and k* within 1 % (noise-free at 100 Hz; sigma_F = 0.5 N at 1 kHz)."""
    clean = sc.s9_hertz(material, 100.0)
    r = fit.fit_power_law(clean.x, clean.force)
    assert r.ok
    assert r.n == pytest.approx(1.5, abs=1e-9) and r.k == pytest.approx(clean.truth['k_nl'], rel=1e-9)
    noisy = sc.s9_hertz(material, 1000.0, sigma_f=0.5, seed=4)
    r = fit.fit_power_law(noisy.x, noisy.force)
    assert r.ok
    assert abs(r.n - 1.5) < 0.01
    assert abs(r.k / noisy.truth['k_nl'] - 1) < 0.01
    assert abs(r.n - 1.5) < 4 * r.n_std and abs(r.k - noisy.truth['k_nl']) < 4 * r.k_std   # honest covariance


def test_power_law_weights_and_structured_failures():
    d = np.linspace(1e-6, 1e-4, 100)
    f = 2.01e8 * d ** 1.27
    r = fit.fit_power_law(d, f, weights=1.0 / f ** 2)             # relative-error weighting
    assert r.ok and r.n == pytest.approx(1.27, abs=1e-9)
    assert not fit.fit_power_law([1e-5, 2e-5], [1.0, 2.0]).ok
    bad = fit.fit_power_law(np.full(10, np.nan), np.ones(10))
    assert not bad.ok and 'too few' in bad.reason and np.isnan(bad.k)
    assert not fit.fit_power_law(np.full(5, 1e-5), np.arange(1.0, 6.0)).ok     # no spread in d
    assert not fit.fit_power_law(d, f, cutoff=1e9).ok                          # all below the cut-off
    with pytest.raises(ValueError):
        fit.fit_power_law(d, f[:-1])


def test_power_law_average_counts_failures():
    d = np.linspace(1e-6, 1e-4, 50)
    fits = [fit.fit_power_law(d, k * d ** 1.3) for k in (1e8, 2e8)] + [fit.fit_power_law([1.0], [1.0])]
    avg = fit.average_power_laws(fits)
    assert avg.ok and avg.used == 2 and avg.failed == 1
    assert avg.k == pytest.approx(1.5e8) and avg.n == pytest.approx(1.3)
    assert not fit.average_power_laws(fits[2:]).ok


# ------------------------------------------------------------------------------------------ Instron (S8)
def _pipeline(specimen, k_machine):
    s = sc.s8_instron(specimen, k_machine)
    return s, fit.instron_power_law(s.x, s.force)


@pytest.mark.parametrize('specimen', ['al', 'plastic'])
def test_instron_rigid_machine_only_origin_shift_bias(specimen):
    s, r = _pipeline(specimen, np.inf)
    assert r.ok
    # with k_mach = inf the crosshead above the cut-off is a constant plus the specimen deflection, so the
    # pipeline equals the same fit on the true deflection: the origin shift is the only bias
    same = fit.fit_power_law(s.extras['specimen_deflection'], s.force, cutoff=fit.INSTRON_CUTOFF,
                             shift_origin=True)
    assert r.k == pytest.approx(same.k, rel=1e-3) and r.n == pytest.approx(same.n, abs=1e-4)
    # the exact datum (no shift) recovers the truth
    exact = fit.fit_power_law(s.extras['specimen_deflection'], s.force, cutoff=fit.INSTRON_CUTOFF)
    assert exact.n == pytest.approx(1.5, abs=1e-6) and exact.k == pytest.approx(s.truth['k_nl'], rel=1e-5)
    # the shift bias: measured n = 1.221 for both (thesis Instron n: 1.26-1.42), secant at 300 N +24 %
    assert 1.15 < r.n < 1.3
    ratio = fit.secant_stiffness(300.0, r.k, r.n) / fit.secant_stiffness(300.0, s.truth['k_nl'], 1.5)
    assert 1.1 < ratio < 1.4


def test_instron_finite_machine_underestimates_stiff_specimens():
    ratio = {}
    for specimen in ('al', 'plastic'):
        for km in (np.inf, 5e7, 1e7):
            s, r = _pipeline(specimen, km)
            assert r.ok
            ratio[specimen, km] = (fit.secant_stiffness(300.0, r.k, r.n)
                                   / fit.secant_stiffness(300.0, s.truth['k_nl'], 1.5))
    for specimen in ('al', 'plastic'):
        assert ratio[specimen, np.inf] > ratio[specimen, 5e7] > ratio[specimen, 1e7]
    for km in (5e7, 1e7):
        assert ratio['al', km] < ratio['plastic', km]            # the stiffer specimen suffers more
    assert ratio['al', 1e7] < 0.3                                  # measured 0.22: "badly underestimated"
    # Hertz Al k* = 1.3e10 (n 1.5) collapses by two orders of magnitude through a 5e7 N/m machine,
    # towards the thesis's Instron Al 2.01e8 (n 1.27): measured k = 8.2e7, n = 1.11
    _, r = _pipeline('al', 5e7)
    assert 3e7 < r.k < 1e9 and r.n < 1.3


# ------------------------------------------------------------------------------------------ linearisation
def test_secant_tangent_and_deformation():
    f = np.array([50.0, 300.0])
    k_nl, n = sc.POWER_LAWS['pl_half_sphere']
    d = fit.power_law_deformation(f, k_nl, n)
    np.testing.assert_allclose(fit.secant_stiffness(f, k_nl, n) * d, f, rtol=1e-12)
    np.testing.assert_allclose(fit.tangent_stiffness(f, k_nl, n), n * f / d, rtol=1e-12)
    # Table C-3 first row: 50.40 N -> delta 1.59e-5 m, secant 3.17e6 N/m
    assert round_sig(fit.power_law_deformation(50.40, k_nl, n)) == 1.59e-5
    assert round_sig(fit.secant_stiffness(50.40, k_nl, n)) == 3.17e6


def test_hardware_error_thesis_example():
    # §2.11e: k = 1e6 N/m, F = 400 N (x = 0.4 mm), dx = 0.2 mm, dF = 0.5 N -> dk/k ~ 0.50
    assert fit.hardware_error(0.2e-3, 0.4e-3, 0.5, 400.0) == pytest.approx(0.50, abs=5e-3)
    with pytest.raises(ValueError):
        fit.hardware_error(1.0, 0.0, 1.0, 1.0)


# ------------------------------------------------------------------------------------------ series springs
def test_series_springs_and_percent_error():
    k_sys = fit.series_stiffness(3.46e6, 4e6)
    assert round_sig(k_sys, 2) == 1.9e6                               # §1.2 example
    assert fit.payload_from_system(k_sys, 3.46e6) == pytest.approx(4e6, rel=1e-12)
    assert fit.series_stiffness(2e6, np.inf) == 2e6
    assert np.isnan(fit.payload_from_system(3.5e6, 3.46e6))            # system stiffer than the facility
    np.testing.assert_allclose(fit.payload_from_system(np.array([1e6, 2e6]), 3.46e6),
                               [1 / (1 / 1e6 - 1 / 3.46e6), 1 / (1 / 2e6 - 1 / 3.46e6)])
    assert fit.percent_error(2.0, 2.5) == fit.percent_error(2.0, 1.5) == pytest.approx(25.0)
    assert np.isnan(fit.payload_from_system(-1.0, 3.46e6)) and np.isnan(fit.payload_from_system(np.nan, 3.46e6))
    with pytest.raises(ValueError):
        fit.payload_from_system(1e6, 0.0)
    # Table D row (Pl half-sphere, set 1, 50.40 N): k_sys 1.39e6 -> k_calc 2.33e6, |err| 26.47 % vs 3.17e6
    k_calc = fit.payload_from_system(1.39e6, sc.K_SMT)
    assert k_calc == pytest.approx(2.33e6, rel=0.02)
    assert fit.percent_error(fit.secant_stiffness(50.40, *sc.POWER_LAWS['pl_half_sphere']), k_calc) == \
        pytest.approx(26.47, abs=0.6)


def _per_level_system_stiffness(s, estimator):
    out = []
    for window in s.plateaus:
        smp = s.samples(window)
        if estimator == 'gls':
            out.append(GlobalLeastSquares().fit(smp).stiffness)
        else:
            rls = RecursiveLeastSquares(forgetting=0.98, initial_covariance=1e5,
                                        initial={'stiffness': 1e6, 'damping': 50.0})
            rls.update(smp)
            out.append(rls.estimate().stiffness)
    return np.array(out)


@pytest.mark.parametrize('estimator', ['gls', 'rls'])
@pytest.mark.parametrize('payload', PAYLOADS)
def test_series_decomposition_reproduces_payload_secant_tables(payload, estimator):
    """S2 noise-free at the Appendix C mean loads -> eq. 3.4 gives Table 3-7 / C-1 to 3 significant
    figures (measured: k_calc within 5e-5 of the exact secant; GLS 1e-11, RLS 5e-6 on k_sys)."""
    for experiment, table in ((1, TABLE_3_7), (2, TABLE_C_1)):
        s = sc.s2_staircase(payload, 100.0, experiment=experiment)
        k_sys = _per_level_system_stiffness(s, estimator)
        k_calc = fit.payload_from_system(k_sys, sc.K_SMT)
        np.testing.assert_allclose(k_calc, s.extras['ideal_payload_secant'], rtol=5e-5)
        for j, printed in enumerate(table[payload]):
            if experiment == 1 and (payload, j) in TABLE_3_7_FROM_SET_2:
                assert round_sig(k_calc[j]) != printed
                continue
            assert round_sig(k_calc[j]) == printed, (payload, experiment, j, k_calc[j], printed)
    for payload_, j in TABLE_3_7_FROM_SET_2:        # the two Table 3-7 cells are the set-2 numbers
        assert TABLE_3_7[payload_][j] == TABLE_C_1[payload_][j]


# ------------------------------------------------------------------------------------------ error propagation
def test_payload_error_propagation_first_order_and_monte_carlo():
    k_c, k_f = 1e7, sc.K_SMT
    # §6.3: for the Al half-sphere (k_c ~ 1e7) a 5 % system error becomes ~20 %
    assert fit.payload_relative_error(k_c, k_f, 0.05) == pytest.approx(0.1945, abs=1e-3)
    # first order matches the exact subtraction for small perturbations (signs included)
    k_sys = fit.series_stiffness(k_c, k_f)
    for e_sys, e_f in ((1e-4, 0.0), (0.0, 1e-4), (1e-4, -1e-4)):
        exact = fit.payload_from_system(k_sys * (1 + e_sys), k_f * (1 + e_f)) / k_c - 1
        assert exact == pytest.approx(fit.payload_relative_error(k_c, k_f, e_sys, e_f), rel=2e-3)
    # Monte Carlo: 1 % independent errors -> spread matches the first-order RSS within 5 %
    mc = fit.payload_from_system_mc(k_sys, k_f, 0.01, 0.01, draws=200_000, seed=1)
    assert mc.unresolved_fraction == 0.0
    assert mc.median == pytest.approx(k_c, rel=2e-3)
    assert mc.rel_std == pytest.approx(fit.payload_relative_std(k_c, k_f, 0.01, 0.01), rel=0.05)
    # 20 % errors: strongly skewed, and some draws have k_sys >= k_f (subtraction breaks down)
    wide = fit.payload_from_system_mc(k_sys, k_f, 0.2, 0.0, seed=2)
    assert wide.unresolved_fraction > 0.01 and wide.mean > wide.median


# ------------------------------------------------------------------------------------------ facility line fit
def test_facility_line_fit():
    rng = np.random.default_rng(0)
    x = np.repeat(np.arange(50.0, 251.0, 50.0) / 3.46e6, 200) + 1e-4     # unknown datum offset
    f = 3.46e6 * (x - 1e-4) + rng.normal(0.0, 2.4, x.size)
    r = fit.line_fit(x, f)
    assert r.ok and abs(r.slope - 3.46e6) < 4 * r.slope_std
    assert r.intercept == pytest.approx(-346.0, abs=4 * r.slope_std * 1e-4 + 1.0)
    assert r.rmse == pytest.approx(2.4, rel=0.05) and r.r_squared > 0.998
    exact = fit.line_fit([0.0, 1e-5, 2e-5], [0.0, 35.0, 70.0])
    assert exact.slope == pytest.approx(3.5e6) and exact.rmse == pytest.approx(0.0, abs=1e-9)
    assert exact.r_squared == pytest.approx(1.0)
    assert not fit.line_fit([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]).ok


# ------------------------------------------------------------------------------------------ Hunt-Crossley
def test_hunt_crossley_two_stage():
    k, n, lam = 7e7, 1.3, 5e7                                   # lam / k = 0.71 s/m
    x_hold = np.repeat(np.linspace(2e-5, 1e-4, 5), 100)           # quasi-static holds, xd = 0
    t = np.arange(2000) * 1e-3
    x_dyn = 1e-4 * (1.0 + 0.5 * np.sin(2 * np.pi * 5.0 * t))
    xd_dyn = 1e-4 * 0.5 * 2 * np.pi * 5.0 * np.cos(2 * np.pi * 5.0 * t)
    x = np.concatenate((x_hold, x_dyn))
    xd = np.concatenate((np.zeros(x_hold.size), xd_dyn))
    f = k * x ** n + lam * x ** n * xd
    r = fit.fit_hunt_crossley(x, xd, f, static=np.arange(x.size) < x_hold.size)
    assert r.ok and r.k == pytest.approx(k, rel=1e-8) and r.n == pytest.approx(n, abs=1e-9)
    assert r.damping == pytest.approx(lam, rel=1e-8)
    r = fit.fit_hunt_crossley(x, xd, f, rate_threshold=1e-5)     # also catches a few turning points
    assert r.ok and r.n == pytest.approx(n, abs=1e-3) and r.damping == pytest.approx(lam, rel=0.01)
    frozen = fit.fit_hunt_crossley(x_hold, np.zeros(x_hold.size), k * x_hold ** n, rate_threshold=1e-5)
    assert not frozen.ok and 'damping' in frozen.reason and frozen.k == pytest.approx(k, rel=1e-8)
    with pytest.raises(ValueError):
        fit.fit_hunt_crossley(x, xd, f)
