"""Position-varying impedance of nonlinear mechanisms (Colton & Hollerbach; wahl_colton.md Part B).

F = m a + b v + k x + c per position segment and direction of travel:
``segmented`` (batch segmented least squares: continuity, shared mass, Tikhonov/GCV, bounds; identifiability
verdicts; playback ``ImpedanceProfile.force``), ``recursive`` (per-bin RLS with forgetting), ``excitation``
(multisine design within device limits, design-time kappa check), ``conditioning`` (offline zero-phase
filtering and differentiation, band-tied cut-off), ``pipeline`` (streaming: gates, pairing, causal filter),
``node`` / ``offline`` / ``messages`` / ``config`` (the impedance_profiler node and its run-bag twin),
``segmentation`` (adaptive BIC edges), ``report`` (contact-dynamics impedance-profile), ``plant`` /
``scenarios`` / ``simulate`` (the test plant and
S1-S7), ``dashpot`` (drop-test damping), ``store`` (save/load a profile), ``demo``.
"""
