"""Randomized calibration: do the published sigmas and verdicts hold on data drawn at random?

Every capability package registers *families* (``registry.Calibration``): a function
``draw(rng: numpy.random.Generator) -> list[Outcome]`` that draws one experiment at random (parameters over
decades, excitation, friction, noise, quantisation, stamp jitter, holes, rate mismatch, model mismatch: the
family's docstring says what), simulates it with a plant written independently of the estimator, runs the
package's estimators on it exactly as the node / run-bag would, and returns one :class:`Outcome` per estimator
and parameter. The runner calls each family ``runs`` times with independent seeded generators and prints, per
family, estimator and parameter:

* **coverage**: share of the *valid* estimates on model-consistent data (``model_fits``) whose truth lies within
  +-2 sigma (goal 90-99 %; 95.4 % for an honest Gaussian sigma);
* **confident-wrong rate**: share of *all* estimates that are published valid / identified while the truth lies
  outside +-3 sigma (goal <= 1 %, with or without model mismatch: a mismatch must be flagged or covered);
* **false-refusal rate**: share of estimates on well-excited, model-consistent data (``good_data``) that are
  refused (goal <= 5 %).

Besides the point rates, each cell prints **RMS z** of its valid model-consistent estimates (1 for an honest
Gaussian sigma; below 1 means sigma is conservative, above 1 optimistic), and a *pooled* table per package and
estimator gives every rate with its Wilson 95 % interval: a cell of 20 draws cannot resolve a 1 % rate (one event
is 5 %), a package's pooled count can. A coverage is *consistent with the goal* when its interval meets 90-99 %.

``contact-dynamics calibrate [--runs N] [--seed S] [--family PATTERN ...] [--jobs J] [--yaml FILE] [--check]``;
``--check`` exits 1 when a confident-wrong rate exceeds the goal (the seeded short version is a test).
The generator of run i of family F is ``default_rng([seed, crc32(F), i])``: a family's draws do not depend on
which other families run, nor on ``--jobs`` (the draws of J worker processes are merged in run order, so the
report is identical).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

#: goals of the trust issue
COVERAGE_GOAL = (0.90, 0.99)
CONFIDENT_WRONG_GOAL = 0.01
FALSE_REFUSAL_GOAL = 0.05


@dataclass
class Outcome:
    """One published estimate of one parameter, next to its truth.

    ``value`` and ``sigma`` (1-sigma, same unit; ``nan`` when none is published) as the node would publish them;
    ``valid``: the published verdict (valid / identified); ``model_fits``: the data obey the estimator's model
    (no omitted term, no hysteresis, ...); ``good_data``: well-excited, model-consistent data that an honest
    estimator should accept (counts towards the false-refusal rate when refused); ``reason``: the published
    reason when not valid.
    """
    estimator: str
    parameter: str
    value: float
    sigma: float
    truth: float
    valid: bool
    model_fits: bool = True
    good_data: bool = False
    reason: str = ''
    unit: str = ''

    @property
    def z(self) -> float:
        """(value - truth) / sigma; inf when sigma is missing, zero or not finite."""
        if not (math.isfinite(self.value) and math.isfinite(self.sigma) and self.sigma > 0):
            return math.inf
        return (self.value - self.truth) / self.sigma


@dataclass
class Cell:
    """The counts of one (family, estimator, parameter)."""
    n: int = 0
    valid: int = 0
    fit_valid: int = 0            # valid on model-consistent data
    covered2: int = 0             # ... of those, truth within 2 sigma
    confident_wrong: int = 0      # valid with the truth outside 3 sigma (any data)
    good: int = 0                 # well-excited, model-consistent
    refused_good: int = 0
    reasons: dict = field(default_factory=dict)
    max_abs_z: float = 0.0        # largest |z| of a valid estimate
    sum_z2: float = 0.0           # sum of z^2 over the valid model-consistent estimates (finite z only)
    n_z: int = 0

    def add(self, o: Outcome) -> None:
        self.n += 1
        z = abs(o.z)
        if o.valid:
            self.valid += 1
            self.max_abs_z = max(self.max_abs_z, z)
            if z > 3.0:
                self.confident_wrong += 1
            if o.model_fits:
                self.fit_valid += 1
                self.covered2 += int(z <= 2.0)
                if math.isfinite(z):
                    self.sum_z2 += z * z
                    self.n_z += 1
        elif o.reason:
            key = o.reason.split(':', 1)[0][:40]
            self.reasons[key] = self.reasons.get(key, 0) + 1
        if o.good_data and o.model_fits:
            self.good += 1
            self.refused_good += int(not o.valid)

    @property
    def coverage(self) -> float:
        return self.covered2 / self.fit_valid if self.fit_valid else math.nan

    @property
    def confident_wrong_rate(self) -> float:
        return self.confident_wrong / self.n if self.n else math.nan

    @property
    def false_refusal_rate(self) -> float:
        return self.refused_good / self.good if self.good else math.nan

    @property
    def rms_z(self) -> float:
        """sqrt(mean z^2) over the valid model-consistent estimates: 1 for an honest sigma."""
        return math.sqrt(self.sum_z2 / self.n_z) if self.n_z else math.nan

    def merge(self, other: 'Cell') -> None:
        """Add another cell's counts (pooling over families)."""
        for name in ('n', 'valid', 'fit_valid', 'covered2', 'confident_wrong', 'good', 'refused_good', 'n_z'):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.sum_z2 += other.sum_z2
        self.max_abs_z = max(self.max_abs_z, other.max_abs_z)
        for k, v in other.reasons.items():
            self.reasons[k] = self.reasons.get(k, 0) + v


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial rate k/n (95 % by default); (nan, nan) when n = 0.

    centre = (k + z^2/2) / (n + z^2),  half-width = z sqrt(k (n - k) / n + z^2/4) / (n + z^2)."""
    if n <= 0:
        return math.nan, math.nan
    den = n + z * z
    centre = (k + 0.5 * z * z) / den
    half = z * math.sqrt(k * (n - k) / n + 0.25 * z * z) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def coverage_status(k: int, n: int) -> str:
    """'in band' when the Wilson interval of the coverage k/n meets the goal band, else 'above' / 'below'
    (the data contradict the goal: sigma conservative / optimistic); '-' without estimates."""
    lo, hi = wilson_interval(k, n)
    if not n:
        return '-'
    if lo > COVERAGE_GOAL[1]:
        return 'above'
    if hi < COVERAGE_GOAL[0]:
        return 'below'
    return 'in band'


#: environment variable carrying ``--param`` overrides to the families (and to worker processes, which inherit it)
PARAMS_ENV = 'CONTACT_DYNAMICS_CALIBRATION_PARAMS'


def parameter_overrides() -> dict:
    """The node parameters ``contact-dynamics calibrate --param NAME=VALUE`` set: {name: value}. A family that
    runs a node's configuration merges them into the node's defaults (and says so in its docstring); the
    node's own validation rejects a wrong name or value with its one-line reason."""
    text = os.environ.get(PARAMS_ENV, '')
    return dict(json.loads(text)) if text else {}


