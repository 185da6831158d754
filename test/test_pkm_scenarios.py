"""pkm_identification scenarios of spec oh_pkm_ukf.md sec. 7 on the UF-like machine (4 s at 1 kHz, theta_0 =
0.8 theta_true, P_0 = diag((0.5 theta_0)^2), R^e = (0.1 N)^2 I unless stated): S2, S3, S11 noise-free, S5 free
fall, S9 ordering, S10 noise (force vs energy), S15 staged, flags, LS cross-checks."""
import numpy as np
import pytest

from contact_dynamics_common import trust
from pkm_identification import dynamics as D
from pkm_identification import eiv
from pkm_identification import estimation as E
from pkm_identification import records as RC
from pkm_identification.geometry import load_machine
from pkm_identification.ls import RecursiveLS, batch_wls

NAMES = D.BASE_NAMES
PLATFORM = [3, 4, 5]


@pytest.fixture(scope='module')
def m():
    return load_machine('uf_like')


@pytest.fixture(scope='module')
def recs(m):
    return {n: RC.actuated(m, n) for n in ('x', 'xy', 'multisine')}


def test_s2_x_sinusoid(m, recs):
    rec = recs['x']
    r = E.identify(m, rec)
    err = r.error_pct(rec.theta8)
    for n in ('m_e', 'm_b', 'm_p', 'Ix_s'):
        assert abs(err[NAMES.index(n)]) < 0.05, (n, err)
        assert r.flags[NAMES.index(n)] == 'identified'
    for j in PLATFORM + [NAMES.index('Iz_s')]:
        assert r.flags[j] == 'not_excited', (NAMES[j], r.flags)
        assert abs(err[j] + 20.0) < 1e-6           # stays exactly at the prior: reported as such, not identified


def test_s3_xy_sinusoid(m, recs):
    rec = recs['xy']
    r = E.identify(m, rec)
    err = r.error_pct(rec.theta8)
    for n in ('m_e', 'm_b', 'm_p', 'Ix_s', 'Iz_s'):
        assert abs(err[NAMES.index(n)]) < 0.05, (n, err)
        assert r.flags[NAMES.index(n)] == 'identified'
    assert all(r.flags[j] == 'not_excited' for j in PLATFORM)


def test_s11_multisine_all_eight(m, recs):
    rec = recs['multisine']
    r = E.identify(m, rec, history_every=10)
    err = r.error_pct(rec.theta8)
    assert np.abs(err).max() < 0.1, err
    at_1s = r.history[np.searchsorted(r.history_t, 1.0)]
    assert np.abs(100 * (at_1s / rec.theta8 - 1)).max() < 1.0
    assert r.flags == ['identified'] * 8
    conv = trust.convergence(NAMES, r.history[-100:], r.history_std[-100:], initial=0.8 * rec.theta8,
                             prior_sigma=0.4 * rec.theta8)
    assert conv.ok, conv.reason
    assert trust.nis_check(r.nis, dof=6).ok


def test_unexcited_parameters_never_reported_identified(m):
    """Pure z motion for only 0.2 s and a hand-set large prior: platform inertias carry no information."""
    rec = RC.actuated(m, 'z', duration=0.2)
    r = E.identify(m, rec)
    for j in PLATFORM:
        assert r.flags[j] == 'not_excited'
        assert r.excitation[j] == pytest.approx(0.0, abs=1e-9)


def test_s5_free_fall_warns_scale_ambiguity(m):
    rec = RC.free_fall(m)
    th0 = rec.theta8 * np.array([0.7, 1.2, 0.9, 1.1, 0.8, 1.3, 0.75, 1.25])
    r = E.identify(m, rec, theta0=th0)
    assert r.warnings and 'scale ambiguity' in r.warnings[0]
    assert 'identified' not in r.flags
    moved = [j for j in range(8) if r.flags[j] == E.RATIO_ONLY]
    assert {0, 1, 2, 4, 6, 7} <= set(moved)                # Iyyp excited by the chiral yaw; Ixxp, Izzp not
    ratios = (r.theta / r.theta[2]) / (rec.theta8 / rec.theta8[2])
    np.testing.assert_allclose(ratios[moved], 1.0, atol=0.01)
    scale = r.theta[moved] / rec.theta8[moved]
    assert np.ptp(scale) < 0.01 and abs(scale.mean() - 1) > 0.05   # one common scale, not the truth


