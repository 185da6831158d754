"""``python -m contact_dynamics_common.cli``: the ``contact-dynamics`` command."""
import sys

from .main import main

sys.exit(main())
