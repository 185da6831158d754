"""Issue 3 acceptance on S2 (stiff quasi-static staircase, spec §6.1) for all nine algorithms:
noise-free per-level stiffness equals the ideal system secant stiffness within 0.5 %, damping is reported
as not identifiable, and the series decomposition (eq. 3.4) of every algorithm's per-level stiffness
returns the thesis's payload secant stiffness (Table 3-7 / C-1) to 3 significant figures.
At 100 Hz and 1 kHz."""
import numpy as np
import pytest

from contact_estimation.single_point import fit
from contact_estimation.single_point import scenarios as sc
from contact_estimation.single_point.algorithms import ALGORITHMS, run_all

from test_fit import TABLE_3_7, TABLE_C_1, TABLE_3_7_FROM_SET_2, round_sig

TIME_DOMAIN = ('rls', 'ils', 'ia', 'kalman', 'gls')
THESIS_START = {'initial': {'stiffness': 1e6, 'damping': 50.0}}
# Changed from the thesis: IA with the printed gain diag(2e9, 2.5e3) has a time constant 1/(Gamma_k x^2)
# ~ 1.25 s on the 50 N Al level (x ~ 2e-5 m), whatever the sample rate, longer than the settled window,
# so it ends 10-18 % off. The spec's robust variant (normalised gradient) with Gamma_k = 1e12 converges.
OPTIONS = {'rls': THESIS_START, 'ils': THESIS_START, 'kalman': THESIS_START,
           'ia': {**THESIS_START, 'normalised': True, 'gain': (1e12, 1e4)}}


def per_level(scenario):
    """{algorithm: [per-level estimate]}, each algorithm run on each settled plateau window."""
    out = {name: [] for name in ALGORITHMS}
    for window in scenario.plateaus:
        for name, est in run_all(scenario.samples(window), options=OPTIONS).items():
            out[name].append(est)
    return out


@pytest.mark.parametrize('rate', [100.0, 1000.0])
@pytest.mark.parametrize('payload', ['al_half_sphere', 'pl_half_sphere', 'pl_cube'])
def test_every_algorithm_returns_the_ideal_secant_stiffness(payload, rate):
    s = sc.s2_staircase(payload, rate)
    results = per_level(s)
    for name, levels in results.items():
        k = np.array([e.stiffness for e in levels])
        err = np.abs(k / s.ideal_secant - 1)
        assert err.max() < 0.005, (name, payload, rate, err)
        assert all(np.isfinite(e.covariance).all() for e in levels)
        if name in TIME_DOMAIN:
            assert not any(e.is_identifiable('damping') for e in levels), name


@pytest.mark.parametrize('payload', sorted(sc.POWER_LAWS))
def test_series_decomposition_of_every_algorithm_matches_the_thesis_tables(payload):
    for experiment, table in ((1, TABLE_3_7), (2, TABLE_C_1)):
        s = sc.s2_staircase(payload, 100.0, experiment=experiment)
        results = per_level(s)
        for name, levels in results.items():
            k_sys = np.array([e.stiffness for e in levels])
            k_payload = fit.payload_from_system(k_sys, sc.K_SMT)
            for j, printed in enumerate(table[payload]):
                if experiment == 1 and (payload, j) in TABLE_3_7_FROM_SET_2:
                    continue                   # a copy error in Table 3-7 (see test_fit.py)
                assert round_sig(k_payload[j]) == printed, (name, payload, experiment, j, k_payload[j])
