"""Simulated groups rendered as the brokers' request-log lines (per broker, in completion order): the
building block of the bundled samples, the soak and the tests' logs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from simulator.clients import SimConfig, simulate
from simulator.log_render import complete_record, render_line


def render_group_lines(
    configs: Sequence[SimConfig], kafka_version: str = "3.7"
) -> dict[str, list[tuple[int, int, str]]]:
    """Simulate the groups; per broker, ``(completion_ms, arrival_ms, line)`` in completion order."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    for cfg in configs:
        for rec in simulate(cfg):
            fields: dict[str, Any] = {k: v for k, v in rec.items() if not k.startswith("_")}
            full: dict[str, Any] = complete_record(fields, kafka_version=kafka_version)
            line = render_line(full, kafka_version=kafka_version, tz=UTC)
            out.setdefault(cfg.broker_id, []).append(
                (int(full["completion_ms"]), int(full["arrival_ms"]), line)
            )
    for lines in out.values():
        lines.sort(key=lambda x: x[0])
    return out
