"""rebalance_replay.transforms.validation: one predictions row per Prediction, and the per-field comparison
rules."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.schemas import PREDICTIONS
from rebalance_replay.transforms.coordinator.types import (
    GroupRequest,
    GroupState,
    ObservedResponse,
    PredictedResponse,
    Prediction,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.validation import (
    MISMATCH_KINDS,
    NO_OBSERVED_RESPONSE,
    NOTHING_TO_COMPARE,
    compare,
    generated_member_id_pattern,
    prediction_row,
)

T0 = 1_772_409_600_000  # 2026-03-02T00:00:00Z
UUID_A = "0f8fad5b-d9cb-469f-a165-70867728950e"
UUID_B = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
TOL = 5


def join_observed(**kw: Any) -> ObservedResponse:
    base: dict[str, Any] = dict(
        error="NONE",
        generation_id=3,
        leader="m1",
        member_id="m1",
        protocol_name="range",
        members=("m2", "m1"),
        skip_assignment=False,
        completion_ms=T0 + 100,
    )
    base.update(kw)
    return ObservedResponse(**base)


def join_predicted(**kw: Any) -> PredictedResponse:
    base: dict[str, Any] = dict(
        error="NONE",
        completion_ms=T0 + 100,
        generation_id=3,
        leader="m1",
        member_id="m1",
        protocol_name="range",
        members=("m1", "m2"),
        skip_assignment=False,
    )
    base.update(kw)
    return PredictedResponse(**base)


def request(api: ApiKey = ApiKey.JOIN_GROUP, version: int = 9, **kw: Any) -> GroupRequest:
    base: dict[str, Any] = dict(
        api=api,
        api_version=version,
        group_id="g1",
        arrival_ms=T0,
        member_id="m1",
        client_id="consumer-1",
        generation_id=None,
        observed=join_observed(),
    )
    base.update(kw)
    return GroupRequest(**base)


def prediction(
    req: GroupRequest | None = None, resp: PredictedResponse | None = None, **kw: Any
) -> Prediction:
    base: dict[str, Any] = dict(
        seq=7,
        request=req if req is not None else request(),
        response=resp if resp is not None else join_predicted(),
        state_before=GroupState.PREPARING_REBALANCE,
        generation_before=2,
        state_after=GroupState.COMPLETING_REBALANCE,
        generation_after=3,
    )
    base.update(kw)
    return Prediction(**base)


def row(p: Prediction, tol: int = TOL) -> dict[str, object]:
    return prediction_row(
        p, completion_tolerance_ms=tol, broker_id="b1", source_file="logs/b1/r.log", line_no=42
    )


def kinds(p: Prediction, tol: int = TOL) -> list[str]:
    r = row(p, tol)
    assert r["scored"] is True
    assert r["matched"] is (not r["mismatch_kinds"])
    return r["mismatch_kinds"]  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------
# The row itself
# ---------------------------------------------------------------------------------------------------


def test_row_has_every_predictions_column_in_order_and_fits_the_arrow_schema() -> None:
    r = row(prediction())
    assert list(r) == PREDICTIONS.column_names
    table = pa.Table.from_pylist([r], schema=PREDICTIONS.arrow_schema())  # types and nullability fit
    assert table.num_rows == 1


def test_row_values_come_from_request_observed_and_response() -> None:
    p = prediction(
        request(group_instance_id="i1", generation_id=2),
        join_predicted(leader="m2", generation_id=4),
        reconciled=True,
    )
    r = row(p)
    assert r["source_file"] == "logs/b1/r.log"
    assert r["line_no"] == 42
    assert r["broker_id"] == "b1"
    assert r["group_id"] == "g1"
    assert r["api"] == "JOIN_GROUP"
    assert r["api_version"] == 9
    assert r["seq"] == 7
    assert r["member_id"] == "m1"
    assert r["group_instance_id"] == "i1"
    assert r["request_generation_id"] == 2
    assert r["arrival_ms"] == T0
    assert (r["observed_error"], r["predicted_error"]) == ("NONE", "NONE")
    assert (r["observed_generation_id"], r["predicted_generation_id"]) == (3, 4)
    assert (r["observed_leader"], r["predicted_leader"]) == ("m1", "m2")
    assert (r["observed_member_id"], r["predicted_member_id"]) == ("m1", "m1")
    assert (r["observed_protocol_name"], r["predicted_protocol_name"]) == ("range", "range")
    assert r["observed_members"] == ["m1", "m2"]  # stored sorted
    assert r["predicted_members"] == ["m1", "m2"]
    assert (r["observed_skip_assignment"], r["predicted_skip_assignment"]) == (False, False)
    assert (r["observed_completion_ms"], r["predicted_completion_ms"]) == (T0 + 100, T0 + 100)
    assert (r["state_before"], r["state_after"]) == ("PreparingRebalance", "CompletingRebalance")
    assert (r["generation_before"], r["generation_after"]) == (2, 3)
    assert r["reconciled"] is True
    assert r["mismatch_kinds"] == ["generation", "leader"]
    assert r["matched"] is False


@pytest.mark.parametrize(
    ("arrival_ms", "expected"),
    [
        (T0 - 1, date(2026, 3, 1)),  # 23:59:59.999 UTC
        (T0, date(2026, 3, 2)),  # midnight UTC
        (T0 + 86_399_999, date(2026, 3, 2)),
    ],
)
def test_log_date_is_the_utc_date_of_arrival(arrival_ms: int, expected: date) -> None:
    assert row(prediction(request(arrival_ms=arrival_ms)))["log_date"] == expected


def test_all_fields_agree_is_matched() -> None:
    r = row(prediction())
    assert r["scored"] is True
    assert r["matched"] is True
    assert r["mismatch_kinds"] == []
    assert r["unscored_reason"] is None


def test_mismatch_kinds_are_sorted_and_named_from_the_taxonomy() -> None:
    p = prediction(
        resp=join_predicted(
            error="UNKNOWN_MEMBER_ID",
            generation_id=9,
            leader="x",
            member_id="x",
            protocol_name="roundrobin",
            members=("m1",),
            skip_assignment=True,
            completion_ms=T0 + 999,
        )
    )
    got = kinds(p)
    assert got == sorted(got)
    assert set(got) <= set(MISMATCH_KINDS)
    assert got == sorted(
        [
            "error",
            "generation",
            "leader",
            "member_id",
            "protocol_name",
            "members",
            "skip_assignment",
            "completion_time",
        ]
    )


# ---------------------------------------------------------------------------------------------------
# Field by field
# ---------------------------------------------------------------------------------------------------


def test_error() -> None:
    assert kinds(prediction(resp=join_predicted(error="REBALANCE_IN_PROGRESS"))) == ["error"]
    hb = request(
        ApiKey.HEARTBEAT, 4, observed=ObservedResponse(error="REBALANCE_IN_PROGRESS", completion_ms=T0)
    )
    assert kinds(prediction(hb, PredictedResponse(error="REBALANCE_IN_PROGRESS", completion_ms=T0))) == []
    assert kinds(prediction(hb, PredictedResponse(error="NONE", completion_ms=T0))) == ["error"]


def test_the_compared_fields_are_named_as_the_mismatch_kinds() -> None:
    """``compare`` names what it compared with the mismatch kinds (``mismatch_kinds`` of the predictions
    table): a heartbeat carries only its error (and the completion time, not compared by value)."""
    hb = request(ApiKey.HEARTBEAT, 4, observed=ObservedResponse(error="NONE", completion_ms=T0))
    got = compare(
        hb, hb.observed, PredictedResponse(error="NONE", completion_ms=T0), completion_tolerance_ms=TOL
    )
    assert got.compared == ("error",) and got.mismatches == ()
    join = request(observed=join_observed())
    got = compare(join, join_observed(), join_predicted(), completion_tolerance_ms=TOL)
    assert "error" in got.compared and set(got.compared) <= set(MISMATCH_KINDS)


def test_generation_and_leader_on_join_group() -> None:
    assert kinds(prediction(resp=join_predicted(generation_id=4))) == ["generation"]
    assert kinds(prediction(resp=join_predicted(generation_id=None))) == [
        "generation"
    ]  # scalar None disagrees
    assert kinds(prediction(resp=join_predicted(leader="m2"))) == ["leader"]


def test_generation_not_compared_on_other_apis() -> None:
    # a SyncGroup row never compares JoinGroup-only fields, even if both sides carry values
    sync = request(ApiKey.SYNC_GROUP, 3, observed=ObservedResponse(error="NONE", generation_id=1, leader="a"))
    assert kinds(prediction(sync, PredictedResponse(error="NONE", completion_ms=None, generation_id=2))) == []


def test_member_id_equality_when_the_request_carried_one() -> None:
    assert kinds(prediction(resp=join_predicted(member_id="m9"))) == ["member_id"]
    # request member id "m1" and the broker answers with a UUID-style id: still equality, not format
    obs = join_observed(member_id=f"consumer-1-{UUID_A}")
    p = prediction(request(observed=obs), join_predicted(member_id=f"consumer-1-{UUID_B}"))
    assert kinds(p) == ["member_id"]


def _first_join(
    client_id: str | None = "consumer-1", instance: str | None = None, **obs: Any
) -> GroupRequest:
    observed = join_observed(**obs)
    return request(member_id="", client_id=client_id, group_instance_id=instance, observed=observed)


def test_generated_member_id_compares_format_not_value() -> None:
    req = _first_join(member_id=f"consumer-1-{UUID_A}", leader=f"consumer-1-{UUID_A}")
    # predict mode: the model made its own UUID with the right prefix → agrees
    p = prediction(req, join_predicted(member_id=f"consumer-1-{UUID_B}", leader=f"consumer-1-{UUID_A}"))
    assert kinds(p) == []
    # track mode: the model adopted the broker's id → agrees (the observed id has the expected format)
    p = prediction(req, join_predicted(member_id=f"consumer-1-{UUID_A}", leader=f"consumer-1-{UUID_A}"))
    assert kinds(p) == []
    # wrong prefix, no UUID, or nothing at all → member_id_format
    for bad in (f"consumer-2-{UUID_B}", "consumer-1-xyz", None):
        p = prediction(req, join_predicted(member_id=bad, leader=f"consumer-1-{UUID_A}"))
        assert kinds(p) == ["member_id_format"], bad


def test_generated_member_id_of_a_static_member_uses_the_instance_id() -> None:
    req = _first_join(instance="inst-7", member_id=f"inst-7-{UUID_A}", leader="m1")
    assert kinds(prediction(req, join_predicted(member_id=f"inst-7-{UUID_B}"))) == []
    assert kinds(prediction(req, join_predicted(member_id=f"consumer-1-{UUID_B}"))) == ["member_id_format"]


def test_generated_member_id_observed_in_an_unexpected_format_is_flagged() -> None:
    # the model adopted it, but the broker's id does not look like clientId-UUID: our model of the
    # coordinator's id scheme is wrong for this request
    req = _first_join(member_id=f"other-{UUID_A}")
    assert kinds(prediction(req, join_predicted(member_id=f"other-{UUID_A}"))) == ["member_id_format"]


def test_generated_member_id_without_client_id_accepts_any_prefix() -> None:
    req = _first_join(client_id=None, member_id=f"whatever-{UUID_A}")
    assert kinds(prediction(req, join_predicted(member_id=f"x-{UUID_B}"))) == []
    assert generated_member_id_pattern(req).fullmatch(f"-{UUID_A}") is not None


def test_member_id_required_response_is_format_checked() -> None:
    obs = ObservedResponse(
        error="MEMBER_ID_REQUIRED",
        generation_id=-1,
        leader="",
        member_id=f"consumer-1-{UUID_A}",
        protocol_name=None,
        members=(),
        completion_ms=T0 + 1,
    )
    req = request(version=4, member_id="", observed=obs)
    pred = PredictedResponse(
        error="MEMBER_ID_REQUIRED",
        completion_ms=T0 + 1,
        generation_id=-1,
        leader="",
        member_id=f"consumer-1-{UUID_B}",
        members=None,
    )
    r = row(prediction(req, pred))
    assert r["matched"] is True, r["mismatch_kinds"]
    # an empty observed member id (an error echoing the empty request id) is compared for equality
    obs2 = replace(obs, error="INVALID_SESSION_TIMEOUT", member_id="")
    pred2 = replace(pred, error="INVALID_SESSION_TIMEOUT", member_id=f"consumer-1-{UUID_B}")
    assert kinds(prediction(replace(req, observed=obs2), pred2)) == ["member_id"]


def test_protocol_name_join_group_and_sync_group_v5_only() -> None:
    assert kinds(prediction(resp=join_predicted(protocol_name="sticky"))) == ["protocol_name"]
    for version, expected in ((4, []), (5, ["protocol_name"])):
        sync = request(
            ApiKey.SYNC_GROUP, version, observed=ObservedResponse(error="NONE", protocol_name="range")
        )
        p = prediction(sync, PredictedResponse(error="NONE", completion_ms=None, protocol_name="sticky"))
        assert kinds(p) == expected, version
    sync = request(ApiKey.SYNC_GROUP, 5, observed=ObservedResponse(error="NONE", protocol_name="range"))
    assert (
        kinds(prediction(sync, PredictedResponse(error="NONE", completion_ms=None, protocol_name="range")))
        == []
    )


def test_members_compare_as_sets_and_are_stored_sorted() -> None:
    p = prediction(
        request(observed=join_observed(members=("m3", "m1", "m2"))),
        join_predicted(members=("m2", "m3", "m1")),
    )
    r = row(p)
    assert r["matched"] is True
    assert r["observed_members"] == ["m1", "m2", "m3"]
    assert r["predicted_members"] == ["m1", "m2", "m3"]
    p = prediction(request(observed=join_observed(members=("m1", "m2"))), join_predicted(members=("m1",)))
    assert kinds(p) == ["members"]


@pytest.mark.parametrize(
    ("observed", "predicted", "agree"),
    [
        (("m1", "m2"), ("m2", "m1"), True),
        (("m1", "m2"), ("m1",), False),  # the model lost a member
        (("m1",), ("m1", "m2"), False),  # the model kept one Kafka had removed
        ((), ("m1",), False),  # a follower's empty list against a predicted leader's list
        (("m1", "m2"), ("m1", "m3"), False),
        (("m1",), ("m1", "m1"), True),  # as sets
    ],
)
def test_members_must_be_equal_not_a_subset_either_way(
    observed: tuple[str, ...], predicted: tuple[str, ...], agree: bool
) -> None:
    p = prediction(request(observed=join_observed(members=observed)), join_predicted(members=predicted))
    assert kinds(p) == ([] if agree else ["members"])
    assert row(p)["matched"] is agree


def test_follower_empty_member_list_agrees_with_no_predicted_list() -> None:
    obs = join_observed(members=(), leader="m1", member_id="m2")
    p = prediction(request(member_id="m2", observed=obs), join_predicted(members=None, member_id="m2"))
    r = row(p)
    assert r["matched"] is True
    assert r["observed_members"] == []
    assert r["predicted_members"] is None
    # ... but a leader list the model did not predict is a mismatch
    p = prediction(request(observed=join_observed(members=("m1",))), join_predicted(members=None))
    assert kinds(p) == ["members"]


@pytest.mark.parametrize(("version", "expected"), [(8, []), (9, ["skip_assignment"])])
def test_skip_assignment_from_v9(version: int, expected: list[str]) -> None:
    p = prediction(request(version=version), join_predicted(skip_assignment=True))
    assert kinds(p) == expected


@pytest.mark.parametrize(
    ("delta", "tol", "expected"),
    [
        (0, 5, []),
        (5, 5, []),  # the edge agrees
        (-5, 5, []),
        (6, 5, ["completion_time"]),
        (-6, 5, ["completion_time"]),
        (0, 0, []),
        (1, 0, ["completion_time"]),
        (30_000, 5, ["completion_time"]),  # a parked JoinGroup answered at the wrong time
    ],
)
def test_completion_time_tolerance_edges(delta: int, tol: int, expected: list[str]) -> None:
    p = prediction(resp=join_predicted(completion_ms=T0 + 100 + delta))
    assert kinds(p, tol) == expected


def test_completion_time_only_when_both_present() -> None:
    r = row(prediction(resp=join_predicted(completion_ms=None)))  # the model never answered
    assert r["matched"] is True
    assert r["predicted_completion_ms"] is None
    obs = join_observed(completion_ms=None)
    r = row(prediction(request(observed=obs), join_predicted(completion_ms=T0 + 10_000)))
    assert r["matched"] is True
    assert r["observed_completion_ms"] == T0  # not nullable: falls back to the arrival time


def test_leave_group_member_errors_v3_plus() -> None:
    obs = ObservedResponse(error="NONE", member_errors=(("m2", "UNKNOWN_MEMBER_ID"), ("m1", "NONE")))
    req = request(ApiKey.LEAVE_GROUP, 3, observed=obs)
    same = PredictedResponse(
        error="NONE", completion_ms=None, member_errors=(("m1", "NONE"), ("m2", "UNKNOWN_MEMBER_ID"))
    )
    r = row(prediction(req, same))
    assert r["matched"] is True
    assert r["observed_member_errors"] == ["m1=NONE", "m2=UNKNOWN_MEMBER_ID"]
    assert r["predicted_member_errors"] == ["m1=NONE", "m2=UNKNOWN_MEMBER_ID"]
    other = PredictedResponse(
        error="NONE", completion_ms=None, member_errors=(("m1", "NONE"), ("m2", "NONE"))
    )
    assert kinds(prediction(req, other)) == ["member_errors"]
    assert kinds(prediction(req, PredictedResponse(error="NONE", completion_ms=None))) == ["member_errors"]
    # v0-2 has no per-member list: only the (collapsed) top-level error is compared
    v2 = request(ApiKey.LEAVE_GROUP, 2, observed=obs)
    assert kinds(prediction(v2, other)) == []


def test_offset_commit_partition_errors() -> None:
    obs = ObservedResponse(partition_errors=(("orders", 1, "NONE"), ("orders", 0, "ILLEGAL_GENERATION")))
    req = request(ApiKey.OFFSET_COMMIT, 8, observed=obs)
    pred = PredictedResponse(
        error="NONE",
        completion_ms=None,
        partition_errors=(("orders", 0, "ILLEGAL_GENERATION"), ("orders", 1, "NONE")),
    )
    r = row(prediction(req, pred))
    assert r["matched"] is True
    assert r["observed_member_errors"] == ["orders-0=ILLEGAL_GENERATION", "orders-1=NONE"]
    wrong = replace(pred, partition_errors=(("orders", 0, "NONE"), ("orders", 1, "NONE")))
    assert kinds(prediction(req, wrong)) == ["member_errors"]


def test_text_era_missing_fields_are_not_compared() -> None:
    # a text-era JoinGroup line: error and timing only (no member list, no skipAssignment, ...)
    obs = ObservedResponse(error="NONE", generation_id=3, completion_ms=T0 + 100)
    pred = join_predicted(leader="someone-else", members=("zz",), skip_assignment=True, protocol_name="x")
    r = row(prediction(request(version=5, observed=obs), pred))
    assert r["matched"] is True
    assert r["observed_leader"] is None
    assert r["observed_members"] is None
    c = compare(request(version=5, observed=obs), obs, pred, completion_tolerance_ms=TOL)
    assert c.compared == ("error", "generation", "completion_time")
    # a text-era LeaveGroup v3 line without the member list: only the error
    leave = request(ApiKey.LEAVE_GROUP, 3, observed=ObservedResponse(error="NONE"))
    p = PredictedResponse(error="NONE", completion_ms=None, member_errors=(("m1", "NONE"),))
    assert row(prediction(leave, p))["observed_member_errors"] is None
    assert kinds(prediction(leave, p)) == []


# ---------------------------------------------------------------------------------------------------
# Unscored rows
# ---------------------------------------------------------------------------------------------------


def test_unscored_rows_are_not_matched_and_have_no_kinds() -> None:
    bad = join_predicted(error="NOT_COORDINATOR", generation_id=99)
    r = row(prediction(resp=bad, scored=False, unscored_reason="external_error"))
    assert r["scored"] is False
    assert r["matched"] is False
    assert r["mismatch_kinds"] == []
    assert r["unscored_reason"] == "external_error"
    r = row(prediction(scored=False, unscored_reason="warm_up"))  # even when everything agrees
    assert (r["scored"], r["matched"], r["mismatch_kinds"]) == (False, False, [])


def test_no_observed_response_is_unscored() -> None:
    r = row(prediction(request(observed=None)))
    assert (r["scored"], r["matched"], r["mismatch_kinds"]) == (False, False, [])
    assert r["unscored_reason"] == NO_OBSERVED_RESPONSE
    assert r["observed_error"] is None
    assert r["observed_completion_ms"] == T0


def test_nothing_to_compare_is_unscored() -> None:
    r = row(
        prediction(request(ApiKey.HEARTBEAT, 4, observed=ObservedResponse()), PredictedResponse("NONE", None))
    )
    assert (r["scored"], r["matched"], r["unscored_reason"]) == (False, False, NOTHING_TO_COMPARE)


def test_anomalies_noticed_by_the_model_are_mismatches() -> None:
    req = GroupRequest(
        api=ApiKey.HEARTBEAT,
        api_version=4,
        group_id="g",
        arrival_ms=1000,
        member_id="m",
        generation_id=1,
        observed=ObservedResponse(error="NONE", completion_ms=1001),
    )
    p = Prediction(
        seq=0,
        request=req,
        response=PredictedResponse(error="NONE", completion_ms=1001),
        state_before=GroupState.STABLE,
        generation_before=1,
        state_after=GroupState.STABLE,
        generation_after=1,
    )
    ok = prediction_row(p, completion_tolerance_ms=5, broker_id="b", source_file="f", line_no=1)
    assert ok["matched"] and ok["mismatch_kinds"] == []
    flagged = prediction_row(
        replace(p, mismatch_kinds=("member_id_format",)),
        completion_tolerance_ms=5,
        broker_id="b",
        source_file="f",
        line_no=1,
    )
    assert not flagged["matched"] and flagged["mismatch_kinds"] == ["member_id_format"]


@pytest.mark.parametrize(
    ("answered", "predicted", "lag", "expected"),
    [
        # the broker handed the answer over 30 ms after the model's instant (a slow append): within the lag
        (T0 + 130, T0 + 100, 200, []),
        (T0 + 305, T0 + 100, 200, []),  # the edge: tolerance + lag
        (T0 + 306, T0 + 100, 200, ["completion_time"]),
        (T0 + 130, T0 + 100, 0, ["completion_time"]),  # no lag allowed: only the tolerance
        # never earlier than the model beyond the tolerance, whatever the lag
        (T0 + 94, T0 + 100, 200, ["completion_time"]),
        (T0 + 95, T0 + 100, 200, []),
        # a join phase the model holds 3 s that the broker ended at once: seconds, not lag
        (T0 + 100, T0 + 3_100, 200, ["completion_time"]),
        (T0 + 3_100, T0 + 100, 200, ["completion_time"]),
    ],
)
def test_completion_time_allows_the_broker_lag_only_late(
    answered: int, predicted: int, lag: int, expected: list[str]
) -> None:
    # the line's time is 40 ms after the answer (response queue + send): the answer time is what counts
    obs = join_observed(completion_ms=answered + 40, answered_ms=answered)
    p = prediction(request(observed=obs), join_predicted(completion_ms=predicted))
    r = prediction_row(
        p, completion_tolerance_ms=TOL, broker_lag_ms=lag, broker_id="b1", source_file="f", line_no=1
    )
    assert r["mismatch_kinds"] == expected
    assert r["observed_completion_ms"] == answered + 40  # the column keeps the line's time


@pytest.mark.parametrize(
    ("answered", "line_lag", "expected"),
    [
        # the model's instant anchored on a line written late (behind a burst of answers): the broker's
        # answer may be earlier by the tolerance plus the line lag, never more, and the late side is unchanged
        (T0 + 94, 5, []),
        (T0 + 90, 5, []),  # the edge: tolerance + line lag
        (T0 + 89, 5, ["completion_time"]),
        (T0 + 94, 0, ["completion_time"]),
        (T0 + 306, 5, ["completion_time"]),
    ],
)
def test_completion_time_allows_the_anchor_lines_lag_early(
    answered: int, line_lag: int, expected: list[str]
) -> None:
    obs = join_observed(completion_ms=answered + 40, answered_ms=answered)
    p = prediction(request(observed=obs), join_predicted(completion_ms=T0 + 100))
    r = prediction_row(
        p,
        completion_tolerance_ms=TOL,
        broker_lag_ms=200,
        line_lag_ms=line_lag,
        broker_id="b1",
        source_file="f",
        line_no=1,
    )
    assert r["mismatch_kinds"] == expected


def test_the_replay_takes_the_line_lag_from_the_config() -> None:
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.replay import settings_from

    assert settings_from(load_config((), ["validation.line_lag_ms=7"])).line_lag_ms == 7


def test_answered_ms_is_the_line_time_less_response_queue_and_send() -> None:
    from rebalance_replay.transforms.replay import answered_ms

    row_ = {"completion_ms": T0 + 100, "response_queue_time_ms": 0.4, "send_time_ms": 29.2}
    assert answered_ms(row_) == T0 + 70
    assert answered_ms({**row_, "send_time_ms": None}) is None  # a line without timing fields
    for absurd in (float("nan"), float("inf"), -3.0, 1e12):  # fuzzed or damaged timing fields
        assert answered_ms({**row_, "send_time_ms": absurd}) is None
