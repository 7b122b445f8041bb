"""What the report reads of the two big tables, ``predictions`` and ``requests``, as sums that add: the
counts of a table's rows plus the counts of the rows it appended later are the counts of all of them.

A scheduled report keeps them (``<warehouse>/_report/carry.json``, :mod:`rebalance_replay.jobs.carry`)
and reads only the rows appended since the last one; a first report, a forensics report, or one after the
tables were made again starts from nothing and reads them all. Both go through the same :meth:`add`s, so the
pages are the same either way (``tests/integration/test_report_carry.py``).

- :class:`PredictionCounts`, per group: the agreement per API (predictions, scored, matched), the routine
  heartbeats' count, first and last arrival (the density bins' width, :func:`heartbeat_bin_ms`), the member
  ids its JoinGroups answered (the page's refusal, ``report.max_group_members``), the routine heartbeats
  counted per member and *unit* (:func:`heartbeat_unit_ms`: a second, a minute or an hour, which divides
  every wider bin a longer span gives later; 1 ms while the group has at most ``MAX_TICKS`` of them: exact
  ticks) and the rows a page draws one by one (``events``: JoinGroup, SyncGroup, LeaveGroup, the heartbeats
  that were not routine, the mismatches).
- :class:`ConnectionCounts`, per group: each (member id, client address, client id)'s first and last
  arrival, and how many requests the group has.

A group refused a page keeps no events, units or connections (it cannot be drawn again: its member ids only
grow), only its counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rebalance_replay.transforms.report.model import (
    HeartbeatBin,
    MemberConnection,
    heartbeat_bin_ms,
    heartbeat_unit_ms,
)

Row = Mapping[str, Any]


def event_order(row: Row) -> tuple[int, int, str, int]:
    """The order a page's event rows are kept in (the same whatever order Spark handed them over)."""
    return (int(row["arrival_ms"]), int(row.get("seq") or 0), str(row["source_file"]), int(row["line_no"]))


