"""Damaged bags of every package (issue 16): a ``.db3`` cut at 30 / 60 / 90 % and an MCAP file with one flipped
bit in a chunk are read and replayed (``run-bag`` exits 0, no traceback), every message the file still holds
is used, and the loss is reported.

A short bag of each package comes from its registered simulator, is rewritten as MCAP with 64 kB chunks (so
a bag has several chunks) and as a rosbag2 sqlite3 file by ``rosbags``. What is intact is found here,
independently of the reader:

- ``.db3``: sqlite's own page accounting of the ORIGINAL file (the ``dbstat`` table: the leaf pages of
  ``messages`` in b-tree order with their cell counts) gives the page each row lies on; a row is intact when
  its cell lies whole before the cut (its record, encoded in the test, found in its page). sqlite's own b-tree read
  row by row (with exception handling) of the cut file reaches fewer of them (interior pages are lost with
  the cut) and may return a cut cell filled with the zero padding.
- MCAP: the damaged chunk is decompressed as far as it goes and walked record by record: a message is kept
  when its framing holds, its channel is one of the file's, its log time is in the chunk's span and on the
  longest nondecreasing run of its channel's log times (the earliest records among the longest), and ``rosbags`` (not the reader's decoder) deserializes it and serializes
  it back to the same bytes (up to trailing zero padding); after a record
  that fails, the walk resumes at the next one that passes. Every original record found byte for byte in
  the damaged chunk must be among them.
"""
import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', '57')
os.environ.setdefault('ROS_LOG_DIR', '/tmp/ros_log_bag')

import io  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import struct  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import zstandard  # noqa: E402
from mcap.reader import make_reader  # noqa: E402

from contact_dynamics_common.bag import BagError, BagReader, BagWriter  # noqa: E402
from contact_dynamics_common.cli import main, run_bag  # noqa: E402
from contact_dynamics_common.cli.run import load_offline_nodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {          # simulator command line, params file of the package's offline node
    'single_point': (['contact-1dof', '--duration', '3'], 'contact_estimator.yaml'),
    'impedance': (['impedance-plant', '--duration', '3'], 'impedance_profiler.yaml'),
    'multipoint': (['multipoint', 'M2'], 'multipoint_contact_estimator.yaml'),
    'pkm': (['pkm', '--duration', '2'], 'pkm_identifier.yaml'),
    'rover': (['rover-approach', '--duration', '3'], 'impact_indicator.yaml'),
    'rover_posture': (['rover-approach', '--duration', '3'], 'posture_evaluator.yaml'),   # the rover's 2nd node
}


def typestore(schemas):
    """rosbags' Kilted type store with the bag's own definitions of the types it lacks."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
    store = get_typestore(Stores.ROS2_KILTED)
    for name, text in schemas.items():
        if name not in store.fielddefs:
            types = get_types_from_msg(text, name)
            store.register({k: v for k, v in types.items() if k not in store.fielddefs})
    return store


def schemas_of(mcap: Path):
    with open(mcap, 'rb') as f:
        summary = make_reader(f).get_summary()
    return {s.name: s.data.decode() for s in summary.schemas.values()}


@pytest.fixture(scope='module')
def bags(tmp_path_factory):
    """{package: (MCAP bag with 64 kB chunks, .db3 bag, params file)}."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    root = tmp_path_factory.mktemp('damaged')
    out = {}
    for name, (argv, params) in PACKAGES.items():
        sim = root / f'{name}_sim'
        assert main(['simulate', argv[0], '--out', str(sim), *argv[1:]]) == 0
        src = BagReader(sim)
        chunked = root / name                      # the same directory (geometry, truth), small chunks
        shutil.copytree(sim, chunked)
        for f in chunked.glob('*.mcap'):
            f.unlink()
        (chunked / 'metadata.yaml').unlink()
        tmp = root / 'tmp' / name
        with BagWriter(tmp, custom_data=src.custom_data, chunk_size=1 << 16) as w:
            for topic, type_name in src.topics.items():
                w.add_topic(topic, type_name)
            for topic, type_name, t, data in src.raw_messages():
                w.write_serialized(topic, type_name, data, t)
        for f in tmp.iterdir():
            shutil.move(str(f), chunked / f.name)
        store = typestore(schemas_of(next(chunked.glob('*.mcap'))))
        db3 = root / f'{name}_db3'
        with Writer(db3, version=9, storage_plugin=StoragePlugin.SQLITE3) as w:
            conns = {t: w.add_connection(t, ty, typestore=store) for t, ty in src.topics.items()}
            for topic, _, t, data in src.raw_messages():
                w.write(conns[topic], t, data)
            for key, value in src.info['custom_data'].items():
                w.set_custom_data(key, value)
        for extra in sim.iterdir():                # geometry.yaml, truth.yaml, ... beside the bag
            if extra.suffix not in ('.mcap',) and extra.name != 'metadata.yaml':
                shutil.copy(extra, db3 / extra.name)
        out[name] = (chunked, db3, str(ROOT / 'config' / params))
    return out


