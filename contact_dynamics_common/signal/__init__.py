"""Signal conditioning shared by every package: the one place where samples become regressors.

- ``filters``: centred local-polynomial differentiation, zero-phase and causal Butterworth low-pass filters,
  a cut-off tied to the excitation band;
- ``stamps``: the per-input stamp gate (zero / non-finite / out-of-order stamps, time jumps);
- ``ringbuffer``: the fixed-capacity sample buffers the nodes' callbacks copy into.

Further conditioning (parallel filtering of regressor columns and target, hole-aware segments, resampling of
jittered stamps, derivative bandwidth choice) lives in its own modules here, one job each.

The names of ``filters`` are re-exported, so ``from contact_dynamics_common.signal import local_derivatives``
works as before the move to a sub-package.
"""
from .filters import (CausalLowpass, cutoff_for_band, differentiate, excitation_band, half_window_samples,
                      local_derivatives, zero_phase_lowpass)

__all__ = ['CausalLowpass', 'cutoff_for_band', 'differentiate', 'excitation_band', 'half_window_samples',
           'local_derivatives', 'zero_phase_lowpass']
