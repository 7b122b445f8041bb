"""Kafka's own vocabulary: API keys and error codes, named exactly as ``ApiKeys`` / ``Errors`` name them.

Shared by the log parser, the coordinator model and the validation rules, so an error is always
``REBALANCE_IN_PROGRESS`` (code 27) everywhere in the project.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class ApiKey(IntEnum):
    """The API keys rebalance-replay keeps (``ApiKeys`` enum names); every other API is only counted."""

    OFFSET_COMMIT = 8
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    CONSUMER_GROUP_HEARTBEAT = 68

    @classmethod
    def from_name(cls, name: str) -> ApiKey | None:
        try:
            return cls[name]
        except KeyError:
            return None

    @classmethod
    def from_code(cls, code: int) -> ApiKey | None:
        try:
            return cls(code)
        except ValueError:
            return None


#: APIs whose requests drive the classic group coordinator's state machine.
STATE_CHANGING_APIS = frozenset(
    {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT}
)

#: Highest request version per kept API that any Kafka release up to 4.x defines (message JSON specs).
MAX_API_VERSION: dict[ApiKey, int] = {
    ApiKey.OFFSET_COMMIT: 10,
    ApiKey.FIND_COORDINATOR: 6,
    ApiKey.JOIN_GROUP: 9,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.DESCRIBE_GROUPS: 6,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 1,
}

#: Names of the API keys Kafka defines (``ApiKeys``), so text-era headers of other APIs are recognised
#: as "other API" lines rather than quarantined.
KNOWN_API_NAMES: dict[int, str] = {
    0: "PRODUCE",
    1: "FETCH",
    2: "LIST_OFFSETS",
    3: "METADATA",
    4: "LEADER_AND_ISR",
    5: "STOP_REPLICA",
    6: "UPDATE_METADATA",
    7: "CONTROLLED_SHUTDOWN",
    8: "OFFSET_COMMIT",
    9: "OFFSET_FETCH",
    10: "FIND_COORDINATOR",
    11: "JOIN_GROUP",
    12: "HEARTBEAT",
    13: "LEAVE_GROUP",
    14: "SYNC_GROUP",
    15: "DESCRIBE_GROUPS",
    16: "LIST_GROUPS",
    17: "SASL_HANDSHAKE",
    18: "API_VERSIONS",
    19: "CREATE_TOPICS",
    20: "DELETE_TOPICS",
    21: "DELETE_RECORDS",
    22: "INIT_PRODUCER_ID",
    23: "OFFSET_FOR_LEADER_EPOCH",
    24: "ADD_PARTITIONS_TO_TXN",
    25: "ADD_OFFSETS_TO_TXN",
    26: "END_TXN",
    27: "WRITE_TXN_MARKERS",
    28: "TXN_OFFSET_COMMIT",
    29: "DESCRIBE_ACLS",
    30: "CREATE_ACLS",
    31: "DELETE_ACLS",
    32: "DESCRIBE_CONFIGS",
    33: "ALTER_CONFIGS",
    34: "ALTER_REPLICA_LOG_DIRS",
    35: "DESCRIBE_LOG_DIRS",
    36: "SASL_AUTHENTICATE",
    37: "CREATE_PARTITIONS",
    38: "CREATE_DELEGATION_TOKEN",
    39: "RENEW_DELEGATION_TOKEN",
    40: "EXPIRE_DELEGATION_TOKEN",
    41: "DESCRIBE_DELEGATION_TOKEN",
    42: "DELETE_GROUPS",
    43: "ELECT_LEADERS",
    44: "INCREMENTAL_ALTER_CONFIGS",
    45: "ALTER_PARTITION_REASSIGNMENTS",
    46: "LIST_PARTITION_REASSIGNMENTS",
    47: "OFFSET_DELETE",
    48: "DESCRIBE_CLIENT_QUOTAS",
    49: "ALTER_CLIENT_QUOTAS",
    50: "DESCRIBE_USER_SCRAM_CREDENTIALS",
    51: "ALTER_USER_SCRAM_CREDENTIALS",
    52: "VOTE",
    53: "BEGIN_QUORUM_EPOCH",
    54: "END_QUORUM_EPOCH",
    55: "DESCRIBE_QUORUM",
    56: "ALTER_PARTITION",
    57: "UPDATE_FEATURES",
    58: "ENVELOPE",
    59: "FETCH_SNAPSHOT",
    60: "DESCRIBE_CLUSTER",
    61: "DESCRIBE_PRODUCERS",
    62: "BROKER_REGISTRATION",
    63: "BROKER_HEARTBEAT",
    64: "UNREGISTER_BROKER",
    65: "DESCRIBE_TRANSACTIONS",
    66: "LIST_TRANSACTIONS",
    67: "ALLOCATE_PRODUCER_IDS",
    68: "CONSUMER_GROUP_HEARTBEAT",
    69: "CONSUMER_GROUP_DESCRIBE",
    70: "CONTROLLER_REGISTRATION",
    71: "GET_TELEMETRY_SUBSCRIPTIONS",
    72: "PUSH_TELEMETRY",
    73: "ASSIGN_REPLICAS_TO_DIRS",
    74: "LIST_CLIENT_METRICS_RESOURCES",
    75: "DESCRIBE_TOPIC_PARTITIONS",
    76: "SHARE_GROUP_HEARTBEAT",
    77: "SHARE_GROUP_DESCRIBE",
    78: "SHARE_FETCH",
    79: "SHARE_ACKNOWLEDGE",
    80: "ADD_RAFT_VOTER",
    81: "REMOVE_RAFT_VOTER",
    82: "UPDATE_RAFT_VOTER",
    83: "INITIALIZE_SHARE_GROUP_STATE",
    84: "READ_SHARE_GROUP_STATE",
    85: "WRITE_SHARE_GROUP_STATE",
    86: "DELETE_SHARE_GROUP_STATE",
    87: "READ_SHARE_GROUP_STATE_SUMMARY",
    88: "STREAMS_GROUP_HEARTBEAT",
    89: "STREAMS_GROUP_DESCRIBE",
    90: "DESCRIBE_SHARE_GROUP_OFFSETS",
    91: "ALTER_SHARE_GROUP_OFFSETS",
    92: "DELETE_SHARE_GROUP_OFFSETS",
}
KNOWN_API_CODES: dict[str, int] = {name: code for code, name in KNOWN_API_NAMES.items()}


class Errors(StrEnum):
    """Kafka ``Errors`` the group APIs can return (``org.apache.kafka.common.protocol.Errors``): each member
    is its name (a ``str``, so it equals the name the logs and tables carry) and has its wire ``code``."""

    _value_: str

    def __new__(cls, name: str, code: int) -> Errors:
        member = str.__new__(cls, name)
        member._value_ = name
        member.__dict__["_code"] = code
        return member

    @property
    def code(self) -> int:
        """Kafka's wire code of the error."""
        code: int = self.__dict__["_code"]
        return code

    @classmethod
    def named(cls, name: str) -> Errors:
        """The error of a name as logs carry it; ``UNKNOWN_ERROR_<code>`` (what :meth:`name_of` gives a
        code this table lacks) is a stand-in member of that name and code. Any other name: KeyError."""
        member = cls.__members__.get(name)
        if member is not None:
            return member
        if not name.startswith(_UNKNOWN_PREFIX) or not name[len(_UNKNOWN_PREFIX) :].lstrip("-").isdigit():
            raise KeyError(name)
        unknown = str.__new__(cls, name)
        unknown._name_ = name
        unknown._value_ = name
        unknown.__dict__["_code"] = int(name[len(_UNKNOWN_PREFIX) :])
        return unknown

    UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR", -1
    NONE = "NONE", 0
    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE", 1
    CORRUPT_MESSAGE = "CORRUPT_MESSAGE", 2
    UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION", 3
    INVALID_FETCH_SIZE = "INVALID_FETCH_SIZE", 4
    LEADER_NOT_AVAILABLE = "LEADER_NOT_AVAILABLE", 5
    NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER", 6
    REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT", 7
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE", 10
    OFFSET_METADATA_TOO_LARGE = "OFFSET_METADATA_TOO_LARGE", 12
    NETWORK_EXCEPTION = "NETWORK_EXCEPTION", 13
    COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS", 14
    COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE", 15
    NOT_COORDINATOR = "NOT_COORDINATOR", 16
    INVALID_TOPIC_EXCEPTION = "INVALID_TOPIC_EXCEPTION", 17
    RECORD_LIST_TOO_LARGE = "RECORD_LIST_TOO_LARGE", 18
    NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS", 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20
    INVALID_REQUIRED_ACKS = "INVALID_REQUIRED_ACKS", 21
    ILLEGAL_GENERATION = "ILLEGAL_GENERATION", 22
    INCONSISTENT_GROUP_PROTOCOL = "INCONSISTENT_GROUP_PROTOCOL", 23
    INVALID_GROUP_ID = "INVALID_GROUP_ID", 24
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID", 25
    INVALID_SESSION_TIMEOUT = "INVALID_SESSION_TIMEOUT", 26
    REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS", 27
    INVALID_COMMIT_OFFSET_SIZE = "INVALID_COMMIT_OFFSET_SIZE", 28
    TOPIC_AUTHORIZATION_FAILED = "TOPIC_AUTHORIZATION_FAILED", 29
    GROUP_AUTHORIZATION_FAILED = "GROUP_AUTHORIZATION_FAILED", 30
    CLUSTER_AUTHORIZATION_FAILED = "CLUSTER_AUTHORIZATION_FAILED", 31
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION", 35
    INVALID_REQUEST = "INVALID_REQUEST", 42
    KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR", 56
    NON_EMPTY_GROUP = "NON_EMPTY_GROUP", 68
    GROUP_ID_NOT_FOUND = "GROUP_ID_NOT_FOUND", 69
    UNSTABLE_OFFSET_COMMIT = "UNSTABLE_OFFSET_COMMIT", 88
    MEMBER_ID_REQUIRED = "MEMBER_ID_REQUIRED", 79
    GROUP_MAX_SIZE_REACHED = "GROUP_MAX_SIZE_REACHED", 81
    FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID", 82
    UNRELEASED_INSTANCE_ID = "UNRELEASED_INSTANCE_ID", 111
    FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH", 110
    UNSUPPORTED_ASSIGNOR = "UNSUPPORTED_ASSIGNOR", 112
    STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH", 113

    @classmethod
    def name_of(cls, code: int | None) -> str | None:
        """Kafka's name for an error code; ``UNKNOWN_ERROR_<code>`` for a code this table lacks."""
        if code is None:
            return None
        error = _ERRORS_BY_CODE.get(code)
        return error.name if error is not None else f"{_UNKNOWN_PREFIX}{code}"


_UNKNOWN_PREFIX = "UNKNOWN_ERROR_"
_ERRORS_BY_CODE: dict[int, Errors] = {e.code: e for e in Errors}


#: Errors a replay of the coordinator cannot produce itself: they say the group moved, the broker was
#: loading or the client was not allowed. Such responses are observed, never predicted.
EXTERNAL_ERRORS = frozenset(
    {
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.GROUP_AUTHORIZATION_FAILED,
        Errors.TOPIC_AUTHORIZATION_FAILED,
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        Errors.UNSUPPORTED_VERSION,
        Errors.INVALID_REQUEST,
        Errors.UNKNOWN_SERVER_ERROR,
        Errors.REQUEST_TIMED_OUT,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.NETWORK_EXCEPTION,
    }
)
