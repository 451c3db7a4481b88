"""Pairing allocations with deallocations into buffer lifetimes.

Lifetimes on two layers: model/lifetimes.py declares the columns; here the events are paired into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from tb_leakfinder import compiled
from tb_leakfinder.analyses.steps import containing_step
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, FREED, NEVER_FREED, NO_TIME, Buffers
from tb_leakfinder.model.memory import ALLOC, FREE, MemoryEvents, Steps

_pairing = compiled.built("tb_leakfinder.analyses._pairing")


@dataclass
class Pairing:
    buffers: Buffers
    double_allocations: int  # an address allocated again without a free between
    unmatched_frees: int  # a free of an address already freed in the window


def pair_events(events: MemoryEvents, steps: Steps, site: np.ndarray | None = None) -> Pairing:
    """Buffer lifetimes of one allocator's events (sorted by time).

    Events are paired in time order per address; each reuse of an address is
    a new buffer. A free with no allocation before it is a buffer allocated
    before the window; an allocation with no free is live at window end. An
    address allocated twice without a free is taken as freed when reused.
    Buffers are in order of allocation time, then free time (a buffer allocated
    before the window has neither an allocation time nor an allocation event).
    `site` is each event's site (attribution.attribute), 0 for all when None.
    """
    n = len(events)
    # Each buffer's steps are its events': the events' steps are found once, in time order.
    event_step = containing_step(events.time_ps, steps, np.int32)
    # Positions in 32 bits where they fit (any profile under the 4 GiB read limit): a buffer is 16 bytes smaller.
    index = np.int32 if n < np.iinfo(np.int32).max else np.int64
    linked = None
    if _pairing is not None and not compiled.pure_python():
        linked = _linked_compiled(_pairing, events, event_step, index)
    if linked is None:
        linked = _linked(events, _by_address(events), event_step, index)
    del event_step
    reorder = _time_order(events, linked)
    columns, source = linked.columns, linked.source
    if reorder is not None:
        columns = {name: column[reorder] for name, column in columns.items()}
        source = source[reorder]
    # A buffer allocated before the window has no op, shape, dtype, region or site.
    unallocated = np.flatnonzero(columns["alloc_event"] < 0)

    def made(column: np.ndarray) -> np.ndarray:
        values: np.ndarray = column[source]
        values[unallocated] = 0
        return values

    buffers = Buffers(
        **columns,
        addr=events.addr[source],
        requested_bytes=events.requested_bytes[source],
        chunk_bytes=events.chunk_bytes[source],
        op=made(events.op),
        shape=made(events.shape),
        dtype=made(events.dtype),
        region=made(events.region),
        site=made(site).astype(np.int32, copy=False) if site is not None else np.zeros(len(source), np.int32),
    )
    return Pairing(buffers, linked.reused, linked.unmatched_frees)


@dataclass(eq=False)
class _Linked:
    """The buffers in time order, before their sort by (allocation time, free time): those allocated before the
    window (the first `before_window` rows), then one per allocation."""

    columns: dict[str, np.ndarray]  # by their names in Buffers: the events, times, steps and status
    source: np.ndarray  # each buffer's event: its allocation's, or its free's when allocated before the window
    before_window: int
    reused: int  # buffers ended by an allocation at their address, not a free
    unmatched_frees: int
    by_address: np.ndarray | None = None  # the events' order by address, when the pairing made it


def _by_address(events: MemoryEvents) -> np.ndarray:
    """The events by address, then time. numpy's stable sort (a timsort) takes the runs an allocator's addresses
    make in time order (ascending addresses handed out, older ones freed and handed out again): a third to two
    thirds of the time of one unstable sort of packed keys (`stable_argsort`) on 1M events of both synthesised
    profiles and on a real PyTorch trace; only keys in no order at all sort faster packed (benchmarks/RESULTS.md,
    issue 43)."""
    return np.argsort(events.addr, kind="stable")


def _linked(events: MemoryEvents, by_address: np.ndarray, event_step: np.ndarray, index: type) -> _Linked:
    """The buffers by numpy's passes: the path without the compiled pass (analyses/_pairing.c), to the same columns."""
    n = len(events)
    kind, time_ps = events.kind, events.time_ps
    addresses = events.addr[by_address]
    same = addresses[1:] == addresses[:-1]  # in address order: each event and the next at one address
    del addresses
    is_free = kind == FREE
    free_in_order = is_free[by_address]
    unmatched = int(np.count_nonzero(same & free_in_order[:-1] & free_in_order[1:]))  # a free of an address already freed
    # The first event at each address, where it is a free: a buffer allocated before the window.
    opens = free_in_order
    opens[1:] &= ~same
    first_free = np.zeros(n, bool)
    first_free[by_address[opens]] = True
    del free_in_order, opens
    before = np.flatnonzero(first_free)
    del first_free
    # The next event at the same address, -1 at an address's last: written in address order, then put in time order.
    next_in_order = np.full(n, -1, np.intp)
    np.copyto(next_in_order[:-1], by_address[1:], where=same)
    del same
    following = np.empty(n, np.intp)
    following[by_address] = next_in_order
    del next_in_order  # the analysis of a large profile holds its events: temporaries go as soon as they served

    allocs = np.flatnonzero(kind == ALLOC)
    after = following[allocs]  # the next event at the address: its free, or its reuse
    del following
    ended = after >= 0
    after_or_0 = np.maximum(after, 0)
    freed = ended & is_free[after_or_0]
    del is_free
    nb = len(before)
    alloc_event = np.concatenate([np.full(nb, -1, index), allocs.astype(index)])
    free_event = np.concatenate([before.astype(index), np.where(freed, after, -1).astype(index)])
    alloc_time = np.concatenate([np.full(nb, NO_TIME, np.int64), time_ps[allocs]])
    # A reused address's earlier buffer ends where the next allocation begins.
    free_time = np.concatenate([time_ps[before], np.where(ended, time_ps[after_or_0], NO_TIME)])
    status = np.concatenate([np.full(nb, BEFORE_WINDOW, np.int8), np.where(ended, FREED, NEVER_FREED).astype(np.int8)])
    source = np.concatenate([before, allocs])
    alloc_step = np.concatenate([np.full(nb, -1, np.int32), event_step[allocs]])
    free_step = np.where(free_time != NO_TIME, np.concatenate([event_step[before], event_step[after_or_0]]), -1)
    columns = {
        "alloc_event": alloc_event,
        "free_event": free_event,
        "alloc_time_ps": alloc_time,
        "free_time_ps": free_time,
        "alloc_step": alloc_step,
        "free_step": free_step,
        "status": status,
    }
    return _Linked(columns, source, nb, int(np.count_nonzero(ended & ~freed)), unmatched, by_address)


