"""Position-varying impedance of nonlinear mechanisms: segmented least squares (Wahl & Colton Part B).
In progress (issue 10)."""
