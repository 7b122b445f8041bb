"""Report pages as a person meets them, built without Spark for the browser tests: a group with long
member ids, absolute evidence paths and many findings; a rebalance storm (≈150 rebalances in 20 minutes);
the overview of both with its all-groups timeline. (The 1,000-member day is ``big_group`` in
test_report_browser.py.)"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

from rebalance_replay.jobs.report import write_plotly_asset
from rebalance_replay.transforms.report.html import group_html, overview_html
from rebalance_replay.transforms.report.model import (
    GroupPage,
    HeartbeatBin,
    api_agreement,
    build_group_page,
    build_overview,
    heartbeat_bin_ms,
)

T0 = 1_717_401_600_000  # 2024-06-03T08:00:00Z
LOG_DIR = "/var/lib/kafka/request-logs/cluster-eu-west-1-production"
TRIGGERS = ("new_member", "member_left", "session_expiry", "rebalance_timeout_eviction", "leader_rejoin")


def _log(broker: int) -> str:
    return f"{LOG_DIR}/broker-{broker}/kafka-request.log.2024-06-03-08.gz"


def _member_ids(rnd: random.Random, group: str, n: int) -> list[str]:
    return [f"consumer-{group}-{i}-{uuid.UUID(int=rnd.getrandbits(128))}" for i in range(n)]


def _pred(group: str, api: str, member: str, t: int, done: int, line: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "source_file": _log(1 + line % 2),
        "line_no": line,
        "group_id": group,
        "api": api,
        "seq": line,
        "member_id": member,
        "group_instance_id": None,
        "request_generation_id": 1,
        "arrival_ms": t,
        "observed_error": "NONE",
        "predicted_error": "NONE",
        "observed_generation_id": 2,
        "predicted_generation_id": 2,
        "observed_member_id": member,
        "predicted_member_id": member,
        "observed_completion_ms": done,
        "scored": True,
        "matched": True,
        "mismatch_kinds": None,
    }
    row.update(kw)
    return row


def _group(
    group: str,
    *,
    members: int,
    rebalances: list[tuple[int, int]],
    span_ms: int,
    findings: int,
    seed: int,
) -> GroupPage:
    """A group of ``members`` long-id members heartbeating every 3 s over ``span_ms``, rebalancing at
    ``rebalances`` (start, duration) with every member joining and syncing, ``findings`` open findings
    naming every member, with ten absolute-path evidence rows each, and a few mismatches."""
    rnd = random.Random(seed)
    ids = _member_ids(rnd, group, members)
    total = members * (span_ms // 3000)
    bin_ms = heartbeat_bin_ms(total, span_ms)
    step = max(bin_ms, 3000)  # exact ticks every 3 s, or bins of bin_ms
    bins = [HeartbeatBin(m, T0 + b * step, step // 3000) for m in ids for b in range(span_ms // step)]
    preds: list[dict[str, Any]] = []
    rebs: list[dict[str, Any]] = []
    line = 1000
    for seq, (start, dur) in enumerate(rebalances, 1):
        for i, m in enumerate(ids):
            line += 1
            mism = seq == 2 and i < 3
            preds.append(
                _pred(
                    group,
                    "JOIN_GROUP",
                    m,
                    start + i * 5,
                    start + dur * 2 // 3,
                    line,
                    matched=not mism,
                    mismatch_kinds=["error"] if mism else None,
                    predicted_error="REBALANCE_IN_PROGRESS" if mism else "NONE",
                )
            )
            line += 1
            preds.append(_pred(group, "SYNC_GROUP", m, start + dur * 2 // 3 + i, start + dur, line))
        trigger = TRIGGERS[(seq * 7) % len(TRIGGERS)]
        rebs.append(
            {
                "group_id": group,
                "rebalance_seq": seq,
                "generation_from": seq - 1,
                "generation_to": seq,
                "started_ms": start,
                "join_completed_ms": start + dur * 2 // 3,
                "stable_ms": start + dur,
                "ended_ms": start + dur,
                "outcome": "stable",
                "total_duration_ms": dur,
                "join_phase_ms": dur * 2 // 3,
                "sync_phase_ms": dur - dur * 2 // 3,
                "trigger": trigger,
                "trigger_cause": f"{ids[seq % members]} {trigger.replace('_', ' ')}",
                "members_before": ids,
                "members_after": ids,
                "joined": ids if seq == 1 else ids[: seq % 3],
                "left": ids[2 : 2 + seq % 6],
                "evicted": ids[-1:] if trigger == "session_expiry" else [],
                "partitions_moved": 12 * members,
            }
        )
    sessions = [
        {
            "group_id": group,
            "member_id": m,
            "group_instance_id": None,
            "client_id": f"consumer-{group}-{i}",
            "client_address": f"10.20.{i // 200}.{i % 200 + 10}",
            "generation_id": len(rebalances),
            "joined_ms": T0 + 1000 + i,
            "last_heartbeat_ms": T0 + span_ms - 3000,
            "heartbeats": span_ms // 3000,
            "commits": span_ms // 5000,
            "ended_ms": None,
            "end_reason": "open",
            "is_leader": i == 0,
        }
        for i, m in enumerate(ids)
    ]
    rules = [("R02", "session-timeout-eviction", "critical"), ("R13", "x", "warning"), ("R03", "y", "info")]
    found = []
    for k in range(findings):
        rule_id, rule, severity = rules[k % len(rules)]
        at = T0 + (k + 1) * span_ms // (findings + 2)
        found.append(
            {
                "finding_key": f"{group}-{k:04d}",
                "status": "new" if k % 4 == 0 else "ongoing",
                "rule_id": rule_id,
                "rule": rule,
                "severity": severity,
                "confidence": 0.9,
                "summary": f"{ids[k % members]} was removed by the coordinator after its session timed out",
                "fix": "raise session.timeout.ms to 45000 or find what stalls the poll loop",
                "group_id": group,
                "member_ids": ids,
                "window_start_ms": at,
                "window_end_ms": at + 30_000,
                "evidence": [
                    {
                        "source_file": _log(1 + j % 2),
                        "line_no": 1000 + 37 * j + k,
                        "api": "HEARTBEAT",
                        "arrival_ms": at,
                    }
                    for j in range(10)
                ],
            }
        )
    return build_group_page(
        group,
        predictions=preds,
        heartbeat_bins=bins,
        bin_ms=bin_ms,
        transitions=[],
        rebalances=rebs,
        sessions=sessions,
        findings=found,
        agreement=api_agreement(
            [
                {"api": "JOIN_GROUP", "n": 100, "scored": 100, "matched": 97},
                {"api": "HEARTBEAT", "n": 9, "scored": 9, "matched": 9},
            ]
        ),
    )


def normal_group() -> GroupPage:
    """12 members over an hour, six rebalances, 30 open findings."""
    hour = 3_600_000
    rebalances = [(T0 + k * hour // 7, 4_000 + 9_000 * k) for k in range(1, 7)]
    return _group(
        "payments-ledger-settlement-eu", members=12, rebalances=rebalances, span_ms=hour, findings=30, seed=3
    )


def storm_group() -> GroupPage:
    """A rebalance storm: 150 rebalances in 20 minutes (one every 8 s, 1–6 s each), 8 members."""
    rnd = random.Random(11)
    rebalances = [
        (T0 + 60_000 + k * 8_000 + rnd.randrange(0, 1500), rnd.randrange(1_000, 6_000)) for k in range(150)
    ]
    return _group("orders-storm", members=8, rebalances=rebalances, span_ms=22 * 60_000, findings=6, seed=5)


def timeline_row(page: GroupPage, name: str) -> dict[str, Any]:
    """A group's row of ``Overview.timeline`` (the contract: its rebalances and open findings)."""
    return {
        "group_id": page.group_id,
        "page": name,
        "rebalances": [
            {
                "seq": b.rebalance_seq,
                "start_ms": b.start_ms,
                "end_ms": b.end_ms,
                "trigger": b.trigger,
                "generation_to": None,
            }
            for b in page.bands
        ],
        "findings": [
            {
                "time_ms": int(f.get("window_start_ms") or page.start_ms),
                "severity": str(f.get("severity")),
                "rule_id": str(f.get("rule_id")),
                "summary": str(f.get("summary")),
                "anchor": f["anchor"],
            }
            for f in page.findings or []
            if f.get("status") != "resolved"
        ],
    }


