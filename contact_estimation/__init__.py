"""contact_estimation: environment contact parameters from wrench and motion, one sub-package a capability.

- ``single_point``: stiffness, damping (and mass) along one contact normal: the nine estimators of Agar
  (2004), characterisation fits, the online node ``contact_estimator``, scenarios and the comparison report.
- ``multipoint``, ``geometry``: multi-point contact identification from geometry, peg/hole contact geometry.
- ``impedance``: position-varying impedance of nonlinear mechanisms (segmented least squares).

Each sub-package holds its math, its pipeline and its node. What the package offers to the shared command
line and ``run-bag`` is declared in ``plugin.py``.

The single-point modules used to live at the top of the package; ``contact_estimation.rls`` and the other
old module paths still import (they are the same module objects as ``contact_estimation.single_point.rls``).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_MOVED_TO_SINGLE_POINT = frozenset((
    'adaptive', 'algorithms', 'compare', 'config', 'eem', 'estimate', 'etfe', 'fit', 'gls', 'gmle', 'ils',
    'kalman', 'messages', 'models', 'node', 'oem', 'offline', 'pipeline', 'preprocess', 'reporting', 'rls',
    'samples', 'scenarios', 'simulate', 'spectra'))


class _SinglePointAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``contact_estimation.<old name>`` -> the module ``contact_estimation.single_point.<old name>``."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, name = fullname.rpartition('.')
        if pkg == __name__ and name in _MOVED_TO_SINGLE_POINT:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(f'{__name__}.single_point.{spec.name.rpartition(".")[2]}')

    def exec_module(self, module):
        pass


if not any(isinstance(f, _SinglePointAlias) for f in sys.meta_path):
    sys.meta_path.append(_SinglePointAlias())


def __getattr__(name: str):
    if name in _MOVED_TO_SINGLE_POINT:
        return importlib.import_module(f'{__name__}.single_point.{name}')
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
