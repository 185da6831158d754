"""rover_contact inputs validation (bad input never raises), the 3-D maximal-coordinate T_c with redundant rows,
and the offline tools (simulate rover-approach, rover-sweep)."""
import numpy as np
import pytest

from contact_dynamics_common.params import ConfigError
from rover_contact.impact.energy import impact, t_c
from rover_contact.impact.geometry import n_in_ros
from rover_contact.inputs import InputError, RoverInputs, load_model
from rover_contact.validation.simulate import approach_state

WHEELS = ['front_left', 'front_right']


@pytest.fixture(scope='module')
def model():
    return load_model({'model_yaml': 'rover_pr3d_roles.yaml', 'urdf_path': ''})


def test_inputs_reject_bad_samples_with_reasons(model):
    inp = RoverInputs(model, 0.2)
    names = model.joint_names
    with pytest.raises(InputError, match='no valid JointState'):
        inp.state(10**9)
    assert not inp.push_joint_state(10**9, ['a'], [0.0], [0.0]) and 'lacks joint' in inp.last_error
    assert not inp.push_joint_state(10**9, names, [0.0] * len(names), [])            # no velocities
    assert not inp.push_joint_state(10**9, names, [0.0] * len(names), [np.nan] * len(names))
    assert not inp.push_joint_state(0, names, [0.0] * len(names), [0.0] * len(names)) and 'zero stamp' in inp.last_error
    assert inp.push_joint_state(10**9, names + ['extra'], [0.0] * (len(names) + 1), [0.0] * (len(names) + 1))
    assert inp.counts['joint_unknown_names'] == 1
    assert not inp.push_odometry(10**9, (0, 0, 0), (0, 0, 0, 0), (0, 0, 0), (0, 0, 0))
    assert not inp.push_odometry(10**9, (0, 0, np.inf), (0, 0, 0, 1), (0, 0, 0), (0, 0, 0))
    with pytest.raises(InputError, match='no valid Odometry'):
        inp.state(10**9)
    assert inp.push_odometry(10**9, (0, 0, 0), (0, 0, 0, 2.0), (0.1, 0, 0), (0, 0, 0))
    q, v = inp.state(10**9 + 10**8)
    assert np.isclose(np.linalg.norm(q[3:7]), 1.0) and v[0] == 0.1
    with pytest.raises(InputError, match='stale'):
        inp.state(10**9 + 3 * 10**8)
    # obstacles
    assert not inp.push_obstacle(1, 'odom', (0, 0, 0), 1.0, 0, 0.5, ['tail'], False)
    assert 'unknown contact wheel' in inp.last_error
    assert not inp.push_obstacle(1, 'odom', (1.0, 0, 0), 0.0, 0, 0.5, [], False)     # faces away: behind
    assert 'behind' in inp.last_error
    assert not inp.push_obstacle(1, 'odom', (0, 0, 0), 1.0, 0, -0.5, [], False)
    assert not inp.push_obstacle(1, 'odom', (0, 0, 0), 2.0, 0, 0.5, [], False)       # beta > 90 deg
    assert not inp.push_obstacle(1, 'odom', (np.nan, 0, 0), 1.0, 0, 0.5, [], False)
    assert inp.push_obstacle(1, 'odom', (-1.0, 0, 0), 0.0, 0, 0.5, [], False)
    assert inp.obstacle.beta == pytest.approx(np.pi / 2) and inp.obstacle.wheels == WHEELS
    assert not inp.push_obstacle(1, 'odom', (-1.0, 0, 0), 0.0, 0, 0.5, [], False)     # re-sent: same stamp
    assert inp.counts['obstacle_repeated'] == 1
    assert inp.push_obstacle(2, 'base_link', (-np.sin(1.0), 0, np.cos(1.0)), 0.0, 0, 0.5, [], False)
    assert inp.obstacle.beta == pytest.approx(1.0)
    assert inp.push_obstacle(3, 'odom', (0, 0, 0), np.pi / 2, 0.0875, 0.5, [], True)   # step edge h = R/2
    assert inp.obstacle.beta == pytest.approx(np.pi / 3)
    assert inp.time_to_contact() == pytest.approx(5.0)
    assert inp.push_odometry(10**9 + 10**8, (0.2, 0, 0), (0, 0, 0, 1), (0.1, 0, 0), (0, 0, 0))   # drove 0.2 m
    assert inp.time_to_contact() == pytest.approx(3.0)
    with pytest.raises(ConfigError, match='not wheels'):
        RoverInputs(model, 0.2, ['nope'])
    with pytest.raises(ConfigError, match='not found'):
        load_model({'model_yaml': 'missing_roles.yaml', 'urdf_path': ''})


