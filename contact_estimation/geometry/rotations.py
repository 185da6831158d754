"""Rotations and poses: quaternions are (x, y, z, w) as in geometry_msgs, matrices act on column vectors.

A pose (R, p) maps body coordinates to world coordinates: x_world = R x_body + p (REP-103 frames).
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def quat_to_matrix(q) -> np.ndarray:
    """(…, 4) quaternions (x, y, z, w), normalised here -> (…, 3, 3) rotation matrices (closed form, so the
    simulator and the estimator get bit-identical matrices from the same quaternion)."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], axis=-1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], axis=-1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=-1)], axis=-2)


def rpy_to_matrix(rpy) -> np.ndarray:
    """Roll, pitch, yaw (rad; fixed axes x, y, z as in URDF) -> rotation matrix."""
    return Rotation.from_euler('xyz', np.asarray(rpy, dtype=float)).as_matrix()


def axis_angle_matrix(axis, angle: float) -> np.ndarray:
    """Rotation by ``angle`` (rad) about the unit vector ``axis``."""
    a = np.asarray(axis, dtype=float)
    return Rotation.from_rotvec(a / np.linalg.norm(a) * angle).as_matrix()


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a ⊗ b of (…, 4) quaternions (x, y, z, w)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def integrate_quat(q, omega_world, dt: float) -> np.ndarray:
    """q <- exp(ω dt / 2) ⊗ q for a world-frame angular velocity ω (rad/s), renormalised."""
    rv = np.asarray(omega_world, float) * dt
    ang = np.linalg.norm(rv, axis=-1, keepdims=True)
    half = 0.5 * ang
    sinc = np.where(ang > 1e-12, np.sin(half) / np.where(ang > 1e-12, ang, 1.0), 0.5)
    dq = np.concatenate([rv * sinc, np.cos(half)], axis=-1)
    out = quat_multiply(dq, q)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def angular_velocity_from_quats(q0, q1, dt: float) -> np.ndarray:
    """World-frame angular velocity taking (…, 4) q0 to q1 in dt: ω = log(q1 ⊗ q0⁻¹) / dt."""
    r = Rotation.from_quat(np.asarray(q1, float).reshape(-1, 4)) * \
        Rotation.from_quat(np.asarray(q0, float).reshape(-1, 4)).inv()
    return (r.as_rotvec() / dt).reshape(np.shape(q0)[:-1] + (3,))


def twist_from_poses(t, x, q, half_window: int) -> tuple[np.ndarray, np.ndarray]:
    """Linear velocity v (m/s) and world angular velocity ω (rad/s) at every sample of one hole-free pose
    segment (stamps t in s, positions x (n, 3), quaternions q (n, 4) x-y-z-w) by centred local-line fits
    (``contact_dynamics_common.signal.filters.local_derivatives``, the Savitzky-Golay differentiator on
    uniform stamps) over 2M+1 samples, M = min(``half_window``, (n − 1) // 2):

        v_i = slope of x over t_{i−M..i+M},   ω_i = 2 vec(q̇_i ⊗ q_i⁻¹)  (q̇_i: slope of the sign-aligned q)

    The first and last M samples take the slope of the first / last full window (one-sided, as at a hole).
    Two samples: their difference quotient. Fewer: NaN. Derivative bandwidth: a local line over ±M samples
    attenuates a tone of angular frequency w by ≈ (w h)² (3M² + 3M − 1) / 30 (h the period)."""
    from contact_dynamics_common.signal.filters import local_derivatives

    t = np.asarray(t, float)
    x = np.asarray(x, float).reshape(-1, 3)
    q = np.asarray(q, float).reshape(-1, 4)
    n = len(t)
    if n < 2:
        return np.full((n, 3), np.nan), np.full((n, 3), np.nan)
    # quaternions sign-aligned along the segment (q and -q are the same rotation)
    s = np.sign(np.einsum('ni,ni->n', q[1:], q[:-1]) + 1e-300)
    qa = q * np.r_[1.0, np.cumprod(s)][:, None]
    cols = np.concatenate([x, qa], axis=1)
    m = min(int(half_window), (n - 1) // 2)
    if m < 1:
        d = np.repeat(((cols[1] - cols[0]) / (t[1] - t[0]))[None, :], n, axis=0)
    else:
        slopes = np.column_stack([local_derivatives(t, cols[:, j], m)[0] for j in range(7)])
        d = np.concatenate([np.repeat(slopes[:1], m, axis=0), slopes, np.repeat(slopes[-1:], m, axis=0)])
    qinv = qa * np.array([-1.0, -1.0, -1.0, 1.0]) / np.einsum('ni,ni->n', qa, qa)[:, None]
    w = 2.0 * quat_multiply(d[:, 3:], qinv)[:, :3]
    return d[:, :3], w