@pytest.mark.parametrize('order', ['original', 'spread', 'shuffle'])
def test_s9_sample_orderings_two_epochs(m, recs, order):
    rec = recs['xy']
    r = E.identify(m, rec, order=order, epochs=2)
    err = r.error_pct(rec.theta8)
    assert np.abs(np.delete(err, PLATFORM)).max() < 0.1, err


def test_s10_one_percent_noise_force_beats_energy(m, recs):
    """S10, 1 % uniform state noise on FA_XY_WO, 10 seeds: force-based masses < 1 % on every seed, and better
    than energy-based (10 Hz low-pass on its windowed rows; tens of %).

    The force model uses the errors-in-variables covariance R_k = R_F I + G_k diag(sigma^2) G_k^T per sample
    (pkm_identification.eiv; sigma from the noise model, G_k at theta_0, R_F = (0.01 N)^2: the forces are exact).
    Measured over seeds 0-29: RMS m_e 0.08 %, m_b 0.03 %, m_p 0.17 %; max 0.17 / 0.06 / 0.38 %. A scalar R^e
    (with or without a 10 Hz low-pass) leaves m_p at 1.1-1.5 % RMS, up to 3 % on single seeds.
    """
    rec = recs['xy']
    for seed in range(10):
        nr = RC.with_state_noise(rec, 0.01, seed=seed)
        sigma = eiv.uniform_noise_std(0.01, nr.q, nr.qd, nr.qdd)
        r = E.identify(m, nr, R_e=1e-4, state_noise=sigma)
        force = np.abs(r.error_pct(rec.theta8)[:3])
        assert (force < 1.0).all(), (seed, force)
        assert [r.flags[NAMES.index(n)] for n in ('m_e', 'm_b', 'm_p')] == ['identified'] * 3
        if seed < 2:
            energy = np.abs(E.identify(m, nr, R_e=1e-4, model='energy', lowpass_hz=10).error_pct(rec.theta8)[:3])
            assert (force < energy).all(), (force, energy)


def test_eiv_covariance_matches_monte_carlo(m, recs):
    """R_k = G_k diag(sigma^2) G_k^T equals the sample covariance of F - Y(x + n) theta over noise draws (the
    first-order model holds at 1 %), and is symmetric positive definite with the force floor."""
    rec = recs['xy']
    k = np.array([100, 1700, 3300])
    sigma = eiv.uniform_noise_std(0.01, rec.q, rec.qd, rec.qdd)
    R = eiv.equation_error_cov(m, rec.theta8, rec.q[k], rec.qd[k], rec.qdd[k], sigma, force_var=1e-12)
    rng = np.random.default_rng(0)
    n = 4000
    a = np.sqrt(3.0) * sigma                     # uniform half-width
    idx = np.repeat(k, n)
    x = [v[idx] + rng.uniform(-1, 1, (len(idx), 6)) * a[i] for i, v in enumerate((rec.q, rec.qd, rec.qdd))]
    e = (D.regressor(m, *x) @ rec.theta8).reshape(len(k), n, 6)
    C = np.einsum('kni,knj->kij', e - e.mean(1, keepdims=True), e - e.mean(1, keepdims=True)) / (n - 1)
    np.testing.assert_allclose(C, R, rtol=0.1, atol=0.05 * np.abs(R).max())
    assert np.allclose(R, np.swapaxes(R, 1, 2)) and (np.linalg.eigvalsh(R) > 0).all()
    with pytest.raises(ValueError):
        eiv.equation_error_cov(m, rec.theta8, rec.q, rec.qd, rec.qdd, np.full((3, 6), np.nan))
    with pytest.raises(ValueError):
        E.identify(m, rec, state_noise=sigma, lowpass_hz=10)


def test_energy_model_noise_free_windowed(m, recs):
    rec = recs['multisine']
    r = E.identify(m, rec, model='energy', window=20, R_e=1e-8)
    err = r.error_pct(rec.theta8)
    assert np.abs(err[:3]).max() < 1.0, err          # S8 windowed (20 ms): masses < 1 % (measured < 0.06 %)