def _linked_compiled(pairing: ModuleType, events: MemoryEvents, event_step: np.ndarray, index: type) -> _Linked | None:
    """The buffers by the compiled pass (analyses/_pairing.c): two walks in time order that write the columns in
    place, instead of a sort and a dozen numpy passes with their temporaries (a cold 1M-event analysis's largest
    part; docs/performance.md). None when an event is neither an allocation nor a free, which only numpy's path
    pairs as it always did."""
    n = len(events)
    kind = events.kind
    following = np.empty(n, np.intp)
    first_free = np.empty(n, np.uint8)
    linked = pairing.link(events.addr, kind, ALLOC, FREE, compiled.hash_seed(), following, first_free)
    if linked is None:
        return None
    nb, unmatched = linked
    m = nb + int(np.count_nonzero(kind == ALLOC))
    columns = {
        "alloc_event": np.empty(m, index),
        "free_event": np.empty(m, index),
        "alloc_time_ps": np.empty(m, np.int64),
        "free_time_ps": np.empty(m, np.int64),
        "status": np.empty(m, np.int8),
        "alloc_step": np.empty(m, np.int32),
        "free_step": np.empty(m, np.int32),
    }
    source = np.empty(m, np.intp)
    wide = index is np.int64
    reused = pairing.build(
        following, first_free, kind, events.time_ps, event_step, ALLOC, FREE, wide,
        *(columns[name] for name in ("alloc_event", "free_event", "alloc_time_ps", "free_time_ps", "status")),
        source, columns["alloc_step"], columns["free_step"],
    )  # fmt: skip
    return _Linked(columns, source, nb, reused, unmatched)


def _time_order(events: MemoryEvents, linked: _Linked) -> np.ndarray | None:
    """The permutation that puts buffers built in time order into (allocation time, free time) order, ties
    kept as pairing by address lists them; None when they are in that order already (no two allocations at
    one time, none before the profile's start, no two frees of before-window buffers at one time)."""
    alloc_time, free_time = linked.columns["alloc_time_ps"], linked.columns["free_time_ps"]
    nb, source = linked.before_window, linked.source
    alloc_times = alloc_time[nb:]
    before_times = free_time[:nb]
    if (
        not np.any(alloc_times[1:] <= alloc_times[:-1])
        and not (len(alloc_times) and alloc_times[0] <= NO_TIME)
        and not np.any(before_times[1:] == before_times[:-1])
    ):
        return None
    n = len(events)
    by_address = linked.by_address if linked.by_address is not None else _by_address(events)
    position = np.empty(n, np.int64)  # each event's place in address order
    position[by_address] = np.arange(n)
    # Pairing by address lists paired buffers, then reused, then never freed, then before the window.
    ended = linked.columns["status"][nb:] == FREED
    group = np.where(ended, np.where(linked.columns["free_event"][nb:] >= 0, 0, 1), 2)
    tie = np.concatenate([3 * n + position[source[:nb]], group * n + position[source[nb:]]])
    return np.lexsort((tie, free_time, alloc_time))
