"""Fast construction of the frozen, slotted output dataclasses on the hot path.

A frozen dataclass ``__init__`` sets every field through ``object.__setattr__``; for a request stream
of heartbeats that is most of the model's time. :func:`constructor` compiles, once, a function that
builds the object with some fields from arguments and the others from constants (the dataclass
defaults unless overridden):

* preferred: a *mirror* class with the same ``__slots__`` layout and a plain ``__init__`` (slot stores
  are the interpreter's fastest attribute writes), whose instance then becomes a ``cls`` instance by
  ``__class__`` assignment (allowed between classes of identical slot layout);
* fallback (if the layouts ever stop being compatible): ``object.__new__`` and one member-descriptor
  ``__set__`` per slot.

Either way the result is an ordinary, frozen ``cls`` instance, equal to one the dataclass builds; a
self-check at compile time guarantees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def _values(cls: type[Any], params: tuple[str, ...], constants: dict[str, Any]) -> dict[str, str]:
    """Field name → expression (a parameter name or a ``_const_<field>`` global)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = (set(params) | set(constants)) - set(fields)
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    exprs = {}
    for name, f in fields.items():
        if name in params:
            exprs[name] = name
        elif (
            name in constants
            or f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING
        ):
            exprs[name] = f"_const_{name}"
        else:
            raise ValueError(f"{cls.__name__}.{name} needs a value")
    return exprs


def _constants(cls: type[Any], params: tuple[str, ...], constants: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in params:
            continue
        if f.name in constants:
            out[f"_const_{f.name}"] = constants[f.name]
        elif f.default is not dataclasses.MISSING:
            out[f"_const_{f.name}"] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f"_const_{f.name}"] = f.default_factory()
    return out


def _mirror_constructor(
    cls: type[Any], params: tuple[str, ...], constants: dict[str, Any]
) -> Callable[..., Any]:
    slots: tuple[str, ...] = cls.__slots__
    exprs = _values(cls, params, constants)
    namespace: dict[str, Any] = {"_cls": cls, **_constants(cls, params, constants)}
    mirror_src = "\n".join(
        [
            "class _Mirror:",
            f"    __slots__ = {slots!r}",
            f"    def __init__(self, {', '.join(slots)}):",
            *[f"        self.{name} = {name}" for name in slots],
        ]
    )
    exec(mirror_src, namespace)
    namespace["_mirror"] = namespace["_Mirror"]
    bound = ["_mirror=_mirror", "_cls=_cls", *[f"{e}={e}" for e in exprs.values() if e.startswith("_const_")]]
    args = ", ".join(exprs[name] for name in slots)
    build_src = "\n".join(
        [
            f"def build({', '.join([*params, *bound])}):",
            f"    o = _mirror({args})",
            "    o.__class__ = _cls",
            "    return o",
        ]
    )
    exec(build_src, namespace)
    build: Callable[..., Any] = namespace["build"]
    return build


def _descriptor_constructor(
    cls: type[Any], params: tuple[str, ...], constants: dict[str, Any]
) -> Callable[..., Any]:  # pragma: no mutate block (import time, a fallback CPython 3.11 never builds)
    exprs = _values(cls, params, constants)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, **_constants(cls, params, constants)}
    body = ["    o = _new(_cls)"]
    bound = ["_new=_new", "_cls=_cls"]
    for name, expr in exprs.items():
        namespace[f"_set_{name}"] = getattr(cls, name).__set__
        bound.append(f"_set_{name}=_set_{name}")
        if expr.startswith("_const_"):
            bound.append(f"{expr}={expr}")
        body.append(f"    _set_{name}(o, {expr})")
    exec("\n".join([f"def build({', '.join([*params, *bound])}):", *body, "    return o"]), namespace)
    build: Callable[..., Any] = namespace["build"]
    return build


def constructor(cls: type[Any], params: tuple[str, ...], **constants: Any) -> Callable[..., Any]:
    """``constructor(ModelEvent, ("seq", "time_ms"), kind=EventKind.HEARTBEAT)`` → ``f(seq, time_ms)``."""
    sample_args = [object() for _ in params]
    expected = cls(**dict(zip(params, sample_args, strict=True)), **constants)
    for make in (_mirror_constructor, _descriptor_constructor):
        try:
            build = make(cls, params, constants)
            built = build(*sample_args)
        except TypeError:  # e.g. layouts not compatible for __class__ assignment
            continue
        if type(built) is cls and built == expected:
            return build
    raise RuntimeError(f"cannot compile a constructor for {cls.__name__}")
