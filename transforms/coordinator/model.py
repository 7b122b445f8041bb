"""The coordinator model as the replay uses it: the engine (:mod:`~transforms.coordinator.engine`) with
track-mode reconciliation (:mod:`~transforms.coordinator.reconcile`) and state serialisation.

Imports go one way: ``model`` → ``reconcile`` → ``engine`` → ``state``/``timers``/``serde``; the engine
calls reconciliation through two hooks this class fills in, so neither module imports the other's caller.
"""

from __future__ import annotations

import json
import zlib
from typing import TypeVar

from transforms.coordinator.config import CoordinatorConfig
from transforms.coordinator.engine import CoordinatorEngine
from transforms.coordinator.reconcile import reconcile_answer, reconcile_late_answer
from transforms.coordinator.serde import (
    _MAGIC,
    FORMAT_VERSION,
    _call,
    _group,
    _uncall,
    _ungroup,
    dec,
    enc,
)
from transforms.coordinator.state import ParkedCall
from transforms.coordinator.timers import Timer
from transforms.coordinator.types import PredictedResponse

__all__ = ["CoordinatorConfig", "GroupCoordinatorModel"]

_M = TypeVar("_M", bound=CoordinatorEngine)


class GroupCoordinatorModel(CoordinatorEngine):
    """See :class:`~transforms.coordinator.engine.CoordinatorEngine`; adds reconciliation with the observed
    answers (track mode, warm start) and ``to_bytes`` / ``from_bytes``."""

    def _reconcile_answer(self, call: ParkedCall, predicted: PredictedResponse) -> bool:
        return reconcile_answer(self, call, predicted)

    def _reconcile_late_answer(self, call: ParkedCall, emit: bool) -> None:
        reconcile_late_answer(self, call, emit=emit)

    def to_bytes(self) -> bytes:
        """zlib'd, key-sorted JSON with a format version; the same state always gives the same bytes."""
        return dump_model(self)

    @classmethod
    def from_bytes(cls, data: bytes, config: CoordinatorConfig) -> GroupCoordinatorModel:
        return load_model(cls, data, config)


# ------------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------------
def dump_model(model: CoordinatorEngine) -> bytes:
    if model._outs:
        raise RuntimeError("cannot serialise the model in the middle of an operation")
    calls: dict[int, ParkedCall] = {}
    g = model._group
    if g is not None:
        for m in g.members.values():
            for c in (m.awaiting_join, m.awaiting_sync):
                if c is not None:
                    calls[c.seq] = c
    for c in model._parked.values():
        calls[c.seq] = c
    doc = {
        "format": FORMAT_VERSION,
        "group_id": model.group_id,
        "now": model._now,
        "seq": model._seq,
        "id_seq": model._id_seq,
        "clock": model._clock,
        "ev_seq": model._ev_seq,
        "ev_ref": enc(model._ev_ref),
        "confident": model._confident,
        "warm_reason": model._warm_reason,
        "last_discovery_ms": model._last_discovery_ms,
        "observed_full_join": model._observed_full_join,
        "inferred_seen": sorted(model._inferred_seen.items()),
        "moved_episode": model._moved_episode,
        "loading": model._loading,
        "persisted": model._persisted,
        "notes": [[k, list(v)] for k, v in sorted(model._notes.items())],
        "calls": [_call(calls[k]) for k in sorted(calls)],
        "parked": sorted(model._parked),
        "group": None if g is None else _group(g),
        "timers": [
            [t.key, t.deadline, t.priority, t.order, t.kind, list(t.data)] for t in model._timers.timers()
        ],
        "timer_order": model._timers.next_order,
        "immediate": list(model._immediate),
        "predictions": [enc(p) for p in model._predictions],
        "events": [enc(e) for e in model._events],
    }
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return _MAGIC + bytes([FORMAT_VERSION]) + zlib.compress(body, 6)


def load_model(cls: type[_M], data: bytes, config: CoordinatorConfig) -> _M:
    if data[:4] != _MAGIC:
        raise ValueError("not a serialised coordinator model")
    if data[4] != FORMAT_VERSION:
        raise ValueError(f"unsupported coordinator model format {data[4]} (expected {FORMAT_VERSION})")
    doc = json.loads(zlib.decompress(data[5:]).decode("utf-8"))
    model = cls(doc["group_id"], config)
    model._now = doc["now"]
    model._seq = doc["seq"]
    model._id_seq = doc["id_seq"]
    model._clock = doc["clock"]
    model._ev_seq = doc["ev_seq"]
    model._ev_ref = dec(doc["ev_ref"])
    model._confident = doc["confident"]
    model._warm_reason = doc["warm_reason"]
    model._last_discovery_ms = doc["last_discovery_ms"]
    model._observed_full_join = doc["observed_full_join"]
    model._inferred_seen = dict(doc["inferred_seen"])
    model._moved_episode = doc["moved_episode"]
    model._loading = doc["loading"]
    model._persisted = doc["persisted"]
    model._notes = {k: tuple(v) for k, v in doc["notes"]}
    calls = {row[0]: _uncall(row) for row in doc["calls"]}
    model._parked = {seq: calls[seq] for seq in doc["parked"]}
    model.install_group(None if doc["group"] is None else _ungroup(model.group_id, doc["group"], calls))
    model._timers.restore(
        [Timer(k, d, p, o, kind, tuple(data)) for k, d, p, o, kind, data in doc["timers"]], doc["timer_order"]
    )
    model._immediate = list(doc["immediate"])
    model._predictions = [dec(p) for p in doc["predictions"]]
    model._events = [dec(e) for e in doc["events"]]
    return model
