"""Parameter specifications, validation and ROS 2 params-file loading, without ROS.

A node declares its parameters from a list of :class:`ParamSpec`; ``run-bag`` validates the same
YAML file against the same list, so a wrong value is refused with the same reason live and offline.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml


class ConfigError(ValueError):
    """A parameter value that the node refuses to start with; the message says which and why."""


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: name (dotted for nested YAML keys), default, description and constraints.

    ``low``/``high`` bound numbers and every element of numeric lists; ``low_open``/``high_open`` make
    the bound exclusive. ``choices`` restricts strings (or each string of a list). ``length`` fixes a
    list's length. ``check`` is a final validator returning an error text or ``None``.
    """

    name: str
    default: Any
    description: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    length: int | None = None
    unit: str = ''
    dynamic: bool = False
    check: Callable[[Any], str | None] | None = field(default=None, compare=False)

    def constraint_text(self) -> str:
        parts = []
        if self.low is not None or self.high is not None:
            lo = '(' if self.low_open or self.low is None else '['
            hi = ')' if self.high_open or self.high is None else ']'
            parts.append(f'range {lo}{_fmt(self.low, "-inf")}, {_fmt(self.high, "inf")}{hi}')
        if self.choices:
            parts.append('one of ' + ', '.join(self.choices))
        if self.length is not None:
            parts.append(f'length {self.length}')
        if self.unit:
            parts.append(f'unit {self.unit}')
        return '; '.join(parts)

    def validate(self, value: Any) -> Any:
        """Return the value coerced to the default's type, or raise ConfigError with the reason."""
        value = _coerce(self, value)
        items = value if isinstance(value, list) else [value]
        if self.length is not None and isinstance(value, list) and len(value) != self.length:
            raise ConfigError(f"parameter '{self.name}' must have {self.length} elements, got {len(value)}")
        for item in items:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                self._check_number(item)
            if self.choices is not None and isinstance(item, str) and item not in self.choices:
                raise ConfigError(f"parameter '{self.name}' = '{item}' is not one of: {', '.join(self.choices)}")
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ConfigError(f"parameter '{self.name}' = {value!r}: {problem}")
        return value

    def _check_number(self, x: float) -> None:
        if not math.isfinite(x):
            raise ConfigError(f"parameter '{self.name}' must be finite, got {x}")
        too_low = self.low is not None and (x <= self.low if self.low_open else x < self.low)
        too_high = self.high is not None and (x >= self.high if self.high_open else x > self.high)
        if too_low or too_high:
            raise ConfigError(f"parameter '{self.name}' = {x} is outside its {self.constraint_text()}")


def _fmt(x: float | None, inf: str) -> str:
    return inf if x is None else f'{x:g}'


def _coerce(spec: ParamSpec, value: Any) -> Any:
    default = spec.default
    try:
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError
            return value
        if isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError
            return float(value)
        if isinstance(default, str):
            if not isinstance(value, str):
                raise TypeError
            return value
        if isinstance(default, list):
            if not isinstance(value, (list, tuple)):
                raise TypeError
            elem = default[0] if default else None
            if isinstance(elem, float):
                if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
                    raise TypeError
                return [float(v) for v in value]
            if isinstance(elem, str):
                if any(not isinstance(v, str) for v in value):
                    raise TypeError
                return list(value)
            return list(value)
    except TypeError:
        raise ConfigError(f"parameter '{spec.name}' expects {_type_name(default)}, got {value!r}") from None
    return value


def _type_name(default: Any) -> str:
    if isinstance(default, list):
        inner = type(default[0]).__name__ if default else 'value'
        return f'a list of {inner}'
    return f'a {type(default).__name__}'


def validate_all(specs: Sequence[ParamSpec], values: Mapping[str, Any],
                 *, allow_unknown: bool = False) -> dict[str, Any]:
    """Defaults overlaid with ``values``, every value validated; unknown names are an error."""
    by_name = {s.name: s for s in specs}
    unknown = sorted(set(values) - set(by_name))
    if unknown and not allow_unknown:
        raise ConfigError(f"unknown parameter(s): {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(by_name))})")
    out = {}
    for spec in specs:
        out[spec.name] = spec.validate(values.get(spec.name, spec.default))
    return out


