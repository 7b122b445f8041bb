"""The coordinator model as the replay uses it: the engine
(:mod:`~rebalance_replay.transforms.coordinator.engine`) with
track-mode reconciliation (:mod:`~rebalance_replay.transforms.coordinator.reconcile`) and saved state.

Imports go one way: ``model`` → ``reconcile`` → ``engine`` → ``serde`` → ``state``/``timers``/``codec``;
the engine calls reconciliation through two hooks this class fills in, so neither module imports the
other's caller.
"""

from __future__ import annotations

from rebalance_replay.transforms.coordinator import reconcile
from rebalance_replay.transforms.coordinator.codec import pack, unpack
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.engine import CoordinatorEngine
from rebalance_replay.transforms.coordinator.reconcile import reconcile_answer, reconcile_late_answer
from rebalance_replay.transforms.coordinator.state import ClassicGroup, ClassicGroupMember, ParkedCall
from rebalance_replay.transforms.coordinator.types import GroupRequest, PredictedResponse

__all__ = ["CoordinatorConfig", "GroupCoordinatorModel"]

_MAGIC = b"RRCM"  # rebalance-replay coordinator model


class GroupCoordinatorModel(CoordinatorEngine):
    """See :class:`~rebalance_replay.transforms.coordinator.engine.CoordinatorEngine`; adds reconciliation
    with the observed
    answers (track mode, warm start) and ``to_bytes`` / ``from_bytes``."""

    def _reconcile_answer(self, call: ParkedCall, predicted: PredictedResponse) -> bool:
        return reconcile_answer(self, call, predicted)

    def _reconcile_late_answer(self, call: ParkedCall, emit: bool) -> None:
        reconcile_late_answer(self, call, emit=emit)

    def _keeps_unjoined(self, member: ClassicGroupMember) -> bool:
        return reconcile.keeps_unjoined(member)

    def _unsure_join(self, group: ClassicGroup) -> bool:
        return reconcile.unsure_join(group)

    def _score_join_answer(self, group: ClassicGroup, call: ParkedCall, unsure: bool) -> None:
        reconcile.score_join_answer(group, call, unsure)

    def _check_generation_protocol(self, group: ClassicGroup, generation: int) -> None:
        reconcile.check_generation_protocol(self, group, generation)

    def _learn_sync_protocol(self, group: ClassicGroup, request: GroupRequest) -> None:
        reconcile.learn_sync_protocol(group, request)

    def to_bytes(self) -> bytes:
        """:meth:`to_state`, framed (:func:`~rebalance_replay.transforms.coordinator.codec.pack`): the same
        state always
        gives the same bytes. (A replayer saves the document inside its own, compressed once.)"""
        return pack(_MAGIC, self.to_state())

    @classmethod
    def from_bytes(cls, data: bytes, config: CoordinatorConfig) -> GroupCoordinatorModel:
        return cls.from_state(unpack(_MAGIC, data, "coordinator model"), config)
