"""Estimates after several prefixes of one block of samples, for offline replay at vectorised cost.

``update_and_report(estimator, samples, counts)`` processes the whole block and returns, for each j, the
estimate the estimator would report after the first ``counts[j]`` samples of the block (counts
nondecreasing, in 0..len(samples)): the same as feeding the block slice by slice,

    update(samples[counts[j-1]:counts[j]]);  report_j = estimate()        (counts[-1] = 0)

which is what a node stepping on a timer sees. Estimators may provide their own (vectorised)
``update_and_report(samples, counts)`` method with exactly these semantics; any other estimator (anything
with ``update`` and ``estimate``) is driven slice by slice by :func:`sliced_reports`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .estimate import ContactEstimate
from .samples import ContactSamples


def update_and_report(estimator, samples: ContactSamples, counts: np.ndarray) -> list[ContactEstimate]:
    """The estimator's own ``update_and_report`` if it has one, else :func:`sliced_reports`."""
    method = getattr(estimator, 'update_and_report', None)
    if method is not None:
        return method(samples, counts)
    return sliced_reports(estimator, samples, counts)


def sliced_reports(estimator, samples: ContactSamples, counts: np.ndarray) -> list[ContactEstimate]:
    """Reference semantics: ``update`` with consecutive slices of the block, ``estimate`` after each."""
    counts = check_counts(counts, len(samples))
    out = []
    done = 0
    for c in counts.tolist():
        if c > done:
            estimator.update(samples.slice(slice(done, c)))
            done = c
        out.append(estimator.estimate())
    if done < len(samples):
        estimator.update(samples.slice(slice(done, None)))
    return out


def check_counts(counts, n: int) -> np.ndarray:
    """``counts`` as int64, checked to be nondecreasing and within 0..n."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    if len(counts) and (counts[0] < 0 or counts[-1] > n or np.any(np.diff(counts) < 0)):
        raise ValueError(f'counts must be nondecreasing within 0..{n}')
    return counts


def at_counts(counts: np.ndarray, build: Callable[[np.ndarray], list]) -> list:
    """``build(distinct counts)`` gives one report per distinct count; expanded to one per entry of counts."""
    distinct, which = np.unique(counts, return_inverse=True)
    reports = build(distinct)
    return [reports[i] for i in which.tolist()]
