"""The replay speed paths give the very same bytes and figures as the plain ones; an unusable metadata.yaml.

* BagWriter's one-pack message path writes the same MCAP file, byte for byte, as mcap's own add_message.
* trust.autocorrelation's memo of the last series returns what a fresh computation returns, at every lag,
  and is not fooled by a series of the same length with other values.
* the trust monitors' per-window memo (reference fit, omitted mass) gives the same checks as a cold run.
* a bag whose metadata.yaml is not a mapping (or not YAML, or without rosbag2_bagfile_information) is read
  with its metadata rebuilt in memory, the file left untouched; ``contact-dynamics info`` says so.
"""
from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest

from contact_dynamics_common import trust
from contact_dynamics_common.bag import BagError, BagReader, BagWriter
from contact_dynamics_common.cli import main
from contact_estimation.single_point import assess
from contact_estimation.single_point.estimate import ContactEstimate
from contact_estimation.single_point.models import get_model
from contact_estimation.single_point.samples import ContactSamples
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag


def _write(path, fast: bool) -> str:
    rng = np.random.default_rng(3)
    w = BagWriter(path, chunk_size=4096)           # small chunks: many chunk ends inside the run
    assert w._fast is not None                      # the installed mcap takes the fast path
    if not fast:
        w._fast = None
    for i in range(2500):
        w.write('/a' if i % 3 else '/b', 'std_msgs/msg/String', {'data': 'x' * int(rng.integers(0, 60))},
                10_000 + int(rng.integers(0, 10 ** 7)))          # log times out of order too
        if i % 7 == 0:
            w.write_serialized('/c', 'std_msgs/msg/String', b'\x00\x01\x00\x00\x02\x00\x00\x00y\x00', 5 + i,
                               publish_ns=3 * i)
    w.close()
    return hashlib.sha256(next(path.glob('*.mcap')).read_bytes()).hexdigest()


def test_fast_message_path_writes_the_same_file(tmp_path):
    assert _write(tmp_path / 'fast' / 'bag', True) == _write(tmp_path / 'plain' / 'bag', False)
    reader = BagReader(tmp_path / 'fast' / 'bag')
    assert sum(1 for _ in reader.raw_messages()) == 2500 + 358


def _fresh_acf(x, lag):
    trust.checks._ACF_MEMO[0] = None
    return trust.autocorrelation(x, lag)


def test_autocorrelation_memo_equals_fresh():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=1500))
    for lag in (1, 7, 20, 500, 1499, 5000):
        want = _fresh_acf(x, lag)
        trust.autocorrelation(x, 3)                      # memo primed by another lag of the same series
        got = trust.autocorrelation(x.copy(), lag)
        assert got.shape == want.shape and np.array_equal(got, want)
    y = x.copy()
    y[700] += 1.0                                        # same length, other values: computed again
    assert not np.array_equal(trust.autocorrelation(y, 20), _fresh_acf(x, 20))
    assert np.array_equal(trust.autocorrelation(y, 20), _fresh_acf(y, 20))
    got = trust.autocorrelation(x, 5)
    got[:] = 99.0                                        # the caller's copy: the memo is not changed
    assert np.array_equal(trust.autocorrelation(x, 5), _fresh_acf(x, 5))
    assert np.array_equal(_fresh_acf(np.ones(50), 4), np.zeros(4))       # constant: no correlation
    assert np.array_equal(trust.autocorrelation(np.ones(50), 4), np.zeros(4))


def test_window_memo_gives_the_cold_checks():
    rng = np.random.default_rng(1)
    n = 2000
    t = np.arange(n) * 1e-3
    x = 2e-3 + 1e-3 * np.sin(2 * np.pi * 3 * t)
    xd = np.gradient(x, t) + rng.normal(0, 1e-4, n)
    xdd = np.gradient(xd, t)
    force = 4800 * x + 200 * xd + 0.5 * xdd + rng.normal(0, 0.2, n)     # a mass the model leaves out
    s = ContactSamples.make(t, force, x, xd)

    def est(k):
        return ContactEstimate(algorithm='rls', model='kelvin_voigt', names=('stiffness', 'damping'),
                               values=np.array([k, 200.0]), covariance=np.diag([1.0, 0.01]), valid=True,
                               identifiable=(True, True), samples_used=n)
    assess._WINDOW_MEMO.clear()
    warm = [assess.adequacy_checks(est(k), s) for k in (4800.0, 4790.0)]     # second: memo hits
    cold = []
    for k in (4800.0, 4790.0):
        assess._WINDOW_MEMO.clear()
        trust.checks._ACF_MEMO[0] = None
        cold.append(assess.adequacy_checks(est(k), s))
    for (wc, wcov), (cc, ccov) in zip(warm, cold):
        assert np.array_equal(wcov, ccov)
        assert [(c.kind, c.ok, c.reason, c.statistic, c.p_value) for c in wc] == \
            [(c.kind, c.ok, c.reason, c.statistic, c.p_value) for c in cc]
    assert any(c.kind == 'omitted_regressor' for c in warm[0][0])


