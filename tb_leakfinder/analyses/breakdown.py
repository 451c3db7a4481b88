"""What makes up the peak: the stack, the buffers live at it grouped by op, shape, dtype and region, and the
heap allocated before the window."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.suspects import breakdown_keys
from tb_leakfinder.model.lifetimes import NO_TIME, Buffers
from tb_leakfinder.model.memory import MemoryEvents

BUFFERS = "buffers"
STACK = "stack"
BEFORE_WINDOW = "before_window"


@dataclass
class BreakdownRowResult:
    category: str  # BUFFERS: a group of buffers; STACK, BEFORE_WINDOW: one row each, no op/shape/dtype/region
    op: int
    shape: int
    dtype: int
    region: int
    site: int  # where its first buffer was made (an index into the allocator's sites), 0 for the special rows
    count: int | None  # None for the stack and the heap allocated before the window: not counted buffers
    bytes: int


def live_at(buffers: Buffers, event: int, time_ps: int) -> np.ndarray:
    """Mask of buffers allocated in the window and live just after event `event` (at `time_ps`) of the allocator."""
    allocated = (buffers.alloc_event >= 0) & (buffers.alloc_event <= event)
    not_freed = np.where(
        buffers.free_event >= 0,
        buffers.free_event > event,
        (buffers.free_time_ps == NO_TIME) | (buffers.free_time_ps > time_ps),
    )
    return allocated & not_freed


def _counted(events: MemoryEvents, buffers: Buffers, live: np.ndarray, peak_event: int) -> np.ndarray:
    """The live buffers the allocator's own heap count holds at the peak.

    A deferred allocation (TPU's `DeferredTpuAllocator`: an output allocated on
    the host before the device runs) is recorded at once, but the heap count
    rises only when the device takes its memory, which an earlier buffer still
    held. Paired by address, both look live, and the one buffer would show
    twice in a breakdown larger than the heap. When the live buffers exceed
    the heap, those whose allocation did not raise the count at all are left
    out, newest first, each only while it fits in the excess: a count merely
    out of step with the events' time order (several threads) drops nothing
    it holds.
    """
    excess = int(buffers.chunk_bytes[live].sum()) - int(events.heap_bytes[peak_event])
    if excess <= 0:
        return live
    at = buffers.alloc_event[live].astype(np.int64)
    rise = events.heap_bytes[at] - events.heap_bytes[np.maximum(at - 1, 0)]
    uncounted = live[(at > 0) & (rise <= 0)]
    drop = []
    for b in uncounted[::-1].tolist():  # buffers are in allocation order: newest first
        size = int(buffers.chunk_bytes[b])
        if 0 < size <= excess:
            drop.append(b)
            excess -= size
    return np.setdiff1d(live, drop)


def peak_breakdown(events: MemoryEvents, buffers: Buffers, peak_event: int) -> tuple[list[BreakdownRowResult], int]:
    """The rows that add up to the peak (stack reserved + heap), largest first, and the before-window bytes.

    Buffer rows group the buffers allocated in the window and live at the peak.
    The rest of the heap was allocated before the window (XProf's "unused
    preallocated device memory"): the profile never saw its allocation, even
    when it sees the free later.
    """
    if peak_event < 0:
        return [], 0
    time_ps = int(events.time_ps[peak_event])
    live = _counted(events, buffers, np.flatnonzero(live_at(buffers, peak_event, time_ps)), peak_event)
    keys = breakdown_keys(buffers, live)
    ids, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sizes = np.zeros(len(ids), np.int64)  # integer sums: float weights would round large byte counts
    np.add.at(sizes, inverse, buffers.chunk_bytes[live])
    counts = np.bincount(inverse, minlength=len(ids))
    heads = live[first]
    rows = [
        BreakdownRowResult(
            BUFFERS,
            int(buffers.op[h]),
            int(buffers.shape[h]),
            int(buffers.dtype[h]),
            int(buffers.region[h]),
            int(buffers.site[h]),
            int(c),
            int(b),
        )
        for h, c, b in zip(heads, counts, sizes, strict=True)
    ]
    before_window = max(0, int(events.heap_bytes[peak_event]) - int(sizes.sum()))
    stack = int(events.stack_bytes[peak_event])
    special = ((STACK, stack), (BEFORE_WINDOW, before_window))
    rows += [BreakdownRowResult(category, 0, 0, 0, 0, 0, None, n) for category, n in special if n]
    rows.sort(key=lambda r: (-r.bytes, -(r.count or 0)))
    return rows, before_window
