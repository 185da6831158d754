"""The stamp gate's time-jump rule needs evidence (issue 16 item 1): an isolated outlier stamp is dropped and
counted ``stamp_outlier`` and the good data around it kept; a stream that really moved (a looped bag, a
restart) is followed after ``confirm_samples`` samples continuing from the new time."""
import numpy as np
import pytest

from contact_dynamics_common.signal.stamps import DROP_CAUSES, StampGate

S = 10**9
T0 = 1_700_000_000 * S          # an epoch-like start
DT = S // 1000                  # 1 kHz


def _good(n, start=T0, dt=DT):
    return start + dt * np.arange(n, dtype=np.int64)


def _accepted(segs):
    return np.concatenate([s.index for s in segs]).tolist() if segs else []


def _total(g):
    return g.counts.accepted + sum(g.counts.dropped().values())


@pytest.mark.parametrize('outlier', [T0 + 30 * 365 * 86400 * S,     # years in the future
                                     T0 + 499 * DT - int(1.5 * S),  # 1.5 s in the past (> jump threshold)
                                     T0 + 3 * S])                   # 2.5 s ahead in a 1 kHz stream
def test_an_isolated_outlier_is_dropped_and_the_good_data_around_it_kept(outlier):
    good = _good(1000)
    stamps = np.insert(good, 500, outlier)                # after good sample 499
    g = StampGate(jump_threshold_s=1.0)
    segs = g.filter(stamps)
    assert len(segs) == 1 and not segs[0].reset_before
    assert _accepted(segs) == [i for i in range(1001) if i != 500]
    c = g.counts
    assert (c.accepted, c.stamp_outlier, c.time_jumps, c.jump_evidence) == (1000, 1, 0, 0)
    assert _total(g) == 1001


def test_outliers_first_in_a_block_last_in_a_block_and_last_of_the_stream():
    g = StampGate()
    assert _accepted(g.filter(_good(100))) == list(range(100))
    future = T0 + 10**18
    # the outlier ends a block: it is watched across the block boundary, then shown to be isolated
    assert _accepted(g.filter(np.array([T0 + 100 * DT, future]))) == [0]
    assert g.held == 1
    assert _accepted(g.filter(np.array([T0 + 101 * DT, T0 + 102 * DT]))) == [0, 1] and g.held == 0
    # the outlier starts a block; then one is the stream's last sample
    past = T0 + 102 * DT - int(1.5 * S)
    assert _accepted(g.filter(np.array([past, T0 + 103 * DT, T0 + 104 * DT, future]))) == [1, 2]
    assert (g.counts.stamp_outlier, g.counts.accepted, g.counts.time_jumps) == (3, 105, 0)


def test_a_looped_stream_resets_once_per_loop():
    loop = _good(2000)
    stamps = np.concatenate([loop, loop, loop])
    g = StampGate(jump_threshold_s=1.0, confirm_samples=3)
    segs = g.filter(stamps)
    assert [(s.index[0], len(s.index), s.reset_before) for s in segs] == [
        (0, 2000, False), (2002, 1998, True), (4002, 1998, True)]
    c = g.counts
    assert (c.time_jumps, c.jump_evidence, c.stamp_outlier, c.accepted) == (2, 4, 0, 5996)


def test_a_forward_hole_longer_than_the_threshold_needs_evidence_but_is_no_reset():
    stamps = np.concatenate([_good(100), _good(100, start=T0 + 5 * S)])
    g = StampGate()
    segs = g.filter(stamps)
    assert len(segs) == 1 and not segs[0].reset_before
    assert _accepted(segs) == list(range(100)) + list(range(102, 200))
    assert (g.counts.jump_evidence, g.counts.time_jumps, g.counts.stamp_outlier) == (2, 0, 0)


def test_a_slow_stream_is_not_suspected_for_its_own_period():
    stamps = _good(20, dt=3 * S)            # one sample every 3 s, threshold 1 s
    g = StampGate(jump_threshold_s=1.0)
    assert _accepted(g.filter(stamps)) == list(range(20)) and g.counts.stamp_outlier == 0


def test_confirm_samples_1_is_the_rule_without_evidence():
    g = StampGate(confirm_samples=1)
    segs = g.filter(np.concatenate([_good(10), _good(10, start=T0 - 10 * S)]))
    assert [(len(s.index), s.reset_before) for s in segs] == [(10, False), (10, True)]


def test_decisions_and_counts_do_not_depend_on_batching():
    rng = np.random.default_rng(3)
    base = _good(3000)
    stamps = base.copy()
    bad = rng.choice(3000, 60, replace=False)
    kinds = rng.integers(0, 5, 60)
    stamps[bad[kinds == 0]] = 0
    stamps[bad[kinds == 1]] += 10**17                                  # far future
    stamps[bad[kinds == 2]] -= int(1.5 * S)                             # past outliers
    stamps[bad[kinds == 3]] -= 5 * DT                                   # out of order
    stamps = np.concatenate([stamps, base[:700]])                       # and a loop
    finite = np.ones(len(stamps), bool)
    finite[bad[kinds == 4]] = False
    whole = StampGate()
    segs_whole = [(s.index.tolist(), s.reset_before) for s in whole.filter(stamps, finite)]
    flat_whole = [i for idx, _ in segs_whole for i in idx]
    for block in (1, 7, 64, 1000):
        split = StampGate()
        flat, resets = [], []
        for a in range(0, len(stamps), block):
            for s in split.filter(stamps[a:a + block], finite[a:a + block]):
                if s.reset_before:
                    resets.append(a + (s.index[0] if len(s.index) else block))
                flat += (a + s.index).tolist()
        assert flat == flat_whole and split.counts == whole.counts
    c = whole.counts
    assert c.time_jumps == 1 and c.stamp_outlier == (kinds == 1).sum() + (kinds == 2).sum()
    assert c.zero_stamp == (kinds == 0).sum() and c.nonfinite == (kinds == 4).sum()
    assert _total(whole) == len(stamps)
    assert set(DROP_CAUSES) <= set(c.as_dict())


