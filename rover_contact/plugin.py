"""What rover_contact offers to the shared tools (contact_dynamics_common.registry); listed in
resource/contact_dynamics_plugins."""
from contact_dynamics_common.registry import Plugin

PLUGIN = Plugin(
    name='rover_contact',
    description='rover effective impact energy, effective mass and posture ranking (in progress)',
)
