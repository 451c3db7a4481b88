"""Counts, peak and growth of one allocator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.steps import containing_step
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, LIVE_AT_END, Buffers
from tb_leakfinder.model.memory import ALLOC, FREE, MemoryEvents, Steps


@dataclass
class Summary:
    num_allocations: int
    num_deallocations: int
    peak_event: int  # index into the allocator's events, -1 without events
    peak_bytes_in_use: int
    peak_time_ps: int | None
    peak_step: int | None  # step number
    peak_stack_reserved_bytes: int
    peak_fragmentation: float
    live_at_end_count: int
    live_at_end_bytes: int
    freed_before_window_count: int
    growth_bytes_per_step: float  # slope of the heap at the end of each step


def summarize(events: MemoryEvents, buffers: Buffers, steps: Steps) -> Summary:
    live = buffers.status == LIVE_AT_END
    common = dict(
        num_allocations=int(np.count_nonzero(events.kind == ALLOC)),
        num_deallocations=int(np.count_nonzero(events.kind == FREE)),
        live_at_end_count=int(np.count_nonzero(live)),
        live_at_end_bytes=int(buffers.allocation_bytes[live].sum()),
        freed_before_window_count=int(np.count_nonzero(buffers.status == BEFORE_WINDOW)),
    )
    if len(events) == 0:
        return Summary(
            peak_event=-1,
            peak_bytes_in_use=0,
            peak_time_ps=None,
            peak_step=None,
            peak_stack_reserved_bytes=0,
            peak_fragmentation=0.0,
            growth_bytes_per_step=0.0,
            **common,
        )
    # The peak is where heap plus stack is highest, its last occurrence, as XProf's memory profile has it.
    total = events.bytes_in_use + events.bytes_reserved
    peak = len(total) - 1 - int(np.argmax(total[::-1]))
    step = int(containing_step(events.time_ps[peak : peak + 1], steps)[0])
    return Summary(
        peak_event=peak,
        peak_bytes_in_use=int(events.bytes_in_use[peak]),
        peak_time_ps=int(events.time_ps[peak]),
        peak_step=int(steps.step_num[step]) if step >= 0 else None,
        peak_stack_reserved_bytes=int(events.bytes_reserved[peak]),
        peak_fragmentation=float(events.fragmentation[peak]),
        growth_bytes_per_step=heap_growth_per_step(events, steps),
        **common,
    )


def heap_growth_per_step(events: MemoryEvents, steps: Steps) -> float:
    """Least-squares slope of the heap in use at each step's end (0 with < 2 steps)."""
    if len(steps) < 2 or len(events) == 0:
        return 0.0
    last = np.searchsorted(events.time_ps, steps.end_ps, side="right") - 1
    valid = last >= 0
    if np.count_nonzero(valid) < 2:
        return 0.0
    heap = events.bytes_in_use[last[valid]].astype(np.float64)
    x = np.arange(len(steps), dtype=np.float64)[valid]
    return float(np.polyfit(x, heap, 1)[0])
