"""Rules on hand-made inputs (patterns the simulator does not produce) and the audit's configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_replay.jobs.config import from_mapping
from rebalance_replay.jobs.errors import ConfigError
from rebalance_replay.jobs.settings import defaults
from rebalance_replay.transforms.audit import RULES, AuditSettings, GroupInputs, evaluate, rule_ids
from rebalance_replay.transforms.audit.model import Rebalance, Req


def _rb(seq: int, start: int, *, follow_up: bool, trigger: str = "new_member") -> Rebalance:
    return Rebalance(
        rebalance_seq=seq,
        generation_from=seq,
        generation_to=seq + 1,
        started_ms=start,
        ended_ms=start + 500,
        total_duration_ms=500,
        outcome="stable",
        trigger=trigger,
        trigger_member_id="m1",
        members_before=("m1", "m2"),
        members_after=("m1", "m2"),
        protocol_name="cooperative-sticky",
        cooperative_follow_up=follow_up,
    )


def _join(t: int, member: str = "m1", **kw: object) -> Req:
    return Req(
        source_file="b1/kafka-request.log",
        line_no=t,
        broker_id=str(kw.pop("broker_id", "broker-1")),
        api_name=str(kw.pop("api_name", "JOIN_GROUP")),
        api_version=9,
        arrival_ms=t,
        completion_ms=t + 1,
        member_id=member,
        client_id="c1",
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("rounds", "found"), [(2, False), (3, True), (4, True)])
def test_r09_more_than_two_cooperative_rounds(rounds: int, found: bool) -> None:
    rbs = [_rb(k, 1000 * k, follow_up=k > 0) for k in range(rounds)]
    gi = GroupInputs.build("g", requests=[_join(1000 * k) for k in range(rounds)], rebalances=rbs)
    got = [f for f in evaluate(gi, AuditSettings(), only=["R09"]).findings]
    assert bool(got) is found
    if found:
        assert got[0].rebalance_seqs == tuple(range(rounds))
        assert got[0].metric("max_rounds") == rounds


def test_r20_coordinator_errors_without_a_move() -> None:
    reqs = [_join(1000), _join(2000, error_name="NOT_COORDINATOR"), _join(3000, error_name="NONE")]
    gi = GroupInputs.build("g", requests=reqs)
    got = evaluate(gi, AuditSettings(), only=["R20"]).findings
    assert [f.occurrences for f in got] == [1]
    assert "NOT_COORDINATOR" in got[0].summary
    assert (
        evaluate(GroupInputs.build("g", requests=[_join(1000), _join(3000)]), AuditSettings()).findings == ()
    )


def test_r23_mixed_group_is_a_warning() -> None:
    cgh = [_join(1000 + k, api_name="CONSUMER_GROUP_HEARTBEAT") for k in range(3)]
    only = evaluate(GroupInputs.build("g", requests=cgh), AuditSettings(), only=["R23"]).findings
    mixed = evaluate(
        GroupInputs.build("g", requests=[*cgh, _join(5000)]), AuditSettings(), only=["R23"]
    ).findings
    assert [f.severity for f in only] == ["info"]
    assert [f.severity for f in mixed] == ["warning"]


def test_r17_says_when_the_log_cannot_support_it() -> None:
    sync = _join(1000, api_name="SYNC_GROUP", assignments=(("m1", None), ("m2", None)))
    audit = evaluate(GroupInputs.build("g", requests=[sync]), AuditSettings(), only=["R17"])
    assert audit.findings == ()
    assert audit.unsupported == (
        ("R17", "the leader's SyncGroup assignments carry no bytes (only lengths are logged)"),
    )


def check_catalogue() -> None:
    """The registry's rules are numbered without a gap from R01, each with a kebab-case name, its own
    settings class as its ``audit`` section, and its incident in the simulator (all read from the
    registry: a new rule is checked with no edit here, tests/unit/audit/test_adding_a_rule.py)."""
    from simulator.incidents import INCIDENTS

    ids = rule_ids()
    assert ids == tuple(f"R{n:02d}" for n in range(1, len(RULES) + 1))
    assert sorted(INCIDENTS) == list(ids), "every rule has its incident in simulator/incidents.py"
    settings = AuditSettings()
    assert list(settings.rules) == list(ids)
    for rule_id, rule in RULES.items():
        assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
        assert type(settings.rule(rule_id)) is rule.settings


def test_every_catalogue_pattern_is_a_rule_with_a_kebab_case_name() -> None:
    check_catalogue()
    assert len(RULES) == 23
    assert RULES["R02"].name == "session-timeout-eviction"
    assert RULES["R03"].name == "max-poll-interval-exceeded"


def test_default_yaml_mirrors_the_typed_defaults() -> None:
    import yaml

    text = (Path(__file__).resolve().parents[3] / "rebalance_replay" / "conf" / "default.yaml").read_text(
        encoding="utf-8"
    )
    assert yaml.safe_load(text)["audit"] == defaults(AuditSettings)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"R01": {"max": 3}}, "unknown key 'audit.R01.max'"),
        ({"R01": {"severity": "loud"}}, "audit.R01.severity must be one of info, warning, critical"),
        ({"R01": {"max_rebalances_per_hour": "x"}}, "audit.R01.max_rebalances_per_hour must be an integer"),
        ({"R01": {"enabled": "yes"}}, "audit.R01.enabled must be true or false"),
        ({"R99": {}}, "unknown key 'audit.R99'"),
        ({"evidence_cap": 0}, "audit.evidence_cap must be ≥ 1"),
    ],
)
def test_bad_audit_settings_are_one_line_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_mapping({"audit": data})


def test_set_override_reaches_the_rule() -> None:
    from rebalance_replay.jobs.config import ConfigError, load_config

    config = load_config(overrides=["audit.R01.max_rebalances_per_hour=6", "audit.R05.enabled=false"])
    assert config.audit.rule("R01").max_rebalances_per_hour == 6  # type: ignore[attr-defined]
    assert config.audit.rule("R05").enabled is False
    with pytest.raises(ConfigError, match=r"audit\.R01\.severity"):
        load_config(overrides=["audit.R01.severity=loud"])


def test_cli_lists_audit_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    from rebalance_replay.jobs.cli import _rule_ids, build_parser

    parser = build_parser()
    assert "audit" in parser.format_help()
    args = parser.parse_args(["audit", "--warehouse", "w", "--rules", "r2,R03"])
    assert args.rules == ("R02", "R03")
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="unknown rule 'R99'"):
        _rule_ids("R99")


def test_reason_rules_say_when_the_clients_are_too_old() -> None:
    old = [_join(1000), _join(2000, api_name="LEAVE_GROUP")]
    old = [r.__class__(**{**r._asdict(), "api_version": 4}) for r in old]
    audit = evaluate(GroupInputs.build("g", requests=old), AuditSettings(), only=["R03", "R16"])
    assert dict(audit.unsupported) == {
        "R03": "the client's leave reasons need LEAVE_GROUP v5+ (the log has up to v4)",
        "R16": "the client's rejoin reasons need JOIN_GROUP v8+ (the log has up to v4)",
    }
    new = evaluate(GroupInputs.build("g", requests=[_join(1000)]), AuditSettings(), only=["R16"])
    assert new.unsupported == ()


def test_request_rows_with_fields_missing_are_read_not_crashed_on() -> None:
    """Rows reach the audit as JSON (``to_json`` drops nulls): a fuzzed JoinGroup whose protocol has no
    name, a commit partition without an error, a leave member without ids — the row still reads."""
    row = {
        "api_name": "JOIN_GROUP",
        "arrival_ms": 1000,
        "protocols": [{"metadata": "AAE="}, {"name": "range"}],
        "response_commit_partitions": [{"topic": "t", "partition": 0}],
        "leave_members": [{}],
        "assignments": [{"assignment": None}],
    }
    req = Req.from_row(row)
    assert req.protocol_names == ("range",)
    assert req.commit_errors == ()
    assert req.leave_members == ((None, None, None),)
    assert req.assignments == (("", None),)


def test_the_rules_doc_is_the_registry() -> None:
    from rebalance_replay.transforms.audit.registry import catalogue_markdown

    doc = (Path(__file__).resolve().parents[3] / "docs" / "audit-rules.md").read_text(encoding="utf-8")
    assert doc == catalogue_markdown(), "run: python -m rebalance_replay.jobs.config"


def _leave(t: int, member: str, reason: str) -> Req:
    return _join(t, member, api_name="LEAVE_GROUP", leave_members=((member, None, reason),))


def test_r03_counts_every_poll_timeout_leave() -> None:
    """Two poll-timeout LeaveGroups (the Java consumer's reason "consumer poll timeout has expired."):
    two occurrences, said in the plural; a leave with another reason is no poll timeout."""
    reqs = [
        _join(1000, "m1", rebalance_timeout_ms=300_000),
        _leave(5000, "m1", "consumer poll timeout has expired."),
        _join(9000, "m1", rebalance_timeout_ms=300_000),
        _leave(20_000, "m1", "consumer poll timeout has expired."),
        _leave(30_000, "m1", "the consumer is being closed"),
    ]
    reqs = [r.__class__(**{**r._asdict(), "api_version": 5}) for r in reqs]
    got = evaluate(GroupInputs.build("g", requests=reqs), AuditSettings(), only=["R03"]).findings
    assert [f.occurrences for f in got] == [2]
    assert got[0].summary.startswith('c1 left the group 2 times with "consumer poll timeout has expired"')
    assert got[0].metric("poll_timeouts") == 2 and got[0].metric("max_poll_interval_ms") == 300_000


def test_r10_one_client_and_host_is_less_certain() -> None:
    """The instance id fenced between two connections of one client id and host (a restarted process and
    a stale one): confidence 0.7, and the summary says why."""
    common = {"group_instance_id": "i-1", "client_address": "10.1.0.10:5000", "api_name": "HEARTBEAT"}
    reqs = [
        _join(1000, "m1", **{**common, "connection": "b:9092-10.1.0.10:5000-1"}),
        _join(2000, "m2", **{**common, "connection": "b:9092-10.1.0.10:5001-2"}),
        _join(
            3000,
            "m1",
            **{**common, "connection": "b:9092-10.1.0.10:5000-1", "error_name": "FENCED_INSTANCE_ID"},
        ),
    ]
    got = evaluate(GroupInputs.build("g", requests=reqs), AuditSettings(), only=["R10"]).findings
    assert [(f.confidence, f.occurrences) for f in got] == [(0.7, 1)]
    assert got[0].summary == (
        "group.instance.id i-1 is used by 2 client connections (c1 (10.1.0.10)); they fence each other: 1 "
        "request answered FENCED_INSTANCE_ID (confidence 0.70: one client id and host: possibly a restarted "
        "process with a stale one still running)"
    )


def test_r17_without_a_leader_sync_says_so() -> None:
    audit = evaluate(GroupInputs.build("g", requests=[_join(1000)]), AuditSettings(), only=["R17"])
    assert audit.findings == ()
    assert audit.unsupported == (("R17", "no leader SyncGroup with assignments in the log"),)


def test_r21_the_rejoin_reason_of_a_failed_commit() -> None:
    """The audit catalogue's #21: a JoinGroup whose reason says "offset commit failed since group is
    already rebalancing" (the Java consumer's rejoin after CommitFailedException) shows the race even
    when the refused commit itself is not in the log; the same words on another request do not."""
    reason = "offset commit failed since group is already rebalancing"
    rejoin = _join(5000, "m1", reason=reason)
    leave = _join(6000, "m2", api_name="LEAVE_GROUP", reason=reason)
    got = evaluate(
        GroupInputs.build("g", requests=[_join(1000), rejoin, leave]), AuditSettings(), only=["R21"]
    )
    assert [(f.occurrences, [e.arrival_ms for e in f.evidence]) for f in got.findings] == [(1, [5000])]
    alone = evaluate(GroupInputs.build("g", requests=[_join(1000), leave]), AuditSettings(), only=["R21"])
    assert alone.findings == ()


def test_r21_names_the_rebalances_its_commits_raced_without_blaming_them() -> None:
    """A refused commit raced the rebalances in progress when it arrived: from their start to their end,
    both included, or on to the end of the log for one still open; not one that ended before it."""
    from dataclasses import replace

    rbs = [
        _rb(0, 1000, follow_up=False),  # 1000..1500: a commit at its first millisecond
        _rb(1, 3000, follow_up=False),  # 3000..3500: a commit at its last
        _rb(2, 4000, follow_up=False),  # 4000..4500: no commit inside (one comes at 5000, after it)
        replace(_rb(3, 6000, follow_up=False), ended_ms=None, total_duration_ms=None),  # still open
    ]
    commits = [
        _join(t, api_name="OFFSET_COMMIT", commit_errors=("REBALANCE_IN_PROGRESS",))
        for t in (1000, 3500, 5000, 7000)
    ]
    got = evaluate(GroupInputs.build("g", requests=commits, rebalances=rbs), AuditSettings(), only=["R21"])
    assert [f.rebalance_seqs for f in got.findings] == [(0, 1, 3)]
    # the commits suffered those rebalances, they did not cause them: no rebalance time is theirs
    assert got.findings[0].metric("rebalance_time_caused_ms") == 0.0
    assert got.findings[0].metric("member_seconds_without_assignment") == 0.0


@pytest.mark.parametrize(("failed", "severity"), [(4, "info"), (5, "warning")])
def test_r21_tallies_each_error_and_warns_from_five_failed_commits(failed: int, severity: str) -> None:
    """Each racing error named with its count, and a warning from ``warning_failed_commits`` (5) on."""
    errors = ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID")
    commits = [
        _join(1000 * (k + 1), api_name="OFFSET_COMMIT", commit_errors=(errors[k % 4],)) for k in range(failed)
    ]
    got = evaluate(GroupInputs.build("g", requests=commits), AuditSettings(), only=["R21"]).findings
    tally = {4: "ILLEGAL_GENERATION ×1, REBALANCE_IN_PROGRESS ×2, UNKNOWN_MEMBER_ID ×1"}.get(
        failed, "ILLEGAL_GENERATION ×2, REBALANCE_IN_PROGRESS ×2, UNKNOWN_MEMBER_ID ×1"
    )
    assert [(f.severity, f.summary) for f in got] == [
        (
            severity,
            f"{failed} offset commits failed because the group was rebalancing ({tally}): the work "
            "behind them may be processed twice",
        )
    ]


def test_every_rule_is_described_for_the_person_reading_its_finding() -> None:
    """docs/audit-rules.md has a section per rule: its thresholds from the registry and the hand-written
    meaning, evidence, fix, false-positive modes and reading (``about.ABOUT``), linked from the table."""
    from rebalance_replay.transforms.audit.about import ABOUT
    from rebalance_replay.transforms.audit.registry import catalogue_markdown

    assert set(ABOUT) == set(rule_ids())
    doc = catalogue_markdown()
    for rule_id in rule_ids():
        name = RULES[rule_id].name
        assert f"[{rule_id}](#{rule_id.lower()}-{name})" in doc
        assert f"## {rule_id} {name}" in doc
    assert "- `max_rebalances_per_hour` = 10: more rebalances started within any 60-minute window" in doc
    assert doc.count("**When it can be wrong.**") == len(rule_ids())
