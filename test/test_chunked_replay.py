"""Streamed (chunked) replay == whole-record replay == tick-by-tick reference (the live node's sequence).

``replay`` reads the bag in chunks of ``chunk_s`` bag seconds (``BagReader.iter_column_chunks``) and drives
each node chunk by chunk (``replay_chunk``), its state carried across chunks. Chunks as short as one tick
put boundaries everywhere: inside a contact onset, inside the GLS window, inside the differentiator's
window, between a wrench sample and the joint-state burst it waits for. Every output must equal the
tick-by-tick reference (``batched=False``) and the whole-record ``replay_all`` (numbers to 1e-9 relative,
everything else exactly), with identical status counters.
"""
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from contact_dynamics_common.bag import BagReader, BagWriter
from contact_dynamics_common.cli import load_offline_nodes
from contact_dynamics_common.offline.replay import ReplayResult, replay
from contact_estimation.single_point.pipeline import ContactPipeline
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag

from test_batched_replay import assert_same_result, config, write_columns


# ------------------------------------------------------------------ helpers
def whole_record(bag: Path, cfg: Path) -> ReplayResult:
    """Today's one-pass replay: the node's replay_all on every column of the bag at once."""
    reader = BagReader(bag)
    (node,) = load_offline_nodes(cfg)
    columns = reader.columns_many(list(node.inputs()))
    ticks = np.arange(reader.start_ns + node.period_ns, reader.end_ns + 2 * node.period_ns, node.period_ns)
    result = ReplayResult()
    for now, outs in zip(ticks.tolist(), node.replay_all(columns, ticks)):
        for topic, _, fields in outs:
            result.outputs.setdefault(topic, []).append((now, fields))
    result.status = {node.node_name: node.status()}
    return result


def check_all_ways(bag: Path, cfg: Path, chunks=(0.05, 0.13, 0.5, 10.0), monkeypatch=None):
    reference = replay(BagReader(bag), load_offline_nodes(cfg), batched=False, chunk_s=1e9)
    assert_same_result(whole_record(bag, cfg), reference)
    for chunk_s in chunks:
        ctx = monkeypatch.context() if monkeypatch is not None else nullcontext()
        with ctx as m:
            if m is not None:                   # the one-pass path must be taken in every chunk
                m.setattr(ContactPipeline, '_replay_stepwise', _forbidden)
            got = replay(BagReader(bag), load_offline_nodes(cfg), chunk_s=chunk_s)
        assert_same_result(got, reference)
        # the reference itself, pushed chunk by chunk
        assert_same_result(replay(BagReader(bag), load_offline_nodes(cfg), batched=False, chunk_s=chunk_s),
                           reference)
    return reference


def _forbidden(*args, **kwargs):
    raise AssertionError('a chunk was stepped tick by tick')


# ------------------------------------------------------------------ bags
@pytest.fixture(scope='module')
def clean(tmp_path_factory):
    return write_bag(KelvinVoigt1Dof(duration=3.0, rate=1000.0, seed=21),
                     tmp_path_factory.mktemp('c') / 'bag')


@pytest.fixture(scope='module')
def corrupted(tmp_path_factory):
    """3 s at 1 kHz, datum at contact onset, with: no contact for the first 0.4 s and a ramp up to it
    (onset at ~0.5 s), contact lost for 0.25 s at 1.6 s and regained on a ramp; NaN and zero-stamp wrench
    rows; up to 2 ms of wrench log jitter (out-of-order stamps); joint states logged in 30 ms bursts (wrench
    samples wait across ticks for them); a 0.7 s joint-state gap (> sensor_timeout); a NaN joint position."""
    m = KelvinVoigt1Dof(duration=3.0, rate=1000.0, seed=22).measurements()
    rng = np.random.default_rng(22)
    n = len(m['t'])
    stamp = m['stamp_ns'].copy()
    force = m['force_meas'].copy()
    ramp = np.clip((np.arange(n) - 400) / 150.0, 0.0, 1.0)         # 0 until 0.4 s, full at 0.55 s
    force[:, 2] *= ramp
    force[1600:1850, 2] = 0.2
    force[1850:1950, 2] *= np.linspace(0.0, 1.0, 100)
    force[700:703] = np.nan
    w_stamp = stamp.copy()
    w_stamp[900] = 0
    w_log = stamp + 100_000 + rng.integers(0, 2_000_000, n)
    q = m['q'].copy()
    q[1200] = np.nan
    burst = 30_000_000
    j_log = (stamp - stamp[0]) // burst * burst + burst + stamp[0] + 100_000
    keep = (np.arange(n) < 2100) | (np.arange(n) >= 2800)
    return write_columns(tmp_path_factory.mktemp('c') / 'bag', (w_log, w_stamp, force),
                         (j_log[keep], stamp[keep], q[keep]))


