"""One BLAS thread per process of ours (nodes, ``contact-dynamics``), unless the user says otherwise.

Our linear algebra is many small products (p <= 20): OpenBLAS's extra threads do not make them faster, they
spin - measured on ``run-bag`` of the 10 min bench bag (`bench/bench_replay_long.py`): 7.6 s wall with one
thread or two, 7.6 s CPU with one, 13.8 s CPU with two. On a robot those cycles belong to the controllers.
``threadpoolctl`` (the scientific-Python tool for this) sets the limit after numpy is loaded.

``CONTACT_DYNAMICS_BLAS_THREADS``: the limit (default 1; 0 leaves the libraries' own default).
"""
from __future__ import annotations

import os

ENV = 'CONTACT_DYNAMICS_BLAS_THREADS'
_applied: list = []


def limit_blas_threads(default: int = 1) -> int | None:
    """Limit the BLAS / OpenMP thread pools of this process (once; later calls return the same limit).
    Returns the limit applied, or None when none was (0 requested, or threadpoolctl missing: the libraries'
    defaults then apply, which is only slower on CPU time)."""
    if _applied:
        return _applied[0]
    raw = os.environ.get(ENV, '').strip()
    try:
        limit = int(raw) if raw else int(default)
    except ValueError:
        limit = int(default)
    result = None
    if limit > 0:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            pass
        else:
            threadpool_limits(limits=limit)
            result = limit
    _applied.append(result)
    return result
