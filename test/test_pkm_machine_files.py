"""PKM machine files as a documented format (issue 17 item 6, doc/pkm_machines.md).

- a machine file with an unknown key (top level or inside ``inertia``), a wrong shape or a unit slip
  (millimetres, degrees) is refused in one line naming the file and the key: by ``load_machine`` and by the
  node at start (exit 2, no traceback);
- a machine of our own (hexagons, not the UF-like triangles; other strut names, other masses) named by a
  relative path in a params file is found beside the params file - by the node and by ``pkm-identify`` run
  from another directory - and identified from a simulated bag: every base parameter within 0.1 % of the
  values computed here from the machine file (Ix_s = Ixxb + Ixxe, Iz_s = Izzb + Izze);
- ``pkm-identify`` takes its truth column from ``truth.yaml`` beside the bag (a hand-written one in the
  12-parameter form here), then from the bag's custom_data; a truth file with a wrong unit or an unknown name
  stops it with one line (exit 2).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contact_dynamics_common.ros.env import isolated_ros_env
from pkm_identification.geometry import GeometryError, load_machine, machines_dir
from pkm_identification.report import TruthError, identify_bag, load_truth, table

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.prefix) / 'bin'

# base joints on a 0.45 m circle at 90/210/330 +- 12 deg, platform joints on a 0.25 m circle at
# 90/210/330 +- 48 deg in the platform plane, which is {P}'s x-z plane (home R = Rx(+90 deg): p = R^T p_plane)
HEXAGON = """\
name: hexagon_test
strut_names: [leg_a, leg_b, leg_c, leg_d, leg_e, leg_f]
base_joints:
  - [0.093560, 0.440166, 0.0]
  - [-0.093560, 0.440166, 0.0]
  - [-0.427975, -0.139058, 0.0]
  - [-0.334415, -0.301109, 0.0]
  - [0.334415, -0.301109, 0.0]
  - [0.427975, -0.139058, 0.0]
platform_joints:
  - [0.185786, 0.0, -0.167283]
  - [-0.185786, 0.0, -0.167283]
  - [-0.237764, 0.0, -0.077254]
  - [-0.051978, 0.0, 0.244537]
  - [0.051978, 0.0, 0.244537]
  - [0.237764, 0.0, -0.077254]
L_B: 0.12
d_E: 0.10
gravity: [0.0, 0.0, -9.81]
home_position: [0.0, 0.0, 0.55]
home_euler_zxz: [0.0, 1.5707963267948966, 0.0]
stroke: [0.45, 0.80]
inertia: {m_e: 1.2, m_b: 3.5, m_p: 12.0, Ixxb: 0.09, Iyyb: 0.004, Izzb: 0.09, Ixxp: 0.30, Iyyp: 0.55,
          Izzp: 0.30, Ixxe: 0.012, Iyye: 0.001, Izze: 0.012}