# ------------------------------------------------------------------ reading
def test_column_windows_equal_the_whole_columns(corrupted, tmp_path):
    """Windows of iter_column_chunks, concatenated, == columns_many; each window holds (prev end, end]."""
    # small MCAP chunks whose log-time ranges overlap (the wrench log jitter)
    src = BagReader(corrupted)
    small = tmp_path / 'small'
    with BagWriter(small, chunk_size=2048) as out:
        for topic, type_name, log_ns, data in src.raw_messages():
            out.write_serialized(topic, type_name, data, log_ns)
    reader = BagReader(small)
    topics = ['/wrench', '/joint_states']
    whole = reader.columns_many(topics)
    ends = np.sort(np.random.default_rng(3).integers(reader.start_ns - 10**6, reader.end_ns, 40))
    windows = list(reader.iter_column_chunks(topics, ends.tolist()))
    assert [e for e, _ in windows] == ends.tolist()
    prev = np.iinfo(np.int64).min
    for k, (end, cols) in enumerate(windows):
        for t in topics:
            log = cols[t]['log_ns']
            assert np.all(log > prev) and (k == len(windows) - 1 or np.all(log <= end))
        prev = end
    for t in topics:
        for key, value in whole[t].items():
            if isinstance(value, np.ndarray):
                got = np.concatenate([c[t][key] for _, c in windows if len(c[t]['log_ns'])])
                np.testing.assert_array_equal(got, value, err_msg=f'{t}.{key}')
            else:
                assert all(c[t][key] == value for _, c in windows if len(c[t]['log_ns'])), (t, key)
    # the last window takes what is left even when the ends stop early
    rest = list(reader.iter_column_chunks(topics, [reader.start_ns + 10**9]))
    assert len(rest[0][1]['/wrench']['log_ns']) == len(whole['/wrench']['log_ns'])


# ------------------------------------------------------------------ chunked replay == whole == per tick
@pytest.mark.parametrize('rate', [20.0, 50.0])
def test_clean_bag_any_chunking(clean, tmp_path, monkeypatch, rate):
    ref = check_all_ways(clean, config(tmp_path, publish_rate=rate, **{'gls.window': 0.5}),
                         monkeypatch=monkeypatch)
    last = ref.outputs['/contact_estimator/gls/estimate'][-1][1]
    assert last['valid'] and abs(last['stiffness'] / 4800 - 1) < 0.02


@pytest.mark.parametrize('source', ['joint_state'])
def test_corrupted_bag_onset_datum_any_chunking(corrupted, tmp_path, source):
    """Chunk ends every tick, every 2-3 ticks, ...: inside the onset ramp, the contact loss and regain, the
    GLS window (0.5 s), the joint-state bursts and the joint-state gap."""
    cfg = config(tmp_path, datum_mode='onset', displacement_source=source, publish_rate=20.0,
                 **{'gls.window': 0.5})
    ref = check_all_ways(corrupted, cfg)
    status = ref.status['contact_estimator']
    assert status['contact_onsets'] == 2
    assert status['wrench.nonfinite'] == 3 and status['wrench.zero_stamp'] == 1
    assert status['wrench.out_of_order'] > 0 and status['wrench_unpaired'] > 600
    datums = [f['contact_datum'] for _, f in ref.outputs['/contact_estimator/estimate']]
    assert 0.0 in datums and len(set(datums)) >= 3          # lost, then a new datum at the regained onset


def test_mass_model_fixed_datum_many_ticks_per_sample(tmp_path):
    """100 Hz samples, 200 Hz ticks, mass model: chunks of one tick hold zero or one sample."""
    bag = write_bag(KelvinVoigt1Dof(duration=3.0, rate=100.0, seed=23, mass=2.0), tmp_path / 'bag')
    check_all_ways(bag, config(tmp_path, model='kelvin_voigt_mass', publish_rate=200.0), chunks=(0.005, 0.2))


def test_displacement_ahead_of_the_wrench(tmp_path, monkeypatch):
    """Wrench logged 140 ms late, joint states in 100 ms bursts: wrench samples of a chunk pair with joint
    samples delivered in the previous chunk (at their own tick), some before the next burst arrives."""
    m = KelvinVoigt1Dof(duration=2.0, rate=1000.0, seed=25).measurements()
    stamp = m['stamp_ns']
    burst = 100_000_000
    j_log = (stamp - stamp[0]) // burst * burst + burst + stamp[0] - 1
    bag = write_columns(tmp_path / 'bag', (stamp + 140_000_000, stamp, m['force_meas']),
                        (j_log, stamp, m['q']))
    check_all_ways(bag, config(tmp_path, publish_rate=20.0), chunks=(0.05, 0.1, 0.15),
                   monkeypatch=monkeypatch)