# ---------------------------------------------------------------- through the pipelines (issue 16's figures)
def _insert(stamps, rows, at, stamp):
    """A copy of the stream with one sample stamped ``stamp`` (values of sample ``at``) inserted after ``at``."""
    return np.insert(stamps, at + 1, stamp), np.insert(rows, at + 1, rows[at], axis=0)


@pytest.mark.parametrize('kind', ['future', 'past'])
def test_one_stray_stamp_keeps_the_gls_window_of_the_single_point_pipeline(kind):
    """Issue 16 item 1: one message stamped years in the future (or 1.5 s in the past) reset the pipeline and
    the gls window fell from 9990 to 4976 samples; now every estimate equals the clean stream's."""
    from contact_dynamics_common.params import validate_all
    from contact_estimation.single_point.config import PARAMS
    from contact_estimation.single_point.pipeline import ContactPipeline
    from contact_estimation.single_point.simulate import KelvinVoigt1Dof
    m = KelvinVoigt1Dof(duration=10.0, rate=1000.0, seed=4).measurements()
    st, f, q = m['stamp_ns'], m['force_meas'], m['q'][:, None]

    def run(ws, wf, js, jq):
        pl = ContactPipeline(validate_all(PARAMS, {'joint_name': 'slider', 'algorithms': ['rls', 'gls']}))
        for a in range(0, len(ws), 500):
            pl.push_wrench_columns(ws[a:a + 500], wf[a:a + 500])
            pl.push_joint_columns(js[a:a + 500], ['slider'], jq[a:a + 500])
            out = pl.step()
        return pl, {e.algorithm: e for e in out}

    at = len(st) // 2
    bad = st[at] + (10 * 365 * 86400 * S if kind == 'future' else -int(1.5 * S))
    clean_pl, clean = run(st, f, st, q)
    ws, wf = _insert(st, f, at, bad)
    js, jq = _insert(st, q, at + 7, bad)
    pl, dirty = run(ws, wf, js, jq)
    assert clean['gls'].samples_used > 9000
    for name, e in clean.items():
        assert dirty[name].samples_used == e.samples_used, name
        np.testing.assert_allclose(dirty[name].values, e.values, rtol=1e-12)
    c = pl.status()
    assert (c['wrench.stamp_outlier'], c['displacement.stamp_outlier'], c.get('resets_time_jump', 0)) == (1, 1, 0)
    led = pl.ledger()
    assert all(v['dropped']['stamp_outlier'] == 1 for v in led.values())


@pytest.mark.parametrize('kind', ['future', 'past'])
def test_one_stray_stamp_keeps_the_pkm_identification(kind):
    """Issue 16 item 1 for pkm_identifier (3998 -> 1997 samples used before)."""
    from contact_dynamics_common.params import load_params_file, validate_all
    from pkm_identification.config import PARAMS
    from pkm_identification.pipeline import PkmPipeline
    from pkm_identification.simulate import make_record
    from ros_harness import ROOT
    _, rec = make_record('uf_like', 'multisine', 2.0)
    stamps = T0 + np.round(rec.t * 1e9).astype(np.int64)
    rows = np.hstack([rec.L, rec.Ld, rec.F])
    names = [f'strut_{i}' for i in range(1, 7)]
    p = validate_all(PARAMS, load_params_file(str(ROOT / 'config' / 'pkm_identifier.yaml'), 'pkm_identifier'))

    def run(st, r):
        pl = PkmPipeline(p)
        for a in range(0, len(st), 250):
            pl.push_joint_columns(st[a:a + 250], names, r[a:a + 250, 0:6], r[a:a + 250, 6:12], r[a:a + 250, 12:18])
            est = pl.step() or est
        return pl, est

    at = len(stamps) // 2
    bad = stamps[at] + (10 * 365 * 86400 * S if kind == 'future' else -int(1.5 * S))
    _, clean = run(stamps, rows)
    pl, dirty = run(*_insert(stamps, rows, at, bad))
    assert dirty.samples_used == clean.samples_used > 1000
    # the blocks after the insertion are cut one sample later: the batching tolerance of test_pkm_pipeline
    np.testing.assert_allclose(dirty.values, clean.values, rtol=1e-8)
    s = pl.status()
    assert (s['joint_states.stamp_outlier'], s['resets_time_jump']) == (1, 0)


def test_forward_intervals_inf_never_suspects_a_pause():
    """A sporadic stream (rover obstacle hypotheses) is gated with forward_intervals=inf: a pause of any
    length is accepted at once, while a jump back still needs its evidence."""
    stamps = np.array([T0, T0 + S // 10, T0 + S // 5, T0 + 60 * S, T0 + 61 * S, T0 + 10 * S], dtype=np.int64)
    g = StampGate(forward_intervals=float('inf'))
    assert _accepted(g.filter(stamps)) == [0, 1, 2, 3, 4] and g.counts.stamp_outlier == 1
    regular = StampGate()
    assert _accepted(regular.filter(stamps[:4])) == [0, 1, 2] and regular.held == 1
