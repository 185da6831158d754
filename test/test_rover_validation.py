"""rover_contact validation: contact laws (T9), T_c -> peak force in full TB dynamics (T10), 3-D trends (T15)."""
import numpy as np
import pytest
from scipy.stats import spearmanr

from rover_contact.impact.energy import t_c
from rover_contact.impact.indicator import evaluate
from rover_contact.models.planar import TwoBodyParams, two_body_jc, two_body_mass_matrix, two_body_velocity
from rover_contact.models.rover3d import RoverModel
from rover_contact.validation.contact_laws import chi, exponent, peak_force_from_tc
from rover_contact.validation.impact_sim import frozen, one_dof, two_body

T9 = {'hunt_crossley': [(0.9033, 0.6630), (0.9110, 0.7680), (0.9530, 0.9090), (0.9735, 0.9524)],
      'lankarani_nikravesh': [(0.9055, 0.7252), (0.9164, 0.7960), (0.9548, 0.9132), (0.9741, 0.9535)],
      'gonthier': [(0.9297, 0.5000), (0.9038, 0.7000), (0.9492, 0.9000), (0.9723, 0.9500)],
      'lee_wang': [(0.9447, 0.7992), (0.9536, 0.8693), (0.9786, 0.9524), (0.9884, 0.9756)]}
ES = [0.5, 0.7, 0.9, 0.95]


@pytest.mark.parametrize('law', list(T9))
def test_t9_contact_laws_one_dof(law):
    for e, (ratio, e_star) in zip(ES, T9[law]):
        p = exponent(law, 1.5)
        run, ref = one_dof(law, e, p=1.5), one_dof('hertz', 1.0, p=p)
        assert ref.energy_error <= 1e-6
        assert ref.f_max == pytest.approx(peak_force_from_tc(0.5, 1.0, p), rel=1e-6)
        assert run.f_max / ref.f_max == pytest.approx(ratio, abs=2e-3)
        assert run.e_star == pytest.approx(e_star, abs=1e-3)
        if law == 'gonthier':
            assert abs(run.e_star - e) <= 1e-3
    if law == 'gonthier':
        assert [chi('gonthier', e) for e in ES] == pytest.approx([1.43275, 0.63483, 0.16648, 0.07893], abs=1e-5)


def test_t10_tc_predicts_peak_force_two_body():
    P = TwoBodyParams()
    M, qd = two_body_mass_matrix(P), two_body_velocity(P, 0.07)
    ref = [186.2, 462.7, 826.4, 1292.9, 1859.3, 2443.3, 2835.0, 2850.7, 2560.0]
    betas = np.deg2rad(np.arange(10, 91, 10))
    tcs, peaks = [], []
    for beta, r in zip(betas, ref):
        tc = t_c(M, two_body_jc(P, beta)[None], qd)
        run = two_body(beta)
        assert run.f_max == pytest.approx(peak_force_from_tc(tc, 1e9, 1.5), rel=5e-3)
        assert run.f_max == pytest.approx(r, rel=5e-3)
        tcs.append(tc)
        peaks.append(run.f_max)
    assert spearmanr(tcs, peaks)[0] == pytest.approx(1.0)
    assert np.argmax(tcs) == np.argmax(peaks)
    for beta in betas[[2, 5, 8]]:
        hc, hz = two_body(beta, 'hunt_crossley', 0.9), two_body(beta)
        assert hc.f_max / hz.f_max == pytest.approx(0.9530, abs=2e-3)
        assert hc.e_star == pytest.approx(0.909, abs=1e-3)


@pytest.fixture(scope='module')
def pr3d():
    return RoverModel.from_roles_file('config/rover_pr3d_roles.yaml')


WHEELS = ['front_left', 'front_right']


