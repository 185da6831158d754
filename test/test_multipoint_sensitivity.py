"""Geometry-mismatch sensitivity (agar_contact.md §3.9, §6.2 M4) on the M2 gravity drop: the thesis's
qualitative trends, and the table written by the tool (contact-dynamics multipoint-sensitivity).

The drop bounces and is chaotic: simulated afresh, its table differs between machines (the BLAS kernel alone
moves one cell from 7.4 % to 4.4 %). So the trends and the stored table are checked on the *recorded* drop
(test/fixtures/multipoint_sensitivity_m2/trajectory.npz, written with the tables by
tools/make_multipoint_sensitivity_fixture.py): a fixed input, so a deterministic computation on every
machine. A fresh simulation is checked only for what does not depend on the bounces (exact geometry is exact,
back shifts leave k within 1 %)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from contact_estimation.multipoint.acu import acu_geometry
from contact_estimation.multipoint.scenarios import gravity_drop, write_bag
from contact_estimation.multipoint.sensitivity import main, run_sweep

ROWS = ('No geometry modifications', '0.001 m back shift', '0.005 m back shift', '0.0003 m forward shift',
        '0.0006 m forward shift', '0.003 m forward shift', '0.001 m side shift', '1 deg rotation',
        '0.001 m size increase')
SINGLE = ('vg1', 'vg2', 'vg3', 'vg4')


def _recorded_drop():
    import importlib.util

    from ros_harness import ROOT
    spec = importlib.util.spec_from_file_location('sensitivity_fixture',
                                                  ROOT / 'tools' / 'make_multipoint_sensitivity_fixture.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_record()


@pytest.fixture(scope='module')
def sweep():
    trajectory, truth = _recorded_drop()
    payload, env = acu_geometry()
    res = run_sweep(trajectory, payload, env, truth, rows=ROWS, random=False)
    return (trajectory, truth), {(r.row, r.column): r for r in res}


def test_fresh_simulation_exact_geometry_and_back_shifts():
    """On a drop simulated now (whatever its bounces on this machine): the exact geometry gives the truth, a
    back shift (the mating surfaces unchanged) moves k by well under 1 %."""
    rec = gravity_drop('M2')
    payload, env = acu_geometry()
    res = run_sweep(rec.trajectory, payload, env, rec.truth, rows=ROWS[:3], random=False)
    for r in res:
        if r.row == 'No geometry modifications':
            assert max(r.errors) < 1e-8, (r.column, r.errors)
        else:
            assert r.errors[0] < 0.01, (r.row, r.column, r.errors)


def _k(table, row, col):
    return 100 * table[row, col].errors[0]


def test_m4_trends(sweep):
    _, t = sweep
    # exact geometry: exact up to the contact samples whose interference sign the BLAS kernel decides (a
    # kernel other than the recording one flips one sample: 2e-3 %; a fresh simulation is exact, tested above)
    assert all(_k(t, 'No geometry modifications', c) < 1e-2 for c in SINGLE + ('all',))
    # back shifts (mating unchanged): < 1 % on k, one guide or all four
    for row in ('0.001 m back shift', '0.005 m back shift'):
        assert all(_k(t, row, c) < 1.0 for c in SINGLE + ('all',)), row
    # single-guide forward shifts small up to a few tenths of a mm, tens of % at 3 mm
    assert all(_k(t, '0.0003 m forward shift', c) < 2.0 for c in SINGLE)
    assert all(_k(t, '0.0006 m forward shift', c) < 5.0 for c in SINGLE)
    assert all(_k(t, '0.003 m forward shift', c) > 20.0 for c in SINGLE)
    # 1 mm side shift, 1° rotation, 1 mm enlargement: tens of % on k, worse with all four guides
    for row in ('0.001 m side shift', '1 deg rotation', '0.001 m size increase'):
        single = [_k(t, row, c) for c in SINGLE]
        assert all(10.0 < e < 70.0 for e in single), (row, single)
        assert _k(t, row, 'all') > max(single), row
    # μ more sensitive than k: over every perturbed case the μ errors exceed the k errors in sum, and where k is
    # still nearly right (< 5 %) μ is off several times more
    cases = [r for (row, _), r in t.items() if row != 'No geometry modifications']
    ek = np.array([r.errors[0] for r in cases])
    emu = np.array([r.errors[2] for r in cases])
    assert emu.sum() > ek.sum()
    small = ek < 0.05
    assert small.sum() >= 10 and emu[small].mean() > 2 * ek[small].mean()


def test_sensitivity_tool_writes_the_tables(tmp_path):
    rec = gravity_drop('M2')
    bag = write_bag(rec, tmp_path / 'm2')
    assert main([str(bag), '--out', str(tmp_path / 'report'), '--quick']) == 0
    md = (tmp_path / 'report' / 'sensitivity.md').read_text()
    assert md.count('| Modification | v-guide 1 only') == 3
    assert '| 0.001 m back shift |' in md and '| Random v-guide modifications 6 |' in md
    data = yaml.safe_load((tmp_path / 'report' / 'sensitivity.yaml').read_text())
    base = [r for r in data['results'] if r['modification'] == 'No geometry modifications']
    assert len(base) == 5 and all(max(r['error_percent']) < 1e-6 for r in base)


def test_sweep_matches_the_stored_tables(sweep):
    """Regression fixture (agar_contact.md §6.2 M4: store the produced tables): the tables of
    test/fixtures/multipoint_sensitivity_m2/ were computed from the recorded drop beside them, so the sweep
    over that record must give them again. The input is fixed, but a perturbed guide's contact set still
    depends on interference signs near zero, so the cells move with the BLAS kernel: over the OpenBLAS
    kernels Haswell, Zen, SkylakeX, Sandybridge, Prescott and none set, the largest departure is 47 % of the
    tolerance 0.25 percentage points + 5 % of the stored error (the fresh chaotic simulation moved cells by
    3 points)."""
    from ros_harness import ROOT
    _, t = sweep
    stored = yaml.safe_load((ROOT / 'test' / 'fixtures' / 'multipoint_sensitivity_m2' / 'sensitivity.yaml')
                            .read_text())['results']
    checked = 0
    for row in stored:
        r = t.get((row['modification'], row['column']))
        if r is None:
            continue
        for j in range(3):
            ref = row['error_percent'][j]
            assert abs(100 * r.errors[j] - ref) <= 0.25 + 0.05 * ref, (row['modification'], row['column'], j)
        checked += 1
    assert checked == len(ROWS) * 5
