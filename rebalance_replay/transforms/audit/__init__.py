"""The audit: one rule per pattern of the audit catalogue, as pure functions over one group's rows.

``RULES`` (id → :class:`~rebalance_replay.transforms.audit.registry.Rule`) is filled by importing the rule
families; adding a rule is one check function with its ``register(id, name, settings)(check)`` call and
one settings class (docs/architecture.md, "Adding an audit rule").
"""

from rebalance_replay.transforms.audit import liveness, phases, protocol  # noqa: F401  (registers the rules)
from rebalance_replay.transforms.audit.config import AuditSettings
from rebalance_replay.transforms.audit.model import BrokerBounds, Finding, GroupInputs
from rebalance_replay.transforms.audit.registry import (
    RULES,
    GroupAudit,
    evaluate,
    rule_id_pattern,
    rule_ids,
    rule_ids_text,
    selected_rules,
)

__all__ = [
    "RULES",
    "AuditSettings",
    "BrokerBounds",
    "Finding",
    "GroupAudit",
    "GroupInputs",
    "evaluate",
    "rule_id_pattern",
    "rule_ids",
    "rule_ids_text",
    "selected_rules",
]
