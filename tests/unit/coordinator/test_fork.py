"""The model's ``fork`` (the replay tries requests, tie orders and late timers on copies of the model): the
same state, nothing shared that either copy changes, and each copy's group reporting to its own model.
The copy is hand-made for the slotted state classes (``state.copy_slots``); these tests fail when a slot
it should copy is shared instead."""

from __future__ import annotations

import copy

from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import EventKind, GroupState
from tests.unit.coordinator.scenario import H, J, S
from tests.unit.coordinator.test_held_timers import completed, group_with_the_delay_armed, joined


def in_the_initial_delay() -> tuple[GroupCoordinatorModel, str, str]:
    """a joined at 1 ms and waits in the initial delay (due 3,001); b has its member id (pending)."""
    model, a = group_with_the_delay_armed()
    b = joined(model, 10)
    return model, a, b


def test_a_fork_has_the_same_state_and_copies_what_changes() -> None:
    model, a, _ = in_the_initial_delay()
    model.drain()  # a fork leaves the undrained outputs behind; the saved state holds them
    fork = model.fork()
    assert fork.to_bytes() == model.to_bytes()
    group, copied = model.group, fork.group
    assert group is not None and copied is not None and copied is not group
    assert copied.members[a] is not group.members[a]
    assert copied.members[a].awaiting_join is not group.members[a].awaiting_join
    maps = ("members", "pending_members", "pending_sync_members", "static_members", "supported_protocols")
    for name in maps:
        assert list(getattr(copied, name)) == list(getattr(group, name))
        assert getattr(copied, name) is not getattr(group, name), name
    assert fork._book is not model._book and fork._book.inferred_seen is not model._book.inferred_seen
    assert fork._book.notes is not model._book.notes and fork._book.immediate is not model._book.immediate
    # immutable values are shared, not copied
    assert fork.config is model.config and copied.members[a].protocols is group.members[a].protocols


def test_what_a_fork_does_leaves_the_model_as_it_was() -> None:
    """b joins at 2,000 in the fork and the join phase completes there (one extension: both at 6,001); the
    model keeps a alone in the delay, and its group reports none of the fork's transitions."""
    model, a, b = in_the_initial_delay()
    saved = model.to_bytes()
    fork = model.fork()
    fork.handle(J(2000, b).request({}))
    fork.advance_to(10_000)
    predictions, _ = fork.drain()
    assert completed(predictions) == {a: (6001, 1), b: (6001, 1)}
    assert model.to_bytes() == saved
    assert model.group is not None and model.group.state is GroupState.PREPARING_REBALANCE
    assert model.group.members[a].awaiting_join is not None and b in model.group.pending_members
    assert model.next_timer_deadline() == 3001
    original_predictions, original_events = model.drain()
    assert [p.request.arrival_ms for p in original_predictions] == [0, 10]  # the MEMBER_ID_REQUIRED answers
    assert all(e.time_ms <= 10 for e in original_events)  # the fork's transitions came at 3,001 and 6,001
    assert any(e.kind is EventKind.TRANSITION for e in original_events)  # Empty -> PreparingRebalance at 1


def test_a_parked_call_held_twice_stays_one_object_in_the_fork() -> None:
    """Track mode keeps a parked call in the book as well as on its member: the copy keeps them one."""
    model, a, _ = in_the_initial_delay()
    group = model.group
    assert group is not None
    call = group.members[a].awaiting_join
    assert call is not None
    model._book.parked[call.seq] = call
    fork = model.fork()
    assert fork.group is not None
    copied = fork.group.members[a].awaiting_join
    assert copied is not call and fork._book.parked[call.seq] is copied
    assert (copied.seq, copied.request, copied.state_before) == (call.seq, call.request, call.state_before)
    copied.emitted = True
    assert not call.emitted
    assert copy.deepcopy(call).request is call.request  # frozen: shared


def test_the_settled_state_tells_what_the_fingerprint_leaves_out() -> None:
    """Two heartbeats in one instant, in either order: the same fingerprint (a session timer by key only),
    but the members' session timers, due together, fire in the order they were armed — a state the tie
    ordering's outcome compares (``settled_state``)."""
    model, a, b = in_the_initial_delay()
    model.handle(J(2000, b).request({}))
    model.advance_to(10_000)  # one join phase, a leads: both await their SyncGroup
    model.handle(S(10_000, a, assignments={}).request({a: a, b: b}))
    model.handle(S(10_000, b).request({a: a, b: b}))
    assert model.group is not None and model.group.state is GroupState.STABLE
    model.drain()
    first, second = model.fork(), model.fork()
    for copy_, order in ((first, (a, b)), (second, (b, a))):
        for m in order:
            copy_.handle(H(11_000, m).request({a: a, b: b}))
    assert first.fingerprint() == second.fingerprint()
    assert first.settled_state() != second.settled_state()
    assert first.settled_state() == first.fork().settled_state()
    # up to an instant before the two timers are due, no answer can tell the order they fire in
    due = first.next_timer_deadline()
    assert due is not None and due > 11_000
    assert first.settled_state(firing_until=due - 1) == second.settled_state(firing_until=due - 1)
    assert first.settled_state(firing_until=due) != second.settled_state(firing_until=due)
    last = max(t.deadline for t in first._timers.timers())
    assert first.settled_state(firing_until=last) == first.settled_state()  # all due by then: as a whole


def test_the_settled_state_tells_which_request_a_watched_answer_belongs_to() -> None:
    """Track mode watches a parked request's observed answer (the replay book's parked calls). Two copies
    whose watched call is a different request of the log (its ``ref``: file and line), all else equal, may
    not pass for one settled state: the broker's answer each waits for is another line's. Found by mutation
    testing (stop 55): the parked calls compared by their count alone passed every test."""
    from dataclasses import replace

    from tests.unit.coordinator.test_track_member_id_required import a_waits_for_c

    model = a_waits_for_c()
    ((seq, call),) = model._book.parked.items()
    assert call.request.member_id == "a-1" and call.request.ref is not None
    first, second = model.fork(), model.fork()
    assert first.settled_state() == second.settled_state()
    watched = copy.copy(second._book.parked[seq])
    watched.request = replace(call.request, ref=("broker-1/kafka-request.log", 999))
    second._book.parked[seq] = watched
    assert first.settled_state() != second.settled_state()


def test_a_state_saved_before_the_peak_size_was_kept_reads_it_from_the_table_size() -> None:
    """A model state saved by an older release holds the Java member table's size (``capacity``), not the
    group's peak size. A table only grows (``java.util.HashMap`` doubles past 3/4 full and never shrinks),
    so a table of 32 slots means the group once held more than 12 members, up to 24: the peak is read back as
    24, whatever the group holds now (the member order of later answers depends on it); a table of 16 tells
    nothing beyond the members present. Found by mutation testing (stop 55): ``capacity / 3 // 4`` for
    ``capacity * 3 // 4`` passed every test."""
    model, _, _ = in_the_initial_delay()
    state = model.to_state()
    legacy = {k: v for k, v in state["group"].items() if k != "peak"}
    config = model.config
    for capacity, peak in ((32, 24), (64, 48), (16, len(legacy["members"]))):
        restored = GroupCoordinatorModel.from_state(
            {**state, "group": {**legacy, "capacity": capacity}}, config
        )
        assert restored.group is not None and restored.group.peak_size == peak
    assert GroupCoordinatorModel.from_state(state, config).to_state() == state  # today's documents: as saved
