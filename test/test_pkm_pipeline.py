"""pkm_identifier's ROS-free pipeline (what the node and run-bag share), the report and excitation tools."""
import math

import numpy as np
import pytest

from contact_dynamics_common.params import ConfigError, load_params_file, validate_all
from pkm_identification import trajectories as T
from pkm_identification.config import PARAMS
from pkm_identification.excitation import score
from pkm_identification.geometry import load_machine
from pkm_identification.pipeline import PkmPipeline
from pkm_identification.report import identify_bag, write_report
from pkm_identification.simulate import make_record, write_bag

from ros_harness import ROOT

CONFIG = str(ROOT / 'config' / 'pkm_identifier.yaml')
NAMES = [f'strut_{i}' for i in range(1, 7)]


def params(**over):
    return validate_all(PARAMS, {**load_params_file(CONFIG, 'pkm_identifier'), **over})


@pytest.fixture(scope='module')
def stream():
    _, rec = make_record('uf_like', 'multisine', 1.5)
    stamps = 1_000_000_000 + np.round(rec.t * 1e9).astype(np.int64)
    return rec, stamps


def push(pl, rec, stamps, sl):
    pl.push_joint_columns(stamps[sl], NAMES, rec.L[sl], rec.Ld[sl], rec.F[sl])


def test_estimate_does_not_depend_on_batching(stream):
    rec, stamps = stream
    a = PkmPipeline(params())
    push(a, rec, stamps, slice(None))
    ea = a.step()
    b = PkmPipeline(params())
    rng = np.random.default_rng(0)
    i = 0
    eb = None
    while i < len(stamps):
        n = int(rng.integers(1, 120))
        push(b, rec, stamps, slice(i, i + n))
        eb = b.step() or eb
        i += n
    assert b.step() is None                      # nothing new: nothing to publish
    # processed: the complete update_block blocks of the samples with a full derivative window; used: less
    # the parallel-filter kernel's ends
    blocks = (len(stamps) - 2 * a.h) // a.block
    assert ea.stamp_ns == eb.stamp_ns and ea.samples_used == eb.samples_used == blocks * a.block - 2 * a.pfilter.half
    # the same arithmetic on the same block arrays: equal to the last bit (before the fixed blocks, the
    # batch-size-dependent BLAS round-off differed by up to 2e-7 relative in the covariance between OpenBLAS
    # kernels, measured over Haswell, Zen, SkylakeX, Sandybridge, Prescott and unset)
    np.testing.assert_array_equal(eb.values, ea.values)
    np.testing.assert_array_equal(eb.covariance, ea.covariance)
    assert ea.flags == eb.flags and ea.valid == eb.valid and ea.status == eb.status


def _as_tuple(e):
    return (e.stamp_ns, e.samples_used, e.values.tobytes(), e.covariance.tobytes(), tuple(e.flags), e.valid,
            e.status, tuple(e.warnings), e.predicted_stamp_ns, e.predicted_effort.tobytes())


def test_block_estimates_do_not_depend_on_the_tick_split(stream):
    """Issue 15: the estimates published at the block boundaries (step_blocks: what the node and run-bag
    publish) are the same list, bit for bit, whether the samples arrive one per update, in random batches, in
    run-bag-sized chunks or all at once."""
    rec, stamps = stream
    runs = []
    for split in ('one', 'random', 'chunk', 'all'):
        pl = PkmPipeline(params())
        rng = np.random.default_rng(7)
        out, i = [], 0
        while i < len(stamps):
            n = {'one': 1, 'random': int(rng.integers(1, 200)), 'chunk': 333, 'all': len(stamps)}[split]
            push(pl, rec, stamps, slice(i, i + n))
            out += pl.step_blocks()
            i += n
        runs.append([_as_tuple(e) for e in out])
    blocks = (len(stamps) - 2 * PkmPipeline(params()).h) // params()['update_block']
    assert len(runs[0]) >= blocks - 2                # one per block, less those before the filter's first output
    assert runs[1] == runs[0] and runs[2] == runs[0] and runs[3] == runs[0]
    # block boundaries: consecutive estimates update_block samples apart
    used = np.diff([r[1] for r in runs[0]])
    assert (used == params()['update_block']).all(), used


def test_bad_input_is_counted_never_nan(stream):
    rec, stamps = stream
    pl = PkmPipeline(params())
    F = rec.F.copy()
    F[100:110, 2] = np.nan
    L = rec.L.copy()
    L[300, 0] = np.inf
    st = stamps.copy()
    st[500] = 0
    pl.push_joint_columns(st[:800], NAMES, L[:800], rec.Ld[:800], F[:800])
    pl.push_joint_columns(st[400:450], NAMES, L[400:450], rec.Ld[400:450], F[400:450])   # repeated, out of order
    est = pl.step()
    s = pl.status()
    assert s['joint_states.nonfinite'] == 11 and s['joint_states.zero_stamp'] == 1
    assert s['joint_states.out_of_order'] == 50
    assert np.isfinite(est.values).all() and np.isfinite(est.covariance).all()
    np.linalg.cholesky(est.covariance)
    # a stamp more than 1 s back (a looped bag) resets the identification to the prior
    pl.push_joint_columns(st[:5] - 0, NAMES, L[:5], rec.Ld[:5], F[:5])
    pl.step()
    assert pl.status()['resets_time_jump'] == 0                 # 0.8 s back: out of order, not a jump
    sl = slice(510, 710)                            # clean samples, 1.19 s before the newest
    pl.push_joint_columns(st[sl] - 900_000_000, NAMES, L[sl], rec.Ld[sl], F[sl])
    pl.step()
    assert pl.status()['resets_time_jump'] == 1
    # restarted from the prior at the third sample continuing from the new time (the gate's evidence: the first
    # two are dropped, jump_evidence): only the new samples with full derivative and parallel-filter windows
    assert pl.status()['joint_states.jump_evidence'] == 2
    assert pl.counts_used == (198 - 2 * pl.h) // pl.block * pl.block - 2 * pl.pfilter.half   # complete blocks


