"""Messages decoded one by one from their CDR bytes with ``mcap_ros2``: ``MessageDecoders``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from mcap.records import Schema
from mcap_ros2._dynamic import generate_dynamic, serialize_dynamic

from .records import BagError, Collected

__all__ = ['MessageDecoders']


class MessageDecoders:
    """The decoder of every schema met in one bag, built once per (type name, definition text); owns the
    one-by-one decoding the fast column path falls back to and ``BagReader.messages`` uses.

    Picklable (a reader is sent to Dask workers): the decoders are built again where they are needed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: dict[tuple[str, bytes], Any] = {}
        self._encoders: dict[tuple[str, bytes], Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {'path': self.path, '_cache': {}, '_encoders': {}}

    def round_trips(self, schema: Schema, payload: bytes) -> bool:
        """Whether ``payload`` decodes with ``schema`` and encodes back to the same bytes (up to at most 7
        trailing zero bytes of alignment padding): a CDR payload with a wrong length, a broken string or
        sequence length, or bytes after its end fails; a changed number inside it does not."""
        key = (schema.name, schema.data)
        try:
            if key not in self._encoders:
                self._encoders[key] = serialize_dynamic(schema.name, schema.data.decode())[schema.name]
            again = self._encoders[key](self.decoder(schema)(payload))
        except Exception:                                   # noqa: BLE001  (any failure: it does not)
            return False
        rest = payload[len(again):]
        return payload.startswith(again) and len(rest) < 8 and not any(rest)

    def decoder(self, schema: Schema) -> Any:
        """``decode(cdr_bytes) -> message`` of a schema; BagError when its definition is unusable."""
        key = (schema.name, schema.data)
        if key not in self._cache:
            try:
                self._cache[key] = generate_dynamic(schema.name, schema.data.decode())[schema.name]
            except Exception as e:                           # noqa: BLE001  (mcap_ros2 raises plain errors)
                raise BagError(f'{self.path}: no usable message definition for {schema.name} ({e})') from e
        return self._cache[key]

    def decode_all(self, data: Collected) -> list[Any]:
        """Every message of one topic's collected pieces, decoded, in log-time order."""
        return [self.decoder(schema)(payload)
                for schema, payload in zip(data.schemas_in_order(), data.payloads())]
