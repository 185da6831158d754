"""Damaged MCAP bags (a recording cut by a power loss, garbage in a chunk) and a missing metadata.yaml.

The bags are simulated (contact_estimation.single_point.simulate) and rewritten with small chunks, then
damaged here. The oracle for what is intact is independent of the reader: the file-order message list of the
undamaged file (mcap's own reader) and, for uncompressed chunks, where each payload sits in the file.
"""
import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', '57')
os.environ.setdefault('ROS_LOG_DIR', '/tmp/ros_log_bag')

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from mcap.reader import make_reader  # noqa: E402

from contact_dynamics_common.bag import BagError, BagReader, BagWriter  # noqa: E402
from contact_dynamics_common.cli import main, run_bag  # noqa: E402
from contact_estimation.single_point.simulate import KelvinVoigt1Dof, write_bag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / 'config' / 'contact_estimator.yaml')
CUTS = (0.04, 0.3, 0.55, 0.8, 0.97)


@pytest.fixture(scope='module')
def bags(tmp_path_factory):
    """{'zstd' | 'lz4' | 'none': (bag dir, mcap path, file-order [(topic, type, log_ns, bytes)], chunks)}."""
    root = tmp_path_factory.mktemp('recovery')
    write_bag(KelvinVoigt1Dof(duration=6, rate=500, seed=11), root / 'sim')
    sim = BagReader(root / 'sim')
    out = {}
    for comp in ('zstd', 'lz4', 'none'):
        path = root / comp
        with BagWriter(path, custom_data=sim.custom_data, chunk_size=16384, compression=comp) as w:
            for topic, type_name in sim.topics.items():
                w.add_topic(topic, type_name, qos=sim.offered_qos(topic)[0])
            for topic, type_name, t, data in sim.raw_messages():
                w.write_serialized(topic, type_name, data, t)
        mcap = path / f'{comp}_0.mcap'
        with open(mcap, 'rb') as f:
            reader = make_reader(f)
            chunks = sorted(reader.get_summary().chunk_indexes, key=lambda c: c.chunk_start_offset)
            order = [(c.topic, s.name, m.log_time, bytes(m.data))
                     for s, c, m in reader.iter_messages(log_time_order=False)]
        assert len(chunks) > 10 and len(order) == 6000
        out[comp] = (path, mcap, order, chunks)
    return out


def damaged_copy(src: Path, dst: Path, data: bytes, keep_metadata: bool = True) -> Path:
    shutil.copytree(src, dst)
    (dst / f'{src.name}_0.mcap').write_bytes(data)
    if not keep_metadata:
        (dst / 'metadata.yaml').unlink()
    return dst


def payload_ends(data: bytes, order) -> np.ndarray:
    """Byte offset where each message's record ends in an uncompressed MCAP file (payloads are unique)."""
    ends, pos = [], 0
    for _, _, _, payload in order:
        pos = data.index(payload, pos)
        ends.append(pos + len(payload))
    return np.array(ends)


def topic_counts(messages):
    out = {}
    for m in messages:
        out[m[0]] = out.get(m[0], 0) + 1
    return out


