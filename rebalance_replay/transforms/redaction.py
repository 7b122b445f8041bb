"""Redaction of identifying values before anything is written (``output.redact``).

Each value becomes a keyed hash (HMAC-SHA256 with the warehouse's secret key, 16 hex digits, prefixed
``h``): the same value always gets the same token within a warehouse, so joins and group-bys still work,
and without the key nobody can test a guess. What each field covers:

* ``principal`` — the ``principal`` column;
* ``client_address`` — the client host in ``client_address`` and ``connection`` (ports are kept);
* ``client_id`` — the ``client_id`` column and the prefix Kafka puts into generated member ids
  (``clientId-UUID``) wherever a member id appears (columns, arrays, raw request/response bodies). A
  static member's id is ``groupInstanceId-UUID`` and one row cannot tell the two prefixes apart, so
  group instance ids are redacted as well (the same token in the id's prefix and in
  ``group_instance_id``, which keeps the member-id format checks and every join working).

Quarantined lines cannot be parsed, so their ``raw_line`` is replaced by a placeholder when anything is
redacted.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from typing import Any

FIELDS = ("principal", "client_address", "client_id")
REDACTED_LINE = "(redacted: output.redact is set)"

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_MEMBER_ID = re.compile(rf"\A(.+?)-({_UUID})\Z")
_MEMBER_ID_IN_TEXT = re.compile(rf"(?<=[\":=])([^\",=(){{}}\[\]\s]+?)-({_UUID})")
_INSTANCE_IN_TEXT = re.compile(r'(?:(?<=groupInstanceId)|(?<=group_instance_id))(":"|=)([^",)}\]]+)')
#: columns holding a member id, and array columns whose elements hold one under ``member_id``
_MEMBER_COLUMNS = ("member_id", "response_member_id", "response_leader")
_MEMBER_ARRAYS = ("response_members", "leave_members", "response_leave_members", "assignments")


class Redactor:
    def __init__(self, key: bytes, fields: Iterable[str]) -> None:
        self.key = key
        self.fields = frozenset(fields)
        unknown = self.fields - set(FIELDS)
        if unknown:
            raise ValueError(f"cannot redact {sorted(unknown)}")

    def __bool__(self) -> bool:
        return bool(self.fields)

    def token(self, value: str) -> str:
        return "h" + hmac.new(self.key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:16]

    def _host_port(self, address: str) -> str:
        host, sep, port = address.rpartition(":")
        return f"{self.token(host)}:{port}" if sep else self.token(address)

    def _member_id(self, member_id: Any) -> Any:
        if not isinstance(member_id, str):
            return member_id
        m = _MEMBER_ID.match(member_id)
        return member_id if m is None else f"{self.token(m.group(1))}-{m.group(2)}"

    def _instance_id(self, instance_id: Any) -> Any:
        return self.token(instance_id) if isinstance(instance_id, str) and instance_id else instance_id

    def _text(self, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        text = _MEMBER_ID_IN_TEXT.sub(lambda m: f"{self.token(m.group(1))}-{m.group(2)}", text)
        return _INSTANCE_IN_TEXT.sub(
            lambda m: m.group(1) + (m.group(2) if m.group(2) == "null" else self.token(m.group(2))), text
        )

    def request_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """Redact a ``requests`` row in place (and return it)."""
        if "principal" in self.fields and row.get("principal"):
            row["principal"] = self.token(row["principal"])
        if "client_address" in self.fields:
            client = row.get("client_address")
            if client:
                row["client_address"] = self._host_port(client)
                conn = row.get("connection")
                if isinstance(conn, str) and client in conn:
                    row["connection"] = conn.replace(client, row["client_address"], 1)
        if "client_id" in self.fields:
            if row.get("client_id"):
                row["client_id"] = self.token(row["client_id"])
            row["group_instance_id"] = self._instance_id(row.get("group_instance_id"))
            for col in _MEMBER_COLUMNS:
                row[col] = self._member_id(row.get(col))
            for col in _MEMBER_ARRAYS:
                items = row.get(col)
                if items:
                    row[col] = [
                        {
                            **i,
                            "member_id": self._member_id(i.get("member_id")),
                            **(
                                {"group_instance_id": self._instance_id(i.get("group_instance_id"))}
                                if "group_instance_id" in i
                                else {}
                            ),
                        }
                        if isinstance(i, Mapping)
                        else i
                        for i in items
                    ]
            for col in ("raw_request", "raw_response"):
                row[col] = self._text(row.get(col))
        return row

    def quarantine_row(self, row: dict[str, Any]) -> dict[str, Any]:
        if self.fields:
            row["raw_line"] = REDACTED_LINE
        return row
