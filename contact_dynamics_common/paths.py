"""Where the project's shared files are: the ``config/`` directory (params files, machines, rover models).

Looked up in this order:

1. the source tree: ``config/`` beside the packages (a checkout, an editable install);
2. the ament index: ``get_package_share_directory('contact_dynamics')/config`` (a colcon install after
   ``source install/setup.bash``, or any prefix on ``AMENT_PREFIX_PATH``);
3. the install prefix this module was installed under: ``<prefix>/share/contact_dynamics/config``, where
   ``<prefix>/lib/python3.X/site-packages/contact_dynamics_common/`` holds this file (a colcon install that
   was not sourced);
4. the interpreter's prefix, ``sys.prefix/share/contact_dynamics/config`` (the project's venv).

``resolve_config_file`` finds one file the way every node does: as given, else relative to a list of
directories (e.g. the params file's own), else in ``config_dir()``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

PACKAGE = 'contact_dynamics'


def _ament_share() -> Path | None:
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(PACKAGE))
    except (PackageNotFoundError, LookupError, ValueError, OSError):
        return None


def _module_prefix_share() -> Path | None:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if parent.name == 'lib':
            share = parent.parent / 'share' / PACKAGE
            if (share / 'package.xml').is_file():
                return share
    return None


def package_share_dir() -> Path:
    """The installed ``share/contact_dynamics`` (ament index, else this module's prefix, else sys.prefix)."""
    for share in (_ament_share(), _module_prefix_share()):
        if share is not None and share.is_dir():
            return share
    return Path(sys.prefix) / 'share' / PACKAGE


def config_dir() -> Path:
    """The project's config/ (source tree) or the installed ``share/contact_dynamics/config``."""
    here = Path(__file__).resolve().parents[1] / 'config'
    if here.is_dir():
        return here
    return package_share_dir() / 'config'


def resolve_config_file(name: str | Path, search: Iterable[str | Path] = ()) -> Path | None:
    """An existing file: ``name`` as given (absolute, or relative to the working directory), else relative
    to each directory of ``search`` in order, else in ``config_dir()``; None when none exists."""
    p = Path(name)
    if p.is_file():
        return p
    if p.is_absolute():
        return None
    for base in [*search, config_dir()]:
        q = Path(base) / p
        if q.is_file():
            return q
    return None