@dataclass
class Report:
    """Cells keyed by (family, estimator, parameter), the runs per family and the families' failures."""
    runs: int
    seed: int
    params: dict = field(default_factory=dict)      # the --param overrides the draws ran with
    cells: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)      # family -> 'ExcType: message' of draws that raised
    seconds: dict = field(default_factory=dict)

    def add(self, family: str, outcomes: Iterable[Outcome]) -> None:
        for o in outcomes:
            self.cells.setdefault((family, o.estimator, o.parameter), Cell()).add(o)

    def violations(self) -> list[str]:
        """The cells whose confident-wrong rate exceeds the goal, one line each."""
        out = []
        for (fam, est, par), c in sorted(self.cells.items()):
            if c.n and c.confident_wrong_rate > CONFIDENT_WRONG_GOAL:
                out.append(f'{fam} {est} {par}: confident-wrong {c.confident_wrong}/{c.n} '
                           f'({100 * c.confident_wrong_rate:.1f} % > {100 * CONFIDENT_WRONG_GOAL:.0f} %)')
        return out

    def pooled(self) -> dict:
        """Cells pooled per (package, estimator): the package is the family name up to its first '/'."""
        out: dict = {}
        for (fam, est, _par), c in self.cells.items():
            out.setdefault((fam.split('/', 1)[0], est), Cell()).merge(c)
        return out

    def as_dict(self) -> dict:
        rows = []
        for (fam, est, par), c in sorted(self.cells.items()):
            rows.append({'family': fam, 'estimator': est, 'parameter': par, 'n': c.n, 'valid': c.valid,
                         'coverage_2sigma': _num(c.coverage), 'confident_wrong_rate': _num(c.confident_wrong_rate),
                         'false_refusal_rate': _num(c.false_refusal_rate), 'good_data': c.good,
                         'rms_z_valid_fit': _num(c.rms_z),
                         'max_abs_z_valid': _num(c.max_abs_z), 'refusal_reasons': dict(c.reasons)})
        pooled = []
        for (pkg, est), c in sorted(self.pooled().items()):
            pooled.append({'package': pkg, 'estimator': est, 'n': c.n, 'valid': c.valid,
                           'valid_model_fits': c.fit_valid, 'coverage_2sigma': _num(c.coverage),
                           'coverage_interval': [_num(x) for x in wilson_interval(c.covered2, c.fit_valid)],
                           'coverage_status': coverage_status(c.covered2, c.fit_valid),
                           'confident_wrong': c.confident_wrong, 'confident_wrong_rate': _num(c.confident_wrong_rate),
                           'confident_wrong_interval': [_num(x) for x in wilson_interval(c.confident_wrong, c.n)],
                           'good_data': c.good, 'refused_good': c.refused_good,
                           'false_refusal_rate': _num(c.false_refusal_rate),
                           'false_refusal_interval': [_num(x) for x in wilson_interval(c.refused_good, c.good)],
                           'rms_z_valid_fit': _num(c.rms_z)})
        return {'runs': self.runs, 'seed': self.seed, 'goals': {
            'coverage_2sigma': list(COVERAGE_GOAL), 'confident_wrong_rate_max': CONFIDENT_WRONG_GOAL,
            'false_refusal_rate_max': FALSE_REFUSAL_GOAL}, 'rows': rows, 'pooled': pooled,
            'errors': dict(self.errors), 'seconds': {k: round(v, 2) for k, v in self.seconds.items()}}


