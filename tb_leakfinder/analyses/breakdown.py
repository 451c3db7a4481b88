"""What is live at the peak, grouped by op, shape, dtype and region."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.suspects import group_keys
from tb_leakfinder.model.lifetimes import NO_TIME, Buffers
from tb_leakfinder.model.memory import MemoryEvents


@dataclass
class BreakdownRow:
    op: int
    shape: int
    dtype: int
    region: int
    count: int
    bytes: int


def live_at(buffers: Buffers, event: int, time_ps: int) -> np.ndarray:
    """Mask of buffers live just after event `event` (at `time_ps`) of the allocator."""
    allocated = (buffers.alloc_event >= 0) & (buffers.alloc_event <= event) | (buffers.alloc_time_ps == NO_TIME)
    not_freed = np.where(
        buffers.free_event >= 0,
        buffers.free_event > event,
        (buffers.free_time_ps == NO_TIME) | (buffers.free_time_ps > time_ps),
    )
    return allocated & not_freed


def peak_breakdown(events: MemoryEvents, buffers: Buffers, peak_event: int) -> tuple[list[BreakdownRow], int]:
    """Every group live at the peak, largest first, and the heap bytes no known buffer explains.

    The unexplained bytes belong to buffers allocated before the window and
    still live at the peak: the profile never saw their allocation.
    """
    if peak_event < 0:
        return [], 0
    live = np.flatnonzero(live_at(buffers, peak_event, int(events.time_ps[peak_event])))
    keys = group_keys(buffers, live)
    ids, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sizes = np.zeros(len(ids), np.int64)  # integer sums: float weights would round large byte counts
    np.add.at(sizes, inverse, buffers.allocation_bytes[live])
    counts = np.bincount(inverse, minlength=len(ids))
    heads = live[first]
    rows = [
        BreakdownRow(int(buffers.op[h]), int(buffers.shape[h]), int(buffers.dtype[h]), int(buffers.region[h]), int(c), int(b))
        for h, c, b in zip(heads, counts, sizes, strict=True)
    ]
    rows.sort(key=lambda r: (-r.bytes, -r.count))
    unexplained = int(events.bytes_in_use[peak_event]) - int(sizes.sum())
    return rows, max(0, unexplained)
