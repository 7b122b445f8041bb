"""A damaged warehouse: Delta tables whose log or data files are no longer what the log says, found before a
command reads them, and repaired (``--repair``) where that is safe.

Two kinds of damage, read from the Delta log itself (the protocol's files, whichever engine wrote them):

* a **missing data file**: an ``add`` of the table's snapshot whose file is gone (deleted by hand, lost
  with a disk); every read of the table would fail, or a cached answer would hide it;
* an **unreadable log entry**: a commit ``NNNN.json`` after the last checkpoint that is empty or cut
  mid-line (a copy or a disk that stopped half-way; a Delta writer never leaves one); no engine can load
  the table.

Each is one :class:`~rebalance_replay.jobs.errors.DamagedTableError` line naming the table, the file or
version, and the command that repairs it — the command that writes the table:

* ``predictions``, ``transitions``, ``rebalances``, ``member_sessions`` — ``replay --repair``: the missing
  files' entries are removed from the log (Delta's FSCK), or the unreadable newest entry is moved aside,
  and the replay rebuilds the four tables from ``requests`` (its bookkeeping under ``_replay`` is reset);
* ``findings`` — ``audit --repair``: the same on the log, then every group is audited again (findings
  that survived keep their history; the lost ones are found again, as new);
* ``requests``, ``quarantine``, ``ingest_files`` (bronze: their rows cannot be made again without the
  broker's files) — ``ingest --repair --input FILES``: a missing file's source files are forgotten (their
  remaining rows deleted from the three tables, their read progress too) and read again by the same
  ingest; an unreadable newest entry rolls its ingest batch back in the three tables and the ingest reads
  that batch's files again. ``--input`` must hold every source file named, or nothing is changed.

``run --repair`` repairs them all. A derived table whose log is damaged otherwise (an entry followed by
later ones, a log the engine cannot load) is moved aside whole and made again; a bronze one has no safe
repair (nor has a lost bronze file whose source files the log does not name): the message says to restore
it from a backup. What is moved aside goes to ``<warehouse>/_damaged/`` (nothing is deleted). The log is
read with delta-rs and plain files whichever engine writes (the Delta protocol is the same); warehouses
on object stores (``s3://``, ``abfss://``) are not checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from rebalance_replay.jobs.cli import PROG
from rebalance_replay.jobs.errors import DamagedTableError, UsageError
from rebalance_replay.jobs.ingest import APP_ID as INGEST_APP_ID
from rebalance_replay.jobs.ingest import raise_batch_floor
from rebalance_replay.jobs.paths import is_uri
from rebalance_replay.jobs.replay_run import ReplayDirs
from rebalance_replay.jobs.replay_wire import OUTPUT_TABLES
from rebalance_replay.schemas import ALL_TABLES, FINDINGS, INGEST_FILES, QUARANTINE, REQUESTS
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.transforms.report.units import plural

#: where a repair puts what it moves out of a table (``<warehouse>/_damaged/<table>-<time>/…``)
DAMAGED_DIR = "_damaged"

BRONZE: tuple[TableDef, ...] = (REQUESTS, QUARANTINE, INGEST_FILES)
REPLAYED: tuple[TableDef, ...] = tuple(OUTPUT_TABLES.values())
#: the command that writes a table, and so repairs it
REPAIRED_BY: Mapping[str, str] = {
    **{t.name: "ingest" for t in BRONZE},
    **{t.name: "replay" for t in REPLAYED},
    FINDINGS.name: "audit",
}
#: the tables a command reads: a damaged one stops it (the tables it does not read are left to the commands
#: that do); a command not named reads them all
READS: Mapping[str, tuple[TableDef, ...]] = {
    "ingest": BRONZE,
    "replay": (REQUESTS, *REPLAYED),
    "validate": (REQUESTS, *REPLAYED, FINDINGS),
    "audit": (REQUESTS, *REPLAYED, FINDINGS),
    "report": (REQUESTS, *REPLAYED, FINDINGS),
}
#: commands that read the Delta logs only, never a data file
LOG_ONLY = frozenset({"history"})

_COMMIT = re.compile(r"^(\d{20})\.json$")


# ---- what the log says (pure) ------------------------------------------------------------------------


def commit_problem(data: bytes) -> str | None:
    """What is wrong with one Delta commit file's bytes (None: every line is a JSON action)."""
    text = data.decode("utf-8", errors="replace")
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return "is empty"
    for i, line in enumerate(lines):
        try:
            action = json.loads(line)
        except ValueError:
            return "is cut mid-line" if i == len(lines) - 1 else f"has a line that is not JSON (line {i + 1})"
        if not isinstance(action, dict):
            return f"has a line that is not a Delta action (line {i + 1})"
    return None