"""
LEGS = ['leg_a', 'leg_b', 'leg_c', 'leg_d', 'leg_e', 'leg_f']


def _one_line(exc: Exception) -> str:
    text = str(exc)
    assert '\n' not in text, text
    return text


@pytest.mark.parametrize('edit, expected', [
    (('L_b', 0.12), "unknown key 'L_b'"),                                   # misspelt L_B: never ignored
    (('inertia', 'Ixyp'), "unknown key 'inertia.Ixyp'"),                    # products of inertia: not a field
    (('base_joints', [[0.1, 0.2]] * 6), "'base_joints' must have shape (6, 3) (m), got (6, 2)"),
    (('base_joints', [[93.56, 440.166, 0.0]] * 6), 'millimetres?'),
    (('home_euler_zxz', [0.0, 90.0, 0.0]), 'degrees?'),
    (('L_B', '0.12 m'), "'L_B' must be a finite number in m, got '0.12 m'"),
    (('stroke', [0.65, 0.80]), "does not contain the home length of leg_a (0.6209 m"),
    (('d_E', None), "missing key 'd_E'"),
])
def test_bad_machine_file_is_refused_in_one_line_naming_file_and_key(tmp_path, edit, expected):
    doc = yaml.safe_load(HEXAGON)
    key, value = edit
    if key == 'inertia':
        doc['inertia'][value] = 0.01
    elif value is None:
        del doc[key]
    else:
        doc[key] = value
    path = tmp_path / 'bad.yaml'
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(GeometryError) as info:
        load_machine(str(path))
    text = _one_line(info.value)
    assert text.startswith(f"machine file '{path}': ") and expected in text, text


def test_shipped_machines_and_our_own_load(tmp_path):
    for f in sorted(machines_dir().glob('*.yaml')):
        assert load_machine(f.stem).name == f.stem
    (tmp_path / 'hexagon.yaml').write_text(HEXAGON)
    m = load_machine('hexagon.yaml', base_dir=tmp_path)      # relative: beside base_dir, not the cwd
    assert m.strut_names == tuple(LEGS) and m.stroke == (0.45, 0.80)
    with pytest.raises(GeometryError, match=r"machine file 'hexagon.yaml' not found \(looked for "):
        load_machine('hexagon.yaml', base_dir=tmp_path / 'nowhere')


def test_commands_refuse_a_bad_machine_file_in_one_line(tmp_path, capsys):
    from contact_dynamics_common.cli import main
    bad = tmp_path / 'bad.yaml'
    bad.write_text(HEXAGON.replace('home_euler_zxz: [0.0, 1.5707963267948966, 0.0]', 'home_euler_zxz: [0, 90, 0]'))
    for argv in (['simulate', 'pkm', '--machine', str(bad), '--out', str(tmp_path / 'bag')],
                 ['pkm-excite', '--machine', str(bad)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"error: machine file '{bad}': 'home_euler_zxz' has |value| 90 > 6.28319 rad "
                            '(angles are in rad: degrees?)') and '\n' not in err, err


def _run_node(*ros_args: str, cwd: Path) -> tuple[int, str]:
    proc = subprocess.run([str(BIN / 'pkm_identifier'), '--ros-args', *ros_args], env=isolated_ros_env(),
                          cwd=cwd, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.ros
def test_node_start_refuses_unknown_key_of_a_machine_named_relative_to_its_params_file(tmp_path):
    conf, elsewhere = tmp_path / 'conf', tmp_path / 'elsewhere'
    conf.mkdir()
    elsewhere.mkdir()
    (conf / 'hexagon.yaml').write_text(HEXAGON.replace('L_B: 0.12', 'L_b: 0.12'))
    params = conf / 'params.yaml'
    params.write_text('pkm_identifier:\n  ros__parameters:\n    machine: hexagon.yaml\n'
                      f'    joint_names: {LEGS}\n')
    code, log = _run_node('--params-file', str(params), cwd=elsewhere)
    lines = [ln for ln in log.strip().splitlines() if ln.strip()]
    assert code == 2 and 'Traceback' not in log, log
    assert lines[-1].startswith('[ERROR] invalid configuration: '), lines[-1]
    assert f"machine file '{conf / 'hexagon.yaml'}': unknown key 'L_b'" in lines[-1], lines[-1]


@pytest.fixture(scope='module')
def hexagon_bag(tmp_path_factory):
    """Our machine beside a params file (prior 0.7 x CAD), a 2 s multisine bag of it simulated by the CLI."""
    from contact_dynamics_common.cli import main
    root = tmp_path_factory.mktemp('hexagon')
    conf = root / 'conf'
    conf.mkdir()
    (conf / 'hexagon.yaml').write_text(HEXAGON)
    (conf / 'params.yaml').write_text('pkm_identifier:\n  ros__parameters:\n    machine: hexagon.yaml\n'
                                      f'    joint_names: {LEGS}\n    prior_scale: 0.7\n'
                                      '    measurement_std: 0.01\n')
    bag = root / 'bag'
    assert main(['simulate', 'pkm', '--machine', str(conf / 'hexagon.yaml'), '--trajectory', 'multisine',
                 '--duration', '2', '--out', str(bag)]) in (0, None)
    return root, conf, bag


def _expected_base() -> dict:
    t = yaml.safe_load(HEXAGON)['inertia']
    return {'m_e': t['m_e'], 'm_b': t['m_b'], 'm_p': t['m_p'], 'Ixxp': t['Ixxp'], 'Iyyp': t['Iyyp'],
            'Izzp': t['Izzp'], 'Ix_s': t['Ixxb'] + t['Ixxe'], 'Iz_s': t['Izzb'] + t['Izze']}


def test_own_machine_by_relative_path_identified_offline_against_hand_written_truth(hexagon_bag, monkeypatch):
    root, conf, bag = hexagon_bag
    elsewhere = root / 'elsewhere'
    elsewhere.mkdir(exist_ok=True)
    monkeypatch.chdir(elsewhere)              # hexagon.yaml is not in the working directory
    assert not (elsewhere / 'hexagon.yaml').exists()
    # a user's truth.yaml in the machine file's 12-parameter form (Ix_s, Iz_s derived by the reader)
    inertia = yaml.safe_load(HEXAGON)['inertia']
    (bag / 'truth.yaml').write_text(yaml.safe_dump({'ground_truth': inertia, 'scenario': 'hand-written'}))
    items, truth, result, status = identify_bag(str(bag), str(conf / 'params.yaml'))
    assert truth.source == str(bag / 'truth.yaml')
    expected = _expected_base()
    assert truth == pytest.approx(expected, rel=1e-12)
    final = items[-1][1]
    assert final['names'] == list(expected) and final['valid'], final['status']
    for row in table(final, truth):
        assert row['truth'] == pytest.approx(expected[row['name']], rel=1e-12)
        assert abs(row['estimate'] / expected[row['name']] - 1) < 1e-3, row        # from a prior 30 % low
        assert abs(row['error_pct']) < 0.1, row
    # the published value moved from the prior (0.7 x CAD) to the truth: not an echo of the prior
    assert all(abs(v / expected[n] - 0.7) > 0.25 for n, v in zip(final['names'], final['values']))


def test_truth_from_custom_data_without_truth_yaml_and_bad_truth_files(hexagon_bag, tmp_path):
    _, conf, bag = hexagon_bag
    copy = tmp_path / 'bag'
    shutil.copytree(bag, copy)
    (copy / 'truth.yaml').unlink()
    from pkm_identification.report import find_truth
    from contact_dynamics_common.bag import BagReader
    truth = find_truth(copy, BagReader(str(copy)).custom_data)
    assert truth == pytest.approx(_expected_base(), rel=1e-12) and 'custom_data' in truth.source
    bad = tmp_path / 'truth.yaml'
    for doc, expected in [
            ({'ground_truth': {'m_p': 12000.0}, 'units': {'m_p': 'g'}}, "'units.m_p' = 'g': m_p is in kg"),
            ({'ground_truth': {'mass_p': 12.0}}, "unknown parameter 'ground_truth.mass_p'"),
            ({'truth': {'m_p': 12.0}}, "unknown key 'truth'"),
            ({'ground_truth': {'m_p': '12 kg'}}, "'ground_truth.m_p' = '12 kg' must be a finite number")]:
        bad.write_text(yaml.safe_dump(doc))
        with pytest.raises(TruthError) as info:
            load_truth(bad)
        text = _one_line(info.value)
        assert text.startswith(f"truth file '{bad}': ") and expected in text, text
    bad.write_text(yaml.safe_dump({'ground_truth': {'m_p': 12.0}, 'units': {'m_p': 'g'}}))
    proc = subprocess.run([str(BIN / 'contact-dynamics'), 'pkm-identify', str(copy), '--config',
                           str(conf / 'params.yaml'), '--truth', str(bad), '--report', str(tmp_path / 'rep')],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == (f"contact-dynamics pkm-identify: error: truth file '{bad}': 'units.m_p' = 'g': "
                                   'm_p is in kg'), proc.stderr


def test_simulate_writes_truth_yaml_with_units_that_pkm_identify_reads(tmp_path):
    from contact_dynamics_common.cli import main
    bag = tmp_path / 'bag'
    assert main(['simulate', 'pkm', '--trajectory', 'x', '--duration', '0.2', '--friction',
                 '--out', str(bag)]) in (0, None)
    doc = yaml.safe_load((bag / 'truth.yaml').read_text())
    assert doc['units']['m_e'] == 'kg' and doc['units']['Ix_s'] == 'kg*m^2'
    assert doc['units']['fv_1'] == 'N*s/m' and doc['units']['fc_6'] == 'N' and doc['machine'] == 'uf_like'
    truth = load_truth(bag / 'truth.yaml')
    uf = load_machine('uf_like').inertia
    assert truth['Ix_s'] == pytest.approx(uf['Ixxb'] + uf['Ixxe'], rel=1e-12) and len(truth) == 20


def test_shipped_pkm_identifier_config_equals_the_code_defaults():
    """One source: every value of config/pkm_identifier.yaml is its ParamSpec default (issue 17: prior_scale and
    measurement_std differed), and the file is what tools/gen_config.py writes."""
    from contact_dynamics_common.registry import registry
    from contact_dynamics_common.ros.params import load_params_file
    from pkm_identification.config import PARAMS
    spec = registry().offline_nodes['pkm_identifier']
    assert spec.config_values == {}
    shipped = load_params_file(str(ROOT / 'config' / 'pkm_identifier.yaml'), 'pkm_identifier')
    assert shipped == {s.name: s.default for s in PARAMS}


def test_run_bag_finds_the_machine_beside_its_params_file(hexagon_bag, tmp_path):
    """run-bag (cli.run.load_offline_nodes) takes a relative machine path beside the params file, as the node
    does; run from a directory that does not hold it."""
    _, conf, bag = hexagon_bag
    proc = subprocess.run([str(BIN / 'contact-dynamics'), 'run-bag', str(bag), '--config', str(conf / 'params.yaml'),
                           '--quiet'], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert 'm_p = 12 (identified)' in proc.stdout and 'Ix_s = 0.102 (identified)' in proc.stdout, proc.stdout
