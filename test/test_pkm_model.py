"""S0: model checks of pkm_identification (spec oh_pkm_ukf.md sec. 7): IK/FK round trip, Jacobians vs finite
differences, power balance, regressor vs direct dynamics, regressor ranks, geometry rejection."""
import numpy as np
import pytest
import yaml

from pkm_identification import dynamics as D
from pkm_identification import kinematics as K
from pkm_identification import trajectories as T
from pkm_identification.geometry import GeometryError, load_machine, machine_from_dict, machines_dir
from pkm_identification.identifiability import stacked_rank


@pytest.fixture(scope='module')
def m():
    return load_machine('uf_like')


def random_poses(m, n=50, seed=1):
    rng = np.random.default_rng(seed)
    a = np.radians(5)
    return m.home_q + np.concatenate([rng.uniform(-.04, .04, (n, 3)), rng.uniform(-a, a, (n, 3))], 1)


def test_home_lengths_match_spec_table(m):
    L = K.strut_lengths(m, m.home_q)[0]
    np.testing.assert_allclose(L, [0.5395] * 3 + [0.4678] * 3, atol=6e-5)


def test_s0a_fk_round_trip(m):
    q = random_poses(m)
    qf, ok = K.forward_kinematics(m, K.strut_lengths(m, q))
    assert ok.all()
    assert np.abs(qf - q).max() < 1e-10


def test_fk_flags_nonfinite_lengths(m):
    L = K.strut_lengths(m, random_poses(m, 3))
    L[1, 2] = np.nan
    q, ok = K.forward_kinematics(m, L)
    assert ok.tolist() == [True, False, True] and np.isfinite(q).all()


def test_s0b_jacobian_and_u_vs_finite_differences(m):
    q = random_poses(m, 10)
    h = 1e-6
    J = K.jacobian(m, q)
    for j in range(6):
        dq = np.zeros(6)
        dq[j] = h
        fd = (K.strut_lengths(m, q + dq) - K.strut_lengths(m, q - dq)) / (2 * h)     # dL/dq_j = J[j, :]
        np.testing.assert_allclose(fd, J[:, j, :], rtol=1e-7, atol=1e-7 * np.abs(J).max())
    # U: omega from R_dot R^T equals U beta_dot
    rng = np.random.default_rng(2)
    bd = rng.normal(size=(10, 3))
    Rd = (K.rotation(q[:, 3:] + h * bd) - K.rotation(q[:, 3:] - h * bd)) / (2 * h)
    W = Rd @ K.rotation(q[:, 3:]).transpose(0, 2, 1)
    omega = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], 1)
    np.testing.assert_allclose(np.einsum('nij,nj->ni', K.u_matrix(q[:, 3:]), bd), omega, rtol=1e-7, atol=1e-8)
    # U_dot vs finite differences of U along beta_dot
    Ud_fd = (K.u_matrix(q[:, 3:] + h * bd) - K.u_matrix(q[:, 3:] - h * bd)) / (2 * h)
    np.testing.assert_allclose(K.u_dot(q[:, 3:], bd), Ud_fd, atol=1e-8)


def test_rates_from_struts_inverts_strut_motion(m):
    t = np.linspace(0, 1, 20)
    q, qd, qdd = T.make('multisine').sample(m.home_q, t)
    sm = K.strut_motion(K.pose(m, q), qd, qdd)
    qd2, qdd2 = K.rates_from_struts(m, q, sm.Ld, sm.Ldd)
    np.testing.assert_allclose(qd2, qd, atol=1e-12)
    np.testing.assert_allclose(qdd2, qdd, atol=1e-10)


def test_s0c_power_balance(m):
    """sum F_a L_dot = d(T + V)/dt without friction (central differences of the energy, h = 1e-5 s)."""
    th12 = m.theta12()
    for name in ('x', 'rot', 'multisine'):
        tr = T.make(name)
        t = np.linspace(0.05, 2.0, 40)
        q, qd, qdd = tr.sample(m.home_q, t)
        F = D.inverse_dynamics(m, th12, q, qd, qdd)
        Ld = np.einsum('nij,ni->nj', K.jacobian(m, q), qd)
        power = (F * Ld).sum(1)
        energy = lambda tt: D.energy_columns(m, *tr.sample(m.home_q, tt)[:2]) @ D.base_from_12(th12)  # noqa: E731
        h = 1e-5
        dE = (energy(t + h) - energy(t - h)) / (2 * h)
        assert np.abs(power - dE).max() / np.abs(power).max() < 1e-6, name


