"""Issue 29 part 2, an hour missing in the middle of a log: a steady group (two members heartbeating and
committing, no rebalance) whose 13:00 file never arrived. In the silence the model lets every session
expire and the group's generation move on; the broker's first answers after it accept the members, so
the log lost lines (the log-gap rule). The model forgets the group it let expire and learns it again
from the broker, as at the start of a log: the answers after the gap are unscored naming the gap until
the model is confident again, and none is counted against it (before the forgetting: 288 mispredicted
answers, the members' heartbeats of the generation before read as stale and taught nothing)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.clients import ConsumerSpec, SimConfig
from simulator.fidelity import parse_rows
from tests.helpers import render_group_lines

HOUR_13 = int(datetime(2024, 6, 3, 13, 0, tzinfo=UTC).timestamp() * 1000)
HOUR_14 = HOUR_13 + 3_600_000


def steady_group(until_ms: int) -> list[tuple[int, int, str]]:
    """Two members heartbeating and committing from 12:55 on, no rebalance: the broker's lines."""
    cfg = SimConfig(
        group_id="gap",
        topics={"gap-events": 4},
        consumers=[ConsumerSpec(str(i), HOUR_13 - 300_000 + i * 300) for i in range(2)],
        until_ms=until_ms,
    )
    (lines,) = render_group_lines([cfg]).values()
    return lines


def steady_group_without_an_hour() -> list[dict[str, Any]]:
    lines = steady_group(HOUR_14 + 300_000)
    kept = [line for done, _, line in lines if not HOUR_13 <= done < HOUR_14]
    assert len(kept) < len(lines) - 1000
    return [r for r in parse_rows({"broker-1": kept}) if r.get("group_id") == "gap"]


@pytest.mark.parametrize("mode", ["predict", "track"])
def test_an_hour_missing_is_not_blamed_on_the_coordinator(mode: str) -> None:
    rows = steady_group_without_an_hour()
    replayer = GroupReplayer("gap", ReplaySettings(CoordinatorConfig(kafka_version="3.7", mode=mode)))  # type: ignore[arg-type]
    replayer.feed(rows)
    kept = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    assert not [p for p in kept if p["scored"] and not p["matched"]]
    after = [p for p in kept if p["arrival_ms"] >= HOUR_14]
    unscored = [p for p in after if not p["scored"]]
    assert unscored and all(
        p["unscored_reason"].startswith("warm-up: log gap: no request of the group in the log for 36")
        for p in unscored
    )
    assert sum(p["scored"] for p in after) > 250  # confident again: the rest of the log is scored


def test_a_live_files_line_numbers_of_two_hours_keep_their_brokers() -> None:
    """Issue 29's soak: the scheduled runs read each hour in the live ``kafka-request.log``, whose lines are
    numbered from 1 again after every rotation, so two requests of two hours share a path and a line
    number. Replayed together (the last run's held-back minutes beside the new hour), each prediction
    keeps its broker: 609 of a 3-hour soak's predictions once came out with no broker id."""
    lines = steady_group(HOUR_14 + 600_000)
    rows = []
    for hour_start in (HOUR_13 - 3_600_000, HOUR_13, HOUR_14):  # as each hour's live file numbers them
        hour = [line for done, _, line in lines if hour_start <= done < hour_start + 3_600_000]
        rows += [r for r in parse_rows({"broker-1": hour}) if r.get("group_id") == "gap"]
    assert len({(r["source_file"], r["line_no"]) for r in rows}) < len(rows)  # the same names, twice
    replayer = GroupReplayer("gap", ReplaySettings(CoordinatorConfig(kafka_version="3.7"), bulk=False))
    replayer.feed(rows)
    predictions = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    assert len(predictions) == sum(r["api_name"] != "FIND_COORDINATOR" for r in rows)
    assert {p["broker_id"] for p in predictions} == {"broker-1"}
    assert (
        all(p["matched"] for p in predictions if p["scored"]) and sum(p["scored"] for p in predictions) > 500
    )