def readable_actions(data: bytes) -> list[dict[str, Any]]:
    """The actions of a commit's lines that parse (all of them, for a sound commit)."""
    out = []
    for line in data.decode("utf-8", errors="replace").split("\n"):
        try:
            action = json.loads(line)
        except ValueError:
            continue
        if isinstance(action, dict):
            out.append(action)
    return out


def ingest_batch(actions: Iterable[Mapping[str, Any]]) -> int | None:
    """The ingest batch a commit belongs to (its ``txn`` of the ingest's application id), None if none."""
    for a in actions:
        txn = a.get("txn")
        if isinstance(txn, Mapping) and txn.get("appId") == INGEST_APP_ID:
            return int(txn["version"])
    return None


@dataclass(frozen=True)
class Lines:
    """Rows of the bronze tables that came from one source file: its path and line range (from the Delta
    log's per-file statistics)."""

    source: str
    first_line: int | None = None
    last_line: int | None = None
    rows: int | None = None

    def text(self) -> str:
        where = self.source
        if self.first_line is not None and self.last_line is not None:
            where += f" lines {self.first_line}-{self.last_line}"
        return where


def sources_in(low: str | None, high: str | None, known: Iterable[str]) -> list[str]:
    """The known source files whose rows a data file may hold, from its ``source_file`` statistics (min,
    max): all of them when the log has no statistics; the two bounds when no known source lies between."""
    known = sorted(set(known))
    if low is None or high is None:
        return known
    return [s for s in known if low <= s <= high] or sorted({low, high})


@dataclass(frozen=True)
class BadCommit:
    """An unreadable Delta log entry."""

    version: int
    path: Path
    problem: str
    newest: bool  # no version after it: moving it aside leaves the table at the version before
    batch: int | None = None  # bronze: the ingest batch it belongs to (None: not known from the entry)


@dataclass(frozen=True)
class LostFile:
    """A data file of the snapshot that is missing."""

    path: str  # as the log names it (relative to the table)
    version: int | None  # the commit that added it (None: from a checkpoint)
    rows: int | None
    lines: tuple[Lines, ...] = ()  # bronze: what it held, per source file


@dataclass(frozen=True)
class Damage:
    """What is wrong with one table."""

    table: TableDef
    path: Path
    bad: BadCommit | None = None
    lost: tuple[LostFile, ...] = ()
    of_files: int = 0  # data files in the snapshot
    #: bronze: the source files to read again (lost rows' files, or the rolled-back batch's)
    sources: tuple[str, ...] = ()
    unreadable: str | None = None  # the log cannot be loaded for another reason (the engine's words)

    @property
    def derived(self) -> bool:
        """Made from other tables: whatever is wrong, the table can be made again."""
        return self.table not in BRONZE

    @property
    def surgical(self) -> bool:
        """Repaired in its log (FSCK, the cut newest entry moved aside), its other versions kept."""
        return self.unreadable is None and (self.bad is None or self.bad.newest)

    @property
    def repairable(self) -> bool:
        if self.derived:
            return True
        return self.surgical and not (self.lost and not self.sources)

    def what(self) -> str:
        """What is wrong, for a message."""
        if self.unreadable is not None:
            return f"its Delta log cannot be read ({self.unreadable})"
        if self.bad is not None:
            b = self.bad
            where = "newest Delta log entry" if b.newest else "Delta log entry"
            batch = "" if b.batch is None else f" (ingest batch {b.batch})"
            later = "" if b.newest else " and later versions follow it"
            return f"its {where}, version {b.version} ({b.path}){batch}, {b.problem}{later}"
        first = self.lost[0]
        added = "" if first.version is None else f"added in version {first.version}"
        rows = "" if first.rows is None else plural(first.rows, "row")
        about = ", ".join(x for x in (added, rows) if x)
        about = f" ({about})" if about else ""
        more = f" and {plural(len(self.lost) - 1, 'other')}" if len(self.lost) > 1 else ""
        of = f" ({len(self.lost)} of {self.of_files} files)" if len(self.lost) > 1 else ""
        return f"its data file {first.path}{about}{more}{of} is missing from {self.path}"

    def lost_rows_text(self) -> str:
        """Bronze: where the lost rows came from, by source file and lines."""
        lines = [x for f in self.lost for x in f.lines]
        if not lines:
            return "its rows' source files are not known"
        shown = "; ".join(x.text() for x in lines[:3]) + (
            f"; +{len(lines) - 3} more" if len(lines) > 3 else ""
        )
        return f"its rows came from {shown}"