def test_3d_maximal_coordinates_with_redundant_rows(model):
    """Maximal coordinates (6 per body, block-diagonal M, Γ = complement of the tree's velocity map, with
    duplicated rows) give the minimal-coordinate T_c (spec appendix B in 3-D)."""
    q, v = approach_state(model, 0.07)
    J, Mb = model.body_blocks(q)
    U, s, _ = np.linalg.svd(J, full_matrices=True)
    r = int(np.sum(s > 1e-10 * s[0]))
    G = U[:, r:].T                                   # rows annihilating every tree velocity
    G = np.vstack([G, G[:3]])                        # redundant rows
    bodies = [j for j in range(1, model.model.njoints) if model.model.inertias[j].mass > 0]
    vmax = J @ v
    for beta in np.deg2rad([30.0, 60.0, 90.0]):
        n = n_in_ros(beta)
        lam_min = model.contact_rows(q, WHEELS, n)
        rows = []
        model._kin(q)
        for w in WHEELS:
            jid = model.wheel_jid[model.wheel_names.index(w)]
            k = bodies.index(jid)
            oM = model.data.oMi[jid]
            c = oM.act(model.model.inertias[jid].lever)
            C = oM.translation + 0.175 * n
            row = np.zeros(J.shape[0])
            row[6 * k:6 * k + 3] = n
            row[6 * k + 3:6 * k + 6] = np.cross(C - c, n)     # n·(ω × (C − c)) = ω·((C − c) × n)
            rows.append(row)
        lam_max = np.array(rows)
        assert np.allclose(lam_max @ J, lam_min, atol=1e-12)
        minimal = impact(model.mass_matrix(q), model.mech_rows(), lam_min, v).t_c
        mech_max = model.mech_rows() @ np.linalg.pinv(J)      # lock rows expressed on maximal velocities
        maximal = t_c(Mb, np.vstack([G, mech_max, lam_max]), vmax)
        assert maximal == pytest.approx(minimal, rel=1e-9)


def test_simulate_and_sweep_commands(tmp_path):
    from contact_dynamics_common.bag import BagReader
    from rover_contact.validation import simulate, sweep
    assert simulate.main(['--out', str(tmp_path / 'bag'), '--duration', '0.5', '--beta-deg', '45']) == 0
    bag = BagReader(str(tmp_path / 'bag'))
    assert {'/joint_states', '/odom', '/impact_indicator/obstacle'} <= set(bag.topics)
    truth = bag.custom_data['ground_truth']
    assert 115.329 < truth['t_c_free'] * 1e3 < 182.380               # between T5's 40 and 50 deg values
    assert sweep.main(['--out', str(tmp_path / 'sweep'), '--beta-deg', '40', '70', '--values', '0.0',
                       '--laws', 'hunt_crossley']) == 0
    text = (tmp_path / 'sweep' / 'sweep.csv').read_text().splitlines()
    assert len(text) == 3 and 'f_max_hunt_crossley_N' in text[0]
    assert (tmp_path / 'sweep' / 'tc_fmax_beta.png').stat().st_size > 1000


