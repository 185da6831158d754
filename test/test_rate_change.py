"""A sustained change of the input sample rate without a reset re-sizes the differentiator's window.

The half window M (samples) is sized from the first paired samples; a rate change later (a reconfigured
sensor, spliced recordings, upstream decimation) would silently change the window in seconds and bias the
damping (measured before this check: b 191/172/127 N s/m for 200 at 4/8/16 kHz). The pipeline checks the
median interval over blocks of 32 and re-arms the differentiator when it departs by > 20 %.
"""
import numpy as np
import pytest

from contact_dynamics_common.bag import BagReader
from contact_dynamics_common.cli import load_offline_nodes
from contact_dynamics_common.params import validate_all
from contact_dynamics_common.replay import replay
from contact_estimation.single_point import pipeline as pipeline_mod
from contact_estimation.single_point.config import PARAMS
from contact_estimation.single_point.pipeline import ContactPipeline
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_contact_bag

from test_batched_replay import config
from test_chunked_replay import check_all_ways


def spliced(slow_s=4.0, fast_s=8.0, slow_hz=1000.0, fast_hz=4000.0, seed=7, sigma_position=4e-5):
    """A KV contact (k 4800 N/m, b 200 N s/m, 40 um position noise) sampled at slow_hz for slow_s, then at
    fast_hz: one simulation at fast_hz, decimated before the change (same motion, same per-sample noise)."""
    m = KelvinVoigt1Dof(duration=slow_s + fast_s, rate=fast_hz, seed=seed,
                        sigma_position=sigma_position).measurements()
    n_slow = int(round(slow_s * fast_hz))
    step = int(round(fast_hz / slow_hz))
    keep = np.r_[np.arange(0, n_slow, step), np.arange(n_slow, len(m['t']))]
    return {k: m[k][keep] for k in ('stamp_ns', 'force_meas', 'q')}


def run(m, chunk=200, **overrides):
    pl = ContactPipeline(validate_all(PARAMS, {'joint_name': 'slider', 'algorithms': ['rls', 'gls'],
                                               **overrides}))
    st, f, q = m['stamp_ns'], m['force_meas'], m['q']
    for a in range(0, len(st), chunk):
        pl.push_wrench_columns(st[a:a + chunk], f[a:a + chunk])
        pl.push_joint_columns(st[a:a + chunk], ['slider'], q[a:a + chunk, None])
        out = pl.step()
    return pl, {e.algorithm: e for e in out}


@pytest.fixture(scope='module')
def data():
    return spliced()


def test_rate_change_is_detected_counted_and_b_stays_unbiased(data):
    pl, est = run(data)
    assert pl.counts['rate_changes'] == 1
    old, new = pl.rate_change
    assert abs(old / 1000 - 1) < 0.01 and abs(new / 4000 - 1) < 0.01
    assert pl._half_window == 20                       # 5 ms at 4 kHz (it was 5 samples at 1 kHz)
    for e in est.values():                             # the final estimates: 8 s of 4 kHz data
        assert e.valid
        assert abs(e.stiffness / 4800 - 1) < 0.01, e
        assert abs(e.damping / 200 - 1) < 0.05, e


def test_without_the_check_b_is_biased(data, monkeypatch):
    """The test above can fail: with the check disabled the window stays 5 samples (1.25 ms at 4 kHz)."""
    monkeypatch.setattr(pipeline_mod, '_RATE_TOLERANCE', np.inf)
    pl, est = run(data)
    assert pl.counts['rate_changes'] == 0
    assert pl._half_window == 5
    assert abs(est['gls'].damping / 200 - 1) > 0.05


def test_detection_does_not_depend_on_batching(data):
    """Same samples, different step sizes: the same estimates (live callbacks vs run-bag chunks)."""
    ref_pl, ref = run(data, chunk=200)
    for chunk in (1_000, 37):
        pl, got = run(data, chunk=chunk)
        assert pl.counts == ref_pl.counts
        for name in ref:
            assert np.allclose(got[name].values, ref[name].values, rtol=1e-9, atol=0)


def test_jitter_and_unchanged_rate_give_no_rate_change():
    m = KelvinVoigt1Dof(duration=3.0, rate=1000.0, seed=3).measurements()
    rng = np.random.default_rng(3)
    st = m['stamp_ns'] + rng.integers(-150_000, 150_000, len(m['t']))      # +-15 % of a period
    pl, est = run({'stamp_ns': np.sort(st), 'force_meas': m['force_meas'], 'q': m['q']})
    assert pl.counts['rate_changes'] == 0


def test_chunked_replay_carries_the_detector_across_chunks(tmp_path, monkeypatch):
    m = spliced(slow_s=1.5, fast_s=1.5)
    bag = write_contact_bag(tmp_path / 'bag', m['stamp_ns'], m['force_meas'], m['q'], {'scenario': 'splice'})
    ref = check_all_ways(bag, config(tmp_path, joint_name='slider'), chunks=(0.05, 0.37),
                         monkeypatch=monkeypatch)
    assert ref.status['contact_estimator']['rate_changes'] == 1


@pytest.mark.ros
def test_live_node_warns_with_the_old_and_new_rates(ros_context):
    """Over DDS: 500 Hz then 1 kHz without a reset -> a pipeline WARN naming both rates, rate_changes 1."""
    from geometry_msgs.msg import WrenchStamped
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from ros_harness import ROOT, Listener, paced, set_stamp, start_node, stop, wait_matched

    m = spliced(slow_s=0.8, fast_s=0.8, slow_hz=500.0, fast_hz=1000.0)
    proc = start_node('contact_estimation.single_point.node', '--params-file',
                      str(ROOT / 'config' / 'contact_estimator.yaml'))
    listener = Listener({'/diagnostics': DiagnosticArray})
    node = Node('rate_change_publisher')
    try:
        wrench_pub = node.create_publisher(WrenchStamped, '/wrench', 100)
        joint_pub = node.create_publisher(JointState, '/joint_states', 100)
        wait_matched([wrench_pub, joint_pub])
        for i in paced((m['stamp_ns'] - m['stamp_ns'][0]) * 1e-9):
            w, j = WrenchStamped(), JointState()
            set_stamp(w.header, m['stamp_ns'][i])
            w.header.frame_id = 'ft_sensor'
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in m['force_meas'][i])
            j.header.stamp = w.header.stamp
            j.name, j.position = ['slider'], [float(m['q'][i])]
            wrench_pub.publish(w)
            joint_pub.publish(j)

        def warned():
            d = listener.diag('contact_estimator: pipeline')
            return d.get('rate_changes') == '1'
        assert listener.wait_for(warned, timeout=5.0), listener.diag('contact_estimator: pipeline')
    finally:
        node.destroy_node()
        stop(proc)
        listener.close()
    d = listener.diag('contact_estimator: pipeline')
    assert d['level'] == b'\x01' and 'from 500 Hz to 1000 Hz' in d['message'], d
    assert abs(float(d['rate_change_new_hz']) / 1000 - 1) < 0.01