def repair_command(d: Damage, warehouse: str) -> str:
    """The command that repairs ``d`` (the one that writes the table, with ``--repair``)."""
    command = REPAIRED_BY[d.table.name]
    inputs = ""
    if command == "ingest":
        shown = list(d.sources[:5]) if len(d.sources) <= 5 else [_common_folder(d.sources)]
        inputs = " --input " + " ".join(shown) if shown else " --input FILES"
    return f"{PROG} {command} --warehouse {warehouse} --repair{inputs}"


def _common_folder(paths: Sequence[str]) -> str:
    try:
        return os.path.commonpath(list(paths))
    except ValueError:
        return paths[0]


def message(d: Damage, warehouse: str) -> str:
    """One line: the table, what is wrong (file or version), and what to type."""
    head = f"table {d.table.name!r} is damaged: {d.what()}"
    if not d.repairable:
        unknown = f" ({d.lost_rows_text()})" if d.lost else ""
        return f"{head}{unknown}; no safe repair: restore {d.path} from a backup"
    command = repair_command(d, warehouse)
    by = REPAIRED_BY[d.table.name]
    if by == "replay":
        return f"{head}; the replay rebuilds it from requests: {command}"
    if by == "audit":
        return f"{head}; the audit finds its findings again: {command}"
    if d.bad is not None and d.bad.batch is None:
        return f"{head}; it holds no ingest batch's rows, move it aside: {command}"
    if d.bad is not None:
        return f"{head}; roll that ingest batch back and read its files again: {command}"
    return f"{head} ({d.lost_rows_text()}); forget those source files' rows and read them again: {command}"


# ---- what the warehouse holds (reads files) -------------------------------------------------------


def _commits(log: Path) -> dict[int, Path]:
    out = {}
    for p in log.iterdir() if log.is_dir() else ():
        m = _COMMIT.match(p.name)
        if m:
            out[int(m.group(1))] = p
    return out


