"""The audit: rules R01…R23 (the audit catalogue's patterns) as pure functions over one group's rows.

``RULES`` (id → :class:`~rebalance_replay.transforms.audit.registry.Rule`) is filled by importing the rule
families.
"""

from rebalance_replay.transforms.audit import liveness, phases, protocol  # noqa: F401  (registers the rules)
from rebalance_replay.transforms.audit.config import AuditSettings
from rebalance_replay.transforms.audit.model import BrokerBounds, Finding, GroupInputs
from rebalance_replay.transforms.audit.registry import RULES, GroupAudit, evaluate, selected_rules

__all__ = [
    "RULES",
    "AuditSettings",
    "BrokerBounds",
    "Finding",
    "GroupAudit",
    "GroupInputs",
    "evaluate",
    "selected_rules",
]
