"""Contact geometry of a wheel meeting an obstacle face or a step edge, and GMDL <-> ROS frames (spec §3.4, §7.2).

GMDL: x forward, y up, z lateral (starboard +z). ROS REP-103 base frame: x forward, y left, z up.
x_ROS = x_G, y_ROS = −z_G, z_ROS = y_G. Angles in rad, lengths in m.
"""
from __future__ import annotations

import numpy as np

GMDL_TO_ROS = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
ROS_TO_GMDL = GMDL_TO_ROS.T


def beta_from_step(height: float, radius: float, face_angle: float = np.pi / 2) -> float:
    """Contact angle β of a smooth wheel (radius R) meeting a step of height h with face inclination β_f:
    a sharp edge below the wheel centre gives β = arccos(1 − h/R); if h ≥ R, or if R(1 − cos β_f) ≤ h
    (the face itself is reached first), β = β_f."""
    if not (np.isfinite(height) and np.isfinite(radius)) or radius <= 0 or height <= 0:
        raise ValueError(f'step height {height} m and wheel radius {radius} m must be finite and > 0')
    if height >= radius or radius * (1.0 - np.cos(face_angle)) <= height:
        return float(face_angle)
    return float(np.arccos(1.0 - height / radius))


def contact_height(beta, radius: float):
    """Height of the contact point above flat ground h_C = R(1 − cos β) [m]."""
    return radius * (1.0 - np.cos(beta))


def n_in_ros(beta: float, heading: float = 0.0) -> np.ndarray:
    """Inward normal in a gravity-levelled ROS frame for a face ahead along ``heading`` (yaw):
    (sin β cos ψ, sin β sin ψ, −cos β)."""
    return np.array([np.sin(beta) * np.cos(heading), np.sin(beta) * np.sin(heading), -np.cos(beta)])


def beta_from_face_normal(n_out: np.ndarray) -> float:
    """β from the obstacle's outward face normal in a gravity-levelled frame: n_in = −n_out,
    cos β = −n_in,z (β = 90° for a vertical wall)."""
    n = -np.asarray(n_out, float)
    norm = np.linalg.norm(n)
    if not np.isfinite(norm) or norm == 0:
        raise ValueError('face normal must be a finite non-zero vector')
    n = n / norm
    return float(np.arccos(np.clip(-n[2], -1.0, 1.0)))


def gmdl_to_ros(v: np.ndarray) -> np.ndarray:
    return GMDL_TO_ROS @ np.asarray(v, float)


def ros_to_gmdl(v: np.ndarray) -> np.ndarray:
    return ROS_TO_GMDL @ np.asarray(v, float)


def rolling_spin(v: float, radius: float, slip: float = 0.0) -> float:
    """Wheel spin about the ROS axle (+y left) for forward speed v: ω_y = v / (R(1 − s)) [rad/s]."""
    return v / (radius * (1.0 - slip))
