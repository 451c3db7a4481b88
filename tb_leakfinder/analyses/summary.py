"""Counts, peak and growth of one allocator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.steps import containing_step
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, NEVER_FREED, Buffers
from tb_leakfinder.model.memory import ALLOC, FREE, MemoryEvents, Steps

# Events summed together when finding the peak.
PEAK_BLOCK = 1 << 16


@dataclass
class Summary:
    num_allocations: int
    num_deallocations: int
    peak_event: int  # index into the allocator's events, -1 without events
    peak_bytes_in_use: int  # stack reserved + heap, as XProf's peakBytesInUse
    peak_heap_bytes: int
    peak_stack_reserved_bytes: int
    memory_capacity_bytes: int  # stack reserved + heap + available, at the peak
    peak_time_ps: int | None
    peak_step: int | None  # step number
    peak_fragmentation: float
    never_freed_count: int
    never_freed_bytes: int  # their chunk bytes
    never_freed_requested_bytes: int  # their tensor bytes
    freed_before_window_count: int
    growth_bytes_per_step: float  # slope of the heap at the end of each step
    heap_start_bytes: int = 0  # the heap in use when the window began (before its first event)
    heap_end_bytes: int = 0  # and when it ended (after its last)
    heap_floor_bytes: int = 0  # the least it held at any moment of the window: what outlives every step


def summarize(events: MemoryEvents, buffers: Buffers, steps: Steps) -> Summary:
    live = buffers.status == NEVER_FREED
    common = dict(
        num_allocations=int(np.count_nonzero(events.kind == ALLOC)),
        num_deallocations=int(np.count_nonzero(events.kind == FREE)),
        never_freed_count=int(np.count_nonzero(live)),
        never_freed_bytes=int(buffers.chunk_bytes[live].sum()),
        never_freed_requested_bytes=int(buffers.requested_bytes[live].sum()),
        freed_before_window_count=int(np.count_nonzero(buffers.status == BEFORE_WINDOW)),
    )
    if len(events) == 0:
        return Summary(
            peak_event=-1,
            peak_bytes_in_use=0,
            peak_heap_bytes=0,
            peak_stack_reserved_bytes=0,
            memory_capacity_bytes=0,
            peak_time_ps=None,
            peak_step=None,
            peak_fragmentation=0.0,
            growth_bytes_per_step=0.0,
            **common,
        )
    peak = peak_event(events)
    heap, stack = int(events.heap_bytes[peak]), int(events.stack_bytes[peak])
    # bytes_allocated is the heap after each event: before the first, that event's own chunk is not yet in it.
    first_chunk = int(events.chunk_bytes[0])
    start = int(events.heap_bytes[0]) - (first_chunk if events.kind[0] == ALLOC else -first_chunk)
    step = int(containing_step(events.time_ps[peak : peak + 1], steps)[0])
    return Summary(
        peak_event=peak,
        peak_bytes_in_use=stack + heap,
        peak_heap_bytes=heap,
        peak_stack_reserved_bytes=stack,
        memory_capacity_bytes=stack + heap + int(events.free_bytes[peak]),
        peak_time_ps=int(events.time_ps[peak]),
        peak_step=int(steps.step_num[step]) if step >= 0 else None,
        peak_fragmentation=float(events.fragmentation[peak]),
        growth_bytes_per_step=heap_growth_per_step(events, steps),
        heap_start_bytes=max(0, start),
        heap_end_bytes=int(events.heap_bytes[-1]),
        heap_floor_bytes=min(max(0, start), int(events.heap_bytes.min())),
        **common,
    )


def peak_event(events: MemoryEvents) -> int:
    """The event at which stack reserved + heap is highest, the last of equals, as XProf's memory profile picks it
    (-1 without events).

    XProf keeps the last event whose total is at least the highest so far, in
    the file's order of lines; here ties go to the latest in time. The two
    differ only when equal peaks fall on different threads' lines.
    """
    heap, stack = events.heap_bytes, events.stack_bytes
    # Summed a block at a time into one buffer that stays in cache: a sum of the whole stream would be a column of
    # fresh pages, and its reversed view another copy.
    total = np.empty(min(len(heap), PEAK_BLOCK), np.result_type(heap, stack))
    highest, peak = None, -1
    for lo in range(0, len(heap), PEAK_BLOCK):
        block = np.add(heap[lo : lo + PEAK_BLOCK], stack[lo : lo + PEAK_BLOCK], out=total[: min(PEAK_BLOCK, len(heap) - lo)])
        top = block.max()
        if highest is None or top >= highest:
            highest, peak = top, lo + len(block) - 1 - int(np.argmax(block[::-1]))
    return peak


def heap_growth_per_step(events: MemoryEvents, steps: Steps) -> float:
    """Least-squares slope of the heap in use at each step's end (0 with < 2 steps)."""
    if len(steps) < 2 or len(events) == 0:
        return 0.0
    last = np.searchsorted(events.time_ps, steps.end_ps, side="right") - 1
    valid = last >= 0
    if np.count_nonzero(valid) < 2:
        return 0.0
    heap = events.heap_bytes[last[valid]].astype(np.float64)
    x = np.arange(len(steps), dtype=np.float64)[valid]
    return float(np.polyfit(x, heap, 1)[0])
