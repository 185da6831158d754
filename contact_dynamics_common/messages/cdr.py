"""Fast CDR (XCDR1, little endian) encoders of ROS 2 messages given as nested dicts, compiled from the
``ros2msg`` definition, byte-identical to ``mcap_ros2``'s serializer.

``encoder(type_name, definition)`` returns ``encode(msg) -> bytes``. The generated code writes every run
of fixed-size fields (numbers, bools, fixed numeric arrays, flattened through nested messages) with one
``struct`` call whose padding is chosen from the run's start offset modulo 8 (alignment is relative to
the byte after the 4-byte encapsulation header), strings as length + UTF-8 + NUL, sequences as a uint32
count then the elements. It takes dicts (missing keys are not filled in); anything else it does not
expect (an attribute object, None, a missing key, a float for an integer, a bytes-like uint8 array, a
fixed array of the wrong length) makes it hand the message to ``mcap_ros2``'s generic serializer, whose
rules (defaults, coercion, padding or cutting fixed arrays) and errors therefore still apply. About 5-10x
faster than the generic serializer on ``contact_dynamics/ContactEstimate``.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from mcap_ros2._dynamic import serialize_dynamic

from . import definitions as msgdefs

_PRIM = {'bool': ('?', 1), 'byte': ('B', 1), 'char': ('B', 1), 'int8': ('b', 1), 'uint8': ('B', 1),
         'int16': ('h', 2), 'uint16': ('H', 2), 'int32': ('i', 4), 'uint32': ('I', 4), 'int64': ('q', 8),
         'uint64': ('Q', 8), 'float32': ('f', 4), 'float64': ('d', 8)}
_HEADER = b'\x00\x01\x00\x00'


class _Run:
    """Consecutive fixed-size items [(struct code, size, count, value expression)]."""

    def __init__(self):
        self.items: list[tuple[str, int, int, str]] = []

    def formats(self) -> list[str]:
        """Struct format per start residue (offset - 4) mod 8, with the padding mcap_ros2 would write."""
        out = []
        for r in range(8):
            pos, fmt = r, '<'
            for code, size, count, _ in self.items:
                if count:
                    pad = -pos % size
                    fmt += 'x' * pad + (f'{count}{code}' if count > 1 else code)
                    pos += pad + size * count
            out.append(fmt)
        return out


class _Gen:
    def __init__(self, types: dict[str, list[msgdefs.Field]]):
        self.types = types
        self.consts: dict[str, object] = {'_HEADER': _HEADER}
        self.funcs: dict[str, str] = {}
        self.n = 0

    def const(self, value) -> str:
        self.n += 1
        name = f'_c{self.n}'
        self.consts[name] = value
        return name

    def var(self) -> str:
        self.n += 1
        return f'v{self.n}'

    def function(self, type_key: str) -> str:
        """Name of the generated ``f(m, b)`` that appends the fields of message ``m`` to bytearray ``b``."""
        name = '_enc_' + type_key.replace('/', '_')
        if name in self.funcs:
            return name
        self.funcs[name] = ''                                  # recursion guard
        lines: list[str] = []
        run = _Run()
        self.fields(type_key, 'm', lines, run)
        self.flush(run, lines)
        self.funcs[name] = f'def {name}(m, b):\n' + ''.join(f'    {s}\n' for s in lines or ['pass'])
        return name

    def flush(self, run: _Run, lines: list[str]) -> None:
        if not run.items:
            return
        structs = self.const([struct.Struct(f) for f in run.formats()])
        values = ', '.join(v for _, _, count, v in run.items if count)
        lines.append(f'b += {structs}[(len(b) - 4) & 7].pack({values})')
        run.items = []

    def count(self, v: str, types: tuple[str, ...], lines: list[str]) -> None:
        """The uint32 element count of sequence ``v`` (4-aligned), after checking its container type."""
        lines.append('if ' + ' and '.join(f'type({v}) is not {t}' for t in types) + ': raise TypeError')
        lines.append(f'b += {self.const(_pad_table(4))}[(len(b) - 4) & 3]')
        lines.append(f'b += _U32(len({v}))')

    def fields(self, type_key: str, m: str, lines: list[str], run: _Run) -> None:
        if type_key not in self.types:
            raise KeyError(type_key)
        fields = self.types[type_key]
        if not fields:                                        # empty message: one uint8 (ROS 2 IDL rule)
            run.items.append(('B', 1, 1, '0'))
        for f in fields:
            value = f'{m}[{f.name!r}]'
            if f.type in _PRIM:
                code, size = _PRIM[f.type]
                if not f.is_array:
                    run.items.append((code, size, 1, value))
                elif f.size is not None:                      # fixed numeric array: exactly f.size values
                    v = self.var()
                    lines.append(f'{v} = {value}')
                    lines.append(f'if len({v}) != {f.size}: raise ValueError')
                    run.items.append((code, size, f.size, f'*{v}'))
                else:
                    self.flush(run, lines)
                    v = self.var()
                    lines.append(f'{v} = {value}')
                    self.count(v, ('list', 'tuple'), lines)
                    lines.append(f'if {v}:')
                    lines.append(f'    b += {self.const(_pad_table(size))}[(len(b) - 4) & {_mask(size)}]')
                    lines.append(f"    b += struct.pack('<%d{code}' % len({v}), *{v})")
            elif f.type in ('string', 'wstring'):
                if f.type == 'wstring':
                    raise NotImplementedError('wstring')
                self.flush(run, lines)
                if f.is_array:
                    v = self.var()
                    lines.append(f'{v} = {value}')
                    if f.size is None:
                        self.count(v, ('list', 'tuple'), lines)
                    else:
                        lines.append(f'if len({v}) != {f.size}: raise ValueError')
                    lines.append(f'for s in {v}:')
                    lines.append("    b += _P4[(len(b) - 4) & 3]; b += _SC.get(s) or _string(s)")
                else:
                    lines.append(f"b += _P4[(len(b) - 4) & 3]; b += _SC.get({value}) or _string({value})")
            elif f.is_array:                                  # sequence / array of messages, inlined
                self.flush(run, lines)
                e, body, inner = self.var(), [], _Run()
                self.fields(f.type, e, body, inner)
                self.flush(inner, body)
                v = self.var()
                lines.append(f'{v} = {value}')
                if f.size is None:
                    self.count(v, ('list',), lines)
                else:
                    lines.append(f'if type({v}) is not list or len({v}) != {f.size}: raise ValueError')
                lines.append(f'for {e} in {v}:')
                lines += [f'    {line}' for line in body]
            else:                                             # nested message: flattened into this run
                v = self.var()
                lines.append(f'{v} = {value}')
                lines.append(f'if type({v}) is not dict: raise TypeError')
                self.fields(f.type, v, lines, run)


def _mask(size: int) -> int:
    return max(size, 1) - 1


def _pad_table(size: int) -> list[bytes]:
    """Zero padding that aligns an offset with residue r (mod size) to ``size``."""
    return [bytes(-r % size) for r in range(max(size, 1))]


_U32 = struct.Struct('<I').pack


_P4 = _pad_table(4)
_SC: dict[str, bytes] = {}          # string -> length + UTF-8 + NUL, for the strings seen most


def _string(s: str) -> bytes:
    if type(s) is not str:
        raise TypeError
    data = s.encode('utf-8')
    out = _U32(len(data) + 1) + data + b'\x00'
    if len(data) < 64:
        if len(_SC) > 4096:
            _SC.clear()
        _SC[s] = out
    return out


def compile_encoder(type_name: str, definition: str) -> Callable[[dict], bytes]:
    """The fast encoder alone (raises on anything it does not expect; see the module docstring)."""
    types = msgdefs.parse_definition(type_name, definition)
    gen = _Gen(types)
    root = gen.function('/'.join(msgdefs.split_type_name(type_name)))
    source = '\n'.join(gen.funcs.values()) + (
        f'\ndef encode(m):\n    if type(m) is not dict: raise TypeError\n    b = bytearray(_HEADER)\n'
        f'    {root}(m, b)\n    return bytes(b)\n')
    namespace = dict(gen.consts, struct=struct, _U32=_U32, _string=_string, _P4=_P4, _SC=_SC)
    exec(compile(source, f'<cdr encoder {type_name}>', 'exec'), namespace)    # noqa: S102 - our own code
    return namespace['encode']


def encoder(type_name: str, definition: str | None = None) -> Callable[[object], bytes]:
    """``encode(msg) -> bytes`` for ``type_name`` (definition: the installed one by default): the fast
    encoder, with mcap_ros2's serializer for any message it does not take."""
    definition = msgdefs.msgdef(type_name) if definition is None else definition
    generic = serialize_dynamic(type_name, definition)[type_name]
    try:
        fast = compile_encoder(type_name, definition)
    except (KeyError, NotImplementedError, ValueError, SyntaxError, struct.error):
        return generic

    def encode(msg):
        try:
            return fast(msg)
        except (TypeError, ValueError, KeyError, AttributeError, struct.error, OverflowError, IndexError):
            return generic(msg)

    encode.fast = fast
    return encode
