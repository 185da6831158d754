"""`contact-dynamics demo pkm`: simulate a hexapod, identify it offline with the node's pipeline, print vs truth."""
from __future__ import annotations

from pathlib import Path

from .report import identify_bag, write_report
from .simulate import make_record, write_bag


def main(workdir: Path) -> int:
    """Exit code 0 when every identified parameter is within 0.5 % of the truth and the unexcited are flagged."""
    work = Path(workdir)
    ok = True
    for traj, dur in (('xy', 3.0), ('multisine', 3.0)):
        _, rec = make_record('uf_like', traj, dur)
        bag = write_bag(work / f'pkm_{traj}', rec)
        print(f'pkm: {rec.name}, {dur:g} s at 1 kHz, UF-like machine, prior 0.8 x truth -> {bag}')
        items, truth, result, status = identify_bag(str(bag))
        text = write_report(work / f'pkm_{traj}_report', items, truth, result, status)
        print('\n'.join(line for line in text.splitlines() if line.startswith('|') or line.startswith('valid')))
        final = items[-1][1]
        for n, v, f in zip(final['names'], final['values'], final['flags']):
            if f == 'identified':
                ok &= abs(v / truth[n] - 1) < 5e-3
            elif traj == 'xy' and n in ('Ixxp', 'Iyyp', 'Izzp'):
                ok &= f == 'not_excited'
    return 0 if ok else 1
