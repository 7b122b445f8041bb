"""Sharing a warehouse safely (output.redact) and warehouses written by other versions."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from rebalance_replay.jobs.errors import WarehouseVersionError
from rebalance_replay.jobs.warehouse import KEY_FILE, META_FILE, SCHEMA_VERSION, open_warehouse
from rebalance_replay.transforms.redaction import REDACTED_LINE, Redactor
from rebalance_replay.transforms.request_log import LineKind, parse_line
from simulator.mutations import base_lines

ALL = ("client_address", "client_id", "principal")


def _rows() -> list[dict[str, object]]:
    rows = []
    for line in base_lines():
        out = parse_line(line, UTC)
        if out.kind is LineKind.REQUEST and out.record is not None:
            rows.append(dict(out.record))
    return rows


def test_every_identifying_value_is_replaced_and_joins_still_work() -> None:
    rows = _rows()
    originals = {str(r[c]) for r in rows for c in ("client_id", "principal", "group_instance_id") if r.get(c)}
    hosts = {str(r["client_address"]).rpartition(":")[0] for r in rows if r.get("client_address")}
    redactor = Redactor(b"k" * 32, ALL)
    again = Redactor(b"k" * 32, ALL)
    other_key = Redactor(b"x" * 32, ALL)
    redacted = [redactor.request_row(dict(r)) for r in rows]
    text = json.dumps(redacted, default=str)
    for value in originals | hosts:
        assert value not in text, value
    # stable within a key (joins work), different under another key
    assert [again.request_row(dict(r)) for r in rows] == redacted
    assert [other_key.request_row(dict(r)) for r in rows] != redacted
    # generated member ids keep their shape: the client id prefix becomes the client id's token
    for r in redacted:
        mid = r.get("member_id")
        if isinstance(mid, str) and mid and not r.get("group_instance_id"):
            assert mid.startswith(str(r["client_id"]) + "-"), (mid, r["client_id"])
        if r.get("group_instance_id") and isinstance(mid, str) and mid:
            assert mid.startswith(str(r["group_instance_id"]) + "-")  # static: the instance id's token
    assert redactor.quarantine_row({"raw_line": "secret"})["raw_line"] == REDACTED_LINE


def test_only_the_chosen_fields_are_redacted() -> None:
    row = _rows()[0]
    out = Redactor(b"k" * 32, ("principal",)).request_row(dict(row))
    assert out["client_id"] == row["client_id"] and out["principal"] != row["principal"]
    with pytest.raises(ValueError):
        Redactor(b"k", ("member_id",))


def test_a_warehouse_records_its_layout_and_redaction(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    key = open_warehouse(str(wh), ("client_id",), print)
    assert key is not None and (wh / KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert open_warehouse(str(wh), ("client_id",), print) == key  # stable
    meta = json.loads((wh / META_FILE).read_text())
    assert meta["schema_version"] == SCHEMA_VERSION and meta["redact"] == ["client_id"]
    with pytest.raises(WarehouseVersionError, match=r"created with output\.redact=client_id"):
        open_warehouse(str(wh), (), print)


def test_an_older_warehouse_is_migrated_and_a_newer_one_refused(tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "requests" / "_delta_log").mkdir(parents=True)
    (old / "_replay" / "incremental").mkdir(parents=True)
    said: list[str] = []
    assert open_warehouse(str(old), (), said.append) is None
    assert not (old / "_replay").exists() and "from layout 1 to 2" in said[0]
    assert json.loads((old / META_FILE).read_text())["schema_version"] == SCHEMA_VERSION
    new = tmp_path / "new"
    new.mkdir()
    (new / META_FILE).write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1, "redact": []}))
    with pytest.raises(WarehouseVersionError, match="newer rebalance-replay"):
        open_warehouse(str(new), (), said.append)