def test_t6_monotone_on_3d_random_configurations(model):
    """T6 on the 3-D model: extra lock or ground rows never lower T_c, for random q and q̇."""
    import pinocchio as pin
    rng = np.random.default_rng(7)
    for _ in range(40):
        q = pin.randomConfiguration(model.model, -0.5 * np.ones(model.model.nq), 0.5 * np.ones(model.model.nq))
        v = rng.normal(size=model.nv)
        M = model.mass_matrix(q)
        lam = model.contact_rows(q, WHEELS, n_in_ros(rng.uniform(0.2, np.pi / 2)))
        T = 0.5 * v @ M @ v
        base = t_c(M, lam, v)
        extra = model.ground_rows(q, ['middle_left', 'rear_right'])
        lock = np.zeros((1, model.nv))
        lock[0, model.idx_v['left_bogie_joint']] = 1.0
        for rows in (extra, lock, np.vstack([extra, lock, model.mech_rows()])):
            assert t_c(M, np.vstack([rows, lam]), v) >= base - 1e-12 * T


def _pipeline_inputs(pl, model, t_ns, obstacle=None):
    q, v = approach_state(model, 0.07)
    names = model.joint_names
    jp = model.joint_positions(q)
    pl.inputs.push_joint_state(t_ns, names, [jp[n] for n in names], [v[model.idx_v[n]] for n in names])
    pl.inputs.push_odometry(t_ns, q[0:3], q[3:7], v[0:3], v[3:6])
    if obstacle is not None:
        pl.inputs.push_obstacle(t_ns, 'odom', (0, 0, 0), obstacle[0], 0.0, obstacle[1], [], False)
    return q, v


def test_impact_pipeline_virtual_walls_without_obstacle(model):
    from contact_dynamics_common.params import validate_all
    from rover_contact.impact.config import PARAMS
    from rover_contact.impact.indicator import evaluate
    from rover_contact.impact.pipeline import ImpactPipeline
    pl = ImpactPipeline(validate_all(PARAMS, {'ground_mode': 'free'}))
    q, v = _pipeline_inputs(pl, model, 10**9)
    f = pl.step(10**9)
    worst = max(evaluate(model, q, v, np.deg2rad(b), WHEELS, 'free').free.t_c for b in range(10, 91, 10))
    assert f['t_c'] == pytest.approx(worst, rel=1e-12) and 'virtual wall' in f['status']
    assert f['beta_rad'][0] == pytest.approx(np.deg2rad(60))          # T5: the largest of the 10-degree grid
    assert f['time_to_contact'] == float('inf')


def test_posture_pipeline_triggers(model):
    from contact_dynamics_common.params import validate_all
    from rover_contact.posture.config import PARAMS
    from rover_contact.posture.pipeline import PosturePipeline
    pl = PosturePipeline(validate_all(PARAMS, {'ground_mode': 'free', 'posture_grid_min': [-0.2],
                                               'posture_grid_max': [0.2], 'posture_grid_steps': [5],
                                               'horizon_s': 2.0}))
    assert len(pl.grid) == 5
    _pipeline_inputs(pl, model, 10**9)
    assert pl.step(10**9) is None                                   # no obstacle yet
    _pipeline_inputs(pl, model, 10**9, obstacle=(np.pi / 2, 1.0))   # new hypothesis, 14 s away
    f = pl.step(10**9)
    assert f is not None and f['candidates'][0]['positions'] == [pytest.approx(0.2)]   # T7: highest CoM at 90°
    assert pl.step(10**9) is None                                   # same hypothesis, beyond the horizon
    _pipeline_inputs(pl, model, 10**9 + 1, obstacle=(np.pi / 2, 0.1))   # 1.4 s away: inside the horizon
    assert pl.step(10**9 + 1) is not None and pl.step(10**9 + 1) is not None


def test_demo_rover(tmp_path, capsys):
    from rover_contact.validation.demo import main
    assert main(tmp_path) == 0
    out = capsys.readouterr().out
    assert '192.1210' in out and '203.2807' in out
