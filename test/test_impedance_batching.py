"""Issue 15: the impedance profiler's published profile at a data stamp does not depend on how the sample
stream was split into updates (timer ticks, run-bag chunks, two streams arriving out of step).

The same S2 stream (position from JointState, force from WrenchStamped, 4 kHz) is fed to the pipeline in
very different splits: a step every 7 samples, random steps of 1-600 samples, the wrench stream up to
500 samples ahead of or behind the joint stream, and the joint stream 700 samples late. Every published
message (messages.publication: values, covariances, validity, reasons, extras) at a data stamp that two
splits share must be identical to the last bit, because the samples are fitted in data-time blocks.
"""
from __future__ import annotations

import numpy as np
import pytest

from contact_dynamics_common.ros.params import validate_all
from contact_estimation.impedance import scenarios as sc
from contact_estimation.impedance.config import PARAMS
from contact_estimation.impedance.messages import publication
from contact_estimation.impedance.pipeline import ImpedancePipeline
from contact_estimation.impedance.simulate import EPOCH_NS

DURATION = 3.0


@pytest.fixture(scope='module')
def stream():
    rec = sc.simulate('S2', duration=DURATION, seed=7)
    stamps = EPOCH_NS + np.round(rec.t * 1e9).astype(np.int64)
    force = np.zeros((len(stamps), 3))
    force[:, 0] = rec.F_meas
    return stamps, rec.x_meas, force


PARAMS_WRENCH = {'joint_name': 'slider', 'force_source': 'wrench', 'min_samples': 100}


def _run(stream, joint_ends, wrench_ends, params=PARAMS_WRENCH, final_flush=True) -> dict:
    """Push the joint stream up to joint_ends[i] and the wrench stream up to wrench_ends[i], step, and keep
    the published fields by data stamp; then (as after the end of a bag) one step without new samples."""
    stamps, x, force = stream
    p = validate_all(PARAMS, params)
    pl = ImpedancePipeline(p)
    out, ij, iw = {}, 0, 0
    for a, b in zip(joint_ends, wrench_ends):
        pl.push_wrench_columns(stamps[iw:b], force[iw:b])
        pl.push_joint_columns(stamps[ij:a], ['slider'], x[ij:a, None])
        iw, ij = max(iw, b), max(ij, a)
        pl.step()
        if pl.newest_ns not in out:          # the profile changes only when a block was fitted
            f = publication(pl, p)
            if f is not None:
                out[pl.newest_ns] = f
    if final_flush:
        pl.step()
        out['final'] = publication(pl, p)
    return out


def _ends(rng, n, lo, hi):
    e = np.cumsum(rng.integers(lo, hi, 2 * n // lo + 2))
    return np.append(e[e < n], n)


def _same(a, b, path=''):
    """Exact equality of two published field trees (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f'{path}.{k}')
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f'{path}[{i}]')
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), (path, a, b)
    else:
        assert a == b, (path, a, b)


def test_profile_at_a_data_stamp_does_not_depend_on_the_batch_split(stream):
    n = len(stream[0])
    rng = np.random.default_rng(4)
    fine = np.arange(7, n + 7, 7).clip(max=n)
    reference = _run(stream, fine, fine)
    coarse = _ends(rng, n, 1, 600)
    skew = np.maximum.accumulate(np.clip(coarse + rng.integers(-500, 500, len(coarse)), 0, n))
    skew[-1] = n
    late = np.clip(coarse - 700, 0, n)
    late[-1] = n
    splits = {'random 1-600': (coarse, coarse), 'wrench ahead/behind': (coarse, skew),
              'joint 700 late': (late, coarse)}
    stamps = [s for s in reference if s != 'final']
    assert len(stamps) >= 0.8 * DURATION * 5          # one profile per 0.2 s data-time block
    for name, (je, we) in splits.items():
        other = _run(stream, je, we)
        common = [s for s in other if s in reference]
        assert len(common) >= 5, (name, len(common))
        for s in common:
            _same(other[s], reference[s], f'{name} @ {s}')
    fin = reference['final']
    assert fin['samples_used'] > 0 and fin['header']['stamp'] != reference[stamps[-1]]['header']['stamp']


def test_effort_source_and_a_flush_at_the_end(stream):
    """Force as the joint effort (one stream): the same; the incomplete last block is fitted by the step that
    finds no new sample, and then equals a run that pushed everything at once."""
    stamps, x, force = stream
    n = len(stamps)
    params = {'joint_name': 'slider', 'force_source': 'effort', 'min_samples': 100}
    p = validate_all(PARAMS, params)
    whole = ImpedancePipeline(p)
    whole.push_joint_columns(stamps, ['slider'], x[:, None], force[:, :1])
    whole.step()
    before = whole.counts['samples_conditioned']
    assert whole.step() > 0 and whole.counts['samples_conditioned'] > before      # the flush
    chunks = ImpedancePipeline(p)
    for i in range(0, n, 313):
        chunks.push_joint_columns(stamps[i:i + 313], ['slider'], x[i:i + 313, None], force[i:i + 313, :1])
        chunks.step()
    chunks.step()
    _same(publication(chunks, p), publication(whole, p))
