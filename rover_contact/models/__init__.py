"""Rover models: planar TB/PR (spec §2.4-2.5), parametric RCP (§2.2), 3-D URDF + role map (pinocchio), batched tree."""
