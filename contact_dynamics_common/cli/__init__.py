"""The ``contact-dynamics`` command line and what only it uses: commands, run-bag, the fleet batch, reports.

- ``main``: the parser and the built-in commands (``contact-dynamics``,
  ``python -m contact_dynamics_common.cli``);
- ``run``: ``run_bag`` and ``load_offline_nodes`` (what ``run-bag`` and ``batch`` both call);
- ``batch``: run-bag over many bags on Dask, one table, plots and a summary;
- ``report``: ``summary.yaml`` and the PNG plots of a run.

``main`` is imported here, so ``contact_dynamics_common.cli:main`` (the console script) and the names the
flat ``cli.py`` had (``run_bag``, ``load_offline_nodes``, ``config_dir``, ``RUN_BAG_KEPT``) keep working.
"""
from .main import (BUILTIN, FRAMEWORK_PARAMS, RUN_BAG_KEPT, build_parser, config_dir, load_offline_nodes,
                   main, run_bag)

__all__ = ['BUILTIN', 'FRAMEWORK_PARAMS', 'RUN_BAG_KEPT', 'build_parser', 'config_dir', 'load_offline_nodes',
           'main', 'run_bag']
