"""Batched offline replay (ContactPipeline.replay, update_and_report, quality_batch) == per-tick stepping.

Every scenario replays one bag twice through ``contact_dynamics_common.offline.replay.replay``: with the offline
node's ``replay_all`` (one pass) and through the per-tick protocol (``batched=False``: push the messages
logged since the previous tick, ``tick``). Every topic, every message must agree: log times and stamps
equal, numbers to 1e-9 relative, strings and booleans equal; and the status counters must be identical.
"""
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from contact_dynamics_common.bag import BagReader, BagWriter
from contact_dynamics_common.cli import load_offline_nodes
from contact_dynamics_common.messages.convert import ns_to_sec_nanosec
from contact_dynamics_common.ros.params import validate_all
from contact_dynamics_common.offline.replay import replay
from contact_estimation.single_point.config import PARAMS
from contact_estimation.single_point.estimate import make_spd, make_spd_batch, quality_batch, quality_from_information
from contact_estimation.single_point.gls import SlidingWindowGLS
from contact_estimation.single_point.models import KELVIN_VOIGT, KELVIN_VOIGT_MASS
from contact_estimation.single_point.pipeline import ContactPipeline
from contact_estimation.single_point.reporting import check_counts, sliced_reports
from contact_estimation.single_point.rls import RecursiveLeastSquares
from contact_estimation.single_point.samples import ContactSamples
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-9


# ------------------------------------------------------------------ helpers
def config(tmp_path: Path, **overrides) -> Path:
    cfg = yaml.safe_load((ROOT / 'config' / 'contact_estimator.yaml').read_text())
    cfg['contact_estimator']['ros__parameters'].update(overrides)
    path = tmp_path / f'cfg_{len(list(tmp_path.glob("cfg_*")))}.yaml'
    path.write_text(yaml.safe_dump(cfg))
    return path


def assert_same_replay(bag: Path, cfg: Path, monkeypatch, batched: bool = True):
    """Replay both ways; compare everything. ``batched``: whether replay_all must take the one-pass path
    (else it must fall back to stepping tick by tick)."""
    reference = replay(BagReader(bag), load_offline_nodes(cfg), batched=False)
    with monkeypatch.context() as m:
        m.setattr(ContactPipeline, '_replay_stepwise' if batched else '_replay_batched', _forbidden)
        result = replay(BagReader(bag), load_offline_nodes(cfg))
    assert_same_result(result, reference)
    return result


def assert_same_result(got, ref):
    """Same status counters, topics and output stamps; fields equal per ``assert_same_fields``."""
    assert got.status == ref.status
    assert set(got.outputs) == set(ref.outputs)
    for topic, items in ref.outputs.items():
        assert [t for t, _ in got.outputs[topic]] == [t for t, _ in items], topic
        for (t, a), (_, b) in zip(got.outputs[topic], items):
            assert_same_fields(a, b, f'{topic}@{t}')


def _forbidden(*args, **kwargs):
    raise AssertionError('replay took the other path')


def assert_same_fields(a, b, where: str):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            if k == 'covariance':           # relative to the matrix's scale (off-diagonals may be ~0)
                scale = max(max(map(abs, a[k])), max(map(abs, b[k])))
                assert np.allclose(a[k], b[k], rtol=0, atol=RTOL * scale), (where, k, a[k], b[k])
            else:
                assert_same_fields(a[k], b[k], f'{where}.{k}')
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_fields(x, y, f'{where}[{i}]')
    elif isinstance(a, float):
        assert isinstance(b, float) and (a == b or math.isclose(a, b, rel_tol=RTOL, abs_tol=0)), (where, a, b)
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