# ---- .db3 cut at 30 / 60 / 90 %
def sqlite_record(topic_id: int, timestamp: int, data: bytes) -> bytes:
    """The record of a ``messages`` row as sqlite stores it (file format 4): header (its size, then one serial
    type per column: NULL for the rowid alias, the integers, the blob) and the values."""
    def varint(v: int) -> bytes:
        groups = [v & 0x7F]
        while v > 0x7F:
            v >>= 7
            groups.append(0x80 | (v & 0x7F))
        return bytes(reversed(groups))

    def integer(v: int) -> tuple[int, bytes]:
        if v in (0, 1):
            return 8 + v, b''
        n = next(n for n in (1, 2, 3, 4, 6, 8) if -(1 << (8 * n - 1)) <= v < 1 << (8 * n - 1))
        return {1: 1, 2: 2, 3: 3, 4: 4, 6: 5, 8: 6}[n], v.to_bytes(n, 'big', signed=True)

    (s1, b1), (s2, b2) = integer(topic_id), integer(timestamp)
    types = varint(0) + varint(s1) + varint(s2) + varint(12 + 2 * len(data))
    return varint(len(types) + 1) + types + b1 + b2 + data


def rows_before_cut(original: Path, cut: int) -> dict[int, tuple]:
    """{id: (topic_id, timestamp, data)} of the rows whose cell lies whole in the first ``cut`` bytes: the
    leaf page of each row from sqlite's page accounting (dbstat) of the original file, and where its cell
    ends in that page (its record, encoded here, found in the page)."""
    data = original.read_bytes()
    db = sqlite3.connect(original)
    page = db.execute('PRAGMA page_size').fetchone()[0]
    stats = db.execute("SELECT pageno, pagetype, ncell, path FROM dbstat WHERE name = 'messages' "
                       "ORDER BY path").fetchall()
    assert not any(t == 'overflow' for _, t, _, _ in stats)           # every payload fits its page here
    rows = db.execute('SELECT id, topic_id, timestamp, data FROM messages ORDER BY id').fetchall()
    db.close()
    out, k = {}, 0
    for pageno, kind, ncell, _ in stats:
        if kind != 'leaf':
            continue
        base = (pageno - 1) * page
        content = data[base:base + page]
        for rid, tid, ts, payload in rows[k:k + ncell]:
            key = sqlite_record(tid, ts, payload)
            at = content.find(key)
            assert at > 0 and content.find(key, at + 1) < 0
            if base + at + len(key) <= cut:
                out[rid] = (tid, ts, payload)
        k += ncell
    assert k == len(rows)
    return out


