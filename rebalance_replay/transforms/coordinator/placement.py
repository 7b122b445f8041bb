"""§12 coordinator placement: which ``__consumer_offsets`` partition (hence which broker) coordinates a
group. ``Utils.abs(groupId.hashCode()) % partitions`` with Java's ``String.hashCode`` (31-polynomial
over UTF-16 code units, 32-bit wrap-around) and ``Utils.abs(Integer.MIN_VALUE) == 0``; the same for
the Scala and the Java coordinator."""

from __future__ import annotations

from rebalance_replay.transforms.coordinator import state


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode`` of ``text`` as a signed 32-bit int."""
    h = state.java_string_hash(text)
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group_id: str, partitions: int = 50) -> int:
    """``GroupMetadataManager.partitionFor``: the offsets partition whose leader coordinates the group."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions
