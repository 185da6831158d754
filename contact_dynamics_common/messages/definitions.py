"""ROS 2 message definitions: rosbag2's ``ros2msg`` text, RIHS01 type hashes and a field parser.

The concatenated definition follows rosbag2's ``LocalMessageDefinitionSource``: the main ``.msg`` text,
then for every dependency (depth first, each type once, dependencies of one type in sorted order) a line
of 80 ``=``, a line ``MSG: pkg/Type`` and that type's text. Files are looked up in ``share/<pkg>/msg``
under ``sys.prefix`` and every prefix of ``AMENT_PREFIX_PATH``.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache

SEPARATOR = '=' * 80
PRIMITIVES = frozenset({'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
                        'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'})
# mcap_ros2 and some writers leave these out of the concatenated text; their layout is fixed.
_BUILTIN_TIME = (('int32', 'sec'), ('uint32', 'nanosec'))

_TYPE_RE = re.compile(r'^([A-Za-z][\w/]*?)(?:<=\d+)?(\[(?:<=)?(\d*)\])?$')


@dataclass(frozen=True)
class Field:
    """One field of a message: ``type`` is a primitive name or a complex 'pkg/Type'."""

    name: str
    type: str
    is_array: bool = False
    size: int | None = None     # fixed array length; None for a sequence (bounded or not)

    @property
    def is_primitive(self) -> bool:
        return self.type in PRIMITIVES


def search_prefixes() -> list[str]:
    """Install prefixes searched for ``share/<pkg>/msg``: ``sys.prefix`` then ``AMENT_PREFIX_PATH``."""
    prefixes = [sys.prefix] + [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    return list(dict.fromkeys(os.path.abspath(p) for p in prefixes))


def split_type_name(type_name: str) -> tuple[str, str]:
    """'pkg/msg/Type' or 'pkg/Type' -> ('pkg', 'Type')."""
    parts = type_name.split('/')
    if len(parts) == 3 and parts[1] == 'msg' and all(parts):
        return parts[0], parts[2]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise ValueError(f"not a ROS message type name: {type_name!r} (expected 'pkg/msg/Type')")


def full_type_name(type_name: str) -> str:
    """Normalise 'pkg/Type' or 'pkg/msg/Type' to 'pkg/msg/Type'."""
    pkg, name = split_type_name(type_name)
    return f'{pkg}/msg/{name}'


def _find(pkg: str, name: str, ext: str, type_name: str) -> str:
    candidates = [os.path.join(p, 'share', pkg, 'msg', name + ext) for p in search_prefixes()]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise LookupError(f'unknown message type {type_name!r}: no {pkg}/msg/{name}{ext} in '
                      + ', '.join(os.path.join(p, 'share') for p in search_prefixes()))


@lru_cache(maxsize=None)
def _msg_text(pkg: str, name: str) -> str:
    with open(_find(pkg, name, '.msg', f'{pkg}/msg/{name}'), encoding='utf-8') as f:
        return f.read()


def parse_fields(text: str, package: str) -> list[Field]:
    """Fields of one ``.msg`` text; constants and comments are skipped, nested types become 'pkg/Type'."""
    fields = []
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 2 or '=' in parts[1] or (len(parts) == 3 and parts[2].startswith('=')):
            continue        # constant ("int32 X=1" / "int32 X = 1")
        m = _TYPE_RE.match(parts[0])
        if m is None:
            raise ValueError(f'cannot parse field type {parts[0]!r} in {package} definition line {raw!r}')
        base, array, size = m.group(1), m.group(2), m.group(3)
        if base not in PRIMITIVES:
            if base == 'Header':
                base = 'std_msgs/Header'
            elif '/' not in base:
                base = f'{package}/{base}'
            else:
                base = '/'.join(split_type_name(base))
        fixed = bool(array) and bool(size) and '<=' not in array
        fields.append(Field(parts[1], base, bool(array), int(size) if fixed else None))
    return fields


@lru_cache(maxsize=None)
def msgdef(type_name: str) -> str:
    """Concatenated ``ros2msg`` definition of an installed type, as rosbag2 stores it in a bag."""
    pkg, name = split_type_name(type_name)
    seen: set[str] = set()

    def recurse(p: str, n: str) -> str:
        text = _msg_text(p, n)
        deps = sorted({f.type for f in parse_fields(text, p) if not f.is_primitive})
        for dep in deps:
            if dep not in seen:
                seen.add(dep)
                text += f'\n{SEPARATOR}\nMSG: {dep}\n' + recurse(*split_type_name(dep))
        return text

    return recurse(pkg, name)


@lru_cache(maxsize=None)
def type_hash(type_name: str) -> str:
    """RIHS01 type description hash from the installed ``share/<pkg>/msg/<Type>.json``."""
    pkg, name = split_type_name(type_name)
    full = f'{pkg}/msg/{name}'
    path = _find(pkg, name, '.json', full)
    with open(path, encoding='utf-8') as f:
        hashes = json.load(f).get('type_hashes', [])
    for entry in hashes:
        if entry.get('type_name') == full:
            return entry['hash_string']
    raise LookupError(f'no RIHS01 hash for {full!r} in {path}')


def parse_definition(type_name: str, text: str) -> dict[str, list[Field]]:
    """Parse a concatenated ``ros2msg`` definition into {'pkg/Type': fields} for the type and its deps."""
    current = '/'.join(split_type_name(type_name))
    types: dict[str, list[Field]] = {
        t: [Field(n, ft) for ft, n in _BUILTIN_TIME] for t in ('builtin_interfaces/Time',
                                                               'builtin_interfaces/Duration')}
    for block in re.split(r'^={3,}\s*$', text, flags=re.MULTILINE):
        header = re.search(r'^MSG:\s+(\S+)\s*$', block, flags=re.MULTILINE)
        if header:
            current = '/'.join(split_type_name(header.group(1)))
            block = block[:header.start()] + block[header.end():]
        types[current] = parse_fields(block, current.split('/')[0])
    return types
