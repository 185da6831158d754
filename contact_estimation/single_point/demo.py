"""The single-point demo (``contact-dynamics demo``): simulate a Kelvin-Voigt contact, run the configured
estimators over the bag offline, print every estimate next to the ground truth."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from contact_dynamics_common.cli import config_dir, run_bag

from .simulate import KelvinVoigt1Dof, write_bag


def main(workdir: Path) -> int:
    """Exit code 0 when every final stiffness is within 1 % of the truth."""
    work = Path(workdir)
    sim = KelvinVoigt1Dof()
    bag_path = work / 'bag'
    print(f'1. simulating a 1-DOF Kelvin-Voigt contact: k = {sim.stiffness:g} N/m, b = {sim.damping:g} N*s/m, '
          f'{sim.duration:g} s at {sim.rate:g} Hz, sigma_F = {sim.sigma_force:g} N, sigma_x = {sim.sigma_position:g} m')
    write_bag(sim, bag_path, overwrite=True)
    config = config_dir() / 'contact_estimator.yaml'
    print(f'2. running the estimators offline over {bag_path} with {config}')
    result, summary, seconds = run_bag(str(bag_path), str(config), str(work / 'estimates'), str(work / 'report'))
    print(f'   {result.input_messages} messages, {result.bag_duration_s:.1f} s of data in {seconds:.2f} s '
          f'({result.bag_duration_s / seconds:.0f}x real time, including reading the bag and writing '
          f'{sum(result.counts.values())} estimates; bench/bench_replay_long.py measures '
          f'long bags)')
    print('3. final estimates against the ground truth:')
    header = (f"{'topic':36s} {'k [N/m]':>22s} {'truth':>8s} {'err':>8s} {'b [N*s/m]':>20s} {'truth':>7s} "
              f"{'err':>8s}  valid")
    print(header)
    truth = {'stiffness': sim.stiffness, 'damping': sim.damping}
    worst = 0.0
    for topic, items in sorted(result.outputs.items()):
        last = items[-1][1]
        p = len(last['parameter_names'])
        sd = [float(np.sqrt(max(last['covariance'][i * p + i], 0))) for i in range(p)]
        ek = (last['stiffness'] - truth['stiffness']) / truth['stiffness']
        eb = (last['damping'] - truth['damping']) / truth['damping']
        worst = max(worst, abs(ek))
        print(f"{topic:36s} {last['stiffness']:10.2f} ± {2 * sd[0]:8.2f} {truth['stiffness']:8.0f} {ek:+8.3%} "
              f"{last['damping']:9.3f} ± {2 * sd[1]:7.3f} {truth['damping']:7.0f} {eb:+8.3%}  {last['valid']}")
    print(f'report: {work / "report"}/summary.yaml and PNG plots; estimates bag: {work / "estimates"}')
    return 0 if worst < 0.01 else 1


def summary_line(msg_type: str, last: dict) -> str | None:
    """One run-bag output line for a ContactEstimate (None for other message types)."""
    if msg_type != 'contact_dynamics/msg/ContactEstimate':
        return None
    extras = {e['key']: e['value'] for e in last.get('extras', [])}       # units: contact_kind.unit_extras
    uk, ub = extras.get('units.stiffness', 'N/m'), extras.get('units.damping', 'N*s/m')
    return (f"k = {last['stiffness']:.6g} {uk}, b = {last['damping']:.6g} {ub}, "
            f"valid = {last['valid']} ({last['status']})")