def test_s0d_regressor_equals_direct_dynamics(m):
    rng = np.random.default_rng(3)
    q = random_poses(m, 40)
    qd, qdd = rng.normal(size=(40, 6)) * 0.3, rng.normal(size=(40, 6)) * 4
    th12 = m.theta12() * rng.uniform(0.5, 1.5, 12)
    fr = rng.uniform(5, 300, 12)
    for model in ('continuous', 'printed'):
        Y = D.regressor(m, q, qd, qdd, friction=True, friction_model=model)
        F = D.inverse_dynamics(m, th12, q, qd, qdd, friction=fr, friction_model=model)
        assert np.abs(Y @ np.concatenate([D.base_from_12(th12), fr]) - F).max() < 1e-9


def test_friction_models_continuous_and_printed():
    Ld = np.array([[-0.01, -0.002, 0.0, 0.001, 0.002, 0.003]])
    fr = np.tile([100.0, 10.0], 6)
    cont = D.friction_force(Ld, fr, 'continuous')[0]
    printed = D.friction_force(Ld, fr, 'printed')[0]
    np.testing.assert_allclose(printed, [-11.0, -10.0, 0.0, 5.0, 10.0, 10.3])
    np.testing.assert_allclose(cont, [-11.0, -10.2, 0.0, 5.1, 10.2, 10.3])


def test_forward_dynamics_inverts_inverse_dynamics(m):
    rng = np.random.default_rng(4)
    q = random_poses(m, 10)
    qd, qdd = rng.normal(size=(10, 6)) * 0.3, rng.normal(size=(10, 6)) * 4
    th8 = D.base_from_12(m.theta12())
    fr = rng.uniform(5, 300, 12)
    F = D.inverse_dynamics(m, m.theta12(), q, qd, qdd, friction=fr)
    np.testing.assert_allclose(D.forward_dynamics(m, th8, q, qd, F, friction=fr), qdd, atol=1e-8)
    M = D.mass_matrix(m, th8, q)
    np.testing.assert_allclose(M, M.transpose(0, 2, 1), atol=1e-12)
    assert (np.linalg.eigvalsh(M) > 0).all()


@pytest.mark.parametrize('name,rank', [('x', 4), ('xy', 5), ('z', 5), ('rot', 8), ('multisine', 8)])
def test_s0e_rank_of_stacked_12_parameter_regressor(m, name, rank):
    t = np.arange(0, 2, 0.002)
    q, qd, qdd = T.make(name).sample(m.home_q, t)
    Y12 = D.regressor(m, q, qd, qdd) @ D.map_12_to_8()
    rep = stacked_rank(Y12, m.theta12())
    assert rep.rank == rank
    names = ('m_e', 'm_b', 'm_p', 'Ixxb', 'Iyyb', 'Izzb', 'Ixxp', 'Iyyp', 'Izzp', 'Ixxe', 'Iyye', 'Izze')
    never = [names.index('Iyyb'), names.index('Iyye')]
    assert not rep.excited[never].any()          # axial inertias: zero columns for every motion


def test_geometry_rejects_architecture_singular_pairing(m):
    with open(machines_dir() / 'uf_like.yaml') as f:
        doc = yaml.safe_load(f)
    bad = dict(doc)
    p = np.array(doc['platform_joints'])
    bad['platform_joints'] = p[[0, 1, 2, 4, 5, 3]].tolist()   # struts 4-6 shifted by one vertex: Griffis-Duffy family
    with pytest.raises(GeometryError, match='architecture-singular'):
        machine_from_dict(bad)
    for name in ('hexel_like', 'ford_like'):
        assert load_machine(name).inertia['m_p'] > 0
    with pytest.raises(GeometryError, match='inertia'):
        machine_from_dict({**doc, 'inertia': {**doc['inertia'], 'm_p': -1.0}})
    with pytest.raises(GeometryError, match='not found'):
        load_machine('no_such_machine')
