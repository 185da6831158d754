"""Parameters of the impact_indicator node (one list for the node, run-bag and config/impact_indicator.yaml)."""
from __future__ import annotations

from contact_dynamics_common.params import ParamSpec

from ..config import COMMON

NODE_NAME = 'impact_indicator'

PARAMS: list[ParamSpec] = COMMON + [
    ParamSpec('beta_sweep_deg', [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0],
              'Without an obstacle hypothesis: virtual walls at these contact angles; the largest T_c is '
              'published (worst case) with its beta.', low=1.0, high=90.0, unit='deg'),
    ParamSpec('obstacle_timeout_s', 0.0, 'Forget the obstacle hypothesis after this long without an update '
              '(0: keep it).', low=0.0, unit='s'),
]