def test_time_jump_and_buffer_overflow_chunks_are_stepped(corrupted, tmp_path):
    """A chunk that must be stepped (wrench queue beyond buffer_capacity in the joint-state gap; a looped
    bag's backward time jump) is stepped alone; the others keep the one-pass path."""
    check_all_ways(corrupted, config(tmp_path, buffer_capacity=100, publish_rate=20.0), chunks=(0.05, 0.5))
    m = KelvinVoigt1Dof(duration=1.5, rate=1000.0, seed=24).measurements()
    n = len(m['t'])
    stamp = np.concatenate((m['stamp_ns'], m['stamp_ns']))
    log = m['stamp_ns'][0] + np.arange(2 * n) * 1_000_000 + 100_000
    bag = write_columns(tmp_path / 'loop', (log, stamp, np.concatenate((m['force_meas'], m['force_meas']))),
                        (log, stamp, np.concatenate((m['q'], m['q']))))
    ref = check_all_ways(bag, config(tmp_path), chunks=(0.05, 0.7))
    assert ref.status['contact_estimator']['resets_time_jump'] == 1


# ------------------------------------------------------------------ the generic protocol
class Renamed:
    """An offline node under another output namespace; ``chunks=False`` hides replay_chunk (a node written
    for push/tick only)."""

    def __init__(self, node, prefix: str, chunks: bool = True):
        self.node, self.prefix = node, prefix
        self.node_name, self.period_ns = prefix.strip('/') + node.node_name, node.period_ns
        if chunks:
            self.replay_chunk = lambda cols, ticks: [self._rename(o) for o in node.replay_chunk(cols, ticks)]

    def inputs(self):
        return self.node.inputs()

    def push(self, topic, cols, sl):
        self.node.push(topic, cols, sl)

    def tick(self, now_ns):
        return self._rename(self.node.tick(now_ns))

    def status(self):
        return self.node.status()

    def _rename(self, outputs):
        return [(self.prefix + topic, type_name, fields) for topic, type_name, fields in outputs]


def test_nodes_with_different_periods_and_without_replay_chunk(corrupted, tmp_path):
    """Three nodes in one replay: 20 Hz with replay_chunk (it sets the chunk ends), 30 Hz with replay_chunk
    (chunk ends fall between its ticks: it holds the messages logged after its last due tick), 30 Hz
    push/tick only (pushed in pieces across chunk ends). Each equals its own tick-by-tick reference."""
    def node(rate, prefix, chunks=True):
        (n,) = load_offline_nodes(config(tmp_path, datum_mode='onset', publish_rate=rate))
        return Renamed(n, prefix, chunks)

    got = replay(BagReader(corrupted), [node(20.0, '/a'), node(30.0, '/b'), node(30.0, '/c', chunks=False)],
                 chunk_s=0.1)
    assert got.chunks > 20
    for prefix, rate in (('/a', 20.0), ('/b', 30.0), ('/c', 30.0)):
        ref = replay(BagReader(corrupted), [node(rate, prefix)], batched=False, chunk_s=1e9)
        mine = ReplayResult(outputs={t: v for t, v in got.outputs.items() if t.startswith(prefix + '/')},
                            status={k: v for k, v in got.status.items() if k.startswith(prefix.strip('/'))})
        assert mine.outputs
        assert_same_result(mine, ref)


def test_thinned_outputs_keep_counts_and_the_latest(clean, tmp_path):
    cfg = config(tmp_path, publish_rate=50.0)
    full = replay(BagReader(clean), load_offline_nodes(cfg), chunk_s=0.3)
    thin = replay(BagReader(clean), load_offline_nodes(cfg), chunk_s=0.3, max_kept=16)
    assert thin.counts == {t: len(v) for t, v in full.outputs.items()}
    for topic, items in full.outputs.items():
        kept = thin.outputs[topic]
        assert len(kept) <= 17 and kept[-1] == items[-1]
        stamps = [t for t, _ in items]
        idx = [stamps.index(t) for t, _ in kept[:-1]]
        steps = set(np.diff(idx).tolist())
        assert idx[0] == 0 and len(steps) == 1 and len(kept) >= 8      # evenly spaced from the first


def test_streamed_reading_memory_does_not_grow_with_the_bag(tmp_path):
    """Peak traced memory of reading in 1 s windows: a 3x longer bag needs the same (whole columns: ~3x). What
    a window holds is bounded by the MCAP chunks (1 MB, ~18 s here) that reach into it."""
    import tracemalloc

    def peak(fn):
        tracemalloc.start()
        fn()
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out

    peaks = {}
    for seconds in (60.0, 180.0):
        bag = write_bag(KelvinVoigt1Dof(duration=seconds, rate=250.0, seed=26), tmp_path / f'b{seconds:g}')
        reader = BagReader(bag)
        ends = list(range(reader.start_ns + 10**9, reader.end_ns + 10**9, 10**9))
        streamed = peak(lambda: [None for _ in reader.iter_column_chunks(['/wrench', '/joint_states'], ends)])
        whole = peak(lambda: reader.columns_many(['/wrench', '/joint_states']))
        peaks[seconds] = streamed, whole
    assert peaks[180.0][1] > 2.5 * peaks[60.0][1], peaks       # whole-record columns grow with the bag
    assert peaks[180.0][0] < 1.05 * peaks[60.0][0], peaks      # streamed windows do not
