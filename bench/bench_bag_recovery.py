"""Damaged and sqlite3 bags: how fast they are read compared with an intact MCAP bag and with rosbags.

Simulates a 1 kHz WrenchStamped + 1 kHz JointState contact bag (``--seconds`` long), then times:
  * columns_many() of the intact MCAP bag (its own index, columnar fast path);
  * opening + columns_many() of the same file cut at 70 % with metadata.yaml deleted (index rebuilt by a
    scan, metadata rebuilt);
  * columns_many() of the same data as a rosbag2 sqlite3 (.db3) bag written by rosbags;
  * raw_messages() (play's path) on MCAP, against mcap's own SeekingReader.iter_messages;
  * rosbags' Reader + deserialize_cdr message by message on the .db3 bag (what a user would otherwise do).
Figures are noisy on a shared machine.

    python bench/bench_bag_recovery.py [--seconds 120]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))

from contact_dynamics_common.bag import BagReader  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seconds', type=float, default=120.0)
    args = ap.parse_args()
    from test_bag_db3 import to_db3

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mcap = write_bag(KelvinVoigt1Dof(duration=args.seconds, rate=1000.0), root / 'mcap')
        n = sum(BagReader(mcap).message_counts.values())
        print(f'bag: {args.seconds:.0f} s, {n} messages (1 kHz wrench + 1 kHz joint states)')

        def rate(count, seconds):
            return f'{count / seconds / 1e6:6.2f} M msg/s ({seconds:6.3f} s)'

        BagReader(mcap).columns_many()                                 # warm-up (imports, caches)
        _, s = timed(lambda: BagReader(mcap).columns_many())
        print(f'  MCAP intact, columns_many                   {rate(n, s)}')

        cut = root / 'cut'
        shutil.copytree(mcap, cut)
        data = (mcap / 'mcap_0.mcap').read_bytes()
        (cut / 'mcap_0.mcap').write_bytes(data[:int(len(data) * 0.7)])
        (cut / 'metadata.yaml').unlink()
        reader, s_open = timed(lambda: BagReader(cut))
        m = reader.recovery.messages
        _, s_cols = timed(reader.columns_many)
        print(f'  MCAP cut at 70 %, open (scan + metadata)     {rate(m, s_open)}  recovered {m} messages')
        print(f'  MCAP cut at 70 %, columns_many after open    {rate(m, s_cols)}')

        db3, s_write = timed(lambda: to_db3(mcap, root / 'db3'))
        reader, s_open = timed(lambda: BagReader(db3))
        _, s_cols = timed(reader.columns_many)
        print(f'  db3, open                                    {rate(n, s_open)}')
        print(f'  db3, columns_many                            {rate(n, s_cols)}')

        _, s_ours = timed(lambda: sum(1 for _ in BagReader(mcap).raw_messages()))
        print(f'  MCAP raw_messages (ours, log-time order)     {rate(n, s_ours)}')
        from mcap.reader import make_reader
        with open(mcap / 'mcap_0.mcap', 'rb') as f:
            _, s_mcap = timed(lambda: sum(1 for _ in make_reader(f).iter_messages()))
        print(f'  MCAP iter_messages (mcap SeekingReader)      {rate(n, s_mcap)}')

        from rosbags.rosbag2 import Reader
        from rosbags.typesys import Stores, get_typestore
        store = get_typestore(Stores.ROS2_KILTED)

        def rosbags_decode():
            with Reader(db3) as r:
                return sum(1 for c, _, d in r.messages() if store.deserialize_cdr(d, c.msgtype))
        _, s_rb = timed(rosbags_decode)
        print(f'  db3 rosbags Reader + deserialize_cdr         {rate(n, s_rb)}  '
              f'({s_rb / s_cols:.0f}x slower than our db3 columns)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
