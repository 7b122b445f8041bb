"""The tables of the warehouse, in data-flow order: raw lines → bronze ``requests`` (+ ``quarantine``)
→ replay → ``predictions`` / ``transitions`` / ``rebalances`` / ``member_sessions``.

Each is a Delta table in ``<warehouse>/<name>``. This module is the only place their columns are named.
"""

from __future__ import annotations

from rebalance_replay.schemas.core import Column as C
from rebalance_replay.schemas.core import TableDef

PROTOCOL = "struct<name:string,metadata:binary,metadata_length:int>"
ASSIGNMENT = "struct<member_id:string,assignment:binary,assignment_length:int>"
RESPONSE_MEMBER = "struct<member_id:string,group_instance_id:string,metadata:binary,metadata_length:int>"
LEAVE_MEMBER = "struct<member_id:string,group_instance_id:string,reason:string>"
LEAVE_MEMBER_RESPONSE = "struct<member_id:string,group_instance_id:string,error_code:int,error_name:string>"
COMMIT_PARTITION = "struct<topic:string,partition:int,committed_offset:bigint>"
COMMIT_PARTITION_RESPONSE = "struct<topic:string,partition:int,error_code:int,error_name:string>"

# --------------------------------------------------------------------------------------------------
# Bronze
# --------------------------------------------------------------------------------------------------

