"""What contact_estimation.multipoint offers to the shared tools (contact_dynamics_common.registry); listed in
resource/contact_dynamics_plugins."""
from contact_dynamics_common.registry import Plugin

PLUGIN = Plugin(
    name='contact_estimation.multipoint',
    description='multi-point contact identification from geometry and peg/hole contact geometry (in progress)',
)
