"""Every table's name and schema, defined once (see ``rebalance_replay.schemas.tables``).

A schema is written in a tiny neutral form (:class:`Column` with a type string) so that the pure code
(parsers, the coordinator model) can name its fields without importing Spark, while the Spark and Arrow
schemas used by writers, readers, tests and the docs are all derived from the same definition.
"""

from rebalance_replay.schemas.core import Column, TableDef
from rebalance_replay.schemas.tables import (
    ALL_TABLES,
    FINDINGS,
    INGEST_FILES,
    MEMBER_SESSIONS,
    PREDICTIONS,
    QUARANTINE,
    REBALANCES,
    REQUESTS,
    TRANSITIONS,
    table_by_name,
)

__all__ = [
    "ALL_TABLES",
    "FINDINGS",
    "INGEST_FILES",
    "MEMBER_SESSIONS",
    "PREDICTIONS",
    "QUARANTINE",
    "REBALANCES",
    "REQUESTS",
    "TRANSITIONS",
    "Column",
    "TableDef",
    "table_by_name",
]