@pytest.mark.parametrize('comp', ['zstd', 'lz4', 'none'])
def test_truncated_file_gives_every_intact_message_and_says_where_it_breaks(bags, tmp_path, comp):
    path, mcap, order, chunks = bags[comp]
    data = mcap.read_bytes()
    ends = payload_ends(data, order) if comp == 'none' else None
    for frac in CUTS:
        cut = int(len(data) * frac)
        bag = damaged_copy(path, tmp_path / f'cut{frac}', data[:cut], keep_metadata=frac < 0.5)
        with pytest.raises(BagError):
            BagReader(bag, recover=False)
        reader = BagReader(bag)
        got = list(reader.raw_messages())
        n = len(got)
        assert got == order[:n], frac                     # a prefix, byte for byte, nothing invented
        if comp == 'none':                                # exactly the messages whose record is in the file
            assert n == int(np.sum(ends <= cut)), frac
        else:                                             # at least every chunk that ends before the cut
            first_cut = next((c for c in chunks if c.chunk_start_offset + c.chunk_length > cut), None)
            if first_cut is None:
                assert n == len(order)
            else:
                assert sum(m[2] < first_cut.message_start_time for m in order) <= n
                assert n <= sum(m[2] <= first_cut.message_end_time for m in order)
        rec = reader.recovery
        assert rec.damaged and rec.messages == n and rec.per_topic == topic_counts(got)
        assert reader.message_counts == topic_counts(got)
        assert rec.start_ns == order[0][2] and rec.end_ns == max(m[2] for m in got)
        assert rec.seconds == pytest.approx((rec.end_ns - rec.start_ns) / 1e9)
        assert rec.last_good_ns == got[-1][2]
        assert 0 < rec.break_offset <= cut and rec.damage[0].kind in ('truncated', 'summary')
        assert rec.indexed_by == {mcap.name: 'scan'}
        lines = rec.lines()
        assert f'recovered {n} intact messages' in lines[0] and f'at byte {rec.break_offset}' in lines[1]
        cols = reader.columns_many()
        assert {t: len(c['log_ns']) for t, c in cols.items()} == rec.per_topic
        if frac >= 0.5:                                   # metadata.yaml deleted too: rebuilt by the scan
            assert 'rebuilt from a scan; written to' in reader.metadata_source
            meta = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
            assert meta['message_count'] == n and meta['storage_identifier'] == 'mcap'
            assert {t['topic_metadata']['name']: t['message_count'] for t in meta['topics_with_message_count']
                    } == rec.per_topic


def test_run_bag_on_a_truncated_bag_equals_the_same_data_cut_cleanly(bags, tmp_path, capsys):
    path, mcap, order, _ = bags['zstd']
    data = mcap.read_bytes()
    cut_bag = damaged_copy(path, tmp_path / 'cut', data[:int(len(data) * 0.62)])
    n = BagReader(cut_bag).recovery.messages
    clean = tmp_path / 'clean'
    with BagWriter(clean, custom_data=BagReader(path).custom_data) as w:
        for topic, type_name, t, payload in order[:n]:
            w.write_serialized(topic, type_name, payload, t)
    got, _, _ = run_bag(str(cut_bag), CONFIG, report=str(tmp_path / 'report'), progress=False)
    want, _, _ = run_bag(str(clean), CONFIG, progress=False)
    assert got.recovery.damaged and not want.recovery.damaged and got.recovery.messages == n
    assert got.input_messages == want.input_messages == n
    assert set(got.outputs) == set(want.outputs) and got.outputs
    for topic in want.outputs:
        assert len(got.outputs[topic]) == len(want.outputs[topic]) > 50
        for (ta, fa), (tb, fb) in zip(got.outputs[topic], want.outputs[topic]):
            assert ta == tb and fa == fb
    last = want.outputs['/contact_estimator/rls/estimate'][-1][1]
    assert last['valid'] and abs(last['stiffness'] / 4800 - 1) < 0.02
    summary = yaml.safe_load((tmp_path / 'report' / 'summary.yaml').read_text())
    assert summary['bag']['damaged'] and summary['bag']['messages'] == n
    assert summary['bag']['last_good_ns'] == order[n - 1][2]

    assert main(['run-bag', str(cut_bag), '--config', CONFIG, '--quiet']) == 0
    printed = capsys.readouterr().out
    assert f'{n} input messages' in printed and f'recovered {n} intact messages' in printed
    assert main(['info', str(cut_bag)]) == 0
    printed = capsys.readouterr().out
    assert f'recovered {n} intact messages' in printed and 'index: scan' in printed


