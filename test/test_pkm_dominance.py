"""S12-S14: dominance of the force groups (gravity, platform / strut inertia, velocity products) on the three
mass sets, and the COM-offset sensitivity ordering."""
import numpy as np
import pytest

from pkm_identification import dominance as DM
from pkm_identification import dynamics as D
from pkm_identification import trajectories as T
from pkm_identification.geometry import load_machine

t = np.arange(0, 2, 0.004)


def run(machine, traj, omega=T.W_TABLE):
    m = load_machine(machine)
    th = D.base_from_12(m.theta12())
    motion = T.make(traj, omega=omega).sample(m.home_q, t)
    f = DM.group_forces(m, th, *motion)
    assert np.abs(sum(f[g] for g in DM.GROUPS) - f['total']).max() < 1e-9       # the groups add up
    return DM.dominance(m, th, *motion)


@pytest.mark.parametrize('traj,vel_max', [('x', 1.0), ('z', 1.0), ('rot', 2.5)])
def test_s12_uf_high_speed(traj, vel_max):
    d = run('uf_like', traj)
    assert d['velocity']['mean_pct'] < vel_max and d['velocity']['peak_pct'] < 5.0          # [D] 0.4 / 0.6 / 1.7 %
    assert 89.0 < d['gravity']['mean_pct'] < 102.0


def test_s12_inertia_terms_rise_with_speed():
    slow, fast = run('uf_like', 'x', np.pi), run('uf_like', 'x', 4 * np.pi)
    assert fast['strut_inertia']['mean_pct'] > 5 * slow['strut_inertia']['mean_pct']
    assert fast['platform_inertia']['mean_pct'] > 5 * slow['platform_inertia']['mean_pct']


def test_s13_platform_vs_strut_role_switches_with_mass_ratio():
    uf, hexel, ford = (run(mm, 'x') for mm in ('uf_like', 'hexel_like', 'ford_like'))
    assert uf['strut_inertia']['mean_pct'] > uf['platform_inertia']['mean_pct']          # light platform
    for d in (hexel, ford):
        assert d['platform_inertia']['mean_pct'] > d['strut_inertia']['mean_pct']        # heavy platform


def test_s14_com_offset_sensitivity_x_and_z_dominate():
    m = load_machine('uf_like')
    for traj in ('x', 'rot'):
        S = DM.com_sensitivity(m, m.theta12(), *T.make(traj, omega=np.pi).sample(m.home_q, t), offset=0.01 * 0.0508)
        assert S[0] > 10 * S[1] and S[2] > 10 * S[1], S
