"""One BLAS thread per process of ours (nodes, ``contact-dynamics``), unless the user says otherwise.

Our linear algebra is many small products (p <= 20): OpenBLAS's extra threads do not make them faster, they
spin - measured on ``run-bag`` of the 10 min bench bag (`bench/bench_replay_long.py`): 7.6 s wall with one
thread or two, 7.6 s CPU with one, 13.8 s CPU with two. On a robot those cycles belong to the controllers.
Two mechanisms, because numpy and scipy each bundle their own OpenBLAS and either may load after this runs:
``threadpoolctl`` (the scientific-Python tool for this) limits the pools already loaded, and the libraries'
own variables (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``; read when a library loads)
are set for those loaded later and for our child processes, unless the user set them. (Before, only the first
mechanism ran, at the start of ``contact-dynamics`` where no BLAS was loaded yet: run-bag of the 10 min bench bag
spent 17.4 s CPU in 9.8 s wall; with both, 10.0 s CPU in the same wall.)

``CONTACT_DYNAMICS_BLAS_THREADS``: the limit (default 1; 0 leaves the libraries' own default).
"""
from __future__ import annotations

import os

ENV = 'CONTACT_DYNAMICS_BLAS_THREADS'
#: read by OpenBLAS / OpenMP / MKL when they load
LIBRARY_VARIABLES = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')
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
        for var in LIBRARY_VARIABLES:
            os.environ.setdefault(var, str(limit))
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            pass
        else:
            threadpool_limits(limits=limit)
            result = limit
    _applied.append(result)
    return result
