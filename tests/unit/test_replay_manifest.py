"""The replay's manifest (``<warehouse>/_replay/manifest.json``) as a typed record: the JSON it writes is
the JSON the untyped dict wrote, key for key, and manifests written before (or by the other mode) read."""

from __future__ import annotations

import json
from pathlib import Path

from rebalance_replay.jobs.replay_run import ReplayDirs, ReplayManifest

BATCH = {
    "mode": "batch",
    "path": "stateful",
    "requests_version": 3,
    # added with issue 29: the requests table replayed (a manifest copied from another warehouse is stale)
    "requests_table_id": "4e3fb20f-299e-40e3-a0fe-09eb273f5268",
    "config": "0123456789abcdef/groups=a,b",
    "complete": True,
    "horizon_ms": 1717401960001,
    "counts": {"predictions": 10, "transitions": 4, "rebalances": 1, "member_sessions": 2},
    "groups": 2,
    "bulk_validated": 5,
    "kip848_groups": ["k"],
    # added with issue 29 part 3: groups refused by replay.max_group_members, with why
    "refused_groups": {"storm": "5,001 members at once at 2024-05-01 10:00:20.123Z (…)"},
}
INCREMENTAL = {
    "mode": "incremental",
    "runs": 7,
    "horizon_ms": 1717401960001,
    "final": True,  # added with --final (issue 26): the run closed the late-arrival horizon
    "config": "0123456789abcdef",
}


def test_each_mode_writes_the_keys_it_wrote_before(tmp_path: Path) -> None:
    dirs = ReplayDirs(str(tmp_path))
    for doc in (BATCH, INCREMENTAL):
        dirs.save_manifest(ReplayManifest.from_json(doc))
        written = dirs.manifest.read_text()
        assert written == json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"
        assert dirs.load_manifest() == ReplayManifest.from_json(doc)


def test_missing_fields_read_as_defaults_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    assert ReplayDirs(str(tmp_path)).load_manifest() == ReplayManifest()  # no manifest yet
    old = ReplayManifest.from_json({"mode": "batch", "requests_version": 1, "config": "x", "future": 1})
    assert (old.complete, old.path, old.counts, old.groups, old.kip848_groups) == (False, None, {}, 0, [])
    assert ReplayManifest.from_json(INCREMENTAL).requests_version is None
    before_final = {k: v for k, v in INCREMENTAL.items() if k != "final"}  # written before --final existed
    assert ReplayManifest.from_json(before_final).final is False
    before_ids = {k: v for k, v in BATCH.items() if k != "requests_table_id"}  # before issue 29
    assert ReplayManifest.from_json(before_ids).requests_table_id is None