@pytest.fixture(scope='module')
def small_bag(tmp_path_factory):
    return write_bag(KelvinVoigt1Dof(duration=3.0, rate=200.0), tmp_path_factory.mktemp('meta') / 'bag')


@pytest.mark.parametrize('text, why', [('just a string\n', 'not a mapping but str'),
                                       ('- a\n- list\n', 'not a mapping but list'),
                                       ('', 'not a mapping but empty'),
                                       ('key: [unclosed\n', 'not valid YAML'),
                                       ('other: {a: 1}\n', 'no rosbag2_bagfile_information mapping'),
                                       ('rosbag2_bagfile_information: text\n',
                                        'no rosbag2_bagfile_information mapping')])
def test_unusable_metadata_is_rebuilt_in_memory(small_bag, tmp_path, capsys, text, why):
    bag = tmp_path / 'bag'
    shutil.copytree(small_bag, bag)
    (bag / 'metadata.yaml').write_text(text)
    good = BagReader(small_bag)
    reader = BagReader(bag)
    assert reader.metadata_source.startswith(f'metadata.yaml unusable ({why}')
    assert 'kept in memory' in reader.metadata_source
    assert (bag / 'metadata.yaml').read_text() == text                  # the user's file is left alone
    assert reader.topics == good.topics
    assert reader.info['message_count'] == good.info['message_count']
    assert main(['info', str(bag)]) == 0
    out = capsys.readouterr().out
    assert 'metadata.yaml unusable' in out and '/wrench' in out


def test_unusable_metadata_without_data_files_is_a_clear_error(tmp_path):
    bag = tmp_path / 'bag'
    bag.mkdir()
    (bag / 'metadata.yaml').write_text('just a string\n')
    with pytest.raises(BagError, match='not a mapping but str.*no .mcap or .db3 file'):
        BagReader(bag)


class _Rls:
    """What the monitor asks of an estimator (prior, forgetting): a tracking RLS."""
    initial = {'stiffness': 1000.0, 'damping': 0.0}
    p0 = 1e6
    scales = np.array([1e-3, 1e-2])
    lam = 0.999
    model = get_model('kelvin_voigt')


@pytest.mark.parametrize('drift', [0.0, 30.0])
def test_monitor_convergence_ring_equals_stacked_history(drift):
    rng = np.random.default_rng(int(drift))
    monitor = assess.TrustMonitor(_Rls(), length=20, min_reports=3, every=1, adequacy_every=10 ** 6)
    reasons = set()
    for i in range(70):
        known = i % 11 != 4                               # a few estimates without a covariance
        k = 4800.0 + drift * i + rng.normal(0, 5.0) + (40.0 * (-1) ** i if i > 50 else 0.0)
        est = ContactEstimate(algorithm='rls', model='kelvin_voigt', names=('stiffness', 'damping'),
                              values=np.array([k, 200.0 + rng.normal(0, 1.0)]),
                              covariance=np.diag([rng.uniform(1, 30), rng.uniform(0.1, 2)]), valid=True,
                              identifiable=(True, i % 13 != 0), samples_used=100 * (i + 1),
                              extras={} if known else {'covariance_known': False})
        monitor.observe(est, lambda: ContactSamples.make([], [], [], []))
        for kwargs in ({'rel_floor': assess.LIVE_RESOLUTION}, {'rel_floor': 1e-4, 'min_tail': 4}):
            ring = monitor._convergence(**kwargs)
            stacked = assess.convergence_check(monitor.estimator, list(monitor._history), **kwargs)
            assert (ring is None) == (stacked is None)
            if ring is not None:
                assert (ring.ok, ring.reason, repr(ring.details)) == (stacked.ok, stacked.reason,
                                                                       repr(stacked.details))
                reasons.add(ring.reason.split(':')[0])
    assert len(reasons) >= 2                              # passes and failures both compared


@pytest.mark.parametrize('tracking_drift', [0.0, 60.0])
def test_review_many_equals_review_one_by_one(tracking_drift):
    """The batched review (run-bag and the live node review the reports between two observations at once) gives
    the very same published estimates as ``review`` of each: values, covariance bits, verdict, extras."""
    rng = np.random.default_rng(5)
    n = 2000
    t = np.arange(n) * 1e-3
    x = 2e-3 + 1e-3 * np.sin(2 * np.pi * 3 * t) + 3e-4 * np.sin(2 * np.pi * 7 * t)
    xd = np.gradient(x, t) + rng.normal(0, 1e-4, n)
    force = 4800 * x + 200 * xd + rng.normal(0, 0.2, n)
    window = ContactSamples.make(t, force, x, xd)

    def est(i):
        k = 4800.0 + tracking_drift * i + rng.normal(0, 3.0)
        return ContactEstimate(algorithm='rls', model='kelvin_voigt', names=('stiffness', 'damping'),
                               values=np.array([k, 200.0 + rng.normal(0, 0.5)]),
                               covariance=np.array([[rng.uniform(0.5, 30), 0.01], [0.01, rng.uniform(0.01, 2)]]),
                               valid=True, identifiable=(True, True), samples_used=200 * (i + 1))

    monitor = assess.TrustMonitor(_Rls(), length=30, min_reports=3, every=2, adequacy_every=4)
    assert assess.tracking(monitor.estimator)
    compared = inflated = 0
    for i in range(40):
        monitor.observe(est(i), lambda: window)
        batch = [est(i) for _ in range(5)]
        one = [monitor.review(e) for e in batch]
        many = monitor.review_many(batch)
        for a, b in zip(one, many):
            assert a.covariance.tobytes() == b.covariance.tobytes()
            assert (a.valid, a.reason, a.identifiable, repr(a.extras)) == (b.valid, b.reason, b.identifiable,
                                                                         repr(b.extras))
            compared += 1
            inflated += not np.array_equal(a.covariance, batch[0].covariance)
    assert compared == 200 and inflated > 0            # the honest sigma and the tracking spread both acted


