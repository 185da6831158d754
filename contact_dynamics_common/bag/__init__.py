from .reader import *  # noqa: F401,F403  (temporary; split below)
from .reader import BagError, BagReader, BagRecovery, BagWriter, Damage, QOS_PRESETS, qos_profile  # noqa: F401