def rows_sqlite_reaches(cut_file: Path, size: int, ids: range, tmp: Path) -> dict[int, tuple]:
    """Rows sqlite's own b-tree gives, row by row, from the cut file zero-padded to its size."""
    pad = tmp / 'padded.db3'
    shutil.copy(cut_file, pad)
    os.truncate(pad, size)
    db = sqlite3.connect(f'file:{pad}?immutable=1', uri=True)
    out = {}
    for i in ids:
        try:
            row = db.execute('SELECT topic_id, timestamp, data FROM messages WHERE id = ?', (i,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None and None not in row:
            out[i] = row
    db.close()
    return out


@pytest.mark.parametrize('frac', [0.3, 0.6, 0.9])
@pytest.mark.parametrize('package', list(PACKAGES))
def test_cut_db3_gives_every_row_whose_cell_is_left(bags, tmp_path, capsys, package, frac):
    _, db3, config = bags[package]
    original = next(db3.glob('*.db3'))
    data = original.read_bytes()
    cut = int(len(data) * frac)
    bag = tmp_path / 'cut'
    shutil.copytree(db3, bag)
    (bag / original.name).write_bytes(data[:cut])
    with sqlite3.connect(original) as db:
        topics = {tid: (name, ty) for tid, name, ty in db.execute('SELECT id, name, type FROM topics')}
        total = db.execute('SELECT count(*) FROM messages').fetchone()[0]
    db.close()

    intact = rows_before_cut(original, cut)
    assert 0 < len(intact) < total
    want = [(topics[tid][0], topics[tid][1], ts, payload)
            for _, (tid, ts, payload) in sorted(intact.items(), key=lambda kv: (kv[1][1], kv[0]))]
    with pytest.raises(BagError):
        BagReader(bag, recover=False)
    reader = BagReader(bag)
    got = list(reader.raw_messages())
    assert got == want                                        # every intact row, byte for byte, in order
    reached = rows_sqlite_reaches(bag / original.name, len(data), range(1, total + 1), tmp_path)
    # sqlite's own b-tree reaches fewer (interior pages lost), and may return a cut cell's zero padding
    assert {i for i, row in reached.items() if row == intact.get(i)} <= set(intact)
    rec = reader.recovery
    assert rec.damaged and rec.messages == len(intact) and rec.damage[0].kind == 'truncated'
    assert rec.damage[0].lost_messages == max(intact) - len(intact)
    assert f'ends at byte {cut}' in rec.lines()[1] and f'{len(intact)} rows read page by page' in rec.lines()[1]
    assert not any(m[3] == b'' for m in got)

    nodes = load_offline_nodes(config)
    inputs = {t for n in nodes for t in n.inputs()}
    result, _, _ = run_bag(str(bag), config, progress=False)
    assert result.recovery.messages == len(intact)
    assert result.input_messages == sum(1 for m in want if m[0] in inputs)
    capsys.readouterr()
    assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 0
    out, err = capsys.readouterr()
    assert f'recovered {len(intact)} intact messages' in out and 'Traceback' not in out + err
    assert main(['info', str(bag)]) == 0
    with capsys.disabled():
        print(f'\n{package} .db3 cut at {frac:.0%}: {len(intact)} of {total} rows intact (independent page scan) = '
              f'read; run-bag used {result.input_messages} input messages')


# ---- MCAP: one flipped bit in a chunk
CHUNK = struct.Struct('<BQQQQII')           # opcode, length, start, end, uncompressed size, crc, name length


def chunk_parts(raw: bytes):
    """(log-time span, compression, compressed records, uncompressed size) of a chunk record."""
    _, _, t0, t1, size, _, name_len = CHUNK.unpack_from(raw, 0)
    pos = CHUNK.size
    compression = raw[pos:pos + name_len].decode()
    (n,) = struct.unpack_from('<Q', raw, pos + name_len)
    start = pos + name_len + 8
    return (t0, t1), compression, (start, start + n), size


def inflate(compression: str, data: bytes, size: int) -> bytes:
    """As much of the records as the stream gives (zstd read in pieces until it breaks)."""
    if compression == '':
        return data
    assert compression == 'zstd'
    out = bytearray()
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    try:
        while len(out) < 2 * size + 4096:
            piece = reader.read(4096)
            if not piece:
                break
            out += piece
    except zstandard.ZstdError:
        pass
    return bytes(out[:2 * size + 4096])


def consistent_messages(buf: bytes, span, channels, store):
    """(channel, log time, payload, record bytes) of the message records that parse and agree with the
    file."""
    def message_at(p):
        if p + 31 > len(buf) or buf[p] != 0x05:
            return None
        length = int.from_bytes(buf[p + 1:p + 9], 'little')
        if length < 22 or p + 9 + length > len(buf):
            return None
        cid = int.from_bytes(buf[p + 9:p + 11], 'little')
        log = int.from_bytes(buf[p + 15:p + 23], 'little')
        if cid not in channels or not span[0] <= log <= span[1]:
            return None
        payload = buf[p + 31:p + 9 + length]
        try:                                                # decodes, and encodes back to the same bytes
            again = store.serialize_cdr(store.deserialize_cdr(payload, channels[cid][1]), channels[cid][1])
        except Exception:                                   # noqa: BLE001
            return None
        if not (payload.startswith(again) and len(payload) - len(again) < 8 and not any(payload[len(again):])):
            return None
        return cid, log, payload, buf[p:p + 9 + length]

    found, p = [], 0
    while p + 9 <= len(buf):
        opcode, length = buf[p], int.from_bytes(buf[p + 1:p + 9], 'little')
        if opcode in (0x03, 0x04) and p + 9 + length <= len(buf):
            p += 9 + length
            continue
        m = message_at(p)
        if m is None:                                       # resume at the next record that passes
            p += 1
            while p + 31 <= len(buf) and message_at(p) is None:
                p += 1
            if p + 31 > len(buf):
                break
            continue
        found.append(m)
        p += len(m[3])
    keep = [False] * len(found)
    for cid in {m[0] for m in found}:       # per channel: the longest run of log times that never goes back
        idx = [i for i, m in enumerate(found) if m[0] == cid]
        t = [found[i][1] for i in idx]
        n = len(t)
        longest = [1] * n                   # longest nondecreasing subsequence starting at j
        for j in range(n - 1, -1, -1):
            for k in range(j + 1, n):
                if t[k] >= t[j] and longest[k] + 1 > longest[j]:
                    longest[j] = longest[k] + 1
        need, last = max(longest), None     # the earliest records among the longest
        for j in range(n):
            if need and longest[j] == need and (last is None or t[j] >= last):
                keep[idx[j]], need, last = True, need - 1, t[j]
    return [m for m, k in zip(found, keep) if k]


@pytest.mark.parametrize('package', list(PACKAGES))
def test_flipped_bit_in_a_chunk_keeps_every_consistent_record(bags, tmp_path, capsys, package):
    chunked, _, config = bags[package]
    mcap = next(chunked.glob('*.mcap'))
    data = mcap.read_bytes()
    with open(mcap, 'rb') as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        channels = {c.id: (c.topic, summary.schemas[c.schema_id].name) for c in summary.channels.values()}
        order = [(c.topic, s.name, m.log_time, bytes(m.data)) for s, c, m in reader.iter_messages(
            log_time_order=False)]
    chunks = sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
    assert len(chunks) >= 2
    store = typestore(schemas_of(mcap))
    rng = random.Random(sum(map(ord, package)))
    bad = chunks[len(chunks) // 2]
    lo = bad.chunk_start_offset
    span, compression, (a, b), size = chunk_parts(data[lo:lo + bad.chunk_length])
    original_records = inflate(compression, data[lo + a:lo + b], size)
    damaged = bytearray(data)
    pos = lo + a + rng.randrange(b - a)
    damaged[pos] ^= 1 << rng.randrange(8)
    bag = tmp_path / 'flipped'
    shutil.copytree(chunked, bag)
    (bag / mcap.name).write_bytes(bytes(damaged))

    records = inflate(compression, bytes(damaged[lo + a:lo + b]), size)
    whole = consistent_messages(original_records, span, channels, store)
    in_chunk = [(channels[c][0], channels[c][1], t, p) for c, t, p, _ in whole]
    assert in_chunk and set(in_chunk) <= set(order)
    others = [m for m in order if m not in set(in_chunk)]
    salvaged = [(channels[c][0], channels[c][1], t, p)
                for c, t, p, _ in consistent_messages(records, span, channels, store)]
    verbatim = [m for m, (*_, raw) in zip(in_chunk, whole) if raw in records]      # byte-exact still

    got = list(BagReader(bag).raw_messages())
    assert sorted(got) == sorted(others + salvaged) and len(got) == len(others) + len(salvaged)
    # no intact record is lost, but where a corrupted record of its channel took its place in time (the
    # longest nondecreasing run of log times is not unique; measured: 1 flip in 100 lost 3 records so)
    wrong = set(salvaged) - set(in_chunk)
    assert len(set(verbatim) - set(got)) <= len(wrong)
    rec = BagReader(bag).verify()
    assert rec.messages == len(got) and rec.unverified == len(salvaged)
    assert rec.damage[0].offset == lo and rec.damage[0].lost_messages == len(in_chunk) - len(salvaged)
    strict = BagReader(bag, unverified=False)
    assert sorted(strict.raw_messages()) == sorted(others)
    assert strict.verify().messages == len(others) and strict.recovery.unverified == 0

    nodes = load_offline_nodes(config)
    inputs = {t for n in nodes for t in n.inputs()}
    result, _, _ = run_bag(str(bag), config, progress=False)
    assert result.input_messages == sum(1 for m in got if m[0] in inputs)
    assert result.recovery.unverified == len(salvaged) and result.recovery.damaged
    capsys.readouterr()
    assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 0
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err and f'at byte {lo}' in out
    if salvaged:
        assert f'{len(salvaged)} recovered-unverified' in out
    assert main(['run-bag', str(bag), '--config', config, '--quiet', '--strict']) == 0
    out, _ = capsys.readouterr()
    assert f'recovered {len(others)} intact messages' in out
    with capsys.disabled():
        print(f'\n{package} MCAP bit flipped in chunk at byte {lo}: {len(in_chunk)} records in it, '
              f'{len(salvaged)} recovered-unverified (independent record walk) = read; {len(got)} of {len(order)} '
              f'messages read, run-bag used {result.input_messages}')


# ---- issue 16 item 8: custom types in other storages, empty damaged bags, rebuilt metadata said
def test_own_message_types_read_from_ros1_and_old_db3_like_mcap(bags, tmp_path):
    """The rover bag holds contact_dynamics/msg/ObstacleHypothesis: as a ROS 1 bag and as a .db3 without
    stored definitions (rosbag2 before Iron) it reads and replays as the MCAP bag does."""
    from test_bag_db3 import to_ros1

    chunked, db3, config = bags['rover']
    src = BagReader(chunked)
    assert 'contact_dynamics/msg/ObstacleHypothesis' in src.topics.values()
    bag1 = to_ros1(chunked, tmp_path / 'rover.bag')
    old = tmp_path / 'old'
    shutil.copytree(db3, old)
    with sqlite3.connect(next(old.glob('*.db3'))) as db:
        db.execute('DROP TABLE message_definitions')
        db.execute('DROP TABLE metadata')
    db.close()
    want, _, _ = run_bag(str(chunked), config, progress=False)
    assert want.outputs
    for path in (bag1, old):
        reader = BagReader(path)
        assert reader.topics == src.topics and not reader.recovery.damaged
        assert list(reader.raw_messages()) == list(src.raw_messages())
        got, _, _ = run_bag(str(path), config, progress=False)
        assert got.outputs == want.outputs and got.input_messages == want.input_messages


def test_a_bag_cut_before_its_first_message_says_it_is_damaged(bags, tmp_path, capsys):
    chunked, db3, config = bags['single_point']
    mcap = tmp_path / 'mcap'
    shutil.copytree(chunked, mcap)
    (mcap / 'metadata.yaml').unlink()
    f = next(mcap.glob('*.mcap'))
    f.write_bytes(f.read_bytes()[:40])
    cut = tmp_path / 'db3'
    shutil.copytree(db3, cut)
    f = next(cut.glob('*.db3'))
    with sqlite3.connect(f) as db:                         # up to the first page of message rows
        first = db.execute("SELECT min(pageno) FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf'"
                           ).fetchone()[0]
        page = db.execute('PRAGMA page_size').fetchone()[0]
    db.close()
    original = f.read_bytes()
    f.write_bytes(original[:(first - 1) * page])
    for bag in (mcap, cut):
        capsys.readouterr()
        assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 2
        out, err = capsys.readouterr()
        assert 'the bag is damaged' in err and 'is not in the bag' not in err and 'Traceback' not in out + err
        assert '0 intact messages in all' in err and len(err.strip().splitlines()) == 1
        assert main(['info', str(bag)]) == 0
        assert 'recovered 0 intact messages' in capsys.readouterr().out
    for n in (0, 40):                                     # cut inside the sqlite3 header: one line
        f.write_bytes(original[:n])
        assert main(['run-bag', str(cut), '--config', config, '--quiet']) == 2
        out, err = capsys.readouterr()
        assert 'damaged rosbag2 sqlite3 file' in err and len(err.strip().splitlines()) == 1


def test_run_bag_says_when_it_rebuilt_or_ignored_metadata(bags, tmp_path, capsys):
    chunked, _, config = bags['single_point']
    bag = tmp_path / 'bag'
    shutil.copytree(chunked, bag)
    capsys.readouterr()
    assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 0
    assert 'metadata:' not in capsys.readouterr().out
    (bag / 'metadata.yaml').unlink()
    assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith('metadata:')]
    assert lines == [f'metadata: rebuilt from the mcap index; written to {bag / "metadata.yaml"}']
    (bag / 'metadata.yaml').write_text('rosbag2_bagfile_information: [')
    assert main(['run-bag', str(bag), '--config', config, '--quiet']) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith('metadata:')]
    assert len(lines) == 1 and 'metadata.yaml unusable' in lines[0] and 'kept in memory' in lines[0]


@pytest.mark.parametrize('frac', [0.3, 0.6, 0.9, 1.0])
def test_db3_rows_spilling_onto_overflow_pages(tmp_path, frac):
    """Payloads of 50 B to 40 kB (4 kB pages): rows continue on overflow pages. A row is intact when the
    local part of its cell and the used part of each of its overflow pages (dbstat's overflow pages of its
    cell, in order) lie before the cut; the local part's size is the file format's rule for table leaves."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_KILTED)
    text = store.types['std_msgs/msg/String']
    rng = random.Random(5)
    bag = tmp_path / 'text'
    with Writer(bag, version=9, storage_plugin=StoragePlugin.SQLITE3) as w:
        conn = w.add_connection('/text', 'std_msgs/msg/String', typestore=store)
        for i in range(300):
            n = rng.choice([50, 3000, 4050, 5000, 12000, 40000])
            data = ''.join(rng.choice('abcdefgh') for _ in range(n))
            w.write(conn, 10**9 + i * 10**6, store.serialize_cdr(text(data=data), 'std_msgs/msg/String'))
    original = bag / 'text.db3'
    data = original.read_bytes()
    cut = int(len(data) * frac)
    db = sqlite3.connect(original)
    usable = db.execute('PRAGMA page_size').fetchone()[0]
    stats = db.execute("SELECT pageno, pagetype, ncell, path FROM dbstat WHERE name = 'messages' "
                       "ORDER BY path").fetchall()
    rows = db.execute('SELECT id, topic_id, timestamp, data FROM messages ORDER BY id').fetchall()
    db.close()
    overflow = {}                                     # (leaf path, cell) -> overflow pages in order
    for pageno, kind, _, path in stats:
        if kind == 'overflow':
            leaf, seq = path.split('+')
            overflow.setdefault((leaf[:-3], int(leaf[-3:], 16)), []).append((int(seq), pageno))
    assert sum(len(v) for v in overflow.values()) > 100
    intact, k = {}, 0
    for pageno, kind, ncell, path in stats:
        if kind != 'leaf':
            continue
        base = (pageno - 1) * usable
        for cell, (rid, tid, ts, payload) in enumerate(rows[k:k + ncell]):
            record = sqlite_record(tid, ts, payload)
            size, most, least = len(record), usable - 35, (usable - 12) * 32 // 255 - 23
            spill = least + (size - least) % (usable - 4)
            local = size if size <= most else (spill if spill <= most else least)
            at = data.find(record[:local], base, base + usable)
            assert at > 0
            ok = at + local + (4 if local < size else 0) <= cut
            rest = size - local
            for _, page in sorted(overflow.get((path, cell), [])):
                take = min(rest, usable - 4)
                ok &= (page - 1) * usable + 4 + take <= cut
                rest -= take
            assert rest == 0
            if ok:
                intact[rid] = (ts, payload)
        k += ncell
    assert (frac == 1 or 0 < len(intact) < len(rows)) and sum(len(p) > usable for _, p in intact.values()) > 10
    if frac < 1:
        (bag / 'text.db3').write_bytes(data[:cut])
    got = list(BagReader(bag).raw_messages())
    want = [('/text', 'std_msgs/msg/String', ts, payload) for _, (ts, payload) in sorted(intact.items())]
    assert got == want and (frac < 1 or len(got) == len(rows) == 300)
