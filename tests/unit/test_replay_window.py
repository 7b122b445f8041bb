"""Pure replays of a log window that opens on live groups (no Spark): the model warms up from what it
sees, learns what it could not see (the protocol), and knows what it cannot know (the session timeout of
a member seen only through heartbeats)."""

from __future__ import annotations

from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.clients import SimConfig, simulate
from simulator.log_render import complete_record
from tests.integration.test_replay import T0, story_configs


def _rows(cfg: SimConfig) -> list[dict[str, Any]]:
    rows = []
    for i, rec in enumerate(simulate(cfg), 1):
        r = complete_record({k: v for k, v in rec.items() if not k.startswith("_")}, kafka_version="3.7")
        r.update(source_file="f", line_no=i, broker_id=cfg.broker_id)
        rows.append(r)
    return rows


def _window(cfg: SimConfig, start: int, end: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [r for r in _rows(cfg) if start <= r["arrival_ms"] < end]
    replayer = GroupReplayer(cfg.group_id, ReplaySettings(coordinator=CoordinatorConfig(kafka_version="3.7")))
    replayer.feed(rows)
    return rows, replayer.process(end).rows["predictions"]


def test_window_learns_the_protocol_of_a_live_group() -> None:
    shop = story_configs()[0]
    rows, predictions = _window(shop, T0 + 80_000, T0 + 140_000)
    assert len(predictions) == sum(1 for r in rows if r["api_name"] != "FIND_COORDINATOR")
    scored = [p for p in predictions if p["scored"]]
    # the rebalances after a LeaveGroup and a session expiry: SyncGroup v5 names the protocol, which the
    # warm-started model never saw chosen; it learns it rather than predicting INCONSISTENT_GROUP_PROTOCOL
    assert sum(1 for p in scored if p["api"] == "SYNC_GROUP") >= 4
    assert all(p["matched"] for p in scored), [
        (p["seq"], p["api"], p["mismatch_kinds"]) for p in scored if not p["matched"]
    ]


def test_window_does_not_score_the_expiry_of_a_member_seen_only_in_heartbeats() -> None:
    ledger = story_configs()[1]
    _, predictions = _window(ledger, T0 + 80_000, T0 + 140_000)
    bad = [
        (p["api"], p["observed_error"], p["predicted_error"])
        for p in predictions
        if p["scored"] and not p["matched"]
    ]
    # the broker expires ledger-1 (20 s session, never seen joining in this window): once that member has
    # been silent for longer than the smallest session timeout the model cannot know whether it is still
    # a member, so the heartbeat the broker answers REBALANCE_IN_PROGRESS is not scored (it used to be a
    # disagreement); what the model does score agrees
    assert bad == []
    uncertain = [p for p in predictions if (p["unscored_reason"] or "").endswith("may have expired")]
    assert any(p["observed_error"] == "REBALANCE_IN_PROGRESS" for p in uncertain)
    after = [p for p in predictions if p["arrival_ms"] > T0 + 118_004]
    assert after and not any(p["scored"] and not p["matched"] for p in after)
