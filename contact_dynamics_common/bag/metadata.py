"""rosbag2's metadata: ``metadata.yaml`` read, rebuilt from the files (as ``ros2 bag reindex`` does) and
written; offered QoS profiles in its layout; ``custom_data`` values encoded as rosbag2 strings.

``custom_data`` must be a string->string map in rosbag2. Strings are stored as they are; any other value
(and a string that itself starts with ``json:``) is stored as ``'json:' + json.dumps(value)``, and
``decode_custom`` (``BagReader.custom_data``) decodes those back.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ['QOS_PRESETS', 'decode_custom', 'dump_yaml', 'encode_custom', 'file_order', 'is_bag_dir',
           'qos_profile', 'read_metadata', 'rebuilt_info', 'write_metadata']

_INFINITE = {'sec': 9223372036, 'nsec': 854775807}     # RMW_DURATION_INFINITE as rosbag2 writes it
_JSON_PREFIX = 'json:'


def qos_profile(reliability: str = 'reliable', durability: str = 'volatile', depth: int = 10,
                history: str = 'keep_last') -> dict[str, Any]:
    """One offered QoS profile in rosbag2's metadata layout (version 9: policy names as strings)."""
    return {'history': history, 'depth': depth, 'reliability': reliability, 'durability': durability,
            'deadline': dict(_INFINITE), 'lifespan': dict(_INFINITE), 'liveliness': 'automatic',
            'liveliness_lease_duration': dict(_INFINITE), 'avoid_ros_namespace_conventions': False}


QOS_PRESETS: dict[str, dict[str, Any]] = {
    'default': qos_profile(),                                    # rclpy default: reliable, depth 10
    'sensor_data': qos_profile('best_effort', depth=5),          # rclpy qos_profile_sensor_data
}


class _Dumper(yaml.SafeDumper):
    """SafeDumper without anchors/aliases (rosbag2 writes every QoS profile out in full)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def encode_custom(value: Any) -> str:
    if isinstance(value, str) and not value.startswith(_JSON_PREFIX):
        return value
    return _JSON_PREFIX + json.dumps(value, sort_keys=True,
                                     default=lambda o: o.tolist() if hasattr(o, 'tolist') else str(o))


def decode_custom(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_JSON_PREFIX):
        return json.loads(value[len(_JSON_PREFIX):])
    return value


def is_bag_dir(path: Path) -> bool:
    return (path / 'metadata.yaml').is_file() or any(path.glob('*.mcap')) or any(path.glob('*.db3'))


def file_order(path: Path) -> tuple[str, int, str]:
    """Split bag files in recording order: NAME_2 before NAME_10."""
    stem, _, index = path.stem.rpartition('_')
    return (stem, int(index), path.name) if index.isdigit() else (path.stem, -1, path.name)


def read_metadata(meta: Path) -> tuple[dict[str, Any] | None, str]:
    """(``rosbag2_bagfile_information`` mapping of a metadata.yaml, '') or (None, why it is unusable: not
    YAML, not a mapping, no such mapping in it); unreadable files raise OSError as usual."""
    with open(meta, encoding='utf-8', errors='replace') as f:
        text = f.read()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return None, f'not valid YAML: {str(e).splitlines()[0] if str(e) else type(e).__name__}'
    if not isinstance(doc, dict):
        return None, f'not a mapping but {"empty" if doc is None else type(doc).__name__}'
    info = doc.get('rosbag2_bagfile_information')
    if not isinstance(info, dict):
        return None, 'no rosbag2_bagfile_information mapping'
    return info, ''


def rebuilt_info(files: Sequence[Any], counts: list[dict[str, int]], storage: str,
                 own: dict[str, Any] | None) -> dict[str, Any]:
    """The ``rosbag2_bagfile_information`` of storage files rebuilt from their summaries (or scans), as
    ``ros2 bag reindex`` does. ``counts``: intact messages per topic of each file; custom data, compression
    and distro come from ``own`` (the first file's own ``rosbag2`` record) when there is one."""
    own = own or {}
    per_file = []
    for mf in files:
        stats = mf.summary.statistics
        per_file.append({'path': mf.path.name,
                         'starting_time': {'nanoseconds_since_epoch': stats.message_start_time},
                         'duration': {'nanoseconds': stats.message_end_time - stats.message_start_time},
                         'message_count': stats.message_count})
    topics = []
    for mf in files:
        for c in mf.summary.channels.values():
            if any(t['topic_metadata']['name'] == c.topic for t in topics):
                continue
            qos = c.metadata.get('offered_qos_profiles', '')
            try:
                qos = yaml.safe_load(qos) or [] if qos else []
            except yaml.YAMLError:
                qos = []
            meta = {'name': c.topic, 'type': mf.schema(c.id).name,
                    'serialization_format': c.message_encoding, 'offered_qos_profiles': qos,
                    'type_description_hash': c.metadata.get('topic_type_hash', '')}
            topics.append({'topic_metadata': meta,
                           'message_count': sum(fc.get(c.topic, 0) for fc in counts)})
    starts = [f['starting_time']['nanoseconds_since_epoch'] for f in per_file if f['message_count']]
    ends = [f['starting_time']['nanoseconds_since_epoch'] + f['duration']['nanoseconds']
            for f in per_file if f['message_count']]
    start = min(starts, default=0)
    return {
        'version': 9, 'storage_identifier': storage,
        'duration': {'nanoseconds': max(ends, default=0) - start},
        'starting_time': {'nanoseconds_since_epoch': start},
        'message_count': sum(f['message_count'] for f in per_file),
        'topics_with_message_count': topics,
        'compression_format': own.get('compression_format', ''),
        'compression_mode': own.get('compression_mode', ''),
        'relative_file_paths': [f['path'] for f in per_file], 'files': per_file,
        'custom_data': dict(own.get('custom_data') or {}), 'ros_distro': own.get('ros_distro', ''),
    }


def write_metadata(directory: Path, info: dict[str, Any]) -> str:
    """Write ``directory/metadata.yaml`` (atomically: a temporary file, then rename); return where the
    metadata went: 'written to PATH' or 'kept in memory (why)' when the directory is not writable."""
    target = directory / 'metadata.yaml'
    tmp = directory / f'.metadata.yaml.{os.getpid()}.tmp'
    try:
        tmp.write_text(dump_yaml({'rosbag2_bagfile_information': info}), encoding='utf-8')
        os.replace(tmp, target)
        return f'written to {target}'
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return f'kept in memory ({directory} is not writable: {e.strerror or e})'
