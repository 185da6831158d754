"""contact-compare: all nine single-point estimators on one bag, thesis-style report (issue 3 acceptance)."""
from pathlib import Path

import numpy as np
import pytest
import yaml

from contact_dynamics_common.cli import main
from contact_estimation.single_point import scenarios as sc
from contact_estimation.single_point.algorithms import ALGORITHMS
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag, write_scenario_bag

PNG = b'\x89PNG\r\n\x1a\n'


def test_staircase_bag_gives_per_plateau_tables_for_all_nine(tmp_path, capsys):
    scenario = sc.s2_staircase('al_half_sphere', 200.0)
    bag = write_scenario_bag(scenario, tmp_path / 's2')
    report = tmp_path / 'report'
    assert main(['contact-compare', str(bag), '--report', str(report)]) == 0
    printed = capsys.readouterr().out
    assert '6 window(s) (plateaus)' in printed
    summary = yaml.safe_load((report / 'summary.yaml').read_text())
    assert summary['segmentation'] == 'plateaus' and len(summary['windows']) == 6
    truth = yaml.safe_load((bag / 'truth.yaml').read_text())
    for window, ideal, load in zip(summary['windows'], truth['ideal_secant'], truth['level_loads']):
        assert window['mean_load'] == pytest.approx(load, rel=1e-3)
        assert set(window['algorithms']) == set(ALGORITHMS)
        verdict = window['verdict']
        assert verdict['consensus_stiffness'] == pytest.approx(ideal, rel=5e-3)
        assert 'damping not identifiable' in verdict['damping_note'] and verdict['damping'] is None
        for name, entry in window['algorithms'].items():
            if entry['valid']:
                assert entry['stiffness'] == pytest.approx(ideal, rel=5e-3), name
        assert len(verdict['trusted']) >= 8
    md = (report / 'comparison.md').read_text()
    assert md.count('| algorithm | k [N/m]') == 6 and '**Verdict.**' in md
    for png in ('force_displacement.png', 'convergence.png', 'stiffness_by_window.png'):
        assert (report / png).read_bytes()[:8] == PNG


def test_persistently_excited_bag_trusts_damping(tmp_path, capsys):
    bag = write_bag(KelvinVoigt1Dof(duration=10.0, rate=500.0, seed=2), tmp_path / 's1')
    report = tmp_path / 'report'
    assert main(['contact-compare', str(bag), '--report', str(report), '--segment', 'whole']) == 0
    summary = yaml.safe_load((report / 'summary.yaml').read_text())
    (window,) = summary['windows']
    verdict = window['verdict']
    assert verdict['consensus_stiffness'] == pytest.approx(4800, rel=0.01)
    assert verdict['damping'] == pytest.approx(200, rel=0.05)
    assert summary['ground_truth']['stiffness'] == 4800.0
    ia = window['algorithms']['ia']                 # thesis gain on a soft contact: flagged, not folded in
    assert not ia['valid'] and 'ia' not in verdict['trusted'] and 'ia' in verdict['distrusted']
    valid = {n: e for n, e in window['algorithms'].items() if e['valid']}
    assert len(valid) >= 8
    assert all(np.isfinite(e['stiffness_std']) and e['stiffness_std'] > 0 for e in valid.values())


def test_errors_are_one_line_with_exit_code_2(tmp_path, capsys):
    assert main(['contact-compare', str(tmp_path / 'missing')]) == 2
    assert 'contact-dynamics contact-compare: error' in capsys.readouterr().err


def test_scenario_command_writes_bags_with_truth(tmp_path):
    out = tmp_path / 's5'
    assert main(['simulate', 'scenario', 'S5', '--out', str(out), '--rate', '1000']) == 0
    truth = yaml.safe_load((Path(out) / 'truth.yaml').read_text())
    assert truth['scenario'] == 'S5' and truth['damping'] == 2000.0 and truth['stiffness'] == 2e6
