#!/usr/bin/env python3
"""run-bag on long bags: speed vs real time, peak memory flat in bag length, where the time goes, and the
per-message decoders users would otherwise use.

The bags (1-DOF Kelvin-Voigt contact, 1 kHz WrenchStamped + 1 kHz JointState, contact_estimation's
simulator) are written once into ``out/bench_replay/kv1khz_<seconds>s`` and reused. Each duration is
replayed in a fresh subprocess (RLS + sliding-window GLS, config/contact_estimator.yaml, --publish-rate Hz)
writing every estimate to an output bag, exactly as ``contact-dynamics run-bag BAG --config ... --out ...``;
the child reports its wall time split into read/decode, estimation and writing (``ReplayResult.timing``),
its CPU time (on a shared machine, bag seconds per CPU second is the steadier figure) and its peak RSS
(VmHWM of /proc/self/status; ru_maxrss would include the parent's peak). An MCAP bag is read by a background thread while the estimators run: ``read s`` is
the time the replay waited for it, ``reader s`` the reader thread's own (overlapped) time, which the peer
ratios use. Then, on the longest bag, ``rosbags`` (rosbag2 Reader +
typestore deserialize_cdr) and ``mcap_ros2`` (read_ros2_messages) decode the same two topics message by
message for at most --peer-seconds each; their messages/s are printed beside ours.

  .venv/bin/python bench/bench_replay_long.py [--durations 600 3600] [--publish-rate 20] [--peer-seconds 20]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT  # also puts the repository on sys.path
TOPICS = ['/wrench', '/joint_states']


def bag_path(seconds: float) -> Path:
    return ROOT / 'out' / 'bench_replay' / f'kv1khz_{seconds:g}s'


def ensure_bag(seconds: float) -> Path:
    """The simulated bag of ``seconds``, written once (atomically: a half-written bag is never reused)."""
    path = bag_path(seconds)
    if (path / 'metadata.yaml').is_file():
        return path
    from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag
    tmp = path.with_name('.tmp_' + path.name)
    t0 = time.perf_counter()
    write_bag(KelvinVoigt1Dof(duration=float(seconds), rate=1000.0), tmp, overwrite=True)
    tmp.rename(path)
    print(f'simulated {path} ({seconds:g} s at 1 kHz, 2 topics) in {time.perf_counter() - t0:.0f} s',
          flush=True)
    return path


def child(bag: str, publish_rate: float, chunk_s: float) -> None:
    """One run-bag in this process; prints one JSON line."""
    import yaml

    from contact_dynamics_common.bag import BagReader, BagWriter
    from contact_dynamics_common.cli import RUN_BAG_KEPT, load_offline_nodes
    from contact_dynamics_common.offline.replay import replay
    from contact_dynamics_common.threads import limit_blas_threads
    limit_blas_threads()            # as contact-dynamics run-bag does

    with tempfile.TemporaryDirectory(prefix='bench_replay_') as tmp:
        cfg = yaml.safe_load((ROOT / 'config' / 'contact_estimator.yaml').read_text())
        cfg['contact_estimator']['ros__parameters']['publish_rate'] = publish_rate
        cfg_path = Path(tmp) / 'cfg.yaml'
        cfg_path.write_text(yaml.safe_dump(cfg))
        rss_start = peak_rss_mb()          # after the imports
        t0, cpu0 = time.perf_counter(), time.process_time()
        reader = BagReader(bag)
        nodes = load_offline_nodes(cfg_path)
        writer = BagWriter(Path(tmp) / 'out')
        result = replay(reader, nodes, writer, chunk_s=chunk_s, max_kept=RUN_BAG_KEPT)
        t_close = time.perf_counter()
        writer.close()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        timing = dict(result.timing)
        timing['write'] += time.perf_counter() - t_close
        timing['setup'] = wall - sum(timing.values())
        last = result.outputs['/contact_estimator/gls/estimate'][-1][1]
        print(json.dumps({'wall': wall, 'cpu': cpu, 'timing': timing, 'bag_s': result.bag_duration_s,
                          'messages': result.input_messages, 'outputs': sum(result.counts.values()),
                          'chunks': result.chunks, 'read_busy': result.read_busy_s,
                          'rss_mb': peak_rss_mb(),
                          'rss_start_mb': rss_start,
                          'gls': [last['stiffness'], last['damping'], last['valid']]}))


def peak_rss_mb() -> float:
    """This process's own peak resident set (MB): VmHWM of /proc/self/status, which starts afresh at exec.
    (getrusage's ru_maxrss is kept across fork + exec on Linux: a child started by a parent that simulated a
    1 h bag reported the parent's 489 MB as its own.)"""
    try:
        for line in Path('/proc/self/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peer_rosbags(bag: Path, limit_s: float) -> tuple[int, float]:
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_KILTED)
    n = 0
    t0 = time.perf_counter()
    with Reader(bag) as reader:
        conns = [c for c in reader.connections if c.topic in TOPICS]
        for conn, _, raw in reader.messages(connections=conns):
            store.deserialize_cdr(raw, conn.msgtype)
            n += 1
            if n % 2000 == 0 and time.perf_counter() - t0 > limit_s:
                break
    return n, time.perf_counter() - t0


def peer_mcap_ros2(bag: Path, limit_s: float) -> tuple[int, float]:
    from mcap_ros2.reader import read_ros2_messages
    n = 0
    t0 = time.perf_counter()
    for _ in read_ros2_messages(str(next(bag.glob('*.mcap'))), topics=TOPICS):
        n += 1
        if n % 2000 == 0 and time.perf_counter() - t0 > limit_s:
            break
    return n, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--durations', type=float, nargs='+', default=[600.0, 3600.0], help='bag lengths (s)')
    ap.add_argument('--publish-rate', type=float, default=20.0, help='estimator publish rate (Hz)')
    ap.add_argument('--chunk-s', type=float, default=10.0, help='bag seconds per replay chunk')
    ap.add_argument('--peer-seconds', type=float, default=20.0, help='time limit of each peer decoder')
    ap.add_argument('--child', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.publish_rate, args.chunk_s)
        return 0
    bags = [ensure_bag(d) for d in args.durations]
    print(f'run-bag, RLS + GLS at {args.publish_rate:g} Hz, output bag written, one fresh process per bag '
          f'(shared 2-core machine: figures are noisy)')
    print(f"{'bag':>8s} {'messages':>10s} {'wall s':>7s} {'x real time':>11s} {'msg/s':>10s} {'read s':>7s} "
          f"{'reader s':>8s} {'estim s':>7s} {'write s':>7s} {'setup s':>7s} {'CPU s':>6s} {'x per CPU':>9s} "
          f"{'peak RSS MB':>11s} "
          f"{'chunks':>6s}  final GLS k, b")
    ours = None
    for seconds, bag in zip(args.durations, bags):
        out = subprocess.run([sys.executable, __file__, '--child', str(bag),
                              '--publish-rate', str(args.publish_rate),
                              '--chunk-s', str(args.chunk_s)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        tm = r['timing']
        print(f"{seconds:7g}s {r['messages']:10d} {r['wall']:7.2f} {r['bag_s'] / r['wall']:10.0f}x "
              f"{r['messages'] / r['wall']:10.0f} {tm['read']:7.2f} {r.get('read_busy', 0.0):8.2f} "
              f"{tm['estimate']:7.2f} {tm['write']:7.2f} "
              f"{tm['setup']:7.2f} {r['cpu']:6.2f} {r['bag_s'] / r['cpu']:8.0f}x {r['rss_mb']:11.0f} "
              f"{r['chunks']:6d}  {r['gls'][0]:.1f}, {r['gls'][1]:.2f}"
              f"{'' if r['gls'][2] else ' (not valid)'}")
        ours = r
    if args.peer_seconds > 0 and ours is not None:
        bag = bags[-1]
        ours_read = ours['messages'] / (ours.get('read_busy') or ours['timing']['read'])
        ours_all = ours['messages'] / ours['wall']
        print(f'\nper-message decoding of the same bag ({bag.name}, {", ".join(TOPICS)}; at most '
              f'{args.peer_seconds:g} s each) vs run-bag above:')
        print(f"{'reader':>44s} {'msg/s':>10s} {'run-bag read / it':>18s} {'run-bag whole run / it':>23s}")
        print(f"{'run-bag read/decode (columnar, streamed)':>44s} {ours_read:10.0f}")
        for name, fn in (('rosbags Reader + deserialize_cdr', peer_rosbags),
                         ('mcap_ros2 read_ros2_messages', peer_mcap_ros2)):
            try:
                n, dt = fn(bag, args.peer_seconds)
            except Exception as exc:  # noqa: BLE001 - a peer that cannot read the bag is reported, not fatal
                print(f'{name:>44s} failed: {type(exc).__name__}: {exc}')
                continue
            rate = n / dt
            print(f'{name:>44s} {rate:10.0f} {ours_read / rate:17.0f}x {ours_all / rate:22.0f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
