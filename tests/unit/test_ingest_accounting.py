"""Hypothesis: whatever a log file holds — valid lines of both eras, corrupted ones, other loggers, junk —
ingest's read-and-parse step accounts for every line exactly once:
``lines_read = requests + quarantined + other_api_lines + other_lines``, and every quarantined row keeps
its raw line and a reason. Runs the executor-side code of ingest (no Spark needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_replay.jobs.ingest import parse_slices
from rebalance_replay.jobs.log_files import describe_file, plan_slices
from tests.integration.test_ingest import JSON_FETCH, JSON_HEARTBEAT, JSON_JOIN, OTHER_LOGGER, TEXT_HEARTBEAT

VALID = [JSON_JOIN, JSON_HEARTBEAT, JSON_FETCH, TEXT_HEARTBEAT, OTHER_LOGGER]


@st.composite
def corrupted(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(VALID))
    op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "keep"]))
    if op == "keep" or not line:
        return line
    i = draw(st.integers(0, len(line) - 1))
    if op == "truncate":
        return line[:i]
    if op == "flip":
        return (
            line[:i]
            + draw(st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"))
            + line[i + 1 :]
        )
    if op == "insert":
        return (
            line[:i] + draw(st.text(max_size=5).filter(lambda t: "\n" not in t and "\r" not in t)) + line[i:]
        )
    return line[:i] + line[i + 5 :]


lines_strategy = st.lists(
    st.one_of(corrupted(), st.text(max_size=80).filter(lambda t: "\n" not in t and "\r" not in t)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=lines_strategy)
def test_every_line_is_accounted_for(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogatepass")
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    if described is None:
        return
    slices, _ = plan_slices([described], {})
    rows = list(parse_slices(slices, "UTC", datetime(2026, 1, 1, tzinfo=UTC)))
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    requests = [r for r in rows if r["row_kind"] == "request"]
    quarantined = [r for r in rows if r["row_kind"] == "quarantine"]
    assert stats["lines_read"] == len(lines)
    assert stats["n_requests"] == len(requests) and stats["n_quarantined"] == len(quarantined)
    assert stats["lines_read"] == (
        stats["n_requests"] + stats["n_quarantined"] + stats["n_other_api"] + stats["n_other"]
    )
    assert sum(json.loads(stats["other_api_counts"]).values()) == stats["n_other_api"]
    # each line number appears once among the rows that keep a line
    kept = [r["line_no"] for r in requests + quarantined]
    assert len(kept) == len(set(kept)) and all(1 <= n <= len(lines) for n in kept)
    for q in quarantined:
        assert q["quarantine_reason"] and q["raw_line"] == lines[q["line_no"] - 1]
    # a kept-API line with a "Completed request" marker never silently becomes an "other" line
    for n, line in enumerate(lines, 1):
        if line in (JSON_JOIN, JSON_HEARTBEAT, TEXT_HEARTBEAT):
            assert n in kept