def write_columns(path: Path, wrench: tuple, joints: tuple, pose: tuple | None = None) -> Path:
    """A bag from arrays: wrench (log_ns, stamp_ns, force (N, 3)), joints (log_ns, stamp_ns, q), pose
    (log_ns, stamp_ns, position (N, 3)) or None."""
    streams = [('/wrench', 'geometry_msgs/msg/WrenchStamped', wrench),
               ('/joint_states', 'sensor_msgs/msg/JointState', joints)]
    if pose is not None:
        streams.append(('/pose', 'geometry_msgs/msg/PoseStamped', pose))
    msgs = []
    for topic, type_name, (log, stamp, values) in streams:
        for lg, st, v in zip(log.tolist(), stamp.tolist(), values.tolist()):
            sec, nsec = ns_to_sec_nanosec(st)
            header = {'stamp': {'sec': sec, 'nanosec': nsec}, 'frame_id': ''}
            if topic == '/wrench':
                msg = {'header': dict(header, frame_id='ft_sensor'),
                       'wrench': {'force': dict(zip('xyz', v)), 'torque': {'x': 0.0, 'y': 0.0, 'z': 0.0}}}
            elif topic == '/joint_states':
                msg = {'header': header, 'name': ['slider'], 'position': [v], 'velocity': [], 'effort': []}
            else:
                msg = {'header': header, 'pose': {'position': dict(zip('xyz', v)),
                                                  'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}}
            msgs.append((lg, topic, type_name, msg))
    msgs.sort(key=lambda m: m[0])
    with BagWriter(path) as bag:
        for topic, type_name, _ in streams:
            bag.add_topic(topic, type_name, qos='sensor_data')
        for lg, topic, type_name, msg in msgs:
            bag.write(topic, type_name, msg, lg)
    return path


# ------------------------------------------------------------------ bags
@pytest.fixture(scope='module')
def clean_1khz(tmp_path_factory):
    return write_bag(KelvinVoigt1Dof(duration=4.0, rate=1000.0, seed=11),
                     tmp_path_factory.mktemp('b') / 'bag')


@pytest.fixture(scope='module')
def clean_100hz(tmp_path_factory):
    return write_bag(KelvinVoigt1Dof(duration=6.0, rate=100.0, seed=12), tmp_path_factory.mktemp('b') / 'bag')


@pytest.fixture(scope='module')
def bad_bag(tmp_path_factory):
    """6 s at 1 kHz with: non-finite, absurd (1e150 N) and zero-stamp wrench rows; wrench log latency
    jitter of up to 2 ms (stamps out of order in log order); a swapped pair of joint stamps and a NaN
    position; joint states logged in 30 ms bursts (wrench samples wait for them across ticks); a 0.7 s
    joint-state gap (> sensor_timeout); the force below contact_force_threshold for 0.4 s (contact lost
    and regained); the same displacement also as a pose (p_z = -q, normal +z)."""
    m = KelvinVoigt1Dof(duration=6.0, rate=1000.0, seed=13).measurements()
    rng = np.random.default_rng(13)
    stamp = m['stamp_ns'].copy()
    force = m['force_meas'].copy()
    force[500:505] = np.nan
    force[4500, 2] = 1e150
    force[3500:3900, 2] = 0.3
    w_stamp = stamp.copy()
    w_stamp[800] = 0
    w_log = stamp + 100_000 + rng.integers(0, 2_000_000, len(stamp))
    q = m['q'].copy()
    q[1700] = np.nan
    j_stamp = stamp.copy()
    j_stamp[[1500, 1501]] = j_stamp[[1501, 1500]]
    burst = 30_000_000
    j_log = (stamp - stamp[0]) // burst * burst + burst + stamp[0] + 100_000
    keep = (np.arange(len(stamp)) < 2000) | (np.arange(len(stamp)) >= 2700)
    pose = np.zeros((len(q), 3))
    pose[:, 2] = -q
    path = tmp_path_factory.mktemp('b') / 'bag'
    return write_columns(path, (w_log, w_stamp, force), (j_log[keep], j_stamp[keep], q[keep]),
                         (j_log[keep], j_stamp[keep], pose[keep]))


# ------------------------------------------------------------------ replay == per tick
@pytest.mark.parametrize('rate', [20.0, 50.0])
def test_clean_1khz_bag(clean_1khz, tmp_path, monkeypatch, rate):
    result = assert_same_replay(clean_1khz, config(tmp_path, publish_rate=rate), monkeypatch)
    last = result.outputs['/contact_estimator/estimate'][-1][1]
    assert last['valid'] and abs(last['stiffness'] / 4800 - 1) < 0.02


def test_clean_100hz_bag_mass_model_bounds(clean_100hz, tmp_path, monkeypatch):
    assert_same_replay(clean_100hz, config(tmp_path, publish_rate=20.0), monkeypatch)
    assert_same_replay(clean_100hz, config(tmp_path, model='kelvin_voigt_mass', nonnegative=True,
                                           initial_damping=-50.0, publish_rate=10.0), monkeypatch)


@pytest.mark.parametrize('source', ['joint_state', 'pose'])
def test_bad_samples_onset_datum(bad_bag, tmp_path, monkeypatch, source):
    cfg = config(tmp_path, datum_mode='onset', displacement_source=source, publish_rate=20.0)
    result = assert_same_replay(bad_bag, cfg, monkeypatch)
    status = result.status['contact_estimator']
    assert status['wrench.nonfinite'] == 5 and status['wrench.zero_stamp'] == 1
    assert status['wrench.out_of_order'] > 0 and status['displacement.out_of_order'] == 1
    assert status['displacement.nonfinite'] == 1 and status['wrench_unpaired'] > 600
    assert status['contact_onsets'] == 2 and status['out_of_contact'] > 0
    datums = {m['contact_datum'] for _, m in result.outputs['/contact_estimator/estimate']}
    assert len(datums) > 2                            # lost (0) and found again at a new position


def test_onset_datum_with_a_tick_after_every_sample(tmp_path, monkeypatch):
    """100 Hz samples, 200 Hz ticks: the datum reported at each tick follows every loss and onset."""
    m = KelvinVoigt1Dof(duration=4.0, rate=100.0, seed=15).measurements()
    force = m['force_meas'].copy()
    for a in (100, 250):
        force[a:a + 30, 2] = 0.2 + 0.01 * np.arange(30)
    log = m['stamp_ns'] + 100_000
    bag = write_columns(tmp_path / 'bag', (log, m['stamp_ns'], force), (log, m['stamp_ns'], m['q']))
    result = assert_same_replay(bag, config(tmp_path, datum_mode='onset', publish_rate=200.0), monkeypatch)
    assert result.status['contact_estimator']['contact_onsets'] == 3
    assert 0.0 in {f['contact_datum'] for _, f in result.outputs['/contact_estimator/estimate']}


def test_bad_samples_at_50hz(bad_bag, tmp_path, monkeypatch):
    assert_same_replay(bad_bag, config(tmp_path, datum_mode='onset', publish_rate=50.0), monkeypatch)


def test_wrench_queue_beyond_capacity_is_stepped(bad_bag, tmp_path, monkeypatch):
    """The 0.7 s joint gap queues ~700 wrench samples: beyond buffer_capacity = 100 the queue drops the
    oldest, which depends on the ticks, so the record is stepped tick by tick (same results)."""
    result = assert_same_replay(bad_bag, config(tmp_path, buffer_capacity=100), monkeypatch, batched=False)
    assert result.status['contact_estimator']['wrench_unpaired'] > 600


def test_time_jump_is_stepped(tmp_path, monkeypatch):
    m = KelvinVoigt1Dof(duration=3.0, rate=1000.0, seed=14).measurements()
    n = len(m['t'])
    stamp = np.concatenate((m['stamp_ns'], m['stamp_ns']))          # the bag loops: stamps jump back 3 s
    log = m['stamp_ns'][0] + np.arange(2 * n) * 1_000_000 + 100_000
    q = np.concatenate((m['q'], m['q']))
    force = np.concatenate((m['force_meas'], m['force_meas']))
    bag = write_columns(tmp_path / 'bag', (log, stamp, force), (log, stamp, q))
    result = assert_same_replay(bag, config(tmp_path), monkeypatch, batched=False)
    assert result.status['contact_estimator']['resets_time_jump'] == 1


def test_missing_joint(clean_1khz, tmp_path, monkeypatch):
    result = assert_same_replay(clean_1khz, config(tmp_path, joint_name='elbow'), monkeypatch)
    assert result.status['contact_estimator']['joint_missing'] == 4000 and not result.outputs


def test_estimators_without_update_and_report_use_the_sliced_fallback(clean_1khz, tmp_path):
    class Plain:                                   # an estimator with update/estimate/reset only
        def __init__(self, inner):
            self.inner = inner

        def update(self, samples):
            self.inner.update(samples)

        def estimate(self):
            return self.inner.estimate()

        def reset(self):
            self.inner.reset()

    cfg = config(tmp_path)
    nodes = load_offline_nodes(cfg)
    plain = load_offline_nodes(cfg)
    for name, est in plain[0].pipeline.estimators.items():
        plain[0].pipeline.estimators[name] = Plain(est)
    a, b = replay(BagReader(clean_1khz), nodes), replay(BagReader(clean_1khz), plain)
    assert a.status == b.status
    for topic in a.outputs:
        for (ta, fa), (tb, fb) in zip(a.outputs[topic], b.outputs[topic]):
            assert ta == tb
            assert_same_fields(fa, fb, topic)


# ------------------------------------------------------------------ update_and_report == sliced
def random_samples(n: int, seed: int, mass: bool = False) -> ContactSamples:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.5e-3, 1.5e-3, n))
    w = 2 * np.pi * np.array([0.7, 3.0])[:, None]
    x = 0.01 + 0.002 * np.sin(w * t).sum(0)
    xd = 0.002 * (w * np.cos(w * t)).sum(0)
    xdd = -0.002 * (w * w * np.sin(w * t)).sum(0)
    f = 4800 * x + 200 * xd + (2.0 * xdd if mass else 0) + rng.normal(0, 0.5, n)
    return ContactSamples.make(t, f, x, xd, xdd if mass else None)


