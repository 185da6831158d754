"""One BLAS thread per process of ours (contact_dynamics_common.threads): numpy and scipy each bundle an
OpenBLAS, and either may load after the limit is applied (``contact-dynamics`` applies it before any import of
numpy), so both must end up limited; a user's own OPENBLAS_NUM_THREADS wins for a library loaded later, and
CONTACT_DYNAMICS_BLAS_THREADS=0 leaves the libraries alone."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip('threadpoolctl')

PROBE = '''
import json
from contact_dynamics_common.threads import limit_blas_threads
limit_blas_threads()
import numpy, scipy.linalg
from threadpoolctl import threadpool_info
print(json.dumps({i['filepath'].rsplit('/', 1)[-1]: i['num_threads'] for i in threadpool_info()
                  if i['user_api'] == 'blas'}))
'''


def pools(**env_changes) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'CONTACT_DYNAMICS_BLAS_THREADS')}
    env.update(env_changes)
    out = subprocess.run([sys.executable, '-c', PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_blas_loaded_after_the_limit_has_one_thread():
    got = pools()
    assert len(got) >= 1, got                      # numpy's OpenBLAS at least (scipy's too where it bundles one)
    assert set(got.values()) == {1}, got


def test_the_limit_is_a_setting_and_the_users_own_variable_wins():
    assert set(pools(CONTACT_DYNAMICS_BLAS_THREADS='2').values()) == {2}
    assert set(pools(OPENBLAS_NUM_THREADS='2').values()) == {2}
