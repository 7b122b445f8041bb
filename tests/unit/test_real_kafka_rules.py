"""The real-broker scenario library covers the audit: every rule has a scenario made by real clients or
is listed, with the reason, as one no real client of the harness can trigger (pure: no broker needed)."""

from __future__ import annotations

from rebalance_replay.transforms.audit.registry import rule_ids
from simulator.realkafka.audit_truth import LOG_LIMITS, NOT_TRIGGERABLE
from simulator.realkafka.scenarios import SCENARIOS


def test_every_rule_has_a_real_client_scenario_or_a_reason() -> None:
    covered = {rule for s in SCENARIOS for rule in s.rules}
    assert covered.isdisjoint(NOT_TRIGGERABLE)
    assert covered | set(NOT_TRIGGERABLE) == set(rule_ids())
    assert all(len(why) > 40 for why in NOT_TRIGGERABLE.values())
    assert {rule for rule, _ in LOG_LIMITS} <= covered


def test_controls_are_ordinary_behaviour() -> None:
    """The issue's controls: a group's start with the initial delay, a deploy with static membership,
    scale-out, a consumer closing cleanly — each a control scenario expecting no rule."""
    controls = {s.name for s in SCENARIOS if s.control}
    assert {"birth", "static-rolling-deploy", "scale-up", "scale-down"} <= controls
    assert all(not s.rules and not s.also for s in SCENARIOS if s.control)