def test_s15_staged_friction_then_inertia_with_cross_start(m):
    """Friction 30 % off its prior, inertia 10 % low, COM 5 mm off the assumed centre, 2 % state noise.

    Staged runs (friction, inertia, all; regressor and forces low-passed at 10 Hz): from the X data the run
    converges (measured: friction <= 1.3 %, masses <= 2.2 %); the XY cross-start from the X estimate does not
    (strut 3 barely leaves the 2 mm/s band, its fv/fc split drifts 25-47 % off) and the convergence monitor
    says so, as the dissertation found for its XY start."""
    recs = {t: RC.with_state_noise(RC.actuated(m, t, friction=RC.FRICTION_TRUTH, com_offset=[0.005, 0.0, 0.0]),
                                   0.02, seed=0) for t in ('x', 'xy')}
    truth = recs['x'].truth
    th0 = np.concatenate([0.9 * recs['x'].theta8, 1.3 * RC.FRICTION_TRUTH])
    out = E.cross_start(m, recs, th0, R_e=1.0, lowpass_hz=10)
    final, ok, reason = out['x']
    err = final.error_pct(truth)
    assert ok, reason
    assert np.abs(err[8:]).max() < 3.0, err
    assert np.abs(err[:3]).max() < 5.0, err
    assert np.isfinite(final.theta).all() and (np.linalg.eigvalsh(final.P) > 0).all()
    xy, ok_xy, reason_xy = out['xy']
    assert not ok_xy and reason_xy.split(':')[0] in ('not settled', 'oscillating', 'not converged'), reason_xy


def test_ls_and_rls_cross_check_ukf(m, recs):
    rec = recs['multisine']
    Y = D.regressor(m, rec.q, rec.qd, rec.qdd)
    th, cov, rank = batch_wls(Y, rec.F, theta_ref=0.8 * rec.theta8, scale=rec.theta8)
    assert rank == 8
    np.testing.assert_allclose(th, rec.theta8, rtol=1e-9)
    rls = RecursiveLS(0.8 * rec.theta8, (0.4 * rec.theta8) ** 2, np.full(6, 0.01))
    rls.update_many(Y[::4], rec.F[::4])
    ukf = E.identify(m, rec)
    np.testing.assert_allclose(rls.theta, rec.theta8, rtol=5e-3)
    np.testing.assert_allclose(ukf.theta, rec.theta8, rtol=1e-3)
    # x motion: LS keeps the unexcited parameters at the reference and says rank 5 (12-form 4 + Iz_s roundoff)
    Yx = D.regressor(m, RC.actuated(m, 'x', duration=1).q, *[getattr(RC.actuated(m, 'x', duration=1), a)
                                                              for a in ('qd', 'qdd')])
    _, _, rank_x = batch_wls(Yx, Yx @ rec.theta8, theta_ref=0.8 * rec.theta8, scale=rec.theta8)
    assert rank_x == 4


def test_s4_z_sinusoid(m):
    """S4 (FA_Z_WO) targets as S3: the dissertation's poor Z result (16.5 %) is not reproduced (noise-free)."""
    rec = RC.actuated(m, 'z')
    r = E.identify(m, rec)
    err = r.error_pct(rec.theta8)
    assert np.abs(np.delete(err, PLATFORM)).max() < 0.05, err
    assert all(r.flags[j] == 'not_excited' for j in PLATFORM)


@pytest.mark.parametrize('traj', ['x', 'xy'])
def test_s7_friction_jointly_estimated(m, traj):
    """20 parameters (inertia + fv, fc per strut), noise-free: identifiable inertial < 0.1 %, friction < 0.5 %.
    Also with the Robbins-Monro R^r (eq. 2.75)."""
    rec = RC.actuated(m, traj, friction=RC.FRICTION_TRUTH)
    for kw in ({}, {'process': 'robbins_monro', 'a_rm': 1e-4}):
        r = E.identify(m, rec, friction=True, **kw)
        err = r.error_pct(rec.truth)
        excited = [j for j in range(8) if r.flags[j] in ('identified', 'converging')]
        assert set(excited) >= {0, 1, 2, 6} and not set(excited) & set(PLATFORM)
        assert np.abs(err[excited]).max() < 0.1, (kw, err)
        assert np.abs(err[8:]).max() < 0.5, (kw, err)
        assert all(f == 'identified' for f in r.flags[8:])