@dataclass
class PredictionCounts:
    """Per group, what the report reads of ``predictions`` (see the module docstring)."""

    agreement: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    heartbeats: dict[str, list[int]] = field(default_factory=dict)  # group → [count, first ms, last ms]
    join_members: dict[str, set[str]] = field(default_factory=dict)
    units: dict[str, int] = field(default_factory=dict)  # group → the unit its heartbeats are counted in
    unit_counts: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_counts(self, rows: Iterable[Row], members: Mapping[str, Iterable[str]]) -> None:
        """Add one pass's per (group, API) rows (``n``, ``scored``, ``matched``; ``hb_n``, ``hb_lo``,
        ``hb_hi`` of the routine heartbeats) and the member ids the JoinGroups answered, per group."""
        for r in rows:
            g = str(r["group_id"])
            a = self.agreement.setdefault((g, str(r["api"])), [0, 0, 0])
            a[0] += int(r["n"] or 0)
            a[1] += int(r["scored"] or 0)
            a[2] += int(r["matched"] or 0)
            if r["hb_n"]:
                n, lo, hi = int(r["hb_n"]), int(r["hb_lo"]), int(r["hb_hi"])
                old = self.heartbeats.get(g)
                self.heartbeats[g] = (
                    [n, lo, hi] if old is None else [old[0] + n, min(old[1], lo), max(old[2], hi)]
                )
        for g, ids in members.items():
            self.join_members.setdefault(g, set()).update(ids)

    def refused(self, limit: int) -> dict[str, int]:
        """The groups whose JoinGroups answered more than ``limit`` member ids (0: none), with how many."""
        if not limit:
            return {}
        return {g: len(ids) for g, ids in sorted(self.join_members.items()) if len(ids) > limit}

    def drop_pages(self, groups: Iterable[str]) -> None:
        """Forget what only the pages of ``groups`` (refused) would draw."""
        for g in groups:
            self.units.pop(g, None)
            self.unit_counts.pop(g, None)
            self.events.pop(g, None)

    def bin_ms(self, refused: Collection[str]) -> dict[str, int]:
        """Per group with routine heartbeats and a page (not ``refused``), its density bins' width (1:
        exact ticks)."""
        return {
            g: heartbeat_bin_ms(n, hi - lo) for g, (n, lo, hi) in self.heartbeats.items() if g not in refused
        }

    def next_units(self, bin_of: Mapping[str, int]) -> dict[str, int]:
        """Per group of ``bin_of`` (its bins' width), the unit its heartbeats are counted in from now on;
        the counts kept in a finer unit are added up into it."""
        units = {g: heartbeat_unit_ms(b) for g, b in bin_of.items()}
        for g, unit in units.items():
            old = self.units.get(g, unit)
            if old != unit:
                if unit % old:  # cannot happen: a longer span's unit is a multiple of a shorter one's
                    raise ValueError(f"report: group {g}: heartbeat unit {old} ms does not divide {unit} ms")
                coarse: dict[tuple[str, int], int] = defaultdict(int)
                for (member, start), n in self.unit_counts.get(g, {}).items():
                    coarse[(member, start - start % unit)] += n
                self.unit_counts[g] = dict(coarse)
        self.units = units
        return units

    def add_units(self, rows: Iterable[Row]) -> None:
        """Add routine heartbeats counted per ``group_id``, ``member_id`` and ``unit_start_ms`` (``count``)
        in the units :meth:`next_units` gave."""
        for r in rows:
            per = self.unit_counts.setdefault(str(r["group_id"]), {})
            key = (str(r["member_id"] or ""), int(r["unit_start_ms"]))
            per[key] = per.get(key, 0) + int(r["count"])

    def add_events(self, rows: Iterable[Row]) -> None:
        """Add the rows a page draws one by one."""
        for r in rows:
            self.events.setdefault(str(r["group_id"]), []).append(dict(r))
        for rs in self.events.values():
            rs.sort(key=event_order)

    def heartbeat_bins(self, bin_of: Mapping[str, int]) -> dict[str, list[HeartbeatBin]]:
        """Per group, its routine heartbeats per member and bin of ``bin_of[group]`` ms."""
        out: dict[str, list[HeartbeatBin]] = {}
        for g, per in self.unit_counts.items():
            width = bin_of[g]
            bins: dict[tuple[str, int], int] = defaultdict(int)
            for (member, start), n in per.items():
                bins[(member, start - start % width)] += n
            out[g] = [HeartbeatBin(m, s, n) for (m, s), n in sorted(bins.items())]
        return out

    def agreement_rows(self) -> list[dict[str, Any]]:
        """The agreement as rows (group_id, api, n, scored, matched)."""
        return [
            {"group_id": g, "api": api, "n": n, "scored": s, "matched": m}
            for (g, api), (n, s, m) in sorted(self.agreement.items())
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "agreement": [[g, api, *v] for (g, api), v in sorted(self.agreement.items())],
            "heartbeats": self.heartbeats,
            "join_members": {g: sorted(ids) for g, ids in self.join_members.items()},
            "units": self.units,
            "unit_counts": {
                g: [[m, s, n] for (m, s), n in sorted(per.items())] for g, per in self.unit_counts.items()
            },
            "events": self.events,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PredictionCounts:
        return cls(
            agreement={(str(g), str(api)): [int(n), int(s), int(m)] for g, api, n, s, m in data["agreement"]},
            heartbeats={str(g): [int(x) for x in v] for g, v in data["heartbeats"].items()},
            join_members={str(g): set(ids) for g, ids in data["join_members"].items()},
            units={str(g): int(u) for g, u in data["units"].items()},
            unit_counts={
                str(g): {(str(m), int(s)): int(n) for m, s, n in per}
                for g, per in data["unit_counts"].items()
            },
            events={str(g): [dict(r) for r in rs] for g, rs in data["events"].items()},
        )


@dataclass
class ConnectionCounts:
    """Per group, what the report reads of ``requests``: each (member id, client address, client id)'s
    first and last arrival, and the group's requests (``requests``)."""

    connections: dict[str, dict[tuple[str, str | None, str | None], list[int]]] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)

    def add(self, rows: Iterable[Row]) -> None:
        """Add one pass's rows per (``group_id``, ``member``, ``client_address``, ``client_id``) with
        ``first_ms``, ``last_ms`` and ``inside`` (requests)."""
        for r in rows:
            if r["group_id"] is None:
                continue
            g = str(r["group_id"])
            self.requests[g] = self.requests.get(g, 0) + int(r["inside"] or 0)
            if not r["member"]:
                continue
            per = self.connections.setdefault(g, {})
            key = (str(r["member"]), r["client_address"], r["client_id"])
            first, last = int(r["first_ms"]), int(r["last_ms"])
            old = per.get(key)
            per[key] = [first, last] if old is None else [min(old[0], first), max(old[1], last)]

    def add_requests(self, requests: Mapping[str, int]) -> None:
        """Add the requests of groups whose members are not counted (no page)."""
        for g, n in requests.items():
            self.requests[g] = self.requests.get(g, 0) + n

    def drop_pages(self, groups: Iterable[str]) -> None:
        for g in groups:
            self.connections.pop(g, None)

    def member_connections(self) -> dict[str, list[MemberConnection]]:
        return {
            g: [
                MemberConnection(m, addr, cid, first, last)
                for (m, addr, cid), (first, last) in sorted(per.items(), key=_conn_key)
            ]
            for g, per in self.connections.items()
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "connections": {
                g: [
                    [m, addr, cid, first, last]
                    for (m, addr, cid), (first, last) in sorted(per.items(), key=_conn_key)
                ]
                for g, per in self.connections.items()
            },
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectionCounts:
        return cls(
            connections={
                str(g): {(m, addr, cid): [int(first), int(last)] for m, addr, cid, first, last in per}
                for g, per in data["connections"].items()
            },
            requests={str(g): int(n) for g, n in data["requests"].items()},
        )


def _conn_key(item: tuple[tuple[str, str | None, str | None], list[int]]) -> tuple[str, str, str]:
    (m, addr, cid), _ = item
    return (m, addr or "", cid or "")
