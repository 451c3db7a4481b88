"""Pairing allocations with deallocations into buffer lifetimes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.steps import containing_step
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, FREED, NEVER_FREED, NO_TIME, Buffers
from tb_leakfinder.model.memory import ALLOC, FREE, MemoryEvents, Steps


@dataclass
class Pairing:
    buffers: Buffers
    double_allocations: int  # an address allocated again without a free between
    unmatched_frees: int  # a free of an address already freed in the window


def pair_events(events: MemoryEvents, steps: Steps) -> Pairing:
    """Buffer lifetimes of one allocator's events (sorted by time).

    Events are paired in time order per address; each reuse of an address is
    a new buffer. A free with no allocation before it is a buffer allocated
    before the window; an allocation with no free is live at window end. An
    address allocated twice without a free is taken as freed when reused.
    """
    n = len(events)
    order = np.lexsort((np.arange(n), events.addr))  # by address, then time order
    addr = events.addr[order]
    kind = events.kind[order]
    same_next = np.zeros(n, bool)
    if n > 1:
        same_next[:-1] = addr[:-1] == addr[1:]
    same_prev = np.zeros(n, bool)
    same_prev[1:] = same_next[:-1]
    is_alloc = kind == ALLOC
    next_kind = np.full(n, -1, np.int8)
    next_kind[:-1] = kind[1:]
    prev_kind = np.full(n, -1, np.int8)
    prev_kind[1:] = kind[:-1]

    paired = is_alloc & same_next & (next_kind == FREE)
    reused = is_alloc & same_next & (next_kind == ALLOC)
    live = is_alloc & ~same_next
    before = (kind == FREE) & ~same_prev
    unmatched = (kind == FREE) & same_prev & (prev_kind == FREE)

    alloc_pos = np.concatenate(
        [np.flatnonzero(paired), np.flatnonzero(reused), np.flatnonzero(live), _missing(int(before.sum()))]
    )
    free_pos = np.concatenate(
        [np.flatnonzero(paired) + 1, _missing(int(reused.sum())), _missing(int(live.sum())), np.flatnonzero(before)]
    )
    status = np.concatenate(
        [
            np.full(int(paired.sum()), FREED, np.int8),
            np.full(int(reused.sum()), FREED, np.int8),
            np.full(int(live.sum()), NEVER_FREED, np.int8),
            np.full(int(before.sum()), BEFORE_WINDOW, np.int8),
        ]
    )
    alloc_event = np.where(alloc_pos >= 0, order[np.clip(alloc_pos, 0, None)], -1) if n else alloc_pos
    free_event = np.where(free_pos >= 0, order[np.clip(free_pos, 0, None)], -1) if n else free_pos
    reuse_event = order[np.flatnonzero(reused) + 1] if n else np.zeros(0, np.int64)
    n_paired = int(paired.sum())
    # A reused address's earlier buffer ends where the next allocation begins.
    free_time = _take(events.time_ps, free_event, NO_TIME)
    free_time[n_paired : n_paired + len(reuse_event)] = events.time_ps[reuse_event]

    alloc_time = _take(events.time_ps, alloc_event, NO_TIME)
    # Into time order first, so that each column below is gathered once, already in its place.
    by_time = np.lexsort((free_time, alloc_time))
    alloc_event, free_event, alloc_time, free_time, status = (
        column[by_time] for column in (alloc_event, free_event, alloc_time, free_time, status)
    )
    source = np.where(alloc_event >= 0, alloc_event, free_event)
    buffers = Buffers(
        alloc_event=alloc_event.astype(np.int64),
        free_event=free_event.astype(np.int64),
        alloc_time_ps=alloc_time,
        free_time_ps=free_time,
        alloc_step=np.where(alloc_event >= 0, containing_step(alloc_time, steps), -1),
        free_step=np.where(free_time != NO_TIME, containing_step(free_time, steps), -1),
        addr=events.addr[source] if n else np.zeros(0, np.uint64),
        requested_bytes=events.requested_bytes[source] if n else np.zeros(0, np.int64),
        allocation_bytes=events.allocation_bytes[source] if n else np.zeros(0, np.int64),
        op=_take(events.op, alloc_event, 0),
        shape=_take(events.shape, alloc_event, 0),
        dtype=_take(events.dtype, alloc_event, -1),
        region=_take(events.region, alloc_event, 0),
        status=status,
    )
    return Pairing(buffers, int(reused.sum()), int(unmatched.sum()))


def _take(column: np.ndarray, index: np.ndarray, missing: int) -> np.ndarray:
    if len(column) == 0:
        return np.full(len(index), missing, column.dtype)
    return np.where(index >= 0, column[np.clip(index, 0, None)], missing).astype(column.dtype)


def _missing(n: int) -> np.ndarray:
    return np.full(n, -1, np.int64)
