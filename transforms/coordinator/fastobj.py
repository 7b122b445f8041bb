"""Fast construction of the frozen, slotted output dataclasses on the hot path.

A frozen dataclass ``__init__`` sets every field through ``object.__setattr__``; for a request stream
of heartbeats that is most of the model's time. :func:`constructor` compiles, once, a function that
creates the object with ``object.__new__`` and fills each slot through its member descriptor, taking
some fields from arguments and the others from constants (the dataclass defaults unless overridden).
The result is an ordinary instance, equal to one built by the dataclass itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def constructor(cls: type[Any], params: tuple[str, ...], **constants: Any) -> Callable[..., Any]:
    """``constructor(ModelEvent, ("seq", "time_ms"), kind=EventKind.HEARTBEAT)`` → ``f(seq, time_ms)``."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = (set(params) | set(constants)) - set(fields)
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["    o = _new(_cls)"]
    bound = ["_new=_new", "_cls=_cls"]  # defaults: locals are the cheapest lookups
    for name, f in fields.items():
        namespace[f"_set_{name}"] = getattr(cls, name).__set__
        bound.append(f"_set_{name}=_set_{name}")
        if name in params:
            value = name
        else:
            if name in constants:
                namespace[f"_const_{name}"] = constants[name]
            elif f.default is not dataclasses.MISSING:
                namespace[f"_const_{name}"] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                namespace[f"_const_{name}"] = f.default_factory()
            else:
                raise ValueError(f"{cls.__name__}.{name} needs a value")
            value = f"_const_{name}"
            bound.append(f"_const_{name}=_const_{name}")
        body.append(f"    _set_{name}(o, {value})")
    lines = [f"def build({', '.join([*params, *bound])}):", *body, "    return o"]
    exec("\n".join(lines), namespace)
    build: Callable[..., Any] = namespace["build"]
    return build
