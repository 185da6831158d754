"""rosbag2 sqlite3 bags (``.db3``, recorded before MCAP became the default) read like MCAP bags.

The ``.db3`` bags are written here by ``rosbags`` (an independent rosbag2 implementation) from a simulated
MCAP bag: one as rosbag2 Kilted writes it (message definitions and metadata in the file), one as an older
rosbag2 did (no message_definitions / metadata tables), one without metadata.yaml. Columns, raw and
decoded messages, run-bag, info, contact-compare and play must give what the MCAP bag gives.
"""
import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', '57')
os.environ.setdefault('ROS_LOG_DIR', '/tmp/ros_log_bag')

import pickle  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from contact_dynamics_common.bag import columns as bagcolumns  # noqa: E402
from contact_dynamics_common.bag import BagError, BagReader  # noqa: E402
from contact_dynamics_common.cli import main, run_bag  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / 'config' / 'contact_estimator.yaml')


def _qos(profile):
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    def t(d):
        return QosTime(d['sec'], d['nsec'])
    return Qos(QosHistory[profile['history'].upper()], profile['depth'],
               QosReliability[profile['reliability'].upper()], QosDurability[profile['durability'].upper()],
               t(profile['deadline']), t(profile['lifespan']), QosLiveliness[profile['liveliness'].upper()],
               t(profile['liveliness_lease_duration']), profile['avoid_ros_namespace_conventions'])


def to_db3(mcap_bag: Path, out: Path, compress: bool = False) -> Path:
    """The same messages as a rosbag2 sqlite3 bag written by rosbags (version 9, Kilted type store);
    ``compress``: every message compressed with zstd (compression_mode: message)."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    src = BagReader(mcap_bag)
    writer = Writer(out, version=9, storage_plugin=StoragePlugin.SQLITE3)
    if compress:
        writer.set_compression(CompressionMode.MESSAGE, CompressionFormat.ZSTD)
    with writer as w:
        conns = {topic: w.add_connection(topic, type_name, typestore=store,
                                         offered_qos_profiles=[_qos(p) for p in src.offered_qos(topic)])
                 for topic, type_name in src.topics.items()}
        for topic, _, t, data in src.raw_messages():
            w.write(conns[topic], t, data)
        for key, value in src.info['custom_data'].items():           # as stored (json: strings)
            w.set_custom_data(key, value)
    return out


@pytest.fixture(scope='module')
def pair(tmp_path_factory):
    """(MCAP bag, db3 bag as Kilted writes it, db3 bag as older rosbag2 wrote it)."""
    root = tmp_path_factory.mktemp('db3')
    mcap = write_bag(KelvinVoigt1Dof(duration=6, rate=500, seed=21, start_offset=1.0), root / 'mcap')
    db3 = to_db3(mcap, root / 'db3')
    old = root / 'old'
    shutil.copytree(db3, old)
    (old / 'db3.db3').rename(old / 'old.db3')
    meta = yaml.safe_load((old / 'metadata.yaml').read_text())
    meta['rosbag2_bagfile_information']['relative_file_paths'] = ['old.db3']
    (old / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    with sqlite3.connect(old / 'old.db3') as db:                     # rosbag2 before Iron: no definitions
        db.execute('DROP TABLE message_definitions')
        db.execute('DROP TABLE metadata')
    db.close()
    return mcap, db3, old


from test_bag import assert_columns_equal  # noqa: E402


def test_db3_columns_and_messages_equal_mcap(pair, monkeypatch):
    mcap, db3, old = pair
    fast = []
    real = bagcolumns.fixed_layout_columns
    monkeypatch.setattr(bagcolumns, 'fixed_layout_columns', lambda spec, data: fast.append(
        real(spec, data) is not None) or real(spec, data))
    want = BagReader(mcap)
    want_cols = want.columns_many()
    want_raw = list(want.raw_messages())
    for path in (db3, old):
        reader = BagReader(path)
        assert reader.storage == 'sqlite3' and reader.topics == want.topics
        assert reader.message_counts == want.message_counts == {'/wrench': 3000, '/joint_states': 3000}
        assert (reader.start_ns, reader.end_ns) == (want.start_ns, want.end_ns)
        assert reader.custom_data == want.custom_data
        assert reader.custom_data['ground_truth']['stiffness'] == 4800
        assert reader.offered_qos('/wrench') == want.offered_qos('/wrench')
        fast.clear()
        cols = reader.columns_many()
        assert fast == [True, True]                                   # the columnar fast path served
        for topic in want_cols:
            assert_columns_equal(cols[topic], want_cols[topic])
            assert_columns_equal(reader.columns(topic, fast=False), want_cols[topic])
        assert list(reader.raw_messages()) == want_raw
        joints = [m for m in want_raw if m[0] == '/joint_states']
        assert list(reader.raw_messages(['/joint_states'])) == joints
        decoded = list(reader.messages(['/wrench']))
        assert [m[3].wrench.force.z for m in decoded] == list(want_cols['/wrench']['force'][:, 2])
        assert not reader.recovery.damaged and reader.recovery.indexed_by == {
            f'{path.name}.db3': 'sqlite3'}
        assert_columns_equal(pickle.loads(pickle.dumps(reader)).columns('/wrench'), want_cols['/wrench'])


def test_db3_matches_an_independent_reader(pair):
    """rosbags' own reader and CDR decoder agree with our columns of the .db3 bag."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    _, db3, _ = pair
    store = get_typestore(Stores.ROS2_KILTED)
    cols = BagReader(db3).columns('/joint_states')
    with Reader(db3) as r:
        conns = [c for c in r.connections if c.topic == '/joint_states']
        rows = [(t, store.deserialize_cdr(data, c.msgtype)) for c, t, data in r.messages(connections=conns)]
    np.testing.assert_array_equal(cols['log_ns'], [t for t, _ in rows])
    np.testing.assert_array_equal(cols['position'][:, 0], [m.position[0] for _, m in rows])
    np.testing.assert_array_equal(cols['stamp_ns'], [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                                                     for _, m in rows])


