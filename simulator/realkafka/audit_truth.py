"""The audit on real clients: every rule's incident, recorded from real brokers and real clients, checked
against the scenario's ground truth; ordinary behaviour (the controls) must raise no warning.

Each scenario of :mod:`simulator.realkafka.scenarios` says which rules it must raise (``Scenario.rules``:
rule → the processes whose members the finding must name) or that it is a control. A finding is *found*
when it is in the scenario's group, names a member of each of those processes (the member ids the
processes' own consumers reported) and its window lies within the scenario's run. Any other warning or
critical finding is a false alarm. ``python -m simulator.realkafka.agreement --rules`` prints the table
rule × client × release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rebalance_replay.transforms.audit.registry import rule_ids
from simulator.realkafka.agreement import RecordingResult, scenario_clients
from simulator.realkafka.scenarios import SCENARIOS

#: Rules no real client of the harness can make happen, and why.
NOT_TRIGGERABLE: dict[str, str] = {
    "R09": (
        "more than the two rounds KIP-429 needs after one trigger is the mark of a client or assignor bug "
        "(KAFKA-8767 and kin); the cooperative Java and librdkafka clients here take two rounds "
        "(scenarios cooperative, rdkafka-cooperative: no finding)"
    ),
    "R15": (
        "a leaked member needs the answer to a first JoinGroup lost on the wire; that JoinGroup is answered "
        "at once (MEMBER_ID_REQUIRED), so only a network fault between broker and client loses it, and the "
        "harness injects none"
    ),
    "R22": (
        "probing rebalances come from Kafka Streams (probing.rebalance.interval.ms, 10 minutes), not from a "
        "plain consumer; the harness runs plain consumers"
    ),
}

#: (rule, release line) → why that release's log cannot show the rule's incident.
LOG_LIMITS: dict[tuple[str, str], str] = {
    ("R03", "2.7"): (
        "LeaveGroup carries the client's reason from v5 (Kafka 3.2): a 2.7 log cannot tell a poll timeout "
        "from a close"
    ),
    ("R17", "2.7"): (
        "the text-era log prints the leader's SyncGroup assignments as buffer descriptions "
        "(java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]): who got which partitions is not in it "
        "(the audit says the rule is unsupported there)"
    ),
    ("R16", "2.7"): (
        "JoinGroup carries the client's reason from v8 (Kafka 3.2): a 2.7 log cannot tell a metadata "
        "rejoin from any other"
    ),
}

#: Slack around a scenario's run for a finding's window (ms): before its first action, after its last
#: (a session expiry after the last close).
WINDOW_BEFORE_MS = 5_000
WINDOW_AFTER_MS = 60_000
ALARMS = ("warning", "critical")
WARM_UP = "(warm-up)"


@dataclass(frozen=True)
class Verdict:
    """One expected rule in one recorded scenario."""

    release: str
    scenario: str
    clients: str
    rule: str
    outcome: str  # found | missed | not in this log
    detail: str = ""


def _member_ids(truth: dict[str, Any], processes: Sequence[str]) -> dict[str, set[str]]:
    """Per named process: the member ids its consumers reported (every restart of it: ``p1``, ``p1#2``),
    and, when it is the scenario's only process of its client kind, the prefix every member id of that
    kind carries (``consumer-<group>-`` for the Java client, ``rdkafka-`` for librdkafka): a member evicted
    before its first assignment never reaches the client's events."""
    out: dict[str, set[str]] = {p: set() for p in processes}
    for key, events in truth.get("events", {}).items():
        base = key.split("#", 1)[0]
        if base in out:
            out[base] |= {e["member_id"] for e in events if e.get("member_id")}
    kinds: dict[str, set[str]] = {}
    for p in truth.get("processes", []):
        kinds.setdefault(p["kind"], set()).add(p["process"].split("#", 1)[0])
    prefix = {"java": f"consumer-{truth['group']}-", "librdkafka": "rdkafka-"}
    for kind, names in kinds.items():
        (only,) = names if len(names) == 1 else (None,)
        if only in out and kind in prefix:
            out[only].add(PREFIX_MARK + prefix[kind])
    return out


#: marks a member-id prefix in :func:`_member_ids`' sets (a member id never starts with it)
PREFIX_MARK = "\0prefix:"


def _names_one_of(named: set[str], ids: set[str]) -> bool:
    if ids & named:
        return True
    prefixes = [i[len(PREFIX_MARK) :] for i in ids if i.startswith(PREFIX_MARK)]
    return any(m.startswith(p) for m in named for p in prefixes)


def _span(truth: dict[str, Any]) -> tuple[int, int]:
    times = [a["t"] for a in truth.get("actions", [])]
    return (min(times), max(times)) if times else (0, 1 << 62)


def _matches(f: dict[str, Any], members: dict[str, set[str]], span: tuple[int, int]) -> str | None:
    """Why ``f`` is not the expected finding (None: it is)."""
    named = set(f.get("member_ids") or [])
    for proc, ids in members.items():
        if not _names_one_of(named, ids):
            reported = len([i for i in ids if not i.startswith(PREFIX_MARK)])
            return f"names no member of {proc} ({reported} member id(s) reported by its consumers)"
    lo, hi = f.get("window_start_ms"), f.get("window_end_ms")
    if (
        lo is not None
        and hi is not None
        and (lo < span[0] - WINDOW_BEFORE_MS or hi > span[1] + WINDOW_AFTER_MS)
    ):
        return f"window {lo}..{hi} outside the scenario's run {span[0]}..{span[1]}"
    return None


def verdicts(results: Sequence[RecordingResult]) -> tuple[list[Verdict], list[str]]:
    """Every expected rule of every recorded scenario, found or not, and the problems: missed rules, wrong
    members or windows, warning/critical findings nobody expected (the controls' and the warm-up's)."""
    by_name = {s.name: s for s in SCENARIOS}
    out: list[Verdict] = []
    problems: list[str] = []
    for res in results:
        line = res.manifest["release"]
        truth_of = {sc["group"]: sc for sc in res.truth["scenarios"]}
        warm_up = res.manifest.get("warmup_group", "__warmup")
        by_group: dict[str, list[dict[str, Any]]] = {}
        for f in res.findings:
            if f.get("status") != "resolved":
                by_group.setdefault(f["group_id"], []).append(f)
        for f in by_group.get(warm_up, []):
            if f["severity"] in ALARMS:
                problems.append(f"{line} {WARM_UP}: {f['rule_id']} {f['severity']}: {f['summary']}")
        for group, truth in sorted(truth_of.items()):
            scenario = by_name.get(truth["scenario"])
            if scenario is None:
                continue
            found = by_group.get(group, [])
            where = f"{line}/{res.manifest['profile']} {scenario.name}"
            for rule, processes in sorted(scenario.rules.items()):
                candidates = [f for f in found if f["rule_id"] == rule]
                members = _member_ids(truth, processes)
                reasons = [_matches(f, members, _span(truth)) for f in candidates]
                if any(r is None for r in reasons):
                    outcome, detail = "found", ""
                elif (rule, line) in LOG_LIMITS and not candidates:
                    outcome, detail = "not in this log", LOG_LIMITS[(rule, line)]
                else:
                    outcome = "missed"
                    detail = "; ".join(r for r in reasons if r) or "no finding"
                    problems.append(f"{where}: {rule} {outcome}: {detail}")
                out.append(Verdict(line, scenario.name, scenario_clients(truth), rule, outcome, detail))
            for f in found:
                expected = f["rule_id"] in scenario.rules or f["rule_id"] in scenario.also
                if f["severity"] in ALARMS and (scenario.control or not expected):
                    kind = "control" if scenario.control else "unexpected"
                    problems.append(f"{where} ({kind}): {f['rule_id']} {f['severity']}: {f['summary']}")
    return out, problems


def rule_table(results: Sequence[RecordingResult], vs: Sequence[Verdict]) -> str:
    """Markdown: rule × scenario × client, one column per release (found / missed / not in this log),
    the rules no real client triggers with the reason, then the controls' warning/critical counts."""
    releases = sorted({r.manifest["release"] for r in results})
    cells: dict[tuple[str, str], dict[str, Verdict]] = {}
    for v in vs:
        cells.setdefault((v.rule, v.scenario), {})[v.release] = v
    out = [
        "| rule | scenario | client | " + " | ".join(releases) + " |",
        "|---|---|---|" + "---|" * len(releases),
    ]
    for rule in rule_ids():
        rows = sorted(k for k in cells if k[0] == rule)
        if not rows:
            why = NOT_TRIGGERABLE.get(rule)
            mark = "not triggerable" if why else "no scenario"
            out.append(f"| {rule} | — {why or ''} | — | " + " | ".join([mark] * len(releases)) + " |")
            continue
        for key in rows:
            per = cells[key]
            kinds = sorted({v.clients for v in per.values()})
            marks = [per[r].outcome if r in per else "—" for r in releases]
            out.append(f"| {rule} | {key[1]} | {' / '.join(kinds)} | " + " | ".join(marks) + " |")
    notes = sorted({f"- {rule} on {line}: {why}" for (rule, line), why in LOG_LIMITS.items()})
    out += ["", "*not in this log*:", "", *notes, ""]
    out += ["| control | client | " + " | ".join(releases) + " |", "|---|---|" + "---|" * len(releases)]
    for s in (s for s in SCENARIOS if s.control):
        marks = []
        seen: set[str] = set()
        for line in releases:
            res_l = [r for r in results if r.manifest["release"] == line]
            truth = next((t for r in res_l for t in r.truth["scenarios"] if t["scenario"] == s.name), None)
            if truth is None:
                marks.append("—")
                continue
            seen.add(scenario_clients(truth))
            alarms = [
                f
                for r in res_l
                for f in r.findings
                if f["group_id"] == truth["group"]
                and f.get("status") != "resolved"
                and f["severity"] in ALARMS
            ]
            marks.append(f"{len(alarms)} warning/critical")
        out.append(f"| {s.name} | {' / '.join(sorted(seen))} | " + " | ".join(marks) + " |")
    return "\n".join(out)


def audit_text(results: Sequence[RecordingResult]) -> str:
    """The rule table and the problems (or that there are none): what ``agreement --rules`` prints and
    ``docs/real-kafka.md`` shows."""
    found, problems = verdicts(results)
    verdict = (
        "\n".join(f"- problem: {p}" for p in problems)
        or "No problem: every expected rule found, no false alarm."
    )
    return rule_table(results, found) + "\n\n" + verdict