def _last_checkpoint(log: Path) -> int:
    """The version of the log's last checkpoint (-1: none, or its pointer cannot be read)."""
    try:
        return int(json.loads((log / "_last_checkpoint").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def _local_file(table_dir: Path, path: str) -> Path:
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return table_dir / unquote(path)


def _known_sources(root: Path) -> list[str]:
    """The source files ``ingest_files`` records (what a bronze data file's statistics are matched to)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    path = root / INGEST_FILES.name
    try:
        dt = DeltaTable(str(path))
        files = [f for f in dt.file_uris() if _local_file(path, f).exists()]
    except Exception:  # damaged itself: its statistics still name sources
        return []
    out: set[str] = set()
    for f in files:
        out.update(pq.read_table(str(_local_file(path, f)), columns=["source_file"]).column(0).to_pylist())
    return sorted(out)


def _lines(action: Mapping[str, Any], known: Sequence[str]) -> tuple[Lines, ...]:
    low, high = action.get("min.source_file"), action.get("max.source_file")
    sources = sources_in(low, high, known)
    rows = action.get("num_records")
    if len(sources) == 1:
        lo, hi = action.get("min.line_no"), action.get("max.line_no")
        return (Lines(sources[0], lo, hi, None if rows is None else int(rows)),)
    return tuple(Lines(s) for s in sources)


def inspect_table(root: Path, table: TableDef, *, files: bool = True) -> Damage | None:
    """What is wrong with ``table`` of the warehouse at ``root`` (None: nothing, or no such table).
    ``files``: also look for missing data files (else only the log's entries)."""
    path = root / table.name
    log = path / "_delta_log"
    commits = _commits(log)
    if not commits:
        return None
    newest = max(commits)
    checkpoint = _last_checkpoint(log)
    added: dict[str, int] = {}
    for version in sorted(v for v in commits if v > checkpoint):
        data = commits[version].read_bytes()
        problem = commit_problem(data)
        if problem is not None:
            batch = ingest_batch(readable_actions(data)) if table in BRONZE else None
            bad = BadCommit(version, commits[version], problem, version == newest, batch)
            if table in BRONZE and bad.newest:
                bad, sources = _lost_batch(root, table, bad)
                return Damage(table, path, bad=bad, sources=tuple(sources))
            return Damage(table, path, bad=bad)
        for a in readable_actions(data):
            if isinstance(a.get("add"), Mapping):
                added[unquote(str(a["add"]["path"]))] = version
    if not files:
        return None
    import pyarrow as pa
    from deltalake import DeltaTable

    try:
        actions = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    except Exception as e:  # the engine cannot load it for another reason (a checkpoint lost, ...)
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return Damage(table, path, unreadable=text[:200])
    missing = [a for a in actions if not _local_file(path, str(a["path"])).exists()]
    if not missing:
        return None
    known = _known_sources(root) if table in BRONZE else []
    lost = tuple(
        LostFile(
            unquote(str(a["path"])),
            added.get(unquote(str(a["path"]))),
            None if a.get("num_records") is None else int(a["num_records"]),
            _lines(a, known) if table in BRONZE else (),
        )
        for a in sorted(missing, key=lambda a: str(a["path"]))
    )
    sources = sorted({x.source for f in lost for x in f.lines})
    return Damage(table, path, lost=lost, of_files=len(actions), sources=tuple(sources))


def _ingest_txn(path: Path) -> int | None:
    from deltalake import DeltaTable

    try:
        v = DeltaTable(str(path)).transaction_version(INGEST_APP_ID)
    except Exception:
        return None
    return None if v is None else int(v)


def _lost_batch(root: Path, table: TableDef, bad: BadCommit) -> tuple[BadCommit, list[str]]:
    """A bronze table's unreadable newest entry: the ingest batch it was (its own ``txn`` when the line
    survived, else the newest batch the other bronze tables have and it has not) and that batch's source
    files (from the statistics of the batch's other commits)."""
    batch = bad.batch
    if batch is None:
        before = _ingest_txn_without(root / table.name, bad.version)
        others = [v for t in BRONZE if t != table for v in [_ingest_txn(root / t.name)] if v is not None]
        newest = max(others, default=None)
        if newest is not None and (before is None or newest > before):
            batch = newest
    if batch is None:
        return bad, []
    bad = BadCommit(bad.version, bad.path, bad.problem, bad.newest, batch)
    known = _known_sources(root)
    sources: set[str] = set()
    for t in BRONZE:
        for _version, actions in _batch_commits(root / t.name, batch):
            for a in actions:
                add = a.get("add")
                if not isinstance(add, Mapping):
                    continue
                stats = _stats(add)
                low = (stats.get("minValues") or {}).get("source_file")
                high = (stats.get("maxValues") or {}).get("source_file")
                sources.update(sources_in(low, high, known) if low is not None else [])
    return bad, sorted(sources)


def _stats(add: Mapping[str, Any]) -> dict[str, Any]:
    try:
        stats = json.loads(add.get("stats") or "{}")
    except ValueError:
        return {}
    return stats if isinstance(stats, dict) else {}


def _ingest_txn_without(path: Path, version: int) -> int | None:
    """The newest ingest batch in the readable commits before ``version``."""
    best = None
    for v, p in sorted(_commits(path / "_delta_log").items()):
        if v >= version:
            break
        b = ingest_batch(readable_actions(p.read_bytes()))
        if b is not None:
            best = b if best is None else max(best, b)
    return best


def _batch_commits(path: Path, batch: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """(version, actions) of the table's readable commits made by ingest batch ``batch``."""
    out = []
    for v, p in sorted(_commits(path / "_delta_log").items()):
        actions = readable_actions(p.read_bytes())
        if ingest_batch(actions) == batch:
            out.append((v, actions))
    return out


def _root(warehouse: str) -> Path:
    """The warehouse folder (a ``file:`` URI's path)."""
    return Path(unquote(urlparse(warehouse).path)) if warehouse.startswith("file:") else Path(warehouse)


def damaged_tables(
    warehouse: str, tables: Sequence[TableDef], *, files_of: Sequence[TableDef]
) -> list[Damage]:
    """The damaged tables among ``tables`` (their logs), with missing data files looked for in
    ``files_of``; nothing for a warehouse on an object store."""
    if is_uri(warehouse) and not warehouse.startswith("file:"):
        return []
    root = _root(warehouse)
    out = []
    for t in tables:
        d = inspect_table(root, t, files=t in files_of)
        if d is not None:
            out.append(d)
    return out


# ---- repair -------------------------------------------------------------------------------------------


@dataclass
class Repaired:
    """What a repair did (one line each), and the bookkeeping it reset."""

    lines: list[str] = field(default_factory=list)
    reset_replay: bool = False
    reset_audit: bool = False


def _aside(root: Path, table: TableDef, files: Iterable[Path], stamp: str) -> Path:
    """Move ``files`` (of the table's ``_delta_log``) to ``<warehouse>/_damaged/<table>-<stamp>/``; drop
    the log folder when no commit is left in it. The folder they went to."""
    target = root / DAMAGED_DIR / f"{table.name}-{stamp}" / "_delta_log"
    target.mkdir(parents=True, exist_ok=True)
    log = root / table.name / "_delta_log"
    for f in files:
        for p in (f, f.with_suffix(".crc")):
            if p.exists():
                os.replace(p, target / p.name)
    if log.is_dir() and not _commits(log):
        for rest in list(log.iterdir()):
            shutil.move(str(rest), str(target / rest.name))
        log.rmdir()
    return target.parent


def _commit_properties(run_id: str | None) -> Any:
    from deltalake.transaction import CommitProperties

    return CommitProperties(custom_metadata={"userMetadata": run_id} if run_id else None)


def _fsck(path: Path, run_id: str | None) -> int:
    """Remove the entries of missing data files from the table's log (Delta's FSCK); how many."""
    from deltalake import DeltaTable

    metrics = DeltaTable(str(path)).repair(commit_properties=_commit_properties(run_id))
    return len(metrics.get("files_removed") or [])


def _sql_list(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(values))


def _forget(root: Path, sources: Sequence[str], run_id: str | None) -> dict[str, int]:
    """Delete every row of ``sources`` from the bronze tables (their read progress included): the next
    ingest reads them whole. Rows deleted per table."""
    from deltalake import DeltaTable

    # the next batch id stays above every batch committed, even those whose progress rows go
    raise_batch_floor(str(root), max((_ingest_txn(root / t.name) or 0 for t in BRONZE), default=0))
    out = {}
    for t in BRONZE:
        path = root / t.name
        if not _commits(path / "_delta_log"):
            continue
        metrics = DeltaTable(str(path)).delete(
            f"source_file IN ({_sql_list(sources)})", commit_properties=_commit_properties(run_id)
        )
        out[t.name] = int(metrics.get("num_deleted_rows") or 0)
    return out


def _rollback(root: Path, batch: int, stamp: str) -> list[str]:
    """Move ingest batch ``batch``'s commits (and the unreadable newest one) aside in each bronze table;
    refused, before anything moves, where other commits follow them."""
    plan = []
    for t in BRONZE:
        log = root / t.name / "_delta_log"
        commits = _commits(log)
        if not commits:
            continue
        versions = {v for v, _actions in _batch_commits(root / t.name, batch)}
        newest = max(commits)
        if commit_problem(commits[newest].read_bytes()) is not None:
            versions.add(newest)
        if not versions:
            continue
        tail = list(range(min(versions), newest + 1))
        if sorted(versions) != tail:
            raise DamagedTableError(
                f"table {t.name!r}: ingest batch {batch} is followed by other commits in {log}; no safe "
                "repair: restore the table from a backup"
            )
        plan.append((t, tail, [commits[v] for v in tail]))
    done = []
    for t, tail, files in plan:
        _aside(root, t, files, stamp)
        done.append(f"{t.name} v{tail[0]}" + (f"-{tail[-1]}" if len(tail) > 1 else ""))
    return done


def repair(
    warehouse: str,
    damages: Sequence[Damage],
    *,
    inputs: Sequence[str] | None,
    run_id: str | None,
) -> Repaired:
    """Repair every damaged table in ``damages`` (all repairable; bronze ones need ``inputs``, the source
    files the command reads, to hold their lost source files: checked before anything changes)."""
    root = _root(warehouse)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    done = Repaired()
    bronze = [d for d in damages if d.table in BRONZE]
    if bronze:
        given = {os.path.normpath(p) for p in inputs or ()}
        need = sorted({s for d in bronze for s in d.sources})
        absent = [s for s in need if os.path.normpath(s) not in given]
        if absent:
            shown = ", ".join(absent[:3]) + (f" (+{len(absent) - 3} more)" if len(absent) > 3 else "")
            raise UsageError(
                f"--repair: the rows to read again come from {shown}, which --input does not name: "
                f"{repair_command(bronze[0], warehouse)}"
            )
    forget: set[str] = set()
    rolled_back: set[int] = set()
    for d in damages:
        t = d.table
        if d.derived and not d.surgical:  # made again from the other tables: the whole table moves aside
            target = root / DAMAGED_DIR / f"{t.name}-{stamp}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(d.path), str(target))
            done.lines.append(f"repair: {t.name}: moved the table to {target}; it is made again")
        elif d.bad is not None and t in BRONZE and d.bad.batch is not None:
            if d.bad.batch not in rolled_back:
                rolled_back.add(d.bad.batch)
                rolled = _rollback(root, d.bad.batch, stamp)
                done.lines.append(
                    f"repair: {t.name}: rolled ingest batch {d.bad.batch} back ({', '.join(rolled)} moved "
                    f"to {root / DAMAGED_DIR}); this ingest reads its files again"
                )
        elif d.bad is not None:
            moved = _aside(root, t, [d.bad.path], stamp)
            what = "nothing of it lost" if t in BRONZE else f"rebuilt by the {REPAIRED_BY[t.name]}"
            done.lines.append(
                f"repair: {t.name}: moved the unreadable version {d.bad.version} to {moved} ({what})"
            )
        else:
            removed = _fsck(d.path, run_id)
            done.lines.append(
                f"repair: {t.name}: removed {plural(removed, 'missing data file')} from its Delta log (FSCK)"
            )
            forget.update(d.sources)
        if t in REPLAYED or t in BRONZE:
            done.reset_replay = True
        if t == FINDINGS:
            done.reset_audit = True
    if forget:
        deleted = _forget(root, sorted(forget), run_id)
        done.lines.append(
            f"repair: forgot {plural(len(forget), 'source file')} ("
            + ", ".join(f"{n} {name} rows" for name, n in deleted.items())
            + " deleted); this ingest reads them again"
        )
    if done.reset_replay:
        dirs = ReplayDirs(warehouse)
        dirs.manifest.unlink(missing_ok=True)
        shutil.rmtree(dirs.incremental, ignore_errors=True)
        done.lines.append(
            "repair: the replay rebuilds predictions, transitions, rebalances and member_sessions from "
            "requests"
        )
    if done.reset_audit:
        from rebalance_replay.jobs.audit import reset_state

        reset_state(warehouse)
        done.lines.append("repair: the audit evaluates every group again")
    return done


def guard(
    warehouse: str,
    command: str,
    *,
    repair_them: bool,
    inputs: Callable[[], Sequence[str]] | None,
    run_id: str | None,
    say: Callable[[str], None],
) -> None:
    """Before ``command`` runs: refuse a damaged table it reads (or whose log it records) with one line
    naming the table, the file or version, and the repair; with ``--repair`` (``repair_them``), repair
    those this command writes first (``inputs``: the source files an ingest reads)."""
    reads = READS.get(command, ALL_TABLES)
    damages = damaged_tables(warehouse, reads, files_of=() if command in LOG_ONLY else reads)
    if not damages:
        if repair_them:
            say(f"repair: no damaged table in {warehouse}")
        return
    mine = [d for d in damages if command == "run" or REPAIRED_BY[d.table.name] == command]
    blocking = [d for d in damages if not repair_them or d not in mine or not d.repairable]
    if blocking:
        first = blocking[0]
        others = [d.table.name for d in damages if d is not first]
        also = f" (also damaged: {', '.join(others)})" if others else ""
        raise DamagedTableError(message(first, warehouse) + also)
    done = repair(warehouse, mine, inputs=inputs() if inputs is not None else None, run_id=run_id)
    for line in done.lines:
        say(line)
    left = damaged_tables(warehouse, reads, files_of=() if command in LOG_ONLY else reads)
    if left:
        raise DamagedTableError(message(left[0], warehouse))
