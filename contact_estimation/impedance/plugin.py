"""What contact_estimation.impedance offers to the shared tools (contact_dynamics_common.registry); listed in
resource/contact_dynamics_plugins."""
from contact_dynamics_common.registry import Plugin

PLUGIN = Plugin(
    name='contact_estimation.impedance',
    description='position-varying impedance of nonlinear mechanisms (in progress)',
)
