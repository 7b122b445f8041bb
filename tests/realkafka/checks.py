"""What the product must do on a real broker's logs, as checks shared by the committed-corpus tests and
the live recording (``realkafka``): each returns the list of what is wrong (empty: all good)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from simulator.realkafka.agreement import KEY_FIELDS, RecordingResult

#: The issue's bar: agreement per API, and every error code, generation, leader and member id.
MIN_AGREEMENT_PER_API = 0.999


def ingest_problems(res: RecordingResult) -> list[str]:
    """Every line of every recorded file is read and accounted for; none is quarantined."""
    out = []
    name = f"{res.manifest['release']}/{res.manifest['profile']}"
    recorded = sum(f["lines"] for f in res.manifest["files"])
    ing = res.ingest
    if ing.get("lines_read") != recorded:
        out.append(f"{name}: {ing.get('lines_read')} lines read, the broker wrote {recorded}")
    parts = sum(ing.get(k, 0) for k in ("requests", "quarantined", "other_api_lines", "other_lines"))
    if parts != ing.get("lines_read"):
        out.append(f"{name}: accounting {ing}")
    for q in res.quarantine:
        out.append(f"{name}: quarantined {q.get('source_file')}:{q.get('line_no')}: {q.get('reason')}")
    request_lines = sum(f["lines"] for f in res.manifest["files"] if "kafka-request.log" in f["file"])
    if ing.get("requests", 0) + ing.get("other_api_lines", 0) != request_lines:
        out.append(
            f"{name}: {ing.get('requests')} requests + {ing.get('other_api_lines')} other-API lines, "
            f"but the request logs hold {request_lines} lines"
        )
    return out


def agreement_problems(results: Sequence[RecordingResult], mode: str) -> list[str]:
    """Per release: agreement per API at least the bar, and no error/generation/leader/member-id
    mismatch; every disagreement named. The harness's warm-up group (each recording's first, which makes
    the cluster create and replicate ``__consumer_offsets``) counts for the key fields only: its SyncGroup
    waits on the first replicated append of a fresh offsets partition, which a loaded box made 443 ms late
    on a three-broker 2.7 cluster (a completion time, not a coordinator decision)."""
    out = []
    by_release: dict[str, dict[str, list[int]]] = {}
    key: dict[str, Counter[str]] = {}
    listed: dict[str, list[str]] = {}
    for res in results:
        rel = res.manifest["release"]
        for c in res.cells:
            if c.mode != mode:
                continue
            apis = by_release.setdefault(rel, {})
            warm_up = c.scenario == "(warm-up)"
            for api, (m, s, _) in c.by_api.items():
                apis.setdefault(api, [0, 0])
                apis[api][0] += 0 if warm_up else m
                apis[api][1] += 0 if warm_up else s
            key.setdefault(rel, Counter()).update(c.key_mismatches)
            listed.setdefault(rel, []).extend(
                f"{c.scenario}: {d['where']} {d['api']} {','.join(d['kinds'])} observed {d['observed']} "
                f"predicted {d['predicted']}"
                for d in c.disagreements
                if not warm_up or set(d["kinds"]) & set(KEY_FIELDS)
            )
    for rel, apis in sorted(by_release.items()):
        for api, (m, s) in sorted(apis.items()):
            if s and m / s < MIN_AGREEMENT_PER_API:
                out.append(f"{rel} {mode}: {api} agreement {m}/{s} = {100 * m / s:.2f}% < 99.9%")
        for k in KEY_FIELDS:
            if key[rel][k]:
                out.append(f"{rel} {mode}: {key[rel][k]} {k} mismatch(es)")
        if out:
            out.extend(f"  {line}" for line in listed[rel][:40])
    return out


def scored_everywhere(results: Sequence[RecordingResult]) -> list[str]:
    """Every group of the log was replayed and scored: a scenario whose requests were all left unscored
    would pass the agreement bar without being checked."""
    out = []
    for res in results:
        for c in res.cells:
            scored = sum(s for _, s, _ in c.by_api.values())
            if c.scenario != "(warm-up)" and scored == 0 and c.scenario != "kip848":
                out.append(f"{c.release} {c.scenario} {c.mode}: nothing scored ({dict(c.unscored)})")
    return out
