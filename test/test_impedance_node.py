"""impedance_profiler as a real node in its own process, fed a 4 kHz stream over DDS from this test process.

The S2 multisine of the Colton test plant (quantised x, noisy force as the joint effort) is published at
recorded speed; the node's final profile must equal the offline run of the same data through run-bag
(bit for bit: data-time blocks), and be near the truth; a wrong parameter stops the node with the reason.
"""
from __future__ import annotations


import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from contact_dynamics.msg import ImpedanceProfile  # noqa: E402
from contact_dynamics_common.cli import run_bag  # noqa: E402
from contact_estimation.impedance import scenarios as sc  # noqa: E402
from contact_estimation.impedance.simulate import EPOCH_NS, write_bag  # noqa: E402
from contact_estimation.impedance.store import load_profile  # noqa: E402

from ros_harness import (ROOT, Listener, call_service, paced, run_to_exit, set_stamp, start_node,  # noqa: E402
                         stop, wait_matched)

pytestmark = pytest.mark.ros

CONFIG = str(ROOT / 'config' / 'impedance_profiler.yaml')
TOPICS = {'/impedance_profiler/profile': ImpedanceProfile, '/diagnostics': DiagnosticArray}
FIELDS = ('mass_pos', 'mass_neg', 'damping_pos', 'damping_neg', 'stiffness_pos', 'stiffness_neg',
          'intercept_pos', 'intercept_neg', 'covariance_pos', 'kappa_neg', 'samples_pos')


def _publish(node: Node, rec, n: int) -> None:
    pub = node.create_publisher(JointState, '/joint_states', 1000)
    wait_matched([pub])
    stamps = EPOCH_NS + np.round(rec.t[:n] * 1e9).astype(np.int64)
    burst = 20                                   # 5 ms of data per burst at 4 kHz
    for b in paced(rec.t[0:n:burst]):
        for i in range(b * burst, min((b + 1) * burst, n)):
            m = JointState()
            set_stamp(m.header, stamps[i])
            m.name = ['slider']
            m.position = [float(rec.x_meas[i])]
            m.effort = [float(rec.F_meas[i])]
            pub.publish(m)


def _pipeline_count(listener, key: str) -> int:
    return int(float(listener.diag('impedance_profiler: pipeline').get(key, -1)))


def test_live_profile_at_4khz_equals_offline_run_bag(tmp_path, ros_context):
    rec = sc.simulate('S2', duration=7.0, seed=5)
    n = len(rec.t)
    bag = write_bag(rec, tmp_path / 'bag', wrench=False)
    params = tmp_path / 'params.yaml'
    # a deep input queue: a node starved of CPU for seconds on a loaded machine loses nothing
    params.write_text(yaml.safe_dump({'impedance_profiler': {'ros__parameters': {
        'joint_name': 'slider', 'force_source': 'effort', 'publish_rate': 5.0, 'min_samples': 100,
        'input_queue_size': 30000, 'save_path': str(tmp_path / 'saved.yaml')}}}))
    proc = start_node('contact_estimation.impedance.node', '--params-file', CONFIG,
                      '--params-file', str(params))
    listener = Listener(TOPICS)
    pub_node = Node('test_publisher')
    expected = -1

    def got():
        return int(listener.diag('impedance_profiler: input joint_states').get('received', 0))

    def final():
        return [m for m in listener.get('/impedance_profiler/profile') if m.samples_used == expected]

    try:
        _publish(pub_node, rec, n)
        assert listener.wait_for(lambda: got() >= n, timeout=20.0), f'{got()} of {n} messages arrived'
        result, _, _ = run_bag(str(bag), str(params), progress=False)
        off = result.outputs['/impedance_profiler/profile'][-1][1]
        expected = off['samples_used']
        assert listener.wait_for(lambda: bool(final()), timeout=20.0), 'no profile covering every sample'
        # the pipeline's counters after that profile (its flush count says whether blocks can differ)
        listener.wait_for(lambda: _pipeline_count(listener, 'samples_used') == expected, timeout=5.0)
        client = pub_node.create_client(Trigger, '/impedance_profiler/save')
        assert client.wait_for_service(timeout_sec=10.0)
        saved = call_service(pub_node, client, Trigger.Request())
    finally:
        pub_node.destroy_node()
        log = stop(proc)
        listener.close()
    live = final()[-1]
    pipe = listener.diag('impedance_profiler: pipeline')
    current = _pipeline_count(listener, 'samples_used') == expected       # counters after the final profile
    flushes = _pipeline_count(listener, 'flushes') if current else -1
    for name in FIELDS:
        # data-time blocks: the same blocks as run-bag, bit for bit, when the only flush was the one at the
        # end of the stream; a flush mid-stream (the publisher starved of CPU for 0.5 s) adds a block
        # boundary: then round-off, parameters to 1e-9 and the covariance (a difference of sums) to 1e-6
        if flushes == 1:
            np.testing.assert_array_equal(np.array(getattr(live, name)), np.array(off[name]), err_msg=name)
        else:
            rtol = 1e-6 if name.startswith(('covariance', 'kappa')) else 1e-9
            np.testing.assert_allclose(np.array(getattr(live, name)), np.array(off[name]), rtol=rtol,
                                       atol=1e-12, err_msg=f'{name} ({flushes} flushes)')
    # one verdict per bin: validity, reasons and identification flags of both directions
    for key in ('valid_pos', 'valid_neg', 'status_pos', 'status_neg', 'mass_stiffness_separable_pos',
                'mass_stiffness_separable_neg'):
        assert list(getattr(live, key)) == list(off[key]), key
    assert live.valid == off['valid'] and live.status == off['status']
    print(f"impedance live vs run-bag verdicts: {sum(live.valid_pos) + sum(live.valid_neg)} of "
          f"{len(live.valid_pos) + len(live.valid_neg)} bins valid in both, statuses equal")
    # 5 s of data after the fade-in is short, but k is already near the truth in the kink-free bins
    k = np.array([live.stiffness_pos, live.stiffness_neg])
    k_true = rec.oracle.value('stiffness')
    free = [j for j in range(8) if j != sc.KINK_SEGMENT]
    assert np.nanmax(np.abs(k[:, free] / k_true[:, free] - 1)) < 0.15, k
    assert live.header.frame_id == 'slider' and live.joint_name == 'slider' and live.force_source == 'effort'
    cov = np.array(live.covariance_pos).reshape(8, 4, 4)
    for j in free:
        if live.valid_pos[j]:
            np.linalg.cholesky(cov[j])
    # ~/save wrote the same profile (for playback)
    assert saved is not None and saved.success, saved
    stored = load_profile(tmp_path / 'saved.yaml')
    np.testing.assert_allclose(stored.value('stiffness')[0], np.array(off['stiffness_pos']), rtol=1e-9)
    print(f'impedance live vs run-bag: {flushes} flush(es) live')
    assert float(pipe['sample_rate_hz']) == pytest.approx(4000.0), (pipe, log)
    assert float(pipe['update_us_per_sample_p50']) < 200.0, pipe


@pytest.mark.parametrize('override, reason', [
    ('segments:=0', "parameter 'segments' = 0 is outside its range [1, 1000]"),
    ('force_source:=torque', "parameter 'force_source' = 'torque' is not one of: wrench, effort"),
    ('edges:=[0.0,0.02,0.01]', 'strictly increasing'),
])
def test_wrong_parameter_stops_the_node_with_the_reason(override, reason):
    returncode, log = run_to_exit('contact_estimation.impedance.node', '--params-file', CONFIG,
                                  '-p', override)
    assert returncode == 2, log
    assert reason in log, log
