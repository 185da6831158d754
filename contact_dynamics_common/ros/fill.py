"""Fill an rclpy message instance from a nested dict of field values (the form run-bag also writes)."""
from __future__ import annotations

from typing import Any


def fill(msg: Any, fields: dict) -> Any:
    """Set ``fields`` on ``msg`` recursively: dicts fill nested messages, lists of dicts fill sequences."""
    types = msg.get_fields_and_field_types()
    for name, value in fields.items():
        if isinstance(value, dict):
            fill(getattr(msg, name), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            setattr(msg, name, [fill(_new(types[name]), v) for v in value])
        else:
            setattr(msg, name, value)
    return msg


def _new(type_str: str) -> Any:
    """An instance of a message type given as 'sequence<pkg/Type>' or 'pkg/Type'."""
    inner = type_str.split('<', 1)[-1].rstrip('>').split(',')[0]
    pkg, name = inner.split('/')
    module = __import__(f'{pkg}.msg', fromlist=[name])
    return getattr(module, name)()
