"""The seeded short form of the single-point randomized calibration (``contact-dynamics calibrate --check``
semantics): a few draws per family through the node's ContactPipeline; fails when a cell's confident-wrong rate
(valid / identified with the truth outside 3 sigma) exceeds the 1 % goal, i.e. when any drawn estimate is.

The full figures (20+ runs per family) are a benchmark: ``contact-dynamics calibrate --family 'single_point/*'``,
recorded in doc/trust/single_point.md.
"""
import pytest

from contact_dynamics_common.trust.calibration import Report, format_report, run_family
from contact_estimation.single_point import calibration_families as cf

RUNS = 4
SEED = 14

FAMILIES = ['kv_multisine', 'kv_friction', 'kv_omitted_mass', 'kvm_mass', 'compare_batch', 'kv_hysteresis']


@pytest.mark.parametrize('family', FAMILIES)
def test_seeded_calibration_has_no_confident_wrong_estimate(family):
    report = Report(RUNS, SEED)
    run_family(f'single_point/{family}', getattr(cf, family), RUNS, SEED, report)
    text = format_report(report)
    assert not report.errors, text
    assert report.cells, text
    # every estimator of the node (or contact-compare's batch ones) is reported for every draw
    expected = cf.BATCH if family == 'compare_batch' else cf.ALGORITHMS
    assert {est for (_, est, _) in report.cells} == set(expected), text
    assert not report.violations(), text


def test_model_consistent_family_covers_and_accepts_good_data():
    """On model-consistent draws the valid stiffness estimates cover the truth at 2 sigma and well-excited
    data are not refused by the least-squares estimators. IA's thesis gains do not adapt its damping on these
    draws (under 1 adaptation time constant, ``adaptive.adaptation_excited``): its 'not converged' refusals are
    refusals of data that do not excite it, not false refusals; a draw that excites it and is refused would count."""
    report = Report(8, SEED)
    run_family('single_point/kv_multisine', cf.kv_multisine, 8, SEED, report)
    for (_, est, par), cell in report.cells.items():
        if par == 'stiffness' and est != 'ia':
            assert cell.fit_valid and cell.covered2 >= cell.fit_valid - 1, (est, format_report(report))
        if par == 'stiffness':
            assert cell.refused_good == 0, (est, format_report(report))
