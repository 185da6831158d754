"""The play (backlash) operator of the hysteresis check, computed as a prefix scan of composed clamps, equals
the scalar recursion y_i = min(max(y_{i-1}, x_i - r), x_i + r), y_0 = x_0, value for value (issue 19: the
recursion was 0.4 s of a 10 min replay)."""
import numpy as np
import pytest

from contact_estimation.single_point.assess import play_operator


def recursion(x, r):
    y, prev = [], (float(x[0]) if len(x) else 0.0)
    for v in np.asarray(x, dtype=np.float64).tolist():
        prev = min(max(prev, v - r), v + r)
        y.append(prev)
    return np.array(y)


def signals(rng):
    n = int(rng.integers(1, 3000))
    t = np.arange(n) / 1000.0
    yield 'random walk', np.cumsum(rng.standard_normal(n)) * 1e-4
    yield 'tones and noise', 1e-3 * np.sin(2 * np.pi * 1.7 * t) + 2e-4 * np.sin(2 * np.pi * 13 * t) \
        + 1e-5 * rng.standard_normal(n)
    yield 'quantised', np.round(np.sin(2 * np.pi * 0.5 * t) * 20) / 20.0          # many ties
    yield 'constant', np.full(n, 0.37)


@pytest.mark.parametrize('seed', range(12))
def test_scan_equals_the_recursion(seed):
    rng = np.random.default_rng(seed)
    for label, x in signals(rng):
        scale = float(np.std(x)) or 1.0
        for r in (0.0, 1e-12, 0.05 * scale, 0.45 * scale, 10.0 * scale):
            got, want = play_operator(x, r), recursion(x, r)
            assert got.shape == want.shape
            assert np.array_equal(got, want), (label, len(x), r, np.max(np.abs(got - want)))


def test_lengths_zero_to_three_and_the_input_untouched():
    for x in ([], [1.0], [1.0, 3.0], [1.0, 3.0, 0.5]):
        arr = np.array(x, dtype=np.float64)
        before = arr.copy()
        assert np.array_equal(play_operator(arr, 0.6), recursion(arr, 0.6))
        assert np.array_equal(arr, before)


def test_backlash_follows_after_the_gap_and_holds_inside_it():
    x = np.array([0.0, 1.0, 2.0, 1.5, 1.0, 0.5, 0.0, 1.0])
    # y_0 = 0; pushed up by x - r (r = 0.5): 0.5, 1.5; inside the gap it holds 1.5 until x + r < 1.5
    assert play_operator(x, 0.5).tolist() == [0.0, 0.5, 1.5, 1.5, 1.5, 1.0, 0.5, 0.5]
