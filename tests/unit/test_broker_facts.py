"""What the log tells about the broker (rebalance_replay.transforms.broker_facts), without Spark: lines of
a real Kafka 3.7.2 broker (request log and server.log), and JoinGroup answers."""

from __future__ import annotations

from pathlib import Path

from rebalance_replay.transforms import broker_facts as bf

REAL = (Path(__file__).parent / "data" / "broker_facts" / "kafka-3.7.2.log").read_text().splitlines()


def _evidence() -> dict[str, object]:
    doc: dict[str, object] = {}
    bf.merge_evidence(doc, bf.api_versions_evidence(REAL[0]))
    for line in REAL[1:]:
        bf.merge_evidence(doc, bf.other_line_evidence(line))
    return doc


def test_a_real_brokers_lines_tell_its_version_settings_and_coordinator() -> None:
    doc = _evidence()
    assert doc["kafka_versions"] == ["3.7.2"]
    assert doc["coordinator_loggers"] == ["scala"]
    assert doc["config"] == {"group.initial.rebalance.delay.ms": "0", "group.max.size": "2147483647"}
    versions = doc["api_versions"]
    assert isinstance(versions, dict)
    assert versions["11"] == [0, 9] and versions["8"] == [0, 9] and versions["68"] == [0, 0]
    # merging the same evidence again changes nothing (a slice read twice)
    assert bf.merge_evidence(dict(doc), _evidence()) == doc


def test_api_versions_of_a_3_7_broker_bound_it_to_3_6_up_to_3_9() -> None:
    b = bf.version_bounds(_evidence()["api_versions"])  # type: ignore[arg-type]
    assert b.consistent and b.low == (3, 6, 0) and b.high == (3, 99, 99)
    assert b.text() == "≥ 3.6 and < 4.0"
    assert bf.pick_version("3.7", b) == "3.7"  # the configured line is allowed: kept
    assert bf.pick_version("2.7", b) == "3.6"  # outside: the nearest allowed line
    assert bf.pick_version("2.7", b, exact="3.7.2") == "3.7.2"  # server.log's version wins


def test_text_era_and_old_field_names_bound_the_version_from_above() -> None:
    b = bf.version_bounds(used_versions={11: 7}, eras=["text"])
    assert b.low == (2, 5, 0) and b.high < (2, 8, 0)
    assert bf.pick_version("3.7", b) == "2.7"
    assert bf.version_bounds(commit_key="generationId").high < (3, 6, 0)
    assert bf.version_bounds(api_versions={"8": [2, 9]}).low == (4, 0, 0)  # KIP-896


def _join(g: str, t: int, member: str, error: str, **kw: int) -> bf.JoinRow:
    return bf.JoinRow(g, t, kw.pop("done", t), member, error, **kw)


def test_group_max_size_is_the_largest_generation_of_a_refusing_group() -> None:
    rows = [
        _join("a", 0, "m1", "NONE", done=3000, response_generation_id=1, n_members=5),
        _join("a", 4000, "", "GROUP_MAX_SIZE_REACHED"),
        _join("b", 0, "x", "NONE", done=3000, response_generation_id=1, n_members=2),
    ]
    got = bf.infer_settings(rows)["group.max.size"]
    assert (got.low, got.high, got.best) == (5, 5, 5)
    d = bf.decide("group.max.size", 2**31 - 1, got)
    assert d.used == 5 and d.contradiction and "2147483647" in d.contradiction
    assert bf.decide("group.max.size", 5, got).contradiction is None
    # nobody configured the limit: the report says the product assumed its default, not the user
    by_default = bf.decide("group.max.size", 2**31 - 1, got, default_note=" (the default)")
    assert by_default.contradiction and "configured 2147483647 (the default), but" in by_default.contradiction
    kept = bf.decide("group.max.size", 2**31 - 1, got, adopt=False)
    assert kept.used == 2**31 - 1 and kept.contradiction
    # a larger group elsewhere: the refusals are not explained by one limit, nothing is inferred
    bigger = [*rows, _join("c", 0, "y", "NONE", done=3000, response_generation_id=1, n_members=6)]
    assert "group.max.size" not in bf.infer_settings(bigger)


