"""contact-dynamics batch: run-bag over many bags on a 2-worker local Dask cluster.

Ground truth: simulated 1-DOF Kelvin-Voigt bags with different (k, b); every row must equal a single
run-bag of that bag (same code on a worker process: identical to 1e-12), the estimates must be near the
truth of that bag (1 % k, 5 % b), and a missing or corrupt bag is a failed row that does not stop the others.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import yaml

from contact_dynamics_common.cli.batch import expand_bags, parameter_rows, run_batch, write_report
from contact_dynamics_common.cli import main as cli_main
from contact_dynamics_common.cli import run_bag
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config' / 'contact_estimator.yaml'
TRUTHS = [(3000.0, 120.0), (4800.0, 200.0), (8000.0, 300.0)]


@pytest.fixture(scope='module')
def bags(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp('fleet')
    out = [write_bag(KelvinVoigt1Dof(stiffness=k, damping=b, duration=4.0, rate=500.0, seed=i + 1), root / f'trial{i}')
           for i, (k, b) in enumerate(TRUTHS)]
    corrupt = root / 'trial_corrupt'
    corrupt.mkdir()
    (corrupt / 'trial_corrupt_0.mcap').write_bytes(b'\x00not an mcap file at all\xff' * 40)
    return out + [corrupt]


@pytest.fixture(scope='module')
def batch(bags, tmp_path_factory):
    order = [str(bags[0]), str(bags[-1].parent / 'no_such_bag'), str(bags[3]), str(bags[1]), str(bags[2])]
    result = run_batch(order, CONFIG, workers=2, progress=False)
    report = tmp_path_factory.mktemp('report')
    paths = write_report(result, report, CONFIG)
    return order, result, report, paths


def test_every_row_equals_a_single_run_bag(bags, batch):
    order, result, _, _ = batch
    assert result.workers == 2 and '127.0.0.1' in result.cluster
    assert [r['bag'] for r in result] == order                     # rows in the order of the bags
    rows = {r['bag']: r for r in result}
    for bag, (k, b) in zip(bags[:3], TRUTHS):
        row = rows[str(bag)]
        assert row['ok'], row['error']
        assert row['truth']['stiffness'] == k and row['truth']['damping'] == b
        single, _, _ = run_bag(str(bag), str(CONFIG), progress=False)
        assert set(row['topics']) == set(single.outputs)
        for topic, items in single.outputs.items():
            log_ns, fields = items[-1]
            got = row['topics'][topic]
            assert got['log_ns'] == log_ns and got['messages'] == len(items)
            assert got['valid'] == fields['valid'] and got['reason'] == fields['status']
            expected = parameter_rows(fields)
            assert [p['name'] for p in got['parameters']] == [p['name'] for p in expected] == ['stiffness', 'damping']
            for g, e in zip(got['parameters'], expected):
                assert g['value'] == pytest.approx(e['value'], rel=1e-12)
                assert g['sigma'] == pytest.approx(e['sigma'], rel=1e-12) and g['sigma'] > 0
        est = {p['name']: p['value'] for p in row['topics']['/contact_estimator/gls/estimate']['parameters']}
        assert abs(est['stiffness'] / k - 1) < 0.01 and abs(est['damping'] / b - 1) < 0.05, (k, b, est)


def test_missing_and_corrupt_bags_are_failed_rows(batch):
    order, result, _, _ = batch
    rows = {r['bag']: r for r in result}
    missing, corrupt = rows[order[1]], rows[order[2]]
    for row in (missing, corrupt):
        assert not row['ok'] and row['error'] and not row['topics'], row
    assert 'not found' in missing['error'] or 'No such' in missing['error'], missing['error']
    assert sum(r['ok'] for r in result) == 3


def test_table_plot_and_summary_exist(batch):
    order, result, report, paths = batch
    with open(paths['table'], newline='') as f:
        table = list(csv.DictReader(f))
    failed = [t for t in table if t['status'] == 'failed']
    assert {t['bag'] for t in failed} == {order[1], order[2]} and all(t['error'] for t in failed)
    ok = [t for t in table if t['status'] == 'ok']
    assert len(ok) == 3 * 3 * 2                                      # 3 bags x 3 topics x (k, b)
    for t in ok:
        assert t['truth'] and math.isfinite(float(t['value'])) and float(t['sigma']) > 0
        assert abs(float(t['rel_error'])) < 0.05, t
    pngs = sorted(p.name for p in report.glob('*.png'))
    assert pngs == ['contact_estimator__estimate.png', 'contact_estimator__gls__estimate.png',
                    'contact_estimator__rls__estimate.png']
    assert all((report / p).stat().st_size > 5000 for p in pngs)
    summary = paths['summary'].read_text()
    assert '5 bags, 3 ok, 2 failed' in summary and 'trial_corrupt' in summary and '(truth 4800' in summary
    nested = yaml.safe_load(paths['yaml'].read_text())
    assert len(nested['bags']) == 5 and nested['workers'] == 2


def test_expand_bags_globs_and_keeps_unmatched(bags):
    root = bags[0].parent
    found = expand_bags([str(root / 'trial[0-2]'), str(bags[1]), str(root / 'nothing*')])
    assert found == [str(bags[0]), str(bags[1]), str(bags[2]), str(root / 'nothing*')]


def test_cli_batch_exit_code_and_files(bags, tmp_path, capsys):
    code = cli_main(['batch', str(bags[0]), str(bags[3]), '--config', str(CONFIG), '--report', str(tmp_path),
                     '--workers', '1', '--quiet'])
    out = capsys.readouterr().out
    assert code == 1 and '1 failed' in out and 'trial_corrupt' in out, out
    assert (tmp_path / 'batch.csv').is_file() and (tmp_path / 'summary.md').is_file()


def test_an_existing_cluster_by_scheduler_address(bags, batch):
    """--scheduler: the tasks go to a cluster started elsewhere (here one worker on 127.0.0.1)."""
    from contact_dynamics_common.cli.batch import local_cluster

    _, result, _, _ = batch
    with local_cluster(1) as cluster:
        # network rule: everything on 127.0.0.1, the scheduler's HTTP server too (no dashboard, not port 8787)
        http = [s.getsockname() for s in cluster.scheduler.http_server._sockets.values()]
        assert http and all(h == '127.0.0.1' and p != 8787 for h, p in http), http
        assert cluster.scheduler_address.startswith('tcp://127.0.0.1:')
        assert all(w.startswith('tcp://127.0.0.1:') for w in cluster.scheduler_info['workers'])
        remote = run_batch([str(bags[1])], CONFIG, scheduler=cluster.scheduler_address, progress=False)
    assert remote.cluster == cluster.scheduler_address and remote.workers == 1
    assert remote[0]['ok'] and remote[0]['topics'] == next(r for r in result if r['bag'] == str(bags[1]))['topics']


def test_parameter_rows_read_contact_and_parameter_estimates():
    contact = {'parameter_names': ['stiffness', 'damping'], 'stiffness': 4800.0, 'damping': 200.0,
               'covariance': [4.0, 0.1, 0.1, 0.25]}
    generic = {'names': ['m_e', 'f_c'], 'values': [1.79, 3.5], 'covariance': [-1.0, 0.0, 0.0, 0.0]}
    assert parameter_rows(contact) == [{'name': 'stiffness', 'value': 4800.0, 'sigma': 2.0},
                                       {'name': 'damping', 'value': 200.0, 'sigma': 0.5}]
    rows = parameter_rows(generic)
    assert [(r['name'], r['value']) for r in rows] == [('m_e', 1.79), ('f_c', 3.5)]
    assert all(math.isnan(r['sigma']) for r in rows)                   # covariance unknown: element 0 = -1
    assert parameter_rows({'valid': True}) == []