def _num(x: float):
    return None if not math.isfinite(x) else round(float(x), 4)


def _pct(x: float) -> str:
    return '   -' if not math.isfinite(x) else f'{100 * x:4.0f}%'


def _rate(k: int, n: int) -> str:
    """'k/n x.x % [lo-hi]' with the Wilson 95 % interval; '-' when n = 0."""
    if not n:
        return '-'
    lo, hi = wilson_interval(k, n)
    return f'{k}/{n} {100 * k / n:5.1f}% [{100 * lo:.1f}-{100 * hi:.1f}]'


def rng_for(seed: int, family: str, run: int) -> np.random.Generator:
    """The generator of run ``run`` of ``family``: independent of the other families and runs."""
    return np.random.default_rng([int(seed), zlib.crc32(family.encode()), int(run)])


def _one_draw(draw: Callable[[np.random.Generator], list[Outcome]], name: str, seed: int, i: int):
    """(outcomes, None) or (None, 'run i: ExcType: message'): one draw, its failure caught and described."""
    try:
        return list(draw(rng_for(seed, name, i))), None
    except Exception as exc:  # noqa: BLE001 - one broken draw must not hide the others; it is reported
        return None, f'run {i}: {type(exc).__name__}: {exc}'


def _draw_in_worker(target: str, name: str, seed: int, i: int):
    """A worker process's task: load the family's draw function by its registry target and run draw i."""
    from ..registry import load_target
    t0 = time.perf_counter()
    out = _one_draw(load_target(target), name, seed, i)
    return out + (time.perf_counter() - t0,)