@pytest.mark.parametrize('comp', ['zstd', 'none'])
def test_garbage_in_a_chunk_loses_that_chunk_only(bags, tmp_path, capsys, comp):
    path, mcap, order, chunks = bags[comp]
    data = bytearray(mcap.read_bytes())
    bad = chunks[4]
    lo, hi = bad.chunk_start_offset, bad.chunk_start_offset + bad.chunk_length
    mid = lo + bad.chunk_length // 2
    data[mid:mid + 48] = b'\xa5' * 48
    in_chunk = [m for m in order if bad.message_start_time <= m[2] <= bad.message_end_time]
    if comp == 'none':                                    # exact membership from payload positions
        ends = payload_ends(bytes(mcap.read_bytes()), order)
        in_chunk = [m for m, e in zip(order, ends) if lo < e <= hi]
    kept = [m for m in order if m not in in_chunk]

    bag = damaged_copy(path, tmp_path / 'garbage', bytes(data))       # summary intact: found while reading
    reader = BagReader(bag, unverified=False)             # strict: the chunk that fails its CRC is skipped
    assert list(reader.raw_messages()) == kept
    rec = reader.recovery
    assert rec.messages == len(kept) and rec.damage[0].lost_messages == len(in_chunk) and rec.unverified == 0
    assert rec.break_offset == lo and rec.damage[0].kind == 'corrupt'
    assert {t: len(c['log_ns']) for t, c in BagReader(bag, unverified=False).columns_many().items()
            } == topic_counts(kept)

    reader = BagReader(bag)                               # default: its records that parse and agree, flagged
    got = list(reader.raw_messages())
    extra = [m for m in got if m not in kept]
    assert [m for m in got if m in kept] == kept and len(got) == len(kept) + len(extra)
    rec = reader.recovery
    assert rec.messages == len(got) and rec.unverified == len(extra) > 0
    assert rec.damage[0].lost_messages == len(in_chunk) - len(extra)
    if comp == 'none':                                    # every record the garbage missed is back, byte-exact
        starts = ends - np.array([len(m[3]) for m in order]) - 31
        hit = [m for m, a, e in zip(order, starts, ends) if lo < e <= hi and a < mid + 48 and e > mid]
        spared = [m for m in in_chunk if m not in hit]
        assert set(spared) <= set(extra) and len(extra) - len(spared) <= len(hit) <= 2
    assert main(['info', str(bag)]) == 0                  # info reads every chunk
    printed = capsys.readouterr().out
    assert (f'recovered {len(got)} messages ({len(kept)} intact, {len(extra)} recovered-unverified)' in printed
            and f'at byte {lo}' in printed)

    cut = damaged_copy(path, tmp_path / 'garbage_cut', bytes(data[:chunks[9].chunk_start_offset + 100]))
    strict = list(BagReader(cut, unverified=False).raw_messages())
    unverified = list(BagReader(cut).raw_messages())     # the scan salvages the bad chunk's records too
    assert set(strict) < set(unverified) and [m for m in unverified if m in set(strict)] == strict
    reader = BagReader(cut, unverified=False)             # no summary: the scan skips the bad chunk, goes on
    got = list(reader.raw_messages())
    assert got == [m for m in kept if m[2] < chunks[9].message_start_time] + got[len(got) - sum(
        m[2] >= chunks[9].message_start_time for m in got):]
    assert [d.offset for d in reader.recovery.damage] == [lo, chunks[9].chunk_start_offset]


@pytest.mark.parametrize('where', ['opcode', 'length', 'index'])
def test_garbage_over_record_framing_is_skipped_to_the_next_chunk(bags, tmp_path, where):
    """No summary (cut file) and garbage over a chunk's opcode, its length, or the message index after it:
    the scan finds the next self-consistent chunk header and goes on; only that chunk is lost."""
    import struct
    path, mcap, order, chunks = bags['none']
    data = bytearray(mcap.read_bytes())
    ends = payload_ends(bytes(data), order)
    bad = chunks[6]
    lo, hi = bad.chunk_start_offset, bad.chunk_start_offset + bad.chunk_length
    if where == 'opcode':
        data[lo] = 0xAB                                    # not an MCAP opcode
    elif where == 'length':
        struct.pack_into('<Q', data, lo + 1, 123456789)    # the chunk's record length
    else:
        data[hi:hi + 12] = b'\xee' * 12                    # the message index record after the chunk
    cut = chunks[12].chunk_start_offset + 100
    reader = BagReader(damaged_copy(path, tmp_path / where, bytes(data[:cut])))
    got = list(reader.raw_messages())
    lost = [m for m, e in zip(order, ends) if lo < e <= hi] if where != 'index' else []
    assert got == [m for m, e in zip(order, ends) if e <= chunks[12].chunk_start_offset and m not in lost]
    first = reader.recovery.damage[0]
    assert first.kind == 'corrupt' and 'reading resumes at the chunk at byte' in first.detail
    assert first.offset <= (lo if where != 'index' else hi)
    assert reader.recovery.damage[-1].kind == 'truncated' and reader.recovery.messages == len(got)


