"""contact-dynamics simulate / run-bag / info as a user runs them: files, report, errors."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from contact_dynamics_common.bag import BagReader
from contact_dynamics_common.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / 'config' / 'contact_estimator.yaml')


@pytest.fixture(scope='module')
def sim_bag(tmp_path_factory):
    bag = tmp_path_factory.mktemp('sim') / 'bag'
    assert main(['simulate', 'contact-1dof', '--out', str(bag), '--duration', '8', '--rate', '500',
                 '--seed', '5']) == 0
    return bag


def test_simulated_bag_is_a_rosbag2_with_truth(sim_bag):
    meta = yaml.safe_load((sim_bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert meta['storage_identifier'] == 'mcap' and meta['message_count'] == 8000
    truth = yaml.safe_load((sim_bag / 'truth.yaml').read_text())
    assert truth['stiffness'] == 4800.0 and truth['damping'] == 200.0
    reader = BagReader(sim_bag)
    assert reader.custom_data['ground_truth']['stiffness'] == 4800.0
    assert reader.topics == {'/wrench': 'geometry_msgs/msg/WrenchStamped',
                             '/joint_states': 'sensor_msgs/msg/JointState'}


def test_run_bag_writes_estimates_summary_and_plots(sim_bag, tmp_path, capsys):
    out, report = tmp_path / 'est', tmp_path / 'report'
    assert main(['run-bag', str(sim_bag), '--config', CONFIG, '--out', str(out), '--report', str(report),
                 '--quiet']) == 0
    printed = capsys.readouterr().out
    assert 'x real time' in printed and '/contact_estimator/rls/estimate: k = ' in printed
    summary = yaml.safe_load((report / 'summary.yaml').read_text())
    topics = summary['topics']
    assert set(topics) == {'/contact_estimator/estimate', '/contact_estimator/rls/estimate',
                           '/contact_estimator/gls/estimate'}
    for topic, entry in topics.items():
        last = entry['last']
        assert entry['type'] == 'contact_dynamics/msg/ContactEstimate' and entry['message_count'] > 100
        assert last['valid'] is True and last['header.frame_id'] == 'ft_sensor'
        assert abs(last['stiffness'] / 4800 - 1) < 0.01 and abs(last['damping'] / 200 - 1) < 0.05
        assert last['parameter_names'] == ['stiffness', 'damping'] and len(last['covariance']) == 4
    assert summary['ground_truth']['stiffness'] == 4800.0
    for png in ('contact_estimator__rls__estimate.png', 'contact_estimator__gls__estimate.png'):
        assert (report / png).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    reader = BagReader(out)
    assert reader.message_counts['/contact_estimator/rls/estimate'] == topics['/contact_estimator/rls/estimate'][
        'message_count']
    last = list(reader.messages(['/contact_estimator/gls/estimate']))[-1][3]
    assert last.stiffness == pytest.approx(topics['/contact_estimator/gls/estimate']['last']['stiffness'])
    assert np.all(np.isfinite(list(last.covariance)))


def test_run_bag_refuses_a_bad_config_with_the_reason(sim_bag, tmp_path, capsys):
    cfg = tmp_path / 'bad.yaml'
    cfg.write_text(yaml.safe_dump({'contact_estimator': {'ros__parameters': {'rls': {'forgetting_factor': 1.5}}}}))
    assert main(['run-bag', str(sim_bag), '--config', str(cfg), '--quiet']) == 2
    assert "'rls.forgetting_factor' = 1.5 is outside its range (0, 1]" in capsys.readouterr().err
    cfg.write_text(yaml.safe_dump({'contact_estimator': {'ros__parameters': {'wrench_topic': '/ft/wrench'}}}))
    assert main(['run-bag', str(sim_bag), '--config', str(cfg), '--quiet']) == 2
    assert 'input topic /ft/wrench is not in the bag' in capsys.readouterr().err
    assert main(['run-bag', str(tmp_path / 'nothing'), '--config', CONFIG, '--quiet']) == 2


def test_console_script_info(sim_bag):
    exe = Path(sys.executable).with_name('contact-dynamics')
    out = subprocess.run([str(exe), 'info', str(sim_bag)], capture_output=True, text=True, check=True).stdout
    assert '/wrench' in out and '4000 msgs' in out and 'ground_truth' in out
