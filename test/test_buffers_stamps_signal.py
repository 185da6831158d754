"""Shared signal pieces: ring buffer, stamp gate, centred differentiator."""
import numpy as np
import pytest

from contact_dynamics_common.ringbuffer import RingBuffer
from contact_dynamics_common.signal import half_window_samples, local_derivatives
from contact_dynamics_common.stamps import StampGate

S = 10**9


def test_ring_buffer_keeps_order_and_counts_overflow():
    rb = RingBuffer(4, 2)
    for i in range(3):
        rb.append(i + 1, (i, -i))
    st, rows = rb.pop_all()
    assert st.tolist() == [1, 2, 3] and rows[:, 1].tolist() == [0, -1, -2] and len(rb) == 0
    rb.extend(np.arange(10, 16), np.arange(12).reshape(6, 2))
    assert rb.overflowed == 2
    st, rows = rb.pop_all()
    assert st.tolist() == [12, 13, 14, 15] and rows[0].tolist() == [4, 5]
    for i in range(6):
        rb.append(100 + i, (i, i))
    assert rb.overflowed == 4 and rb.pop_all()[0].tolist() == [102, 103, 104, 105]


def test_stamp_gate_rejects_and_counts_by_reason():
    g = StampGate(jump_threshold_s=1.0)
    stamps = np.array([1, 2, 2, 3, 0, 5, 4, 50, 60], dtype=np.int64) * S
    finite = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1], bool)
    segs = g.filter(stamps, finite)
    assert [s.index.tolist() for s in segs] == [[0, 1, 3, 6, 7, 8]] and not segs[0].reset_before
    c = g.counts
    assert (c.accepted, c.zero_stamp, c.nonfinite, c.out_of_order, c.time_jumps) == (6, 1, 1, 1, 0)


def test_stamp_gate_backward_jump_is_a_reset_not_a_loss():
    g = StampGate(jump_threshold_s=1.0)
    g.filter(np.array([10, 11], dtype=np.int64) * S)
    segs = g.filter(np.array([12, 13, 1, 2, 3, 4], dtype=np.int64) * S)
    # the jump back is confirmed by the third sample continuing from it (the first two are its evidence)
    assert [(s.index.tolist(), s.reset_before) for s in segs] == [([0, 1], False), ([4, 5], True)]
    assert (g.counts.time_jumps, g.counts.accepted, g.counts.jump_evidence) == (1, 6, 2)
    # a small step back is only an out-of-order sample
    assert g.filter(np.array([int(3.5 * S)], dtype=np.int64)) == [] and g.counts.out_of_order == 1


def test_stamp_gate_decisions_do_not_depend_on_batching():
    rng = np.random.default_rng(0)
    stamps = (np.cumsum(rng.uniform(-0.2, 1.0, 300)) * 1e8).astype(np.int64) + S
    stamps[::37] = 0
    whole = StampGate()
    acc_whole = np.concatenate([s.index for s in whole.filter(stamps)])
    split = StampGate()
    acc_split = []
    for a in range(0, 300, 17):
        acc_split += [a + i for s in split.filter(stamps[a:a + 17]) for i in s.index]
    assert acc_whole.tolist() == acc_split and whole.counts == split.counts


@pytest.mark.parametrize('m', [1, 3, 5])
def test_local_derivatives_of_a_quadratic_are_exact(m):
    t = np.sort(np.random.default_rng(1).uniform(0, 1, 200))        # uneven sampling
    x = 3.0 + 2.0 * t - 4.0 * t ** 2
    xd, xdd = local_derivatives(t, x, m, second=True)
    centres = t[m:-m]
    assert len(xd) == len(t) - 2 * m
    np.testing.assert_allclose(xd, 2.0 - 8.0 * centres, atol=1e-7)
    np.testing.assert_allclose(xdd, -8.0, atol=1e-4)


def test_local_derivative_gain_and_noise_follow_the_documented_formulas():
    dt, m, w = 1e-3, 5, 2 * np.pi * 5.0
    t = np.arange(0, 2, dt)
    xd, _ = local_derivatives(t, np.sin(w * t), m)
    gain = np.max(np.abs(xd)) / w
    assert abs((1 - gain) - (w * m * dt) ** 2 / 10) < 2e-3          # ~ 1 - (w M dt)^2 / 10
    noise = np.random.default_rng(2).normal(0, 1e-5, 200_000)
    vd, _ = local_derivatives(np.arange(len(noise)) * dt, noise, m)
    predicted = 1e-5 * np.sqrt(3 / (m * (m + 1) * (2 * m + 1))) / dt
    assert abs(vd.std() / predicted - 1) < 0.02
    assert half_window_samples(0.005, 1e-3) == 5 and half_window_samples(0.005, 0.01) == 1
