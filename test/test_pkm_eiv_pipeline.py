"""pkm_identifier pipeline (node and run-bag) with the errors-in-variables weighting (state_noise_std.*):
the same R_k = R_F I + G_k diag(sigma^2) G_k^T per sample as estimation.identify(..., state_noise=sigma)."""
import numpy as np
import pytest

from contact_dynamics_common.params import ConfigError, load_params_file, validate_all
from pkm_identification import eiv
from pkm_identification import estimation as E
from pkm_identification import records as RC
from pkm_identification.config import PARAMS
from pkm_identification.geometry import load_machine
from pkm_identification.pipeline import PkmPipeline
from pkm_identification.records import Record
from pkm_identification.simulate import make_record

from ros_harness import ROOT

CONFIG = str(ROOT / 'config' / 'pkm_identifier.yaml')
NAMES = [f'strut_{i}' for i in range(1, 7)]
CH = ('position', 'velocity', 'acceleration')


def params(sigma=None, **over):
    if sigma is not None:
        over.update({f'state_noise_std.{c}': [float(v) for v in sigma[i]] for i, c in enumerate(CH)})
    over.setdefault('parallel_filter_hz', 0.0)      # the white-noise R_k weighting works on unfiltered samples
    return validate_all(PARAMS, {**load_params_file(CONFIG, 'pkm_identifier'), **over})


def feed_states(pl, q, qd, qdd, F, L, batch=50):
    """The pipeline's shared sample stage (after kinematics), in live-sized batches."""
    st = 1_000_000_000 + np.arange(len(F), dtype=np.int64) * 1_000_000
    for i in range(0, len(F), batch):
        sl = slice(i, i + batch)
        pl._use_samples(q[sl], qd[sl], qdd[sl], F[sl], L[sl], st[sl])
    return pl.estimate()


def same_filter_identify(m, pl, rec, sigma):
    p = pl.p
    return E.identify(m, rec, theta0=pl.theta0, P0=pl.P0, R_e=p['measurement_std'] ** 2, state_noise=sigma,
                      alpha=p['alpha'], beta=p['beta'], kappa=p['kappa'], history_every=0)


@pytest.mark.parametrize('seed', [0, 1])
def test_s10_noise_weighted_pipeline_matches_identify(seed):
    """S10: 1 % uniform noise on q, qd, qdd of the 4 s FA_XY record, exact forces (R_F = (0.01 N)^2),
    theta_0 = 0.8 truth. Weighting on: masses < 1 % and equal to identify(..., state_noise=sigma) on the same
    samples (rtol 1e-8, measured <= 2e-9: batching round-off)."""
    m = load_machine('uf_like')
    rec = RC.actuated(m, 'xy')
    nr = RC.with_state_noise(rec, 0.01, seed=seed)
    sigma = eiv.uniform_noise_std(0.01, nr.q, nr.qd, nr.qdd)
    over = dict(measurement_std=0.01, theta0=[float(v) for v in 0.8 * rec.theta8], prior_rel_std=0.5)
    pl = PkmPipeline(params(sigma, **over))
    est = feed_states(pl, nr.q, nr.qd, nr.qdd, nr.F, nr.L)
    ref = same_filter_identify(m, pl, nr, sigma)
    err = 100 * (est.values / rec.theta8 - 1)
    assert (np.abs(err[:3]) < 1.0).all(), err[:3]
    np.testing.assert_allclose(est.values, ref.theta, rtol=1e-8)
    np.testing.assert_allclose(pl.ukf.P[0], ref.P, rtol=1e-6, atol=1e-14)      # the filter itself
    # the published sigma is residual-based (never below the filter's own: trust.covariance.combine)
    assert (est.std >= np.sqrt(np.diag(ref.P)) * (1 - 1e-9)).all()
    # off (all 0): the unweighted filter, identical to identify without state_noise, and not the weighted one
    off = PkmPipeline(params(**over))
    assert off.state_sigma is None
    e_off = feed_states(off, nr.q, nr.qd, nr.qdd, nr.F, nr.L)
    np.testing.assert_allclose(e_off.values, same_filter_identify(m, off, nr, None).theta, rtol=1e-8)
    assert np.abs(e_off.values - est.values).max() > 1e-3 * np.abs(est.values).max()


def test_joint_state_path_uses_the_weighting():
    """Through push_joint_columns (the input of the node and of run-bag): the samples the pipeline derives
    (FK, local fit) give identify(..., state_noise=sigma) on those samples (rtol 1e-8); zeros are 'off'."""
    m = load_machine('uf_like')
    _, rec = make_record('uf_like', 'multisine', 1.5)
    stamps = 1_000_000_000 + np.round(rec.t * 1e9).astype(np.int64)
    sigma = eiv.uniform_noise_std(0.001, rec.q, rec.qd, rec.qdd)
    runs = {}
    for name, sg in (('on', sigma), ('off', None), ('zeros', np.zeros((3, 6)))):
        pl = PkmPipeline(params(sg))
        seen = []
        inner = pl._use_samples
        pl._use_samples = lambda *a, _f=inner, _seen=seen: (_seen.append([x.copy() for x in a[:6]]), _f(*a))
        est = None
        for i in range(0, len(stamps), 50):
            pl.push_joint_columns(stamps[i:i + 50], NAMES, rec.L[i:i + 50], rec.Ld[i:i + 50], rec.F[i:i + 50])
            est = pl.step() or est
        q, qd, qdd, F, L, st = (np.concatenate(c) for c in zip(*seen))
        sub = Record('seen', st * 1e-9, q, qd, qdd, L, L * 0, F, rec.theta8)
        ref = same_filter_identify(m, pl, sub, sg if name == 'on' else None)
        np.testing.assert_allclose(est.values, ref.theta, rtol=1e-8)
        assert est.samples_used == len(F) == (len(stamps) - 2 * pl.h) // pl.block * pl.block   # whole blocks
        runs[name] = est.values
    np.testing.assert_array_equal(runs['zeros'], runs['off'])
    assert np.abs(runs['on'] - runs['off']).max() > 0


@pytest.mark.parametrize('bad', [dict(position=[-1e-3] + [0.0] * 5), dict(velocity=[0.1] * 5),
                                 dict(acceleration=[float('nan')] * 6)])
def test_bad_state_noise_refused_at_start(bad):
    (c, v), = bad.items()
    with pytest.raises(ConfigError, match=f'state_noise_std.{c}'):
        params(**{f'state_noise_std.{c}': v})
