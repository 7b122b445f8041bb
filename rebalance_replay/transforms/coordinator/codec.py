"""The one encoding of saved replay state (coordinator model, rebalance tracker, replayer).

Values become JSON with a few tagged forms, decoded back to the same types: ``{"$b": base64}`` bytes,
``{"$t": [...]}`` a tuple (a list stays a list), a dict with string keys a JSON object (other dicts,
and any with a key starting with ``$``, ``{"$m": [[key, value], ...]}``; insertion order is kept),
``{"$s": [...]}`` a set, ``{"$date": "YYYY-MM-DD"}`` a date, ``{"$e": name, "v": value}`` an enum
member and ``{"$c": name, "f": [...]}`` a dataclass (fields in declaration order). Enums and
dataclasses must be registered with the :class:`Codec` that reads them.

:func:`pack` / :func:`unpack` frame a document: 4 magic bytes, one format-version byte and the
zlib-compressed JSON (keys in insertion order, so a restored state saves to the same bytes).
Compression happens once per saved blob (the replayer's state holds the model's and the tracker's
documents, not their bytes). Saved state of another format version is refused with an error naming
both versions: it cannot be resumed, the replay restarts from its input.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import zlib
from collections.abc import Iterable
from datetime import date
from enum import Enum
from typing import Any

#: version of everything saved with this module (bump when any saved document changes shape)
FORMAT_VERSION = 4

Json = Any


class SavedStateError(ValueError):
    """Bytes that are not saved state of this format (another program's, or an older version's)."""


class Codec:
    """Encodes and decodes values of the registered enum and dataclass types (and plain JSON values,
    bytes, tuples, lists, dicts, sets, dates)."""

    __slots__ = ("_classes", "_enums", "_fields")

    def __init__(self, classes: Iterable[type[Any]] = (), enums: Iterable[type[Enum]] = ()) -> None:
        self._classes: dict[str, type[Any]] = {c.__name__: c for c in classes}
        self._enums: dict[str, type[Enum]] = {e.__name__: e for e in enums}
        self._fields: dict[str, tuple[str, ...]] = {
            name: tuple(f.name for f in dataclasses.fields(c)) for name, c in self._classes.items()
        }

    def encode(self, value: Any) -> Json:
        if value is None or type(value) is str or isinstance(value, bool):
            return value
        if isinstance(value, Enum):  # before str: a str-valued member (GroupState, Errors) stays typed
            return {"$e": type(value).__name__, "v": value.value}
        if isinstance(value, str):
            return str(value)
        if isinstance(value, int | float):
            return value
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, tuple):
            return {"$t": [self.encode(v) for v in value]}
        if isinstance(value, bytes | bytearray):
            return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, dict):
            if all(type(k) is str and not k.startswith("$") for k in value):
                return {k: self.encode(v) for k, v in value.items()}
            return {"$m": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if isinstance(value, set | frozenset):
            return {"$s": sorted((self.encode(v) for v in value), key=json.dumps)}
        if isinstance(value, date):
            return {"$date": value.isoformat()}
        name = type(value).__name__
        names = self._fields.get(name)
        if names is None or type(value) is not self._classes[name]:
            raise TypeError(f"cannot save a {name}: not a registered type")
        return {"$c": name, "f": [self.encode(getattr(value, f)) for f in names]}

    def decode(self, value: Json) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if "$t" in value:
            return tuple(self.decode(v) for v in value["$t"])
        if "$c" in value:
            name = value["$c"]
            values = (self.decode(v) for v in value["f"])
            return self._classes[name](**dict(zip(self._fields[name], values, strict=True)))
        if "$e" in value:
            return self._enums[value["$e"]](value["v"])
        if "$m" in value:
            return {self.decode(k): self.decode(v) for k, v in value["$m"]}
        if "$b" in value:
            return base64.b64decode(value["$b"])
        if "$s" in value:
            return {self.decode(v) for v in value["$s"]}
        if "$date" in value:
            return date.fromisoformat(value["$date"])
        if not any(k.startswith("$") for k in value):
            return {k: self.decode(v) for k, v in value.items()}
        raise SavedStateError(f"unknown saved value {sorted(value)}")


def pack(magic: bytes, doc: Json) -> bytes:
    """Frame a JSON document: magic, format version, zlib'd JSON (same doc → same bytes)."""
    body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return magic + bytes([FORMAT_VERSION]) + zlib.compress(body, 6)


def unpack(magic: bytes, data: bytes, what: str) -> Json:
    """The document :func:`pack` framed; ``what`` names it in errors."""
    n = len(magic)
    if data[:n] != magic or len(data) <= n:
        old = _earlier_version(data)
        if old is not None:
            raise SavedStateError(
                f"saved {what} is of an earlier version's format ({old}); this version reads only "
                f"format version {FORMAT_VERSION}: replay the group again from its input"
            )
        raise SavedStateError(
            f"not a saved {what} of format version {FORMAT_VERSION} (no {magic.decode()} header)"
        )
    version = data[n]
    if version != FORMAT_VERSION:
        raise SavedStateError(
            f"saved {what} has format version {version}; this version reads only format {FORMAT_VERSION} "
            "(state saved by another version cannot be resumed: replay the group again from its input)"
        )
    return json.loads(zlib.decompress(data[n + 1 :]).decode("utf-8"))


def _earlier_version(data: bytes) -> str | None:
    """The version tag of state saved before this format (zlib'd JSON with a ``v``/``format`` key)."""
    try:
        doc = json.loads(zlib.decompress(data))
    except (zlib.error, ValueError):
        return None
    if isinstance(doc, dict):
        for key in ("v", "format"):
            if key in doc:
                return f"{key}={doc[key]!r}"
    return None