def test_run_bag_on_db3_equals_mcap(pair, tmp_path):
    mcap, db3, old = pair
    want, _, _ = run_bag(str(mcap), CONFIG, progress=False)
    for path in (db3, old):
        got, _, _ = run_bag(str(path), CONFIG, out=str(tmp_path / f'{path.name}_est'), progress=False)
        assert got.input_messages == want.input_messages == 6000
        assert set(got.outputs) == set(want.outputs) and got.outputs
        for topic in want.outputs:
            assert got.outputs[topic] == want.outputs[topic]
    last = want.outputs['/contact_estimator/gls/estimate'][-1][1]
    assert last['valid'] and abs(last['stiffness'] / 4800 - 1) < 0.01


def test_info_compare_and_missing_metadata_on_db3(pair, tmp_path, capsys):
    mcap, db3, _ = pair
    assert main(['info', str(db3)]) == 0
    out = capsys.readouterr().out
    assert 'storage: sqlite3' in out and '3000 msgs' in out and 'ground_truth' in out

    reports = {}
    for path in (mcap, db3):
        reports[path] = tmp_path / f'cmp_{path.name}'
        assert main(['contact-compare', str(path), '--report', str(reports[path]), '--segment', 'whole']) == 0
    a, b = (yaml.safe_load((reports[p] / 'summary.yaml').read_text()) for p in (mcap, db3))
    assert a == b and a
    assert (reports[db3] / 'comparison.md').read_text() == (reports[mcap] / 'comparison.md').read_text()

    bare = tmp_path / 'bare'
    shutil.copytree(db3, bare)
    (bare / 'metadata.yaml').unlink()
    reader = BagReader(bare)
    assert reader.metadata_source == f'rebuilt from the sqlite3 index; written to {bare / "metadata.yaml"}'
    rebuilt = yaml.safe_load((bare / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert rebuilt['storage_identifier'] == 'sqlite3' and rebuilt['message_count'] == 6000
    assert rebuilt['relative_file_paths'] == ['db3.db3'] and reader.custom_data == BagReader(mcap).custom_data
    assert BagReader(bare / 'db3.db3').message_counts == {'/wrench': 3000, '/joint_states': 3000}

    (tmp_path / 'junk.db3').write_bytes(b'SQLite format 3\x00' + bytes(200))
    with pytest.raises(BagError, match='junk.db3'):
        BagReader(tmp_path / 'junk.db3')


def test_streamed_reader_on_db3_equals_mcap(pair, monkeypatch):
    from contact_dynamics_common.bag import sqlite as bag_sqlite
    monkeypatch.setattr(bag_sqlite, 'BATCH', 512)                     # many row ranges
    mcap, db3, _ = pair
    reader, want = BagReader(db3), BagReader(mcap)
    assert len(reader._files[0].summary.chunk_indexes) == 12
    ends = np.arange(want.start_ns + 250_000_000, want.end_ns + 250_000_000, 250_000_000)
    got = list(reader.iter_column_chunks(['/wrench', '/joint_states'], ends))
    ref = list(want.iter_column_chunks(['/wrench', '/joint_states'], ends))
    assert len(got) == len(ref) == len(ends)
    for (e1, c1), (e2, c2) in zip(got, ref):
        assert e1 == e2
        for topic in c2:
            assert_columns_equal(c1[topic], c2[topic])


@pytest.mark.ros
def test_play_publishes_db3_and_damaged_bags(pair, tmp_path):
    from contact_dynamics_common.ros.play import play
    mcap, db3, _ = pair
    stats = play(db3, rate=20.0, clock_hz=0, progress=False)
    assert stats['messages'] == {'/wrench': 3000, '/joint_states': 3000} and not stats['recovery'].damaged
    cut = tmp_path / 'cut'
    shutil.copytree(mcap, cut)
    data = (mcap / 'mcap_0.mcap').read_bytes()
    (cut / 'mcap_0.mcap').write_bytes(data[:len(data) // 2])
    stats = play(cut, rate=20.0, clock_hz=0, progress=False)
    assert stats['published'] == stats['recovery'].messages > 0 and stats['recovery'].damaged


def test_db3_with_per_message_compression(pair, tmp_path):
    mcap, _, _ = pair
    packed = to_db3(mcap, tmp_path / 'packed', compress=True)
    with sqlite3.connect(next(packed.glob('*.db3'))) as db:
        (first,) = db.execute('SELECT data FROM messages LIMIT 1').fetchone()
    db.close()
    assert first[:4] == b'\x28\xb5\x2f\xfd'                       # really zstd frames
    reader, want = BagReader(packed), BagReader(mcap)
    for topic, cols in want.columns_many().items():
        assert_columns_equal(reader.columns(topic), cols)
    assert list(reader.raw_messages()) == list(want.raw_messages())


def test_db3_cut_by_a_power_loss_is_read_up_to_the_damage(pair, tmp_path, capsys):
    """A .db3 file cut short: the rows on the pages before the cut are used, in order, and reported."""
    mcap, db3, _ = pair
    want = list(BagReader(mcap).raw_messages())
    by_key = {(m[0], m[2]): m for m in want}
    data = (db3 / 'db3.db3').read_bytes()
    for frac in (0.35, 0.8):
        bag = tmp_path / f'cut{frac}'
        shutil.copytree(db3, bag)
        (bag / 'db3.db3').write_bytes(data[:int(len(data) * frac)])
        with pytest.raises(BagError, match='db3.db3'):
            BagReader(bag, recover=False)
        reader = BagReader(bag)
        got = list(reader.raw_messages())
        assert 0.2 * len(want) < len(got) < len(want)
        assert all(by_key[(m[0], m[2])] == m for m in got)            # byte-exact, nothing invented
        assert [m[2] for m in got] == sorted(m[2] for m in got)
        rec = reader.recovery
        assert rec.damaged and rec.messages == len(got) and rec.damage[0].kind == 'truncated'
        assert rec.last_good_ns == max(m[2] for m in got)
        assert f'ends at byte {int(len(data) * frac)}' in rec.lines()[1]
        cols = reader.columns_many()
        assert {t: len(c['log_ns']) for t, c in cols.items()} == rec.per_topic
        again = pickle.loads(pickle.dumps(reader))                    # as sent to a Dask worker
        assert list(again.raw_messages()) == got and again.recovery.messages == len(got)
        assert main(['info', str(bag)]) == 0
        assert f'recovered {len(got)} intact messages' in capsys.readouterr().out


def to_ros1(mcap_bag: Path, out: Path) -> Path:
    """The same messages as a ROS 1 bag (rosbags' writer; std_msgs/Header gets seq = 0); types rosbags does not
    know (this project's own) are registered from the MCAP file's schemas."""
    from mcap.reader import make_reader
    from rosbags.convert.converter import generate_message_converter
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    src = BagReader(mcap_bag)
    ros1, ros2 = get_typestore(Stores.ROS1_NOETIC), get_typestore(Stores.ROS2_KILTED)
    for path in sorted(Path(mcap_bag).glob('*.mcap')):
        with open(path, 'rb') as f:
            schemas = make_reader(f).get_summary().schemas.values()
        for schema in schemas:
            if schema.name not in ros2.fielddefs:
                types = get_types_from_msg(schema.data.decode(), schema.name)
                for st in (ros1, ros2):
                    st.register({k: v for k, v in types.items() if k not in st.fielddefs})
    cache: dict = {}
    with Writer(out) as w:
        conns = {t: w.add_connection(t, ty, typestore=ros1) for t, ty in src.topics.items()}
        conv = {ty: generate_message_converter(ros2, ros1, ty, ty, cache, src_is2=True, dst_is2=False)
                for ty in set(src.topics.values())}
        for topic, type_name, t, data in src.raw_messages():
            w.write(conns[topic], t, bytes(conv[type_name](data)))
    return out


def test_ros1_bag_reads_and_replays_like_mcap(pair, tmp_path, capsys):
    mcap, _, _ = pair
    bag1 = to_ros1(mcap, tmp_path / 'old.bag')
    capsys.readouterr()
    reader, want = BagReader(bag1), BagReader(mcap)
    assert reader.storage == 'rosbag1' and reader.topics == want.topics
    assert reader.message_counts == want.message_counts and (reader.start_ns, reader.end_ns) == (
        want.start_ns, want.end_ns)
    for topic, cols in want.columns_many().items():
        assert_columns_equal(reader.columns(topic), cols)
    assert list(reader.raw_messages()) == list(want.raw_messages())   # the CDR of the ROS 2 type
    assert capsys.readouterr().out == ''                              # the converter's chatter is kept quiet
    got, _, _ = run_bag(str(bag1), CONFIG, progress=False)
    ref, _, _ = run_bag(str(mcap), CONFIG, progress=False)
    assert got.outputs == ref.outputs and got.outputs
    assert list(pickle.loads(pickle.dumps(reader)).raw_messages(['/wrench']))[-1] == list(
        want.raw_messages(['/wrench']))[-1]