REQUESTS = TableDef(
    name="requests",
    doc=(
        "Bronze: one row per kept group-API `Completed request` line of `kafka.request.logger`, both eras "
        "(text ≤2.7, JSON 2.8+). Typed request/response fields plus the raw bodies."
    ),
    partition_by=("log_date",),
    columns=(
        # where the line came from
        C("source_file", "string", False, "path of the log file as read"),
        C("line_no", "bigint", False, "1-based physical line number in that file"),
        C("broker_id", "string", False, "broker the log belongs to (from the path pattern)"),
        C("log_era", "string", False, "`json` (Kafka 2.8+) or `text` (Kafka ≤ 2.7)"),
        C("log_level", "string", False, "`DEBUG`, or `INFO` for deprecated API versions (KAFKA-18272)"),
        # header
        C("api_key", "int", False, "Kafka API key"),
        C("api_name", "string", False, "ApiKeys name, e.g. JOIN_GROUP"),
        C("api_version", "int", False, "request API version"),
        C("api_version_deprecated", "boolean", True, "requestApiVersionDeprecated (3.7+ JSON)"),
        C("correlation_id", "int", True, "request header correlation id"),
        C("client_id", "string", True, "request header client id"),
        C("is_forwarded", "boolean", True, "JSON isForwarded"),
        # connection
        C("connection", "string", True, "connection id as logged"),
        C("listener_address", "string", True, "broker side host:port of the connection"),
        C("client_address", "string", True, "client side host:port of the connection"),
        C("connection_index", "string", True, "per-processor connection index (processor-index on 4.0+)"),
        C("security_protocol", "string", True, "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        C("principal", "string", True, "KafkaPrincipal, e.g. User:ANONYMOUS"),
        C("listener", "string", True, "listener name"),
        C("client_software_name", "string", True, "ClientInformation softwareName (2.5+)"),
        C("client_software_version", "string", True, "ClientInformation softwareVersion (2.5+)"),
        # time
        C("completion_time", "timestamp", False, "line timestamp (response sent), UTC"),
        C("completion_ms", "bigint", False, "completion time, epoch ms"),
        C("arrival_ms", "bigint", False, "completion_ms − round(totalTimeMs): when the request arrived"),
        C("total_time_ms", "double", True, "totalTime(Ms)"),
        C("request_queue_time_ms", "double", True, "requestQueueTime(Ms)"),
        C("local_time_ms", "double", True, "localTime(Ms)"),
        C("remote_time_ms", "double", True, "remoteTime(Ms): purgatory wait (parked JoinGroup/SyncGroup)"),
        C("throttle_time_ms", "bigint", True, "quota throttle time"),
        C("response_queue_time_ms", "double", True, "responseQueueTime(Ms)"),
        C("send_time_ms", "double", True, "sendTime(Ms)"),
        C("temporary_memory_bytes", "bigint", True, "only logged when > 0"),
        C("message_conversions_time_ms", "double", True, "only logged when > 0"),
        # request fields
        C("group_id", "string", True, "group id (FindCoordinator: the group key; DescribeGroups: first)"),
        C("group_ids", "array<string>", True, "DescribeGroups / FindCoordinator v4+: every group asked"),
        C("member_id", "string", True, "request memberId (`` on a first JoinGroup)"),
        C("group_instance_id", "string", True, "request groupInstanceId (static membership)"),
        C("generation_id", "int", True, "request generationId (OffsetCommit: generationIdOrMemberEpoch)"),
        C("member_epoch", "int", True, "ConsumerGroupHeartbeat memberEpoch"),
        C("session_timeout_ms", "int", True, "JoinGroup sessionTimeoutMs"),
        C("rebalance_timeout_ms", "int", True, "JoinGroup rebalanceTimeoutMs (v0: = session timeout)"),
        C("protocol_type", "string", True, "JoinGroup/SyncGroup protocolType"),
        C("protocol_name", "string", True, "SyncGroup v5+ protocolName"),
        C("protocols", f"array<{PROTOCOL}>", True, "JoinGroup protocols in client preference order"),
        C("reason", "string", True, "JoinGroup v8+ reason"),
        C("assignments", f"array<{ASSIGNMENT}>", True, "SyncGroup assignments (leader only)"),
        C("leave_members", f"array<{LEAVE_MEMBER}>", True, "LeaveGroup members (v0-2: one, from memberId)"),
        C("commit_partitions", f"array<{COMMIT_PARTITION}>", True, "OffsetCommit partitions"),
        C("key_type", "int", True, "FindCoordinator keyType (0 group, 1 transaction)"),
        # response fields
        C("error_code", "int", True, "response top-level errorCode (collapsed for LeaveGroup v0-2)"),
        C("error_name", "string", True, "Kafka Errors name of error_code"),
        C("response_generation_id", "int", True, "JoinGroup response generationId"),
        C("response_member_epoch", "int", True, "ConsumerGroupHeartbeat response memberEpoch"),
        C("response_leader", "string", True, "JoinGroup response leader"),
        C("response_member_id", "string", True, "JoinGroup/ConsumerGroupHeartbeat response memberId"),
        C("response_protocol_type", "string", True, "JoinGroup v7+/SyncGroup v5+ protocolType"),
        C("response_protocol_name", "string", True, "JoinGroup protocolName / SyncGroup v5+ protocolName"),
        C("response_skip_assignment", "boolean", True, "JoinGroup v9+ skipAssignment"),
        C("response_members", f"array<{RESPONSE_MEMBER}>", True, "JoinGroup members (leader only)"),
        C("response_assignment", "binary", True, "SyncGroup response assignment (JSON era)"),
        C("response_assignment_length", "int", True, "SyncGroup assignment size in bytes (both eras)"),
        C("response_leave_members", f"array<{LEAVE_MEMBER_RESPONSE}>", True, "LeaveGroup v3+ members"),
        C("response_commit_partitions", f"array<{COMMIT_PARTITION_RESPONSE}>", True, "OffsetCommit errors"),
        C("response_coordinator_node_id", "int", True, "FindCoordinator coordinator node id (first key)"),
        C("response_group_state", "string", True, "DescribeGroups groupState (first group)"),
        # raw
        C("raw_request", "string", True, "request body as logged (JSON object, or text-era struct)"),
        C("raw_response", "string", True, "response body as logged"),
        C("log_date", "date", False, "partition: UTC date of completion_time"),
    ),
)

QUARANTINE = TableDef(
    name="quarantine",
    doc="Every `Completed request` line that could not be parsed, with the reason naming the field.",
    partition_by=("log_date",),
    columns=(
        C("source_file", "string", False, "path of the log file as read"),
        C("line_no", "bigint", False, "1-based physical line number"),
        C("broker_id", "string", False, "broker the log belongs to"),
        C("reason", "string", False, "why it could not be read, naming the field"),
        C("raw_line", "string", False, "the line exactly as read (decoded as UTF-8 with replacement)"),
        C("ingested_at", "timestamp", False, "when the ingest run read it"),
        C("log_date", "date", False, "partition: UTC date of the line timestamp, or the ingest date"),
    ),
)

INGEST_FILES = TableDef(
    name="ingest_files",
    doc=(
        "Ingest progress: one row per (file identity, ingest batch) — how far each log file has been read, "
        "so a re-run adds nothing and a file that grew (or was rotated/gzipped) resumes where it left off."
    ),
    columns=(
        C("batch_id", "bigint", False, "ingest batch sequence number"),
        C("file_key", "string", False, "broker id + hash of the file's first line (stable across rotation)"),
        C("source_file", "string", False, "path read in this batch"),
        C("broker_id", "string", False, "broker"),
        C("compressed", "boolean", False, "read through gzip"),
        C("file_size", "bigint", False, "size on disk when read"),
        C("file_mtime_ms", "bigint", False, "modification time when read (epoch ms)"),
        C("start_line", "bigint", False, "first physical line read in this batch (1-based)"),
        C("end_line", "bigint", False, "last complete physical line read (inclusive)"),
        C("start_offset", "bigint", False, "uncompressed byte offset the batch started at"),
        C("end_offset", "bigint", False, "uncompressed byte offset after the last complete line"),
        C("lines_read", "bigint", False, "lines read in this batch"),
        C("requests", "bigint", False, "kept group-API requests"),
        C("quarantined", "bigint", False, "quarantined lines"),
        C("other_api_lines", "bigint", False, "completed requests of other APIs"),
        C("other_lines", "bigint", False, "lines of other loggers / blank lines"),
        C("ingested_at", "timestamp", False, "when"),
    ),
)

# --------------------------------------------------------------------------------------------------
# Replay outputs
# --------------------------------------------------------------------------------------------------

PREDICTIONS = TableDef(
    name="predictions",
    doc=(
        "One row per replayed request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit): the "
        "response the coordinator model predicts beside the one the broker logged."
    ),
    partition_by=("log_date",),
    columns=(
        C("source_file", "string", False, "log file of the request"),
        C("line_no", "bigint", False, "1-based line in that file"),
        C("broker_id", "string", False, "broker that logged it"),
        C("group_id", "string", False, "group"),
        C("api", "string", False, "JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT"),
        C("api_version", "int", False, "request version"),
        C("seq", "bigint", False, "position of the request in the group's replay order (0-based)"),
        C("member_id", "string", True, "request member id"),
        C("group_instance_id", "string", True, "request group instance id"),
        C("request_generation_id", "int", True, "generation the request carried"),
        C("arrival_ms", "bigint", False, "arrival, epoch ms"),
        C("observed_error", "string", True, "logged response error (Errors name)"),
        C("predicted_error", "string", True, "model's error"),
        C("observed_generation_id", "int", True, "logged JoinGroup response generation"),
        C("predicted_generation_id", "int", True, "model's"),
        C("observed_leader", "string", True, "logged JoinGroup leader"),
        C("predicted_leader", "string", True, "model's"),
        C("observed_member_id", "string", True, "logged JoinGroup response member id"),
        C("predicted_member_id", "string", True, "model's"),
        C("observed_protocol_name", "string", True, "logged JoinGroup/SyncGroup protocol name"),
        C("predicted_protocol_name", "string", True, "model's"),
        C("observed_members", "array<string>", True, "logged JoinGroup member list (leader), sorted"),
        C("predicted_members", "array<string>", True, "model's, sorted"),
        C(
            "observed_member_errors",
            "array<string>",
            True,
            "LeaveGroup per-member / OffsetCommit per-partition errors as `key=ERROR`",
        ),
        C("predicted_member_errors", "array<string>", True, "model's"),
        C("observed_skip_assignment", "boolean", True, "JoinGroup v9+"),
        C("predicted_skip_assignment", "boolean", True, "model's"),
        C("observed_completion_ms", "bigint", False, "line timestamp, epoch ms"),
        C("predicted_completion_ms", "bigint", True, "when the model answers (parked requests later)"),
        C("scored", "boolean", False, "false during warm-up or for externally caused errors"),
        C("unscored_reason", "string", True, "why not scored"),
        C("matched", "boolean", False, "every compared field agrees (false when not scored)"),
        C("mismatch_kinds", "array<string>", True, "fields that disagree, e.g. error, generation"),
        C("state_before", "string", True, "group state before the request"),
        C("state_after", "string", True, "group state after the request (and any timers before it)"),
        C("generation_before", "int", True, "group generation before"),
        C("generation_after", "int", True, "group generation after"),
        C("reconciled", "boolean", False, "track mode adjusted the model to the observed response"),
        C("log_date", "date", False, "partition: UTC date of arrival"),
    ),
)

TRANSITIONS = TableDef(
    name="transitions",
    doc="Every state transition of every group, with Kafka's reason text.",
    partition_by=("log_date",),
    columns=(
        C("group_id", "string", False, "group"),
        C("seq", "bigint", False, "order of the event in the group's replay"),
        C("time_ms", "bigint", False, "when (epoch ms, recorded clock)"),
        C("from_state", "string", False, "Empty, PreparingRebalance, CompletingRebalance, Stable, Dead"),
        C("to_state", "string", False, "new state"),
        C("generation_id", "int", False, "generation after the transition"),
        C("cause", "string", False, "Kafka's reason text"),
        C("member_id", "string", True, "member whose request or timer caused it"),
        C("source_file", "string", True, "request that caused it (null for timers)"),
        C("line_no", "bigint", True, "line of that request"),
        C("log_date", "date", False, "partition: UTC date"),
    ),
)

REBALANCES = TableDef(
    name="rebalances",
    doc="One row per rebalance (PreparingRebalance → Stable/Empty), generation by generation.",
    partition_by=("log_date",),
    columns=(
        C("group_id", "string", False, "group"),
        C("rebalance_seq", "int", False, "n-th rebalance of the group in this replay"),
        C("generation_from", "int", False, "generation before"),
        C("generation_to", "int", True, "generation reached (null if unfinished)"),
        C("started_ms", "bigint", False, "entered PreparingRebalance"),
        C("join_completed_ms", "bigint", True, "join phase completed (CompletingRebalance or Empty)"),
        C("stable_ms", "bigint", True, "reached Stable"),
        C("ended_ms", "bigint", True, "reached Stable or Empty, or was superseded"),
        C(
            "outcome",
            "string",
            False,
            "stable, empty, superseded (another rebalance began), dead (the "
            "coordinator unloaded the group), unfinished (still open when the log ends; batch replays only)",
        ),
        C("total_duration_ms", "bigint", True, "started → ended"),
        C("join_phase_ms", "bigint", True, "started → join completed"),
        C("sync_phase_ms", "bigint", True, "join completed → stable"),
        C(
            "trigger",
            "string",
            False,
            "new_member, member_left, session_expiry, rebalance_timeout_eviction, "
            "leader_rejoin, metadata_change, protocol_change, static_member_replaced, pending_sync_expiry, "
            "coordinator_moved, group_created, unknown",
        ),
        C("trigger_cause", "string", True, "Kafka's reason text"),
        C("trigger_member_id", "string", True, "member that triggered it"),
        C("trigger_client_reason", "string", True, "client's JoinGroup/LeaveGroup reason (v8+/v5+)"),
        C("members_before", "array<string>", True, "members when it started"),
        C("members_after", "array<string>", True, "members when it ended"),
        C("joined", "array<string>", True, "members added"),
        C("left", "array<string>", True, "members that left with LeaveGroup"),
        C("evicted", "array<string>", True, "members removed by the coordinator (expiry, timeouts)"),
        C("leader", "string", True, "leader of the new generation"),
        C("protocol_type", "string", True, "protocol type"),
        C("protocol_name", "string", True, "selected protocol (assignor)"),
        C(
            "partitions_moved",
            "int",
            True,
            "partitions whose owner changed (decoded assignments; null when the log has no assignment bytes)",
        ),
        C("partitions_assigned", "int", True, "partitions assigned in the new generation"),
        C("cooperative_follow_up", "boolean", False, "a cooperative protocol's follow-up round"),
        C("log_date", "date", False, "partition: UTC date of started_ms"),
    ),
)

MEMBER_SESSIONS = TableDef(
    name="member_sessions",
    doc="Each member's lifetime per generation: joined, last heartbeat, how it ended.",
    partition_by=("log_date",),
    columns=(
        C("group_id", "string", False, "group"),
        C("member_id", "string", False, "member"),
        C("group_instance_id", "string", True, "static instance id"),
        C("client_id", "string", True, "client id"),
        C("client_address", "string", True, "client host:port"),
        C("generation_id", "int", False, "generation"),
        C("joined_ms", "bigint", False, "first time in this generation"),
        C("last_heartbeat_ms", "bigint", True, "last heartbeat in this generation"),
        C("heartbeats", "bigint", False, "heartbeats in this generation"),
        C("commits", "bigint", False, "offset commits in this generation"),
        C("ended_ms", "bigint", True, "end of the membership in this generation"),
        C(
            "end_reason",
            "string",
            False,
            "next_generation, left, session_expiry, rebalance_timeout_eviction, pending_sync_expiry, "
            "fenced, max_size, reconciled (track mode removed it to agree with the broker), "
            "dead (the group was unloaded or re-created), open (still a member when the log ends)",
        ),
        C("session_timeout_ms", "int", True, "member's session timeout"),
        C("rebalance_timeout_ms", "int", True, "member's rebalance timeout"),
        C("is_leader", "boolean", False, "led this generation"),
        C("log_date", "date", False, "partition: UTC date of joined_ms"),
    ),
)

# --------------------------------------------------------------------------------------------------
# Audit
# --------------------------------------------------------------------------------------------------

EVIDENCE = "struct<source_file:string,line_no:bigint,api:string,arrival_ms:bigint>"

FINDINGS = TableDef(
    name="findings",
    doc=(
        "Audit: one row per finding of a rule (misconfiguration or anomaly, one rule per pattern of the "
        "audit catalogue: [audit-rules.md](audit-rules.md)) in a group, with the evidence rows, the measured "
        "values, the fix and the cost."
    ),
    partition_by=("log_date",),
    columns=(
        C("rule_id", "string", False, "R01, R02, …: the pattern's number in the audit catalogue"),
        C("rule", "string", False, "kebab-case rule name, e.g. session-timeout-eviction"),
        C("severity", "string", False, "info, warning or critical"),
        C("confidence", "double", False, "0–1; the summary says what lowers it"),
        C("group_id", "string", False, "group"),
        C("member_ids", "array<string>", True, "members involved"),
        C("group_instance_ids", "array<string>", True, "their static instance ids"),
        C("client_ids", "array<string>", True, "their client ids"),
        C("client_hosts", "array<string>", True, "their client hosts"),
        C("window_start_ms", "bigint", False, "first evidence (epoch ms)"),
        C("window_end_ms", "bigint", False, "last evidence (epoch ms)"),
        C("occurrences", "bigint", False, "how many times the pattern occurred"),
        C("summary", "string", False, "one sentence a person can act on, with the numbers"),
        C(
            "evidence",
            f"array<{EVIDENCE}>",
            False,
            "request rows that show it (capped; metrics.evidence_omitted counts the rest)",
        ),
        C("metrics", "map<string,double>", True, "the measured values behind the verdict"),
        C("fix", "string", False, "the change, with Kafka property names and values"),
        C("rebalance_seqs", "array<int>", True, "rebalances it caused (rebalances.rebalance_seq)"),
        C(
            "finding_key",
            "string",
            True,
            "stable across runs: 16 hex digits of SHA-256 over rule_id, group_id and subject",
        ),
        C(
            "subject",
            "string",
            True,
            "what the finding is about: `group` (rules with one finding per group), "
            "`instance:<group.instance.id>` (R10)",
        ),
        C(
            "status",
            "string",
            True,
            "new (first found by the last run that changed the table), ongoing (open before, still "
            "found), resolved (a run covering later time of its group no longer found it occurring)",
        ),
        C("first_seen_ms", "bigint", True, "wall-clock time of the audit run that first found it (epoch ms)"),
        C("last_seen_ms", "bigint", True, "wall-clock time of the last audit run it was open in (epoch ms)"),
        C("runs_seen", "bigint", True, "audit runs (that changed the table) it was open in"),
        C("log_date", "date", False, "partition: UTC date of window_start_ms"),
    ),
)

ALL_TABLES: tuple[TableDef, ...] = (
    REQUESTS,
    QUARANTINE,
    INGEST_FILES,
    PREDICTIONS,
    TRANSITIONS,
    REBALANCES,
    MEMBER_SESSIONS,
    FINDINGS,
)


def table_by_name(name: str) -> TableDef:
    for t in ALL_TABLES:
        if t.name == name:
            return t
    raise KeyError(f"no table named {name!r}; known: {', '.join(t.name for t in ALL_TABLES)}")


def tables_markdown() -> str:
    """``docs/tables.md``: every table, generated from these definitions."""
    head = (
        "# Tables\n\nGenerated from `rebalance_replay/schemas/tables.py` (`python -m "
        "rebalance_replay.schemas`); do not edit by hand. Every "
        "table is a Delta table in `<warehouse>/<name>`.\n\n"
    )
    return head + "\n".join(t.markdown() for t in ALL_TABLES)
