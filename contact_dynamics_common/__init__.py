"""contact_dynamics_common: the one home of what the three packages share, one sub-package per job.

Listed top-down: a sub-package imports only those below it (``test/test_import_graph.py`` checks that the
graph has no circle):

- ``cli``: the ``contact-dynamics`` command (``main``), run-bag as a function (``run``: ``run_bag``,
  ``load_offline_nodes``), the fleet ``batch`` on Dask and the run-bag ``report``;
- ``offline``: offline replay (``replay``, the engine and the offline node protocol; ``node``, their base);
- ``ros``: the ROS 2 side (``node`` base, ``params`` specs, ``qos``, ``meters``, ``env``, ``fill``, ``play``);
- ``bag``: rosbag2 I/O, one ``BagReader`` facade over the MCAP, sqlite3 and ROS 1 storages, ``BagWriter``;
- ``messages``: message definitions, CDR encoders, numpy columns of messages;
- ``signal``: signal conditioning (derivatives, filters, stamp gate, ring buffers);
- ``trust``: trust checks every estimator's verdict uses, and the randomized calibration runner;
- ``registry`` (the plug-ins of the capability packages), ``paths`` (where ``config/`` is) and ``threads`` (one
  BLAS thread per process: the nodes and the command line call it at start).

It imports no capability package. Modules that moved into a sub-package keep their old import path for one
release: ``contact_dynamics_common.<old>`` is the same module object as its new home (``_MOVED`` below), and
``python -m contact_dynamics_common.<old>`` runs the new home.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: old module name -> its new home (relative to this package); the alias finder below serves the old name
_MOVED = {
    'stamps': 'signal.stamps',
    'ringbuffer': 'signal.ringbuffer',
    'msgdefs': 'messages.definitions',
    'cdr': 'messages.cdr',
    'msgconv': 'messages.convert',
    'bag_sqlite': 'bag.sqlite',
    'bag_ros1': 'bag.ros1',
    'bag_storage': 'bag.storage',
    'node': 'ros.node',
    'params': 'ros.params',
    'ros_env': 'ros.env',
    'rosfill': 'ros.fill',
    'play': 'ros.play',
    'replay': 'offline.replay',
    'offline_node': 'offline.node',
    'batch': 'cli.batch',
    'report': 'cli.report',
}


class _MovedModuleAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``contact_dynamics_common.<old>`` -> the module at its new home (the same module object)."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, name = fullname.rpartition('.')
        if pkg == __name__ and name in _MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(f'{__name__}.{_MOVED[spec.name.rpartition(".")[2]]}')

    def exec_module(self, module):
        pass

    def get_code(self, fullname):
        """For ``python -m contact_dynamics_common.<old>`` (runpy asks the loader for code): run the new home
        as ``__main__``, with its own package, so that its relative imports resolve."""
        new = f'{__name__}.{_MOVED[fullname.rpartition(".")[2]]}'
        return compile(f'import runpy\nrunpy.run_module({new!r}, run_name="__main__", alter_sys=True)\n',
                       f'<{fullname}: moved to {new}>', 'exec')


if not any(isinstance(f, _MovedModuleAlias) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleAlias())


def __getattr__(name: str):
    if name in _MOVED:
        return importlib.import_module(f'{__name__}.{_MOVED[name]}')
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
