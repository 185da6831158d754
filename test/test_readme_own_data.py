"""README "Your own data and robots" (issue 17): its commands run as written and print what it quotes.

Every line of the section's bash block runs from the checkout (``/tmp/`` moved into a temporary directory),
``contact-dynamics`` through the command line's ``main`` and ``python FILE`` through runpy, in this process
(one interpreter start instead of nine). A ``#   `` comment line under a command quotes that command's output:
each quoted piece (split at ``...``) must appear in what the command printed. Beyond the quotes, the results
are checked against what the test knows independently:

* the sled bag of ``examples/my_unit/make_sled_bag.py`` is simulated with k = 2e4 N/m, b = 17.32 N*s/m,
  mu = 0.15 (the estimator's own contact law): multipoint-estimate's summary equals them to 1e-9 without any
  truth in the bag;
* the rover: run-bag's last indicator equals the simulator's truth.yaml (t_c to 1e-9) and used the
  hypothesis's contact_wheels, on the URDF whose rockers and bogies are fixed joints (unfixed by the role map);
* the hexapod: every base parameter within 0.1 % of truth.yaml, read through ``--truth``.
The real recordings are needed (``../shared/data/real``); without them the test is skipped.
"""
from __future__ import annotations

import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / 'shared' / 'data' / 'real'
pytestmark = pytest.mark.skipif(not (REAL / 'sea_13').is_dir(), reason='real recordings not present')


def section_commands() -> list[tuple[str, list[str]]]:
    """(command, [quoted output pieces]) of the section's bash block."""
    text = (ROOT / 'README.md').read_text()
    section = text.split('\n## Your own data and robots\n', 1)[1].split('\n## ', 1)[0]
    block = re.search(r'^```bash\n(.*?)^```', section, re.S | re.M).group(1)
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith('#   '):
            assert out, 'an output quote before any command'
            out[-1][1].extend(p.strip() for p in line[4:].split('...') if p.strip())
        elif line.strip() and not line.startswith('#'):
            out.append((line.split('  #', 1)[0].strip(), []))
    return out


def test_section_lists_a_command_per_topic():
    cmds = ' '.join(c for c, _ in section_commands())
    for needle in ('contact-compare ../shared/data/real/sea_', 'impedance-profile ../shared/data/real/topre',
                   'multipoint-estimate', 'rover-approach', '--contact-wheels', 'pkm-identify', '--truth'):
        assert needle in cmds, needle


def test_readme_commands_run_and_print_what_the_readme_quotes(tmp_path, capsys, monkeypatch):
    from contact_dynamics_common.cli import main as cli_main
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv('MPLBACKEND', 'Agg')
    for command, quotes in section_commands():
        argv = shlex.split(command.replace('/tmp/', f'{tmp_path}/'))
        if argv[0] == 'contact-dynamics':
            rc = cli_main(argv[1:])
        else:
            assert argv[0] == 'python', command
            monkeypatch.setattr(sys, 'argv', argv[1:])
            runpy.run_path(argv[1], run_name='__main__')
            rc = 0
        printed = capsys.readouterr()
        assert rc == 0, f'{command}\n{printed.out[-2000:]}\n{printed.err[-2000:]}'
        for piece in quotes:
            assert piece in printed.out, f'{command}: README quotes {piece!r}, the command printed\n{printed.out}'

    # multi-point: no truth anywhere in the bag; the estimate equals the simulated contact law
    assert not (tmp_path / 'sled_bag' / 'truth.yaml').exists()
    est = yaml.safe_load((tmp_path / 'sled' / 'summary.yaml').read_text())
    values = {k: est[k] for k in ('stiffness', 'damping', 'friction')}
    assert values == pytest.approx({'stiffness': 2e4, 'damping': 17.32, 'friction': 0.15}, rel=1e-9), est
    assert est['valid'] is True

    # rover: run-bag on the fixed-rocker URDF (unfixed by the role map) equals the simulator's truth, with the
    # hypothesis's contact wheel
    truth = yaml.safe_load((tmp_path / 'rover' / 'truth.yaml').read_text())
    summary = yaml.safe_load((tmp_path / 'rover_report' / 'summary.yaml').read_text())
    last = summary['topics']['/impact_indicator/impact_indicator']['last']
    assert truth['contact_wheels'] == last['contact_wheels'] == ['front_left']
    assert last['t_c'] == pytest.approx(truth['t_c'], rel=1e-9) and last['valid'] is True

    # hexapod: every base parameter identified within 0.1 % of the truth file
    est = yaml.safe_load((tmp_path / 'hex_report' / 'estimate.yaml').read_text())
    truth = yaml.safe_load((tmp_path / 'hex' / 'truth.yaml').read_text())['ground_truth']
    rows = {r['name']: r for r in est['rows']}
    for name in ('m_e', 'm_b', 'm_p', 'Ixxp', 'Iyyp', 'Izzp', 'Ix_s', 'Iz_s'):
        assert rows[name]['flag'] == 'identified', rows[name]
        assert abs(rows[name]['estimate'] / truth[name] - 1) <= 1e-3, (name, rows[name], truth[name])