def run_family(name: str, draw: Callable[[np.random.Generator], list[Outcome]], runs: int, seed: int,
               report: Report) -> None:
    """Draw ``runs`` experiments of one family into ``report``; a draw that raises is counted, not fatal."""
    t0 = time.perf_counter()
    for i in range(runs):
        outcomes, error = _one_draw(draw, name, seed, i)
        if error is None:
            report.add(name, outcomes)
        else:
            report.errors.setdefault(name, []).append(error)
    report.seconds[name] = time.perf_counter() - t0


def run_families_parallel(families: dict[str, str], runs: int, seed: int, report: Report, jobs: int) -> None:
    """Every draw of every family (name -> registry target) over ``jobs`` worker processes (spawned, one BLAS
    thread each). Results are added in (family, run) order, so the report equals the serial one; ``seconds`` is the
    draws' own time summed per family (CPU-side, not wall)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    saved = {k: os.environ.get(k) for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')}
    os.environ.update({k: '1' for k in saved})           # inherited by the spawned workers only
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context('spawn')) as pool:
            futures = {(name, i): pool.submit(_draw_in_worker, target, name, seed, i)
                       for name, target in families.items() for i in range(runs)}
            for name in families:
                spent = 0.0
                for i in range(runs):
                    outcomes, error, dt = futures[(name, i)].result()
                    spent += dt
                    if error is None:
                        report.add(name, outcomes)
                    else:
                        report.errors.setdefault(name, []).append(error)
                report.seconds[name] = spent
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def format_report(report: Report) -> str:
    lines = [f'randomized calibration: {report.runs} runs per family, seed {report.seed}'
             + (' (node parameters set: ' + ', '.join(f'{k}={v}' for k, v in report.params.items())
                + '; read by the families that run a node configuration)' if report.params else ''),
             'coverage = valid estimates on model-consistent data within +-2 sigma (goal 90-99 %); '
             'conf-wrong = valid with truth outside 3 sigma (goal <= 1 %); '
             'false-ref = refusals of well-excited consistent data (goal <= 5 %)',
             f"{'family':38s} {'estimator':10s} {'parameter':16s} {'n':>4s} {'valid':>5s} {'cover':>5s} "
             f"{'conf-wrong':>10s} {'false-ref':>9s} {'max|z|':>7s} {'rms z':>6s}  main refusal"]
    for (fam, est, par), c in sorted(report.cells.items()):
        reason = max(c.reasons, key=c.reasons.get) if c.reasons else ''
        rms = '     -' if not math.isfinite(c.rms_z) else f'{c.rms_z:6.2f}'
        lines.append(f'{fam:38s} {est:10s} {par:16s} {c.n:4d} {c.valid:5d} {_pct(c.coverage):>5s} '
                     f'{_pct(c.confident_wrong_rate):>10s} {_pct(c.false_refusal_rate):>9s} '
                     f'{c.max_abs_z:7.2f} {rms}  {reason}')
    lines.append('')
    lines.append('pooled per package and estimator (all parameters; rates with Wilson 95 % intervals):')
    lines.append(f"{'package':14s} {'estimator':10s} {'n':>5s} {'valid':>5s} {'coverage (valid, model fits)':>34s} "
                 f"{'confident-wrong':>26s} {'false refusal (good data)':>30s} {'rms z':>6s}")
    for (pkg, est), c in sorted(report.pooled().items()):
        lines.append(f'{pkg:14s} {est:10s} {c.n:5d} {c.valid:5d} '
                     f'{_rate(c.covered2, c.fit_valid):>24s} {coverage_status(c.covered2, c.fit_valid):>9s} '
                     f'{_rate(c.confident_wrong, c.n):>26s} {_rate(c.refused_good, c.good):>30s} '
                     f"{'     -' if not math.isfinite(c.rms_z) else f'{c.rms_z:6.2f}'}")
    for fam, errs in report.errors.items():
        lines.append(f'error: {fam}: {len(errs)} draw(s) raised; first: {errs[0]}')
    bad = report.violations()
    lines.append('confident-wrong goal: ' + ('met in every cell' if not bad else f'{len(bad)} cell(s) over it'))
    lines.extend(f'  {b}' for b in bad)
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    """contact-dynamics calibrate: the randomized calibration of every registered family."""
    from ..registry import load_target, registry
    fams = registry().calibrations
    p = argparse.ArgumentParser(prog='contact-dynamics calibrate', description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--runs', type=int, default=20, help='random draws per family (default 20)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--family', nargs='*', default=['*'], metavar='PATTERN',
                   help=f"family names or shell patterns (default all: {', '.join(fams) or 'none'})")
    p.add_argument('--jobs', type=int, default=1, help='worker processes for the draws (default 1; the report '
                   'is identical for any number)')
    p.add_argument('--yaml', help='write the rows as YAML to this file')
    p.add_argument('--check', action='store_true', help='exit 1 when a confident-wrong rate exceeds the goal')
    p.add_argument('--param', action='append', default=[], metavar='NAME=VALUE',
                   help='set a node parameter for the families that run a node configuration (the single-point '
                   "families: e.g. derivative_filter=consistent_kernel); VALUE is read as YAML; repeatable")
    p.add_argument('--list', action='store_true', help='list the families and exit')
    args = p.parse_args(argv)
    if args.list:
        for name, fam in fams.items():
            print(f'{name:38s} {fam.help}')
        return 0
    if args.runs < 1:
        print('contact-dynamics calibrate: error: --runs must be >= 1', file=sys.stderr)
        return 2
    if args.jobs < 1:
        print('contact-dynamics calibrate: error: --jobs must be >= 1', file=sys.stderr)
        return 2
    chosen = [n for n in fams if any(fnmatch.fnmatchcase(n, pat) for pat in args.family)]
    if not chosen:
        print(f"contact-dynamics calibrate: error: no family matches {' '.join(args.family)} "
              f"(known: {', '.join(fams) or 'none'})", file=sys.stderr)
        return 2
    import yaml
    overrides = {}
    for item in args.param:
        name, eq, value = item.partition('=')
        if not eq or not name.strip():
            print(f"contact-dynamics calibrate: error: --param needs NAME=VALUE, got '{item}'", file=sys.stderr)
            return 2
        overrides[name.strip()] = yaml.safe_load(value)
    report = Report(args.runs, args.seed, params=overrides)
    before = os.environ.get(PARAMS_ENV)
    os.environ[PARAMS_ENV] = json.dumps(overrides) if overrides else ''
    try:
        if args.jobs > 1:
            run_families_parallel({name: fams[name].target for name in chosen}, args.runs, args.seed, report,
                                  args.jobs)
        else:
            for name in chosen:
                run_family(name, load_target(fams[name].target), args.runs, args.seed, report)
    finally:
        if before is None:
            os.environ.pop(PARAMS_ENV, None)
        else:
            os.environ[PARAMS_ENV] = before
    print(format_report(report))
    if args.yaml:
        with open(args.yaml, 'w', encoding='utf-8') as fh:
            yaml.safe_dump(report.as_dict(), fh, sort_keys=False)
    if report.errors:
        return 1
    return 1 if args.check and report.violations() else 0