def write_report(out: Path) -> dict[str, Path]:
    """The overview, the normal and the storm group pages (with the plotly asset) in ``out``."""
    write_plotly_asset(out)
    pages = {"normal": normal_group(), "storm": storm_group()}
    paths: dict[str, Path] = {}
    rows, groups, findings = [], [], []
    for key, page in pages.items():
        name = f"group-{key}.html"
        paths[key] = out / name
        paths[key].write_text(
            group_html(page, title=f"/srv/warehouses/{key} (scheduled tables)"), encoding="utf-8"
        )
        rows.append(timeline_row(page, name))
        groups.append({"group_id": page.group_id, "page": name, **page.stats})
        findings += [
            {k: v for k, v in f.items() if k not in ("anchor", "evidence_text", "evidence_items")}
            for f in page.findings or []
        ]
    # quiet groups with long names: one row each on the overview's timeline, no rebalance
    for k in range(6):
        gid = f"inventory-reservations-quiet-consumer-group-{k}"
        name = f"group-quiet-{k}.html"
        groups.append(
            {"group_id": gid, "page": name, "rebalances": 0, "rebalance_ms": 0, "members": 3, "findings": 0}
        )
        rows.append({"group_id": gid, "page": name, "rebalances": [], "findings": []})
        (out / name).write_text(f"<!DOCTYPE html><title>{gid}</title><p>{gid}</p>", encoding="utf-8")
    ov = build_overview(
        {"lines_read": 123456, "requests": 120000, "rebalances": 156, "agreement": 0.987},
        groups,
        findings,
        agreement=api_agreement([{"api": "JOIN_GROUP", "n": 100, "scored": 100, "matched": 97}]),
        data_docs=None,
        title="/srv/warehouses/prod (scheduled tables)",
    )
    ov.timeline = rows  # type: ignore[attr-defined]
    ov.start_ms = min(p.start_ms for p in pages.values())  # type: ignore[attr-defined]
    ov.end_ms = max(p.end_ms for p in pages.values())  # type: ignore[attr-defined]
    paths["overview"] = out / "index.html"
    paths["overview"].write_text(overview_html(ov), encoding="utf-8")
    return paths
