"""Where the project's shared files are: the ``config/`` directory (params files, machines, rover models).

In the source tree it is ``config/`` beside the packages; installed (pip or colcon) it is
``share/contact_dynamics/config`` under the interpreter's prefix.
"""
from __future__ import annotations

import sys
from pathlib import Path


def config_dir() -> Path:
    """The project's config/ (source tree) or the installed share/contact_dynamics/config."""
    here = Path(__file__).resolve().parents[1] / 'config'
    if here.is_dir():
        return here
    return Path(sys.prefix) / 'share' / 'contact_dynamics' / 'config'
