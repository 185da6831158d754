"""msgdefs, msgconv and bag: rosbag2 MCAP round trips, metadata.yaml, columnar fast path vs fallback.

No DDS: rclpy is used for message classes and its serializer only. Decoded fields are compared, never
serialized bytes (FastCDR leaves padding bytes uninitialised).
"""
import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', '57')
os.environ.setdefault('ROS_LOG_DIR', '/tmp/ros_log_bag')

import array  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from contact_dynamics.msg import ContactEstimate  # noqa: E402
from diagnostic_msgs.msg import KeyValue  # noqa: E402
from geometry_msgs.msg import PoseStamped, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from contact_dynamics_common.bag import columns as bagcolumns, metadata as bagmeta  # noqa: E402
from contact_dynamics_common.messages import convert as msgconv, definitions as msgdefs  # noqa: E402
from contact_dynamics_common.bag import BagError, BagReader, BagWriter  # noqa: E402

T0 = 1_700_000_000_123_456_789
WRENCH, JOINTS, POSE, ODOM = ('geometry_msgs/msg/WrenchStamped', 'sensor_msgs/msg/JointState',
                              'geometry_msgs/msg/PoseStamped', 'nav_msgs/msg/Odometry')


# ---------------------------------------------------------------- helpers

def stamp(t_ns):
    return msgconv.ns_to_stamp(t_ns, Time)


def wrench(t, f, frame='ft_sensor'):
    m = WrenchStamped()
    m.header.stamp, m.header.frame_id = stamp(t), frame
    (m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
     m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z) = map(float, f)
    return m


def joints(t, names, pos, vel=(), eff=()):
    return JointState(header=_header(t), name=list(names), position=list(map(float, pos)),
                      velocity=list(map(float, vel)), effort=list(map(float, eff)))


def _header(t, frame='base'):
    from std_msgs.msg import Header
    return Header(stamp=stamp(t), frame_id=frame)


def pose(t, v):
    m = PoseStamped(header=_header(t, 'world'))
    p, q = m.pose.position, m.pose.orientation
    p.x, p.y, p.z, q.x, q.y, q.z, q.w = map(float, v)
    return m


def odom(t, v, cov):
    m = Odometry(header=_header(t, 'odom'), child_frame_id='base_link')
    p, q = m.pose.pose.position, m.pose.pose.orientation
    p.x, p.y, p.z, q.x, q.y, q.z, q.w = map(float, v[:7])
    lin, ang = m.twist.twist.linear, m.twist.twist.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = map(float, v[7:13])
    m.pose.covariance = cov[:36].astype(float)
    m.twist.covariance = cov[36:].astype(float)
    return m


def assert_msg_equal(expected, decoded, path='msg'):
    """Field-by-field comparison of an rclpy message with a decoded (mcap_ros2) one."""
    for name in expected.get_fields_and_field_types():
        a, b = getattr(expected, name), getattr(decoded, name)
        where = f'{path}.{name}'
        if hasattr(a, 'get_fields_and_field_types'):
            assert_msg_equal(a, b, where)
        elif isinstance(a, (list, tuple, array.array, np.ndarray)):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)):
                if hasattr(x, 'get_fields_and_field_types'):
                    assert_msg_equal(x, y, f'{where}[{i}]')
                else:
                    assert x == y, f'{where}[{i}]: {x!r} != {y!r}'
        else:
            assert a == b, f'{where}: {a!r} != {b!r}'


