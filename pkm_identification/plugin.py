"""What pkm_identification offers to the shared tools (contact_dynamics_common.registry); listed in
resource/contact_dynamics_plugins."""
from contact_dynamics_common.registry import Plugin

PLUGIN = Plugin(
    name='pkm_identification',
    description='Stewart-Gough hexapod inertia and friction with a UKF (in progress)',
)
