"""``contact-dynamics demo rover``: simulate a rover approaching a 60° face, run both rover_contact nodes offline
over the bag and print T_c (free / rigid ground) and the recommended posture next to the truth."""
from __future__ import annotations

from pathlib import Path

from contact_dynamics_common.cli import config_dir, run_bag

from .simulate import write_approach_bag


def main(workdir: Path) -> int:
    """Exit code 0 when the published T_c equals the truth to 1e-9 and a posture is recommended."""
    work = Path(workdir)
    bag = work / 'rover_bag'
    print('1. simulating the PR-3D rover (spec model PR extruded to 3-D) at 0.07 m/s towards a 60 deg face, '
          'with a constraint-violating velocity perturbation')
    truth = write_approach_bag(bag, beta_deg=60.0, duration=2.0, perturb=0.01)
    print('2. impact_indicator and posture_evaluator offline (run-bag)')
    res_i, _, sec_i = run_bag(str(bag), str(config_dir() / 'impact_indicator.yaml'), None, None, progress=False)
    res_p, _, sec_p = run_bag(str(bag), str(config_dir() / 'posture_evaluator.yaml'), None, None, progress=False)
    last = res_i.outputs['/impact_indicator/impact_indicator'][-1][1]
    print(f"{'quantity':28s} {'estimate':>12s} {'truth':>12s}")
    worst = 0.0
    for key in ('t_c_free', 't_c_rigid', 'constraint_residual_energy'):
        worst = max(worst, abs(last[key] / truth[key] - 1))
        print(f'{key + " [mJ]":28s} {last[key] * 1e3:12.4f} {truth[key] * 1e3:12.4f}')
    print(f"{'ground active (rigid)':28s} {','.join(last['ground_active']):>12s} {','.join(truth['ground_active']):>12s}")
    ev = res_p.outputs['/posture_evaluator/posture_evaluation'][-1][1]
    best = ev['candidates'][0]['label'] if ev['best_index'] == 0 else 'none feasible'
    print(f"recommended posture of {len(ev['candidates'])} grid candidates: {best} (score "
          f"{ev['score'][0] * 1e3:.2f} mJ, worst {max(ev['score']) * 1e3:.2f} mJ); run-bag {sec_i + sec_p:.2f} s")
    return 0 if worst < 1e-9 and ev['best_index'] == 0 else 1