def flatten(tree: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """Nested YAML mappings to dotted names: {'rls': {'forgetting_factor': 1}} -> {'rls.forgetting_factor': 1}."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f'{prefix}{key}'
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + '.'))
        else:
            flat[name] = value
    return flat


def load_params_file(path: str, node_name: str) -> dict[str, Any]:
    """Parameters for ``node_name`` from a ROS 2 ``--params-file`` YAML (``/**`` first, then the node's own).

    Node keys may be written with or without a leading slash or namespace (``/ns/name``). A file that is
    missing, a directory, not YAML or not a mapping of node names is a ConfigError in one line naming it
    (``read_params_file``; a YAML error was a traceback from run-bag).
    """
    doc = read_params_file(path)
    merged: dict[str, Any] = {}
    keys = [k for k in doc if k in ('/**', '**')]
    keys += [k for k in doc if str(k).strip('/').split('/')[-1] == node_name]
    for key in keys:
        section = doc[key]
        if not isinstance(section, Mapping) or 'ros__parameters' not in section:
            raise ConfigError(f"{path}: section '{key}' has no 'ros__parameters'")
        merged.update(flatten(section['ros__parameters'] or {}))
    return merged


def describe(specs: Iterable[ParamSpec]) -> str:
    """A plain-text table of the parameters (name, default, constraints, description)."""
    lines = []
    for s in specs:
        extra = s.constraint_text()
        lines.append(f'{s.name} = {s.default!r}' + (f'  [{extra}]' if extra else '') + f'\n    {s.description}')
    return '\n'.join(lines)


#: parameters every rclpy node has (never warned about as unknown)
FRAMEWORK_PARAMETERS = ('use_sim_time', 'start_type_description_service')


def params_files_in_args(argv: Sequence[str]) -> list[str]:
    """The ``--params-file FILE`` arguments inside the ``--ros-args`` sections of a command line, in order."""
    files, in_ros, i = [], False, 0
    while i < len(argv):
        a = argv[i]
        if a == '--ros-args':
            in_ros = True
        elif a == '--':
            in_ros = False
        elif in_ros and a == '--params-file' and i + 1 < len(argv):
            files.append(argv[i + 1])
            i += 1
        i += 1
    return files


def read_params_file(path: str) -> dict:
    """The parsed params file; ConfigError naming the file and what is wrong (missing, not YAML, not a
    mapping of node names to ``ros__parameters``)."""
    try:
        with open(path, encoding='utf-8') as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError(f"params file '{path}' does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"params file '{path}' is a directory") from None
    except OSError as exc:
        raise ConfigError(f"params file '{path}' cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise ConfigError(f"params file '{path}' is not valid YAML{where}: {problem}") from None
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise ConfigError(f"params file '{path}' must be a mapping of node names to ros__parameters, "
                          f"got {type(doc).__name__}")
    for key, section in doc.items():
        if not isinstance(section, Mapping) or 'ros__parameters' not in section:
            raise ConfigError(f"params file '{path}': section '{key}' has no 'ros__parameters'")
        if not isinstance(section['ros__parameters'] or {}, Mapping):
            raise ConfigError(f"params file '{path}': '{key}.ros__parameters' must be a mapping")
    return dict(doc)


def bare_sections(doc: Mapping, node_name: str) -> dict[str, Any]:
    """Parameters of the sections keyed by the bare node name (``name`` or ``/name``): the shipped files'
    form, which rcl applies only to a node in the root namespace."""
    merged: dict[str, Any] = {}
    for key, section in doc.items():
        if str(key).strip('/') == node_name:
            merged.update(flatten(section.get('ros__parameters') or {}))
    return merged


def resolve_relative_file(value: Any, params_file: str) -> Any:
    """A relative path string that names an existing file beside ``params_file`` as an absolute path;
    anything else (a name such as ``uf_like``, a file found elsewhere) unchanged."""
    from pathlib import Path
    if not isinstance(value, str) or not value or Path(value).is_absolute():
        return value
    candidate = Path(params_file).resolve().parent / value
    return str(candidate) if candidate.is_file() else value