def test_missing_metadata_is_rebuilt_like_reindex(bags, tmp_path, monkeypatch):
    path, _, order, _ = bags['zstd']
    original = yaml.safe_load((path / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    bag = tmp_path / 'nometa'
    shutil.copytree(path, bag)
    (bag / 'metadata.yaml').unlink()

    def refuse(*args, **kwargs):
        raise PermissionError(13, 'denied')
    monkeypatch.setattr(Path, 'write_text', refuse)
    reader = BagReader(bag)                               # not writable: kept in memory, and says so
    monkeypatch.undo()
    assert 'kept in memory' in reader.metadata_source and 'not writable' in reader.metadata_source
    assert not (bag / 'metadata.yaml').exists() and reader.info == original
    assert 'kept in memory' in BagReader(bag, write_metadata=False).metadata_source

    reader = BagReader(bag)
    assert reader.metadata_source == f'rebuilt from the mcap index; written to {bag / "metadata.yaml"}'
    rebuilt = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert rebuilt == original                            # counts, times, QoS, hashes, files, custom data
    assert rebuilt['message_count'] == len(order)
    again = BagReader(bag)
    assert again.metadata_source == 'metadata.yaml' and again.custom_data == BagReader(path).custom_data
    assert not again.recovery.damaged and again.recovery.lines() == []


def test_chunked_reader_sees_the_recovered_data(bags, tmp_path):
    """The streamed replay's window-by-window reader gets exactly the intact messages of a damaged bag."""
    path, mcap, order, chunks = bags['zstd']
    data = bytearray(mcap.read_bytes())
    mid = chunks[3].chunk_start_offset + chunks[3].chunk_length // 2
    data[mid:mid + 32] = bytes(32)                                      # a corrupt chunk, then a cut
    bag = damaged_copy(path, tmp_path / 'cut', bytes(data[:int(len(data) * 0.7)]))
    whole = BagReader(bag).columns_many()
    reader = BagReader(bag)
    ends = np.arange(reader.start_ns + 300_000_000, reader.end_ns + 300_000_000, 300_000_000)
    parts = [cols for _, cols in reader.iter_column_chunks(list(whole), ends)]
    assert len(parts) > 5 and len(reader.recovery.damage) == 2
    for topic, cols in whole.items():
        for key, value in cols.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(np.concatenate([p[topic][key] for p in parts]), value)


def test_a_file_cut_before_its_first_record_is_empty_not_an_error(bags, tmp_path):
    path, mcap, _, _ = bags['none']
    data = mcap.read_bytes()
    for n in (0, 5, 40):                                  # nothing, part of the magic, part of the header
        reader = BagReader(damaged_copy(path, tmp_path / f'cut{n}', data[:n], keep_metadata=False))
        assert reader.topics == {} and reader.recovery.messages == 0 and reader.recovery.damaged
        assert list(reader.raw_messages()) == []
    (tmp_path / 'text.mcap').write_bytes(b'hello')       # not a prefix of the MCAP magic: not an MCAP file
    with pytest.raises(BagError, match='not an MCAP file'):
        BagReader(tmp_path / 'text.mcap')


def test_broken_records_in_a_chunk_without_crc_keep_the_records_before(bags, tmp_path):
    """Writers may leave the chunk CRC at 0: then broken record framing is what reveals the damage."""
    import struct
    path, mcap, order, chunks = bags['none']
    data = bytearray(mcap.read_bytes())
    for c in chunks:                                      # CRC field: opcode, length, start, end, size, crc
        struct.pack_into('<I', data, c.chunk_start_offset + 33, 0)
    ends = payload_ends(bytes(data), order)
    bad = chunks[2]
    mid = bad.chunk_start_offset + bad.chunk_length // 2
    data[mid:mid + 40] = b'\xff' * 40                     # a record length becomes huge
    lo, hi = bad.chunk_start_offset, bad.chunk_start_offset + bad.chunk_length
    in_chunk = [m for m, e in zip(order, ends) if lo < e <= hi]
    reader = BagReader(damaged_copy(path, tmp_path / 'nocrc', bytes(data)))
    got = list(reader.raw_messages())
    kept = [m for m in in_chunk if m in got]
    assert kept == in_chunk[:len(kept)] and 0 < len(kept) < len(in_chunk)    # the records before the break
    assert got == [m for m in order if m not in in_chunk or m in kept]          # byte-exact, all others
    (damage,) = reader.recovery.damage
    assert damage.offset == lo and 'break' in damage.detail
    assert reader.recovery.messages == len(got) == len(order) - damage.lost_messages


def test_split_recording_with_a_cut_last_file_and_a_missing_one(bags, tmp_path):
    """A recording split into 11 files (rosbag2 --max-bag-size), cut by a power loss in the last file."""
    _, _, order, _ = bags['zstd']
    bag = tmp_path / 'split'
    bag.mkdir()
    parts = np.array_split(np.arange(len(order)), 11)
    for k, idx in enumerate(parts):
        with BagWriter(tmp_path / f'p{k}', chunk_size=4096) as w:
            for i in idx:
                w.write_serialized(order[i][0], order[i][1], order[i][3], order[i][2])
        shutil.move(str(tmp_path / f'p{k}' / f'p{k}_0.mcap'), bag / f'split_{k}.mcap')
    last = bag / 'split_10.mcap'
    last.write_bytes(last.read_bytes()[:int(last.stat().st_size * 0.5)])
    reader = BagReader(bag)
    assert [mf.path.name for mf in reader._files] == [f'split_{k}.mcap' for k in range(11)]
    got = list(reader.raw_messages())
    assert len(order) - len(parts[10]) < len(got) < len(order) and got == order[:len(got)]
    rec = reader.recovery
    assert rec.indexed_by['split_10.mcap'] == 'scan' and rec.indexed_by['split_9.mcap'] == 'summary'
    assert [d.file for d in rec.damage] == ['split_10.mcap'] and rec.messages == len(got)
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert meta['relative_file_paths'] == [f'split_{k}.mcap' for k in range(11)]

    (bag / 'split_4.mcap').unlink()                       # listed in the rebuilt metadata, now gone
    reader = BagReader(bag)
    rec = reader.recovery
    assert rec.damage[0].file == 'split_4.mcap' and rec.damage[0].kind == 'missing'
    assert rec.messages == len(got) - len(parts[4])
    assert list(reader.raw_messages()) == [m for i, m in enumerate(got) if i not in set(parts[4].tolist())]


def test_a_bag_written_by_another_mcap_writer_recovers_too(bags, tmp_path):
    """rosbags' rosbag2 MCAP writer (its own record layout: one large chunk here) cut by a power loss."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    _, _, order, _ = bags['zstd']
    store = get_typestore(Stores.ROS2_KILTED)
    with Writer(tmp_path / 'rb', version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conns = {}
        for topic, type_name, t, data in order:
            if topic not in conns:
                conns[topic] = w.add_connection(topic, type_name, typestore=store)
            w.write(conns[topic], t, data)
    assert list(BagReader(tmp_path / 'rb').raw_messages()) == order
    data = (tmp_path / 'rb' / 'rb.mcap').read_bytes()
    ends = payload_ends(data, order)                      # rosbags writes its chunks uncompressed
    for frac in (0.25, 0.75):
        cut = int(len(data) * frac)
        bag = tmp_path / f'rb{frac}'
        shutil.copytree(tmp_path / 'rb', bag)
        (bag / 'rb.mcap').write_bytes(data[:cut])
        reader = BagReader(bag)
        got = list(reader.raw_messages())
        assert got == order[:int(np.sum(ends <= cut))] and reader.recovery.messages == len(got) > 0
