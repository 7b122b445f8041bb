"""Every version-gated behaviour switches on at the release that brought it, not a patch earlier or later:
each feature of ``VersionFeatures`` checked at its first release and the release before (the releases as
the feature's own comment names them: KIPs and KAFKA tickets, docs/coordinator-semantics.md's version
notes). Found by mutation testing (stop 55): ``leave_by_instance_id`` from 2.4.1 instead of 2.4.0 passed
every test."""

from __future__ import annotations

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig

#: feature → (the last release without it, the first with it)
SWITCHED_ON = {
    "static_membership": ("2.2.2", "2.3.0"),  # KIP-345
    "accept_joining_member": ("2.5.1", "2.6.0"),  # KAFKA-9844/9885
    "static_stable_protocol_check": ("2.6.0", "2.6.1"),
    "static_completing_rebalances": ("2.4.1", "2.5.0"),  # KAFKA-9801
    "validate_current_member": ("2.8.2", "3.0.0"),
    "leave_by_instance_id": ("2.3.1", "2.4.0"),  # KIP-345 batch LeaveGroup (v3)
    "sync_protocol_check": ("2.4.1", "2.5.0"),  # KIP-559
    "remove_drops_pending": ("2.8.2", "3.0.0"),
    "client_reasons": ("3.1.2", "3.2.0"),  # KIP-800
    "state_in_causes": ("2.5.1", "2.6.0"),
}


@pytest.mark.parametrize("feature", sorted(SWITCHED_ON))
def test_a_feature_switches_on_at_its_release(feature: str) -> None:
    before, first = SWITCHED_ON[feature]
    assert getattr(CoordinatorConfig(kafka_version=before).features(), feature) is False
    assert getattr(CoordinatorConfig(kafka_version=first).features(), feature) is True
    assert getattr(CoordinatorConfig(kafka_version="3.9.1").features(), feature) is True


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.2.2", "no_check"),
        ("2.3.0", "rip"),  # Heartbeat in CompletingRebalance: REBALANCE_IN_PROGRESS
        ("2.6.0", "rip"),
        ("2.6.1", "none"),  # KAFKA-10134 (backported to 2.6.1): NONE, the session refreshed
        ("3.7.2", "none"),
    ],
)
def test_heartbeat_in_completing_rebalance_by_release(version: str, expected: str) -> None:
    assert CoordinatorConfig(kafka_version=version).features().heartbeat_completing == expected


@pytest.mark.parametrize(
    ("feature", "on", "off"),
    [
        # KAFKA-12890: 2.8.1 and 3.0+, not 2.8.0
        ("pending_sync_timeout", ("2.8.1", "2.8.2", "3.0.0"), ("2.7.2", "2.8.0")),
        # KAFKA-14009: 3.3.2 and 3.4+
        ("rejoin_updates_timeouts", ("3.3.2", "3.4.0"), ("3.2.3", "3.3.1")),
        # gen -1 commits with a member id on an Empty group refused from 3.0.0 to 3.3.0
        ("commit_strict_gen_minus_one", ("3.0.0", "3.3.0"), ("2.8.2", "3.3.1")),
        # 2.2 and 2.3 check CompletingRebalance before membership
        ("commit_state_before_member", ("2.2.0", "2.3.1"), ("2.4.0", "3.7.2")),
        # KAFKA-8715: 2.3.0 alone
        ("static_id_uses_timestamp", ("2.3.0",), ("2.2.2", "2.3.1")),
    ],
)
def test_a_feature_of_some_releases_only(feature: str, on: tuple[str, ...], off: tuple[str, ...]) -> None:
    assert all(getattr(CoordinatorConfig(kafka_version=v).features(), feature) is True for v in on)
    assert all(getattr(CoordinatorConfig(kafka_version=v).features(), feature) is False for v in off)
