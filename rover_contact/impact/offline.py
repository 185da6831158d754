"""impact_indicator as an offline node for run-bag: same pipeline and messages, in bag time."""
from __future__ import annotations

from ..offline import RoverOfflineNode
from .config import NODE_NAME
from .messages import MSG_TYPE
from .pipeline import ImpactPipeline


class OfflineImpactIndicator(RoverOfflineNode):
    node_name = NODE_NAME
    pipeline_class = ImpactPipeline
    output = '~/impact_indicator'
    msg_type = MSG_TYPE
