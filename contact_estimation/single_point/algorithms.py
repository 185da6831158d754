"""Registry of the nine single-point algorithms of the thesis's Single Point Toolbox (Agar 2004 §2).

    make('kalman', measurement_noise=0.3 ** 2)          -> an estimator (options as in its class)
    run_all(samples)                                     -> {name: ContactEstimate} for all nine

Recursive estimators have ``reset()``, ``update(samples)``, ``estimate()``; batch ones ``fit(samples)``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .adaptive import IndirectAdaptive
from .assess import run_assessed
from .eem import EquationError
from .estimate import ContactEstimate, failure
from .etfe import EmpiricalTransferFunction
from .gls import GlobalLeastSquares
from .gmle import GeneralisedMaximumLikelihood
from .ils import InstantaneousLeastSquares
from .kalman import KalmanFilter
from .models import KELVIN_VOIGT, ContactModel
from .oem import OutputError
from .rls import RecursiveLeastSquares
from .samples import ContactSamples


@dataclass(frozen=True)
class AlgorithmInfo:
    name: str
    kind: str                      # 'recursive' | 'batch'
    factory: Callable[..., object]
    description: str
    thesis_section: str


ALGORITHMS: dict[str, AlgorithmInfo] = {a.name: a for a in (
    AlgorithmInfo('rls', 'recursive', RecursiveLeastSquares,
                  'recursive least squares with forgetting (optionally with mass)', '2.1'),
    AlgorithmInfo('ils', 'recursive', InstantaneousLeastSquares, 'RLS without the mass term', '2.2'),
    AlgorithmInfo('ia', 'recursive', IndirectAdaptive, 'indirect adaptive (gradient) law', '2.3'),
    AlgorithmInfo('kalman', 'recursive', KalmanFilter, 'Kalman filter with the parameters as states', '2.4'),
    AlgorithmInfo('gls', 'batch', GlobalLeastSquares, 'global least squares over the window', '2.5'),
    AlgorithmInfo('etfe', 'batch', EmpiricalTransferFunction, 'empirical transfer function estimate', '2.6'),
    AlgorithmInfo('oem', 'batch', OutputError, 'output error method (frequency domain)', '2.7'),
    AlgorithmInfo('eem', 'batch', EquationError, 'equation error method (frequency domain)', '2.8'),
    AlgorithmInfo('gmle', 'batch', GeneralisedMaximumLikelihood,
                  'generalised maximum likelihood (frequency domain)', '2.9'),
)}
RECURSIVE = tuple(n for n, a in ALGORITHMS.items() if a.kind == 'recursive')
BATCH = tuple(n for n, a in ALGORITHMS.items() if a.kind == 'batch')


def make(name: str, model: ContactModel = KELVIN_VOIGT, **options):
    """A new estimator; ValueError for an unknown name or bad options."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{name}' (known: {', '.join(ALGORITHMS)})")
    return ALGORITHMS[name].factory(model, **options)


def run(estimator, samples: ContactSamples) -> ContactEstimate:
    """One estimate of a whole record: recursive ones are reset, fed every sample (in blocks, for the
    convergence history), then asked; the trust verdict (``assess``: convergence, model adequacy, honest
    covariance) is applied on top of the estimator's own.

    A numeric error the estimator did not catch becomes a structured failure (never raises for data).
    """
    try:
        return run_assessed(estimator, samples)
    except (ArithmeticError, ValueError) as exc:          # numpy.linalg.LinAlgError is a ValueError
        stamp = float(samples.t[-1]) if len(samples) else 0.0
        return failure(estimator.name, estimator.model, f'{type(exc).__name__}: {exc}', stamp, len(samples))


def run_all(samples: ContactSamples, names: Iterable[str] | None = None,
            options: dict[str, dict] | None = None) -> dict[str, ContactEstimate]:
    """Every algorithm (or ``names``) on one record; ``options[name]`` are its constructor options
    (including ``model``). Bad options raise ValueError; bad data give structured failures."""
    options = options or {}
    estimators = {n: make(n, **options.get(n, {})) for n in (names or ALGORITHMS)}
    return {n: run(e, samples) for n, e in estimators.items()}