def test_t15_ab_free_interior_max_and_rigid_flat(pr3d):
    for roles in ('config/rover_pr3d_roles.yaml', 'config/rover_osr_like_roles.yaml',
                  'config/rover_rcp_like_roles.yaml'):
        m = pr3d if 'pr3d' in roles else RoverModel.from_roles_file(roles)
        q = m.configuration()
        v = m.rolling_velocity(q, 0.07)
        grid = np.deg2rad(np.arange(10, 90.001, 1.0))
        res = [evaluate(m, q, v, b, WHEELS, 'both') for b in grid]
        free = np.array([r.free.t_c for r in res])
        k = int(np.argmax(free))
        assert 0 < k < grid.size - 1 and 50 <= np.rad2deg(grid[k]) <= 75
        front = [bool(r.ground_active[0] and r.ground_active[1]) for r in res]
        first = front.index(True)
        assert all(front[first:])                          # stays active above the activation angle
        rigid = np.array([r.rigid.t_c for r in res])[first:]
        if 'pr3d' in roles:
            assert np.abs(rigid / rigid[0] - 1).max() <= 1e-9
            assert rigid[0] * 1e3 == pytest.approx(2 * 101.6404, abs=1e-3)   # = planar T8 flat value
        else:                                          # OSR: the rear wheels are active too; still flat
            assert np.abs(rigid / rigid[0] - 1).max() <= 1e-9
        if 'rcp' in roles:                             # 28 bodies: the thesis picture (max near 60 deg, flat above)
            assert 55 <= np.rad2deg(grid[k]) <= 65 and 55 <= np.rad2deg(grid[first]) <= 65


def _frozen_inputs(m, beta):
    q = m.configuration()
    M = m.mass_matrix(q)
    from rover_contact.impact.geometry import n_in_ros
    lam = m.contact_rows(q, WHEELS, n_in_ros(beta))
    return M, lam, m.rolling_velocity(q, 0.07), q


def test_t15_c_laws_differ_only_by_scale(pr3d):
    betas = np.deg2rad(np.arange(20, 91, 10))
    curves = {}
    for law in ('hunt_crossley', 'lankarani_nikravesh', 'lee_wang', 'gonthier'):
        curves[law] = [frozen(*_frozen_inputs(pr3d, b)[:3], pr3d.mech_rows(), law=law, e=0.9,
                              k=1e9 if law != 'lee_wang' else 1e7).f_max for b in betas]
    tcs = [evaluate(pr3d, pr3d.configuration(), pr3d.rolling_velocity(pr3d.configuration(), 0.07), b, WHEELS,
                    'free').free.t_c for b in betas]
    laws = list(curves)
    for i in range(len(laws)):
        assert spearmanr(tcs, curves[laws[i]])[0] >= 0.99
        for j in range(i + 1, len(laws)):
            assert spearmanr(curves[laws[i]], curves[laws[j]])[0] >= 0.99


def test_t15_d_ground_stiffness_moves_between_limits(pr3d):
    stiff = [1e5, 1e7, 1e8, 1e9, 1e10]
    for beta in np.deg2rad([70.0, 90.0]):
        M, lam, v, q = _frozen_inputs(pr3d, beta)
        G = pr3d.ground_normal_rows(q)
        free = frozen(M, lam, v, pr3d.mech_rows(), law='hertz', k=1e9).f_max
        rigid_tc = evaluate(pr3d, q, v, beta, WHEELS, 'rigid', rolling=False).rigid.t_c
        rigid = 2 * peak_force_from_tc(rigid_tc / 2, 1e9, 1.5)
        peaks = [frozen(M, lam, v, pr3d.mech_rows(), law='hertz', k=1e9, ground_rows=G, k_ground=kg).f_max
                 for kg in stiff]
        assert peaks[0] == pytest.approx(free, rel=2e-2)
        assert all(b >= a * (1 - 1e-3) for a, b in zip(peaks, peaks[1:]))
        assert peaks[-1] > free * 1.05 and peaks[-1] <= rigid * 1.02


def test_grousers_option_two_body():
    """Grousered wheel (22 tips, spec §6.4): a tip on the normal line reproduces the smooth wheel's peak; a tip
    rotating into the plane hits harder than one rotating away; never more than two tips at once (rigid k)."""
    from rover_contact.validation.impact_sim import two_body_grousers
    beta = np.deg2rad(60)
    smooth = two_body(beta, 'hunt_crossley', 0.9).f_max
    on_line = two_body_grousers(beta, 22, 0.0)
    assert on_line.f_max == pytest.approx(smooth, rel=5e-3)
    into, away = two_body_grousers(beta, 22, -4.0), two_body_grousers(beta, 22, 4.0)
    assert into.f_max > away.f_max
    assert max(on_line.max_tips_in_contact, into.max_tips_in_contact, away.max_tips_in_contact) <= 2
