"""Benchmark BagReader.columns() (vectorised fast path) against BagReader.messages() (per-message decode).

Writes a seeded bag with 1 kHz WrenchStamped + 1 kHz JointState (1 joint) to a temporary directory, with
rclpy's serializer (so FastCDR's uninitialised padding bytes are present, as in a real recording), then
prints messages/s for columns() (one call per topic), columns_many() (both topics in one pass), for
messages() and the speed-up ratio columns()/messages().

    python bench/bench_bag_read.py [--seconds 300] [--rate 1000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contact_dynamics_common.bag import BagReader, BagWriter  # noqa: E402
from contact_dynamics_common.messages.convert import ns_to_sec_nanosec  # noqa: E402

T0_NS = 1_700_000_000_000_000_000


def write_bag(path: Path, n: int, period_ns: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Write n WrenchStamped and n JointState messages; return the forces and joint positions written."""
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState

    rng = np.random.default_rng(seed)
    forces = rng.normal(0.0, 5.0, size=(n, 6))
    positions = np.cumsum(rng.normal(0.0, 1e-4, size=n))
    wrench, joints = WrenchStamped(), JointState()
    wrench.header.frame_id = 'ft_sensor'
    joints.name = ['joint_1']
    with BagWriter(path, custom_data={'benchmark': True, 'seed': seed}) as w:
        w.add_topic('/ft_sensor/wrench', 'geometry_msgs/msg/WrenchStamped', qos='sensor_data')
        for i in range(n):
            t = T0_NS + i * period_ns
            sec, nanosec = ns_to_sec_nanosec(t)
            wrench.header.stamp.sec = joints.header.stamp.sec = sec
            wrench.header.stamp.nanosec = joints.header.stamp.nanosec = nanosec
            f = wrench.wrench.force
            tq = wrench.wrench.torque
            f.x, f.y, f.z, tq.x, tq.y, tq.z = forces[i].tolist()
            w.write('/ft_sensor/wrench', 'geometry_msgs/msg/WrenchStamped', wrench, t)
            joints.position = [float(positions[i])]
            joints.velocity = [0.0]
            w.write('/joint_states', 'sensor_msgs/msg/JointState', joints, t + 200_000)
    return forces, positions


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seconds', type=float, default=300.0, help='bag duration (default 300)')
    ap.add_argument('--rate', type=float, default=1000.0, help='rate of each topic in Hz (default 1000)')
    args = ap.parse_args(argv)
    n = int(args.seconds * args.rate)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'bench_bag'
        t = time.perf_counter()
        forces, positions = write_bag(path, n, int(round(1e9 / args.rate)))
        dt_write = time.perf_counter() - t
        size = sum(f.stat().st_size for f in path.iterdir())
        print(f'wrote {2 * n} messages in {dt_write:.1f} s ({2 * n / dt_write:,.0f} msg/s), '
              f'{size / 1e6:.1f} MB')

        reader = BagReader(path)
        t = time.perf_counter()
        wrench = reader.columns('/ft_sensor/wrench')
        joints = reader.columns('/joint_states')
        dt_cols = time.perf_counter() - t
        assert np.array_equal(wrench['force'], forces[:, :3])
        assert np.array_equal(wrench['torque'], forces[:, 3:])
        assert np.array_equal(joints['position'][:, 0], positions) and np.isnan(joints['effort']).all()
        rate_cols = 2 * n / dt_cols
        print(f'columns() per topic: {2 * n} messages in {dt_cols:.2f} s = {rate_cols:,.0f} msg/s '
              f'({args.seconds / dt_cols:,.0f}x real time)')
        t = time.perf_counter()
        both = reader.columns_many(['/ft_sensor/wrench', '/joint_states'])
        dt_many = time.perf_counter() - t
        assert np.array_equal(both['/ft_sensor/wrench']['force'], wrench['force'])
        print(f'columns_many():      {2 * n} messages in {dt_many:.2f} s = {2 * n / dt_many:,.0f} msg/s '
              f'({args.seconds / dt_many:,.0f}x real time)')

        t = time.perf_counter()
        count = sum(1 for _ in reader.messages())
        dt_msgs = time.perf_counter() - t
        rate_msgs = count / dt_msgs
        print(f'messages():          {count} messages in {dt_msgs:.2f} s = {rate_msgs:,.0f} msg/s')
        print(f'speed-up columns()/messages(): {rate_cols / rate_msgs:.1f}x')
        verdict = 'OK' if rate_cols >= 4e5 else 'MISSED'
        print(f'cpu count {os.cpu_count()}, target columns() >= 400,000 msg/s: {verdict}')


if __name__ == '__main__':
    main()
