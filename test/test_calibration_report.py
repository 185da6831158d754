"""The calibration runner's statistics: RMS z, Wilson intervals, pooled rows, coverage status, parallel == serial.

A synthetic family publishes value = truth + s * sigma * N(0, 1) with sigma stated: s = 1 is an honest sigma
(coverage of +-2 sigma 95.4 %, RMS z 1), s = 0.5 a conservative one (coverage 99.99 %), s = 2 an optimistic one.
"""
import math

import numpy as np
import pytest

from contact_dynamics_common.trust.calibration import (Outcome, Report, coverage_status, format_report,
                                                       run_families_parallel, run_family, wilson_interval)


def _gaussian_family(scale: float, per_draw: int = 50):
    def draw(rng: np.random.Generator) -> list[Outcome]:
        truth = 10.0 ** rng.uniform(-2, 4, per_draw)
        sigma = truth * 10.0 ** rng.uniform(-4, -1, per_draw)
        value = truth + scale * sigma * rng.standard_normal(per_draw)
        return [Outcome('est', 'k', float(v), float(s), float(t), valid=True, good_data=True)
                for v, s, t in zip(value, sigma, truth)]
    return draw


def honest(rng):
    """Registry-style target for the worker processes (test/ is on sys.path under pytest)."""
    return _gaussian_family(1.0, per_draw=5)(rng)


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=2e-4)        # no event in 20: up to 16 % possible
    lo, hi = wilson_interval(1, 20)
    assert lo == pytest.approx(0.0089, abs=2e-4) and hi == pytest.approx(0.2361, abs=2e-4)
    lo, hi = wilson_interval(40, 40)
    assert hi == 1.0 and lo == pytest.approx(0.9124, abs=2e-4)         # 100 % of 40 is still consistent with 95 %
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


@pytest.mark.parametrize('scale, status, rms', [(1.0, 'in band', 1.0), (0.5, 'above', 0.5), (2.0, 'below', 2.0)])
def test_pooled_rates_tell_honest_conservative_and_optimistic_sigma(scale, status, rms):
    report = Report(runs=40, seed=3)
    run_family('synthetic/gauss', _gaussian_family(scale), 40, 3, report)      # 2000 estimates
    (cell,) = report.pooled().values()
    assert cell.n == 2000 and cell.fit_valid == 2000
    assert cell.rms_z == pytest.approx(rms, rel=0.06)
    assert coverage_status(cell.covered2, cell.fit_valid) == status
    expected_cw = 2 * (1 - 0.5 * (1 + math.erf(3 / scale / math.sqrt(2))))     # P(|z| > 3)
    lo, hi = wilson_interval(cell.confident_wrong, cell.n)
    assert lo <= expected_cw <= hi or abs(cell.confident_wrong_rate - expected_cw) < 0.004
    text = format_report(report)
    assert 'pooled per package and estimator' in text and status in text
    pooled = report.as_dict()['pooled'][0]
    assert pooled['package'] == 'synthetic' and pooled['coverage_status'] == status


def test_parallel_draws_give_the_serial_report():
    serial = Report(runs=6, seed=5)
    run_family('synthetic/honest', honest, 6, 5, serial)
    parallel = Report(runs=6, seed=5)
    run_families_parallel({'synthetic/honest': 'test_calibration_report:honest'}, 6, 5, parallel, jobs=2)
    assert not parallel.errors
    a, b = serial.as_dict(), parallel.as_dict()
    assert a['rows'] == b['rows'] and a['pooled'] == b['pooled']