def test_unknown_joint_and_malformed_messages(stream):
    rec, stamps = stream
    pl = PkmPipeline(params(joint_names=['a', 'b', 'c', 'd', 'e', 'f']))
    push(pl, rec, stamps, slice(0, 10))
    assert pl.step() is None and pl.status()['joint_missing'] == 10
    assert "joint(s) ['a', 'b', 'c', 'd', 'e', 'f'] not in the JointState names" in pl.last_error
    pl = PkmPipeline(params())
    pl.push_joint_state(int(stamps[0]), NAMES, rec.L[0], [], rec.F[0][:5])
    assert pl.status()['joint_state_malformed'] == 1


def test_freeze_and_active_set(stream):
    rec, stamps = stream
    pl = PkmPipeline(params())
    push(pl, rec, stamps, slice(0, 500))
    before = pl.step().values.copy()
    held = pl.ukf.theta[0].copy()                   # what a parameter taken out of the active set keeps
    pl.frozen = True
    push(pl, rec, stamps, slice(500, 1000))
    est = pl.step()
    np.testing.assert_array_equal(est.values, before)
    assert est.frozen and pl.status()['frozen_skipped'] == 500 and est.predicted_effort is not None
    pl.frozen = False
    assert pl.set_active(['m_p']) == ['m_p']
    push(pl, rec, stamps, slice(1000, 1200))
    est = pl.step()
    assert est.flags[0] == 'prior_only' and est.values[0] == held[0] and est.values[2] != before[2]
    with pytest.raises(ValueError, match='estimate_friction'):
        pl.set_active('friction')
    with pytest.raises(ConfigError, match='machine'):
        PkmPipeline(params(machine='nope'))


def test_predicted_effort_matches_measured_after_convergence(stream):
    rec, stamps = stream
    pl = PkmPipeline(params())
    push(pl, rec, stamps, slice(None))
    est = pl.step()
    k = int(np.searchsorted(stamps, est.predicted_stamp_ns))
    assert np.abs(est.predicted_effort - rec.F[k]).max() < 0.05      # N, of forces up to ~75 N


def test_report_and_free_fall_warning(tmp_path):
    _, rec = make_record('uf_like', 'freefall', 0.3)
    bag = write_bag(tmp_path / 'ff', rec)
    items, truth, result, status = identify_bag(str(bag))
    text = write_report(tmp_path / 'rep', items, truth, result, status)
    assert 'scale ambiguity' in text and '| m_p | kg |' in text
    final = items[-1][1]
    assert 'identified' not in final['flags'] and 'ratio_only' in final['flags']
    assert not final['valid']
    assert (tmp_path / 'rep' / 'convergence.png').stat().st_size > 1000


def test_excitation_designer_scores_trajectories():
    m = load_machine('uf_like')
    t = np.arange(0, 2, 0.004)
    sx = score(m, *T.make('x').sample(m.home_q, t))
    assert sx.rank == 4 and sx.excited == ['m_e', 'm_b', 'm_p', 'Ix_s'] and sx.within_stroke
    sm = score(m, *T.make('multisine').sample(m.home_q, t))
    assert sm.rank == 8 and len(sm.excited) == 8 and math.isfinite(sm.condition_number)
    assert score(m, *T.make('z', scale=20).sample(m.home_q, t)).within_stroke is False


def test_unmodelled_friction_is_reported_as_model_mismatch():
    """Data with strut friction, estimator without it: the omitted-regressor test of the friction columns fails, the
    estimate is not valid
    and no parameter is reported identified; with estimate_friction the same data identify everything."""
    _, rec = make_record('uf_like', 'xy', 1.5, friction=True)
    stamps = 1_000_000_000 + np.round(rec.t * 1e9).astype(np.int64)
    pl = PkmPipeline(params())
    est = None
    for i in range(0, len(stamps), 50):                    # 20 Hz updates
        push(pl, rec, stamps, slice(i, i + 50))
        est = pl.step() or est
    assert not est.valid and est.status.startswith('model mismatch suspected: unmodelled strut friction')
    assert 'identified' not in est.flags
    pl = PkmPipeline(params(estimate_friction=True))
    for i in range(0, len(stamps), 50):
        push(pl, rec, stamps, slice(i, i + 50))
        est = pl.step() or est
    truth = rec.truth
    excited = [j for j, f in enumerate(est.flags) if f == 'identified']
    assert len(excited) == 17 and est.valid, (est.flags, est.status)      # all but the platform inertias
    np.testing.assert_allclose(est.values[excited], truth[excited], rtol=5e-3)
