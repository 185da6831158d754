"""Columns of a topic read straight from its CDR bytes when every message has the same layout.

``fixed_layout_columns`` walks the first message's CDR (XCDR1, little endian; alignment relative to the byte
after the 4-byte encapsulation header) with the type's definition to find the offset of every number and the
value of every string; when the bytes that fix the layout (encapsulation, sequence counts, strings) are the
same in every message, the numbers of all messages are numpy views of the (N, L) payload matrix -- no message
is decoded one by one. Otherwise it returns None and the reader decodes message by message (the reference).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..messages import convert as msgconv, definitions as msgdefs
from .records import Collected

__all__ = ['fixed_layout_columns']


_PRIMITIVE_CDR = {'bool': (1, '<u1'), 'byte': (1, '<u1'), 'char': (1, '<u1'), 'int8': (1, '<i1'),
                  'uint8': (1, '<u1'), 'int16': (2, '<i2'), 'uint16': (2, '<u2'), 'int32': (4, '<i4'),
                  'uint32': (4, '<u4'), 'int64': (8, '<i8'), 'uint64': (8, '<u8'), 'float32': (4, '<f4'),
                  'float64': (8, '<f8')}


class _NotFixed(Exception):
    """The first message cannot serve as a layout template."""


@dataclass
class _Layout:
    numbers: dict[str, tuple[int, str, int]] = field(default_factory=dict)   # path -> (offset, dtype, n)
    strings: dict[str, Any] = field(default_factory=dict)                    # path -> str | list[str]
    structural: list[tuple[int, int]] = field(default_factory=list)          # byte ranges fixed per layout


def _walk(types: dict[str, list[msgdefs.Field]], root: str, data: bytes) -> _Layout:
    """Offsets of every field of one little-endian CDR message (XCDR1: alignment relative to byte 4)."""
    out = _Layout(structural=[(0, 4)])
    pos = 4

    def align(n: int) -> None:
        nonlocal pos
        pos += -(pos - 4) % n
        if pos > len(data):
            raise _NotFixed

    def count() -> int:
        nonlocal pos
        align(4)
        if pos + 4 > len(data):
            raise _NotFixed
        out.structural.append((pos, pos + 4))
        (n,) = struct.unpack_from('<I', data, pos)
        pos += 4
        return n

    def string() -> str:
        nonlocal pos
        n = count()
        if pos + n > len(data):
            raise _NotFixed
        out.structural.append((pos, pos + n))
        value = data[pos:pos + max(n - 1, 0)].decode('utf-8')
        pos += n
        return value

    def walk(type_key: str, prefix: str) -> None:
        nonlocal pos
        if type_key not in types:
            raise _NotFixed
        for f in types[type_key]:
            path = prefix + f.name
            n = (f.size if f.size is not None else count()) if f.is_array else 1
            if f.type == 'string':
                values = [string() for _ in range(n)]
                out.strings[path] = values if f.is_array else values[0]
            elif f.type in _PRIMITIVE_CDR:
                size, dtype = _PRIMITIVE_CDR[f.type]
                if n:
                    align(size)
                    out.numbers[path] = (pos, dtype, n)
                    pos += size * n
                    if pos > len(data):
                        raise _NotFixed
            elif f.is_primitive:                                # wstring
                raise _NotFixed
            elif f.is_array:
                for i in range(n):
                    walk(f.type, f'{path}[{i}].')
            else:
                walk(f.type, path + '.')

    walk(root, '')
    return out


def fixed_layout_columns(spec: msgconv.ColumnSpec, data: Collected) -> dict[str, Any] | None:
    """Columns by numpy views when all messages share the first one's CDR layout, else None."""
    n = len(data.log_ns)
    if n == 0 or len({(s.name, s.data) for s in data.schemas}) != 1:
        return None
    mat = data.matrix()
    if mat is None or mat.shape[1] < 4 or mat[0, 1] != 0x01:
        return None                                             # lengths differ or big-endian
    schema = data.schemas[0]
    try:
        types = msgdefs.parse_definition(schema.name, schema.data.decode())
        layout = _walk(types, '/'.join(msgdefs.split_type_name(schema.name)), mat[0].tobytes())
    except (_NotFixed, ValueError, struct.error):
        return None
    fixed = np.concatenate([np.arange(a, b) for a, b in layout.structural])
    if n > 1 and not (mat[1:, fixed] == mat[0, fixed]).all():
        return None

    def values(path: str, dtype: str = '<f8') -> np.ndarray:
        offset, actual, count = layout.numbers[path]
        if actual != dtype:
            raise _NotFixed
        width = np.dtype(dtype).itemsize * count
        return np.ascontiguousarray(mat[:, offset:offset + width]).view(dtype).reshape(n, count)

    try:
        cols: dict[str, Any] = {'log_ns': data.log_ns}
        if spec.stamp is None:
            cols['stamp_ns'] = data.log_ns.copy()
        else:
            sec = values(spec.stamp + '.sec', '<i4')[:, 0].astype(np.int64)
            cols['stamp_ns'] = sec * msgconv.NS_PER_S + values(spec.stamp + '.nanosec', '<u4')[:, 0]
        for name, path in spec.strings:
            msgconv.add_string_column(cols, name, [layout.strings[path]])
        for name, path in spec.string_arrays:        # structural bytes are equal: every row holds the same strings
            cols[name] = [tuple(layout.strings[path])] * n
        for fc in spec.floats:
            cols[fc.name] = np.hstack([values(p) for p in fc.paths])
            if cols[fc.name].shape[1] != fc.width:
                return None
        if spec.joint_arrays:
            names = layout.strings['name']
            if len(set(names)) != len(names):
                return None
            cols['name'] = list(names)
            for fname in spec.joint_arrays:
                col = np.full((n, len(names)), np.nan)
                if fname in layout.numbers:
                    v = values(fname)
                    m = min(v.shape[1], len(names))
                    col[:, :m] = v[:, :m]
                cols[fname] = col
    except (_NotFixed, KeyError):
        return None
    return cols