def test_session_timeout_bounds_from_refused_and_accepted_timeouts() -> None:
    rows = [
        _join("a", 0, "", "MEMBER_ID_REQUIRED", session_timeout_ms=1000),
        _join("a", 1, "", "INVALID_SESSION_TIMEOUT", session_timeout_ms=500),
        _join("a", 2, "", "INVALID_SESSION_TIMEOUT", session_timeout_ms=90_000),
        _join("a", 3, "m", "NONE", session_timeout_ms=45_000),
    ]
    got = bf.infer_settings(rows)
    lo, hi = got["group.min.session.timeout.ms"], got["group.max.session.timeout.ms"]
    assert (lo.low, lo.high) == (501, 1000) and (hi.low, hi.high) == (45_000, 89_999)
    assert bf.decide(lo.name, 6000, lo).used == 1000  # the default 6000 would refuse the 1000 accepted
    assert bf.decide(hi.name, 1_800_000, hi).used == 89_999


def test_initial_delay_from_a_new_group_joined_by_one_member() -> None:
    # a real 3.7.2 broker with group.initial.rebalance.delay.ms=0: the phase took the broker's own 29 ms
    rows = [
        _join("g1", 100, "", "MEMBER_ID_REQUIRED", done=113),
        _join(
            "g1",
            114,
            "m",
            "NONE",
            done=143,
            response_generation_id=1,
            n_members=1,
            rebalance_timeout_ms=300_000,
        ),
    ]
    got = bf.infer_settings(rows)["group.initial.rebalance.delay.ms"]
    assert (got.low, got.high, got.best) == (0, 29, 0)
    assert not got.allows(3000) and got.allows(0)
    # two members in the first phase: the delay was extended, the phase says nothing on its own
    two = [*rows, _join("g1", 120, "n", "NONE", done=143, response_generation_id=1)]
    assert "group.initial.rebalance.delay.ms" not in bf.infer_settings(two)
    # a 3000 ms delay is inferred as 3000 (the broker's work only adds time)
    slow = [_join("g2", 0, "m", "NONE", done=3012, response_generation_id=1, n_members=1)]
    assert bf.infer_settings(slow)["group.initial.rebalance.delay.ms"].best == 3000


def test_bounds_no_broker_can_have_are_left_out() -> None:
    """Damaged lines (a fuzzed negative session timeout answered NONE) bound nothing: the configuration
    keeps the setting instead of receiving a value it must refuse."""
    from rebalance_replay.transforms.broker_facts import JoinRow, infer_settings

    def join(error: str, session_ms: int) -> JoinRow:
        return JoinRow("g", 0, 1, "m", error, session_timeout_ms=session_ms)

    rows = [join("NONE", -32769), join("NONE", 10_000), join("INVALID_SESSION_TIMEOUT", -40_000)]
    inferred = infer_settings(rows)
    # -40000 refused: the minimum is above it, and no broker has a negative one; 10000 accepted: the
    # minimum is at most 10000 and the maximum at least; the accepted -32769 bounds nothing
    assert {k: (i.low, i.high) for k, i in inferred.items()} == {
        "group.min.session.timeout.ms": (0, 10_000),
        "group.max.session.timeout.ms": (10_000, None),
    }


def test_observations_add_as_one_pass_over_both_row_sets_would_make_them() -> None:
    from rebalance_replay.jobs.broker_facts import _Observed

    def join(group: str, at: int, member: str = "") -> bf.JoinRow:
        return bf.JoinRow(group, at, at + 5, member, "NONE", 10_000, 30_000, 1, 0)

    a = _Observed(
        joins=[join("g", 20)],
        used_versions={11: 5, 12: 3},
        eras={"text"},
        client_requests={("apache-kafka-java", "3.7.2"): 5},
        kip848_answered=1,
        commit_key=None,
    )
    b = _Observed(
        joins=[join("g", 10, "m"), join("a", 30)],
        used_versions={11: 4, 12: 4, 14: 1},
        eras={"json"},
        client_requests={("apache-kafka-java", "3.7.2"): 2, ("librdkafka", "2.3.0"): 1},
        kip848_answered=2,
        commit_key="topics",
    )
    both = a.plus(b)
    assert both.joins == [join("a", 30), join("g", 10, "m"), join("g", 20)]
    assert both.used_versions == {11: 5, 12: 4, 14: 1}
    assert both.eras == {"text", "json"}
    assert both.clients == [
        {"software": "apache-kafka-java", "version": "3.7.2", "requests": 7},
        {"software": "librdkafka", "version": "2.3.0", "requests": 1},
    ]
    assert both.kip848_answered == 3
    assert both.commit_key == "topics"
    assert b.plus(a).commit_key == "topics" and a.plus(a).commit_key is None
    assert _Observed.from_json(both.to_json()) == both