def test_uniform_kernel_path_equals_the_real_stamp_rows():
    """Windows with uniform stamps are filtered by correlation with one row of weights; the result equals the
    per-centre rows on the real stamps (to round-off), and a jittered stretch in the record still gets its own."""
    from contact_dynamics_common.signal import conditioning as cond
    rng = np.random.default_rng(2)
    t = 100.0 + np.arange(3000) * 1e-3
    t[1500:1600] += rng.uniform(-2e-4, 2e-4, 100)            # a jittered stretch
    y = np.sin(2 * np.pi * 4 * t) + 0.01 * rng.standard_normal(len(t))
    width = 0.01
    half = cond.kernel_half(width, 1e-3)
    fast = cond.filtered_derivatives(t, y, width, orders=(0, 1, 2))
    rows = cond._kernel_rows(t, width, half, (0, 1, 2))
    win = np.lib.stride_tricks.sliding_window_view(y, 2 * half + 1)
    for k, o in enumerate((0, 1, 2)):
        exact = np.einsum('ij,ij->i', rows[o], win)
        got = fast[k][half:len(t) - half]
        scale = np.max(np.abs(exact))
        assert np.max(np.abs(got - exact)) <= 1e-9 * scale
    uniform_row = cond.uniform_kernel_weights(width, 1e-3, (1,), half)[1]
    assert not np.allclose(rows[1][1500 - half], uniform_row, rtol=1e-3)   # the jittered windows differ ...
    assert np.array_equal(fast[1][1500:1600],
                          np.einsum('ij,ij->i', rows[1], win)[1500 - half:1600 - half])  # ... and keep their own


def test_a_nan_reaches_only_the_kernel_windows_that_hold_it():
    from contact_dynamics_common.signal import conditioning as cond
    t = np.arange(4000) * 1e-3
    y = np.sin(2 * np.pi * 3 * t)
    y[2000] = np.nan
    for width in (0.01, 0.1, 0.3):                    # up to +-1500 samples: wide enough for an FFT
        half = cond.kernel_half(width, 1e-3)
        f = cond.kernel_filter(t, y, width)
        inner = np.zeros(len(t), bool)
        inner[half:len(t) - half] = True
        touched = np.abs(np.arange(len(t)) - 2000) <= half
        assert np.isfinite(f[inner & ~touched]).all() and np.isnan(f[touched | ~inner]).all()


def test_estimate_of_equals_the_dataclass_constructor():
    from dataclasses import fields
    kwargs = dict(algorithm='gls', model='kelvin_voigt', names=('stiffness', 'damping'),
                  values=np.array([4800.0, 200.0]), covariance=np.diag([4.0, 1.0]), valid=True, reason='ok',
                  residual_rms=0.1, condition_number=3.0, excitation=np.array([1e-3, 1e-2]),
                  identifiable=(True, True), bounds_active=(False, False), samples_used=500, stamp=2.5,
                  extras={'r_squared': 0.99})
    fast, plain = ContactEstimate.of(**kwargs), ContactEstimate(**kwargs)
    assert set(fast.__dict__) == {f.name for f in fields(ContactEstimate)}      # every field, none more
    assert all(fast.__dict__[k] is plain.__dict__[k] for k in plain.__dict__)
    with pytest.raises(AttributeError):
        fast.valid = False                                                     # still frozen


def test_prefetch_keeps_order_errors_and_stops():
    import threading

    from contact_dynamics_common.offline.replay import _Prefetch
    items = [object() for _ in range(50)]
    pre = _Prefetch(iter(items), depth=2)
    assert [x for x in pre] == items                    # the same objects, in order
    pre.close()

    def failing():
        yield 1
        yield 2
        raise BagError('broken at byte 123')
    pre = _Prefetch(failing())
    got = []
    with pytest.raises(BagError, match='broken at byte 123'):
        for x in pre:
            got.append(x)
    pre.close()
    assert got == [1, 2]                                 # raised where the sequence breaks

    closed = threading.Event()

    def endless():
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.set()
    pre = _Prefetch(endless(), depth=1)
    for x in pre:
        if x == 3:
            break
    pre.close()                                          # the consumer stops early: the thread ends too
    assert closed.wait(2.0) and not pre._thread.is_alive()