def random_counts(n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate(([0, 0, min(3, n), n, n], rng.integers(0, n + 1, k))))


def assert_same_estimates(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.algorithm, x.valid, x.reason, x.identifiable, x.bounds_active, x.samples_used, x.stamp) == \
               (y.algorithm, y.valid, y.reason, y.identifiable, y.bounds_active, y.samples_used, y.stamp)
        np.testing.assert_allclose(x.values, y.values, rtol=RTOL)
        np.testing.assert_allclose(x.covariance, y.covariance, rtol=RTOL,
                                   atol=RTOL * np.abs(y.covariance).max())
        np.testing.assert_allclose(x.excitation, y.excitation, rtol=RTOL)
        assert math.isclose(x.residual_rms, y.residual_rms, rel_tol=RTOL)
        assert math.isclose(x.condition_number, y.condition_number, rel_tol=RTOL)
        assert x.extras.keys() == y.extras.keys()


ESTIMATORS = {
    'rls': lambda model, bounds: RecursiveLeastSquares(model, forgetting=0.995, bounds=bounds),
    'gls': lambda model, bounds: SlidingWindowGLS(model, window_s=0.3, bounds=bounds),
}


@pytest.mark.parametrize('name', ESTIMATORS)
@pytest.mark.parametrize('model', [KELVIN_VOIGT, KELVIN_VOIGT_MASS], ids=lambda m: m.name)
@pytest.mark.parametrize('bounds', [None, {'damping': (0.0, 150.0)}], ids=['free', 'bounded'])
def test_update_and_report_equals_sliced_updates(name, model, bounds):
    batched, sliced = ESTIMATORS[name](model, bounds), ESTIMATORS[name](model, bounds)
    mass = model is KELVIN_VOIGT_MASS
    for block, seed in ((random_samples(700, 1, mass), 1), (random_samples(0, 2, mass), 2),
                        (random_samples(900, 3, mass), 3)):
        if len(block):                          # the second block continues in time
            block = ContactSamples.make(block.t + 2.0 * seed, block.force, block.x, block.xd, block.xdd)
        counts = random_counts(len(block), 40, seed)
        assert_same_estimates(batched.update_and_report(block, counts), sliced_reports(sliced, block, counts))
        assert_same_estimates([batched.estimate()], [sliced.estimate()])


