"""Declaring a configuration key: a field of a frozen dataclass section, with its doc and checks.

Pure (no I/O, no Spark, no ``jobs`` import), so the pure packages can declare their own settings — the
audit's per-rule thresholds in ``rebalance_replay.transforms.audit.config`` — the same way
``rebalance_replay.jobs.config`` declares the
rest; ``rebalance_replay.jobs.settings`` turns the declarations into parsing, validation, YAML and docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: the ``setting`` of a field, in its metadata
META = "setting"


@dataclass(frozen=True)
class Setting:
    doc: str
    name: str | None = None  # the key's name when it is not the field's (Kafka's dotted property names)
    minimum: int | None = None
    bounds: tuple[float, float] | None = None
    parse: Callable[[str, Any], Any] | None = None  # (dotted key, raw value) -> value
    check: Callable[[str, Any], Any] | None = None  # (dotted key, parsed value) -> value


def setting(
    default: Any,
    doc: str,
    *,
    name: str | None = None,
    minimum: int | None = None,
    bounds: tuple[float, float] | None = None,
    parse: Callable[[str, Any], Any] | None = None,
    check: Callable[[str, Any], Any] | None = None,
) -> Any:
    """A configuration key as a dataclass field (``default``: the parsed value)."""
    meta = {META: Setting(doc, name, minimum, bounds, parse, check)}
    if isinstance(default, dict):
        frozen = dict(default)
        return field(default_factory=lambda: dict(frozen), metadata=meta)
    return field(default=default, metadata=meta)


def section(cls: type[Any], doc: str = "") -> Any:
    """A nested section as a field of its parent (its defaults are its own fields' defaults). Without
    ``doc`` its doc is the class's docstring when the docs are written (:func:`section_doc`)."""
    return field(default_factory=cls, metadata={META: Setting(doc)})


def section_doc(spec: Setting, cls: type[Any]) -> str:
    """The doc of the section ``cls`` declared with ``spec``: its own, else the class's docstring as it is
    now (the audit's names the rules registered so far)."""
    return spec.doc or (cls.__doc__ or "").strip()
