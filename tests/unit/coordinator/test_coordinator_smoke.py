"""Smoke tests: the model answers a basic join/sync/heartbeat round and round-trips through bytes."""

from __future__ import annotations

from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from tests.unit.coordinator.scenario import Case, E, End, H, J, S, run_case


def test_single_member_round() -> None:
    case = Case(
        "smoke",
        steps=[
            J(0, alias="a", expect=E(error="MEMBER_ID_REQUIRED")),
            J(1, "a", expect=E(error="NONE", gen=1, leader="a", completion=3001, members={"a"})),
            S(3002, "a", 1, assignments={"a": b"as"}, expect=E(error="NONE", assignment=b"as")),
            H(3003, "a", 1, expect=E(error="NONE")),
        ],
        end=End(state="Stable", generation=1, members={"a"}, leader="a"),
    )
    result = run_case(case)
    data = result.model.to_bytes()
    again = GroupCoordinatorModel.from_bytes(data, case.config)
    assert again.to_bytes() == data