def test_counts_are_checked():
    with pytest.raises(ValueError):
        check_counts([3, 2], 5)
    with pytest.raises(ValueError):
        check_counts([0, 6], 5)
    assert check_counts([], 0).tolist() == []


# ------------------------------------------------------------------ batched quality == single
def test_quality_batch_equals_single():
    rng = np.random.default_rng(5)
    scales, min_exc = np.array([1e-3, 1e-2, 1.0]), np.array([1e-6, 1e-3, 5e-2])
    info = []
    for k in range(300):                     # every identifiability pattern, some near-singular
        a = rng.normal(size=(3, 40)) * 10.0 ** rng.uniform(-7, 3, size=(3, 1))
        if k % 5 == 0:
            a[1] = a[0] * 1e-3 + 1e-12 * a[1]
        info.append(a @ a.T)
    info = np.array(info)
    n_eff = rng.uniform(1, 1e4, len(info))
    sigma2 = rng.choice([0.0, 0.25, 3.0], len(info))
    batch = quality_batch(info, n_eff, sigma2, scales, min_exc)
    patterns = {q.identifiable for q in batch}
    assert len(patterns) > 3
    for k, q in enumerate(batch):
        single = quality_from_information(info[k], n_eff[k], sigma2[k], scales, min_exc)
        assert np.array_equal(q.covariance, single.covariance)
        assert np.array_equal(q.excitation, single.excitation)
        assert q.identifiable == single.identifiable and q.condition_number == single.condition_number


def test_make_spd_batch_equals_single():
    rng = np.random.default_rng(6)
    mats = rng.normal(size=(200, 3, 3))
    mats[::2] = mats[::2] @ mats[::2].swapaxes(1, 2)          # half positive definite, half indefinite
    mats[7, 0, 1] = np.inf
    batch = make_spd_batch(mats)
    for k in range(len(mats)):
        assert np.array_equal(batch[k], make_spd(mats[k]))
        np.linalg.cholesky(batch[k])


def test_onset_force_below_the_threshold_does_not_hang():
    params = {'joint_name': 'slider', 'datum_mode': 'onset', 'onset_force': 0.5,
              'contact_force_threshold': 1.0}
    pl = ContactPipeline(validate_all(PARAMS, params))
    datum = pl._datum_track(np.array([0.2, 0.7, 2.0, 3.0, 0.7, 1.5]), np.arange(6.0))
    assert np.array_equal(datum, [np.nan, np.nan, 2.0, 2.0, np.nan, 5.0], equal_nan=True)