def assert_columns_equal(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


@pytest.fixture
def spy_fast(monkeypatch):
    """Records whether the fixed-layout fast path produced the columns (True) or fell back (False)."""
    calls = []
    real = bagcolumns.fixed_layout_columns

    def spy(spec, data):
        out = real(spec, data)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(bagcolumns, 'fixed_layout_columns', spy)
    return calls


# ---------------------------------------------------------------- msgdefs / msgconv

def test_msgdefs_definition_and_hash():
    text = msgdefs.msgdef('sensor_msgs/msg/JointState')
    blocks = text.split('=' * 80 + '\n')
    assert blocks[0].rstrip().endswith('float64[] effort')
    assert [b.splitlines()[0] for b in blocks[1:]] == ['MSG: std_msgs/Header', 'MSG: builtin_interfaces/Time']
    assert msgdefs.msgdef('geometry_msgs/WrenchStamped').count('\nMSG: ') == 4
    assert msgdefs.msgdef('nav_msgs/msg/Odometry').count('\nMSG: ') == 9
    with open(os.path.join(msgdefs.search_prefixes()[0], 'share/sensor_msgs/msg/JointState.json')) as f:
        hashes = {h['type_name']: h['hash_string'] for h in json.load(f)['type_hashes']}
    assert msgdefs.type_hash('sensor_msgs/msg/JointState') == hashes['sensor_msgs/msg/JointState']
    assert msgdefs.type_hash('contact_dynamics/msg/ContactEstimate').startswith('RIHS01_')
    types = msgdefs.parse_definition('nav_msgs/msg/Odometry', msgdefs.msgdef('nav_msgs/msg/Odometry'))
    assert msgdefs.Field('covariance', 'float64', True, 36) in types['geometry_msgs/PoseWithCovariance']
    with pytest.raises(LookupError, match=r"nope_msgs/msg/Missing.*share"):
        msgdefs.msgdef('nope_msgs/msg/Missing')


def test_msgconv_stamps_and_rows():
    t = 1_234_567_890_987_654_321
    assert msgconv.stamp_to_ns(stamp(t)) == t
    assert msgconv.ns_to_sec_nanosec(-1) == (-1, 999_999_999)
    assert msgconv.wrench_row(wrench(t, range(1, 7))) == (t, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert msgconv.joint_state_row(joints(t, ['a', 'b'], [1, 2])) == (t, ('a', 'b'), (1.0, 2.0), (), ())
    assert msgconv.pose_row(pose(t, range(7))) == (t, *map(float, range(7)))
    assert msgconv.odometry_row(odom(t, np.arange(13.0), np.zeros(72))) == (t, *map(float, range(13)))


# ---------------------------------------------------------------- writer / reader round trip

@pytest.fixture
def mixed_bag(tmp_path):
    rng = np.random.default_rng(7)
    contact = ContactEstimate(header=_header(T0 + 500, 'tool0'), algorithm='rls', model='kelvin_voigt',
                              stiffness=1500.5, damping=20.25, parameter_names=['stiffness', 'damping'],
                              covariance=[1.0, 0.1, 0.1, 2.0], valid=True, status='ok', samples_used=250,
                              extras=[KeyValue(key='window', value='0.25')])
    msgs = {
        '/joint_states': [joints(T0 + i * 10**6, ['j1', 'j2'], rng.normal(size=2), rng.normal(size=2))
                          for i in range(5)],
        '/wrench': [wrench(T0 + i * 10**6 + 1, rng.normal(size=6)) for i in range(5)],
        '/pose': [pose(T0 + i * 10**6 + 2, rng.normal(size=7)) for i in range(3)],
        '/odom': [odom(T0 + i * 10**6 + 3, rng.normal(size=13), rng.normal(size=72)) for i in range(3)],
        '/contact': [contact],
    }
    types = {'/joint_states': JOINTS, '/wrench': WRENCH, '/pose': POSE, '/odom': ODOM,
             '/contact': 'contact_dynamics/msg/ContactEstimate'}
    custom = {'robot': 'ur5e', 'n': 3, 'gains': [1.5, 2.0], 'nested': {'a': True}, 'tricky': 'json:not'}
    path = tmp_path / 'mixed'
    events = sorted(((msgconv.stamp_to_ns(m.header.stamp), topic, m) for topic, ms in msgs.items()
                     for m in ms), key=lambda e: e[0])
    with BagWriter(path, custom_data=custom) as w:
        w.add_topic('/wrench', WRENCH, qos='sensor_data')
        for t, topic, m in reversed(events):         # out of order on purpose: the reader sorts
            w.write(topic, types[topic], m, t)
    return path, msgs, types, custom, events


def test_round_trip_decoded_fields(mixed_bag):
    path, msgs, types, custom, events = mixed_bag
    reader = BagReader(path)
    assert reader.topics == types
    assert reader.message_counts == {t: len(m) for t, m in msgs.items()}
    got = list(reader.messages())
    assert [g[2] for g in got] == [e[0] for e in events]
    for (t, topic, expected), (rtopic, rtype, rt, decoded) in zip(events, got):
        assert (rtopic, rtype, rt) == (topic, types[topic], t)
        assert_msg_equal(expected, decoded)
    assert list(reader.messages(['/contact']))[0][3].extras[0].value == '0.25'
    raw = list(reader.raw_messages(['/wrench']))
    assert [r[2] for r in raw] == [msgconv.stamp_to_ns(m.header.stamp) for m in msgs['/wrench']]
    assert all(isinstance(r[3], bytes) for r in raw)
    assert reader.custom_data == custom
    assert reader.start_ns == events[0][0] and reader.end_ns == events[-1][0]
    assert reader.duration_s == pytest.approx((events[-1][0] - events[0][0]) / 1e9)
    assert reader.offered_qos('/wrench')[0]['reliability'] == 'best_effort'
    assert reader.offered_qos('/pose')[0]['reliability'] == 'reliable'


def test_dict_messages_and_empty_effort(tmp_path):
    path = tmp_path / 'dicts'
    with BagWriter(path) as w:
        w.write('/j', JOINTS, {'header': {'stamp': {'sec': 5, 'nanosec': 7}}, 'name': ['a'],
                               'position': [1.5], 'velocity': [], 'effort': []}, 5_000_000_007)
        w.write('/j', JOINTS, joints(5_000_000_008, ['a'], [2.5]), 5_000_000_008)    # rclpy, empty arrays
    (_, _, _, m1), (_, _, _, m2) = BagReader(path).messages()
    assert (m1.name, list(m1.position), list(m1.effort)) == (['a'], [1.5], [])
    assert (m2.header.stamp.nanosec, list(m2.position), list(m2.effort)) == (8, [2.5], [])
    for fast in (True, False):
        cols = BagReader(path).columns('/j', fast=fast)
        np.testing.assert_array_equal(cols['position'], [[1.5], [2.5]])
        assert np.isnan(cols['effort']).all() and cols['effort'].shape == (2, 1)


def test_metadata_yaml_fields(mixed_bag):
    path, msgs, types, custom, events = mixed_bag
    files = sorted(p.name for p in path.iterdir())
    assert files == ['metadata.yaml', 'mixed_0.mcap']
    with open(path / 'metadata.yaml') as f:
        info = yaml.safe_load(f)['rosbag2_bagfile_information']
    assert list(info) == ['version', 'storage_identifier', 'duration', 'starting_time', 'message_count',
                          'topics_with_message_count', 'compression_format', 'compression_mode',
                          'relative_file_paths', 'files', 'custom_data', 'ros_distro']
    start, end = events[0][0], events[-1][0]
    assert info['version'] == 9
    assert info['storage_identifier'] == 'mcap'
    assert info['relative_file_paths'] == ['mixed_0.mcap']
    assert info['duration'] == {'nanoseconds': end - start}
    assert info['starting_time'] == {'nanoseconds_since_epoch': start}
    assert info['message_count'] == len(events)
    assert info['compression_format'] == '' and info['compression_mode'] == ''
    assert info['ros_distro'] == 'kilted'
    assert info['files'] == [{'path': 'mixed_0.mcap', 'starting_time': {'nanoseconds_since_epoch': start},
                              'duration': {'nanoseconds': end - start}, 'message_count': len(events)}]
    assert all(isinstance(v, str) for v in info['custom_data'].values())
    assert info['custom_data']['robot'] == 'ur5e' and info['custom_data']['n'] == 'json:3'
    topics = {t['topic_metadata']['name']: t for t in info['topics_with_message_count']}
    assert topics.keys() == msgs.keys()
    for name, entry in topics.items():
        meta = entry['topic_metadata']
        assert entry['message_count'] == len(msgs[name])
        assert meta['type'] == types[name] and meta['serialization_format'] == 'cdr'
        assert meta['type_description_hash'] == msgdefs.type_hash(types[name])
        (qos,) = meta['offered_qos_profiles']
        assert qos['history'] == 'keep_last' and qos['durability'] == 'volatile'
        expected_qos = ('best_effort', 5) if name == '/wrench' else ('reliable', 10)
        assert (qos['reliability'], qos['depth']) == expected_qos
        assert qos['deadline'] == {'sec': 9223372036, 'nsec': 854775807}
    # the same information is embedded in the MCAP file (rosbag2 metadata record, channel metadata)
    reader = BagReader(path / 'mixed_0.mcap')
    assert reader.custom_data == custom and reader.topics == types
    from mcap.reader import make_reader
    with open(path / 'mixed_0.mcap', 'rb') as f:
        mcap = make_reader(f)
        assert mcap.get_header().profile == 'ros2'
        summary = mcap.get_summary()
        for channel in summary.channels.values():
            assert channel.message_encoding == 'cdr'
            assert channel.metadata['topic_type_hash'] == msgdefs.type_hash(types[channel.topic])
            assert yaml.safe_load(channel.metadata['offered_qos_profiles']) == \
                topics[channel.topic]['topic_metadata']['offered_qos_profiles']
            schema = summary.schemas[channel.schema_id]
            assert schema.encoding == 'ros2msg'
            assert schema.data.decode() == msgdefs.msgdef(types[channel.topic])
        assert all(c.compression == 'zstd' for c in summary.chunk_indexes)


def test_writer_refuses_overwrite_and_type_mismatch(tmp_path):
    path = tmp_path / 'b'
    with BagWriter(path) as w:
        w.write('/w', WRENCH, wrench(1, range(6)), 1)
        with pytest.raises(ValueError, match='has type'):
            w.write('/w', JOINTS, joints(2, ['a'], [1]), 2)
        with pytest.raises(TypeError, match='expected a geometry_msgs/msg/PoseStamped'):
            w.write('/p', POSE, wrench(1, range(6)), 3)
    with pytest.raises(FileExistsError):
        BagWriter(path)
    (tmp_path / 'other').mkdir()
    (tmp_path / 'other' / 'notes.txt').write_text('keep me')
    with pytest.raises(FileExistsError):
        BagWriter(tmp_path / 'other', overwrite=True)
    with BagWriter(path, overwrite=True) as w:
        w.write('/w', WRENCH, wrench(1, range(6)), 1)
    assert BagReader(path).message_counts == {'/w': 1}


# ---------------------------------------------------------------- columns: fast path vs fallback

def test_columns_fast_path_equals_fallback(mixed_bag, spy_fast):
    path, msgs, *_ = mixed_bag
    reader = BagReader(path)
    for topic in ('/wrench', '/joint_states', '/pose', '/odom'):
        spy_fast.clear()
        fast = reader.columns(topic)
        assert spy_fast == [True], topic
        assert_columns_equal(fast, reader.columns(topic, fast=False))
    w = reader.columns('/wrench')
    rows = np.array([msgconv.wrench_row(m) for m in msgs['/wrench']], dtype=object)
    np.testing.assert_array_equal(w['stamp_ns'], rows[:, 0].astype(np.int64))
    np.testing.assert_array_equal(w['log_ns'], w['stamp_ns'])
    np.testing.assert_array_equal(w['force'], rows[:, 1:4].astype(float))
    np.testing.assert_array_equal(w['torque'], rows[:, 4:].astype(float))
    assert w['frame_id'] == 'ft_sensor' and 'frame_ids' not in w
    j = reader.columns('/joint_states')
    assert j['name'] == ['j1', 'j2']
    np.testing.assert_array_equal(j['position'], [list(m.position) for m in msgs['/joint_states']])
    assert np.isnan(j['effort']).all() and j['effort'].shape == (5, 2)
    o = reader.columns('/odom')
    assert (o['frame_id'], o['child_frame_id']) == ('odom', 'base_link')
    np.testing.assert_array_equal(o['pose_covariance'], [m.pose.covariance for m in msgs['/odom']])
    np.testing.assert_array_equal(o['angular'][:, 2], [m.twist.twist.angular.z for m in msgs['/odom']])
    p = reader.columns('/pose')
    np.testing.assert_array_equal(p['orientation'][:, 3], [m.pose.orientation.w for m in msgs['/pose']])
    c = reader.columns('/contact')             # ContactEstimate: stiffness, damping, mass and the verdict flags
    np.testing.assert_array_equal(c['kbm'], [[1500.5, 20.25, 0.0]])
    np.testing.assert_array_equal(c['flags'], [[1.0, 0.0]])
    assert (c['frame_id'], c['status']) == ('tool0', 'ok')
    assert_columns_equal(c, reader.columns('/contact', fast=False))
    with pytest.raises(KeyError):
        reader.columns('/nope')


def test_columns_varying_layout_falls_back(tmp_path, spy_fast):
    path = tmp_path / 'varying'
    with BagWriter(path) as w:
        w.write('/w', WRENCH, wrench(T0, range(6), 'a'), T0)
        w.write('/w', WRENCH, wrench(T0 + 1, range(1, 7), 'b'), T0 + 1)
        w.write('/j', JOINTS, joints(T0, ['x', 'y'], [1, 2], [3, 4], [5, 6]), T0)
        w.write('/j', JOINTS, joints(T0 + 1, ['y', 'x'], [20, 10]), T0 + 1)            # order changed
        w.write('/j', JOINTS, joints(T0 + 2, ['z'], [7], [8]), T0 + 2)                  # new joint
        w.write('/c', 'rosgraph_msgs/msg/Clock', Clock(clock=stamp(T0 + 5)), T0 + 9)
        w.write('/c', 'rosgraph_msgs/msg/Clock', Clock(clock=stamp(T0 + 6)), T0 + 10)
    reader = BagReader(path)
    wc = reader.columns('/w')
    jc = reader.columns('/j')
    assert spy_fast == [False, False]
    assert_columns_equal(wc, reader.columns('/w', fast=False))
    assert (wc['frame_id'], wc['frame_ids']) == ('a', ['a', 'b'])
    np.testing.assert_array_equal(wc['torque'], [[3, 4, 5], [4, 5, 6]])
    assert_columns_equal(jc, reader.columns('/j', fast=False))
    nan = np.nan
    assert jc['name'] == ['x', 'y', 'z']
    np.testing.assert_array_equal(jc['position'], [[1, 2, nan], [10, 20, nan], [nan, nan, 7]])
    np.testing.assert_array_equal(jc['velocity'], [[3, 4, nan], [nan, nan, nan], [nan, nan, 8]])
    np.testing.assert_array_equal(jc['effort'], [[5, 6, nan], [nan, nan, nan], [nan, nan, nan]])
    np.testing.assert_array_equal(jc['stamp_ns'], [T0, T0 + 1, T0 + 2])
    cc = reader.columns('/c')
    assert spy_fast[-1] is True
    assert_columns_equal(cc, reader.columns('/c', fast=False))
    assert cc.keys() == {'log_ns', 'stamp_ns'}
    np.testing.assert_array_equal(cc['stamp_ns'], [T0 + 5, T0 + 6])
    np.testing.assert_array_equal(cc['log_ns'], [T0 + 9, T0 + 10])


def test_columns_many_chunks_and_empty_topic(tmp_path, spy_fast):
    path = tmp_path / 'chunks'
    n = 3000
    force = np.random.default_rng(1).normal(size=(n, 6))
    with BagWriter(path, chunk_size=4096) as w:
        w.add_topic('/empty', POSE)
        for i in range(n):
            w.write('/w', WRENCH, wrench(T0 + i * 1000, force[i]), T0 + i * 1000)
    reader = BagReader(path)
    cols = reader.columns('/w')
    assert spy_fast == [True]
    np.testing.assert_array_equal(cols['force'], force[:, :3])
    assert_columns_equal(cols, reader.columns('/w', fast=False))
    empty = reader.columns('/empty')
    assert empty['position'].shape == (0, 3) and empty['frame_id'] == '' and len(empty['log_ns']) == 0


# ---------------------------------------------------------------- robustness

def test_missing_and_corrupt_bags(tmp_path):
    with pytest.raises(FileNotFoundError):
        BagReader(tmp_path / 'does_not_exist')
    path = tmp_path / 'good'
    with BagWriter(path) as w:
        for i, f in enumerate(np.random.default_rng(2).normal(size=(2000, 6))):
            w.write('/w', WRENCH, wrench(T0 + i, f), T0 + i)
    mcap_file = path / 'good_0.mcap'
    data = mcap_file.read_bytes()

    cut = tmp_path / 'cut'
    shutil.copytree(path, cut)
    (cut / 'good_0.mcap').write_bytes(data[:len(data) // 2])
    with pytest.raises(BagError, match='good_0.mcap'):          # recovery: test_bag_recovery.py
        BagReader(cut, recover=False)
    with pytest.raises(BagError, match='good_0.mcap'):
        BagReader(cut / 'good_0.mcap', recover=False)

    flipped = tmp_path / 'flipped'
    shutil.copytree(path, flipped)
    from mcap.reader import make_reader
    with open(mcap_file, 'rb') as f:
        chunk = make_reader(f).get_summary().chunk_indexes[0]
    damaged = bytearray(data)
    middle = chunk.chunk_start_offset + chunk.chunk_length // 2
    damaged[middle:middle + 64] = bytes(64)        # inside the chunk's compressed data
    (flipped / 'good_0.mcap').write_bytes(bytes(damaged))
    reader = BagReader(flipped, recover=False)
    with pytest.raises(BagError, match='good_0.mcap'):
        reader.columns('/w')
    with pytest.raises(BagError, match='good_0.mcap'):
        list(reader.messages())

    (tmp_path / 'garbage.mcap').write_bytes(b'not an mcap file at all' * 10)
    with pytest.raises(BagError, match='garbage.mcap'):
        BagReader(tmp_path / 'garbage.mcap')


def test_directory_of_several_mcap_files(tmp_path, spy_fast):
    """A bag split into several files (read without metadata.yaml): merged in log-time order."""
    merged = tmp_path / 'split'
    merged.mkdir()
    for part, offset in ((0, 0), (1, 1)):
        with BagWriter(tmp_path / f'p{part}') as w:
            for i in range(offset, 6, 2):
                w.write('/w', WRENCH, wrench(T0 + i, np.full(6, i)), T0 + i)
        shutil.move(str(tmp_path / f'p{part}' / f'p{part}_0.mcap'), merged / f'split_{part}.mcap')
    reader = BagReader(merged)
    assert reader.message_counts == {'/w': 6} and reader.info['custom_data'] == {}
    assert [m[3].wrench.force.x for m in reader.messages()] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    cols = reader.columns('/w')
    assert spy_fast == [True]
    np.testing.assert_array_equal(cols['force'][:, 0], np.arange(6.0))
    np.testing.assert_array_equal(cols['log_ns'], T0 + np.arange(6))
    assert_columns_equal(cols, reader.columns('/w', fast=False))


def test_decoded_messages_can_be_written_back(mixed_bag, tmp_path):
    """Objects decoded by mcap_ros2 are written with the dynamic serializer and read back unchanged."""
    path = mixed_bag[0]
    copy = tmp_path / 'copy'
    with BagWriter(copy) as w:
        for topic, type_name, t, decoded in BagReader(path).messages():
            w.write(topic, type_name, decoded, t)
    for (_, _, t, expected), (_, _, rt, got) in zip(BagReader(path).messages(), BagReader(copy).messages()):
        assert t == rt and repr(got) == repr(expected)      # repr lists every field, floats exactly


custom_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=6)


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text(min_size=1), custom_values, max_size=4))
def test_custom_data_encoding_round_trips(values):
    encoded = {k: bagmeta.encode_custom(v) for k, v in values.items()}
    assert all(isinstance(v, str) for v in encoded.values())
    assert {k: bagmeta.decode_custom(v) for k, v in encoded.items()} == values


joint_messages = st.lists(
    st.tuples(st.permutations(['a', 'b', 'c']).map(lambda p: p[:2]) | st.just(['a', 'b']),
              st.booleans(), st.booleans()),
    min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(joint_messages)
def test_joint_columns_fast_and_fallback_agree(tmp_path_factory, spec):
    """Random joint orders / missing arrays: both paths give the name-mapped columns."""
    path = tmp_path_factory.mktemp('js') / 'bag'
    expected = []
    with BagWriter(path) as w:
        for i, (names, has_vel, has_eff) in enumerate(spec):
            pos = [10.0 * i + ord(n) for n in names]
            vel = [v + 0.5 for v in pos] if has_vel else []
            eff = [v + 0.25 for v in pos] if has_eff else []
            w.write('/j', JOINTS, joints(T0 + i, names, pos, vel, eff), T0 + i)
            expected.append(dict(zip(names, pos)))
    reader = BagReader(path)
    fast, slow = reader.columns('/j'), reader.columns('/j', fast=False)
    assert_columns_equal(fast, slow)
    for row, values in zip(fast['position'], expected):
        assert {n: v for n, v in zip(fast['name'], row) if not np.isnan(v)} == values
