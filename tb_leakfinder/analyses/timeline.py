"""Heap over time, downsampled for a chart: the timeline route's samples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.buffer_paging import check_family
from tb_leakfinder.analyses.downsample import downsample
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis
from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.memory import ALLOC, Steps


@dataclass(eq=False)
class Timeline:
    """Samples of one allocator's counters, at the events `downsample` keeps."""

    total_events: int
    time_ps: np.ndarray
    heap_bytes: np.ndarray
    stack_bytes: np.ndarray
    fragmentation: np.ndarray
    never_freed_bytes: np.ndarray
    # The event each sample is at: its buffer's chunk bytes (+ an allocation, - a free) and its buffer's row in
    # the allocator's buffers (-1 when none: an event the pairing kept no buffer of).
    event_bytes: np.ndarray
    event_buffer: np.ndarray
    window_start_ps: int  # what the charts span: the allocator's events and the steps around them
    window_end_ps: int
    family: int | None = None
    family_bytes: np.ndarray | None = None  # held by the family `family`: its buffers that outlive a step


def timeline(
    a: AllocatorAnalysis,
    points: int,
    start_ps: int | None = None,
    end_ps: int | None = None,
    family: int | None = None,
    steps: Steps | None = None,
) -> Timeline:
    """At most `points` samples of the events in [start_ps, end_ps], the peak and every spike kept."""
    if family is not None:
        check_family(a, family)
    e = a.events
    lo = 0 if start_ps is None else int(np.searchsorted(e.time_ps, start_ps, side="left"))
    hi = len(e) if end_ps is None else int(np.searchsorted(e.time_ps, end_ps, side="right"))
    # Sampled on stack + heap, so that the peak XProf reports is among the points.
    in_use = e.heap_bytes[lo:hi] + e.stack_bytes[lo:hi]
    at = lo + downsample(e.time_ps[lo:hi], in_use, points)
    start, end = window(a, steps)
    signed = np.where(e.kind[at] == ALLOC, e.chunk_bytes[at], -e.chunk_bytes[at])
    return Timeline(
        total_events=len(e),
        time_ps=e.time_ps[at],
        heap_bytes=e.heap_bytes[at],
        stack_bytes=e.stack_bytes[at],
        fragmentation=e.fragmentation[at],
        never_freed_bytes=never_freed_bytes(a.buffers, at),
        event_bytes=signed,
        event_buffer=buffer_of_events(a.buffers, len(e), at),
        window_start_ps=start,
        window_end_ps=end,
        family=family,
        family_bytes=None if family is None else live_bytes(a.buffers, a.suspects.family_of_buffer == family, at),
    )


def window(a: AllocatorAnalysis, steps: Steps | None = None) -> tuple[int, int]:
    """The span the timeline and the lifetimes are drawn over: from the allocator's first event (or the first step
    that overlaps its events, when earlier) to its last (or that last step's end); (0, 0) without events."""
    times = a.events.time_ps
    if not len(times):
        return 0, 0
    first, last = int(times.min()), int(times.max())
    start, end = first, last
    if steps is not None and len(steps):
        overlaps = (steps.end_ps >= first) & (steps.start_ps <= last)
        if overlaps.any():
            start = min(start, int(steps.start_ps[overlaps].min()))
            end = max(end, int(steps.end_ps[overlaps].max()))
    return start, end


def buffer_of_events(buffers: Buffers, events: int, at: np.ndarray) -> np.ndarray:
    """For each of the allocator's events `at` (of `events`), the row of the buffer it allocates or frees; -1 when
    none. The buffers whose events are sampled are picked out by a mask of the samples: scattering every buffer's
    row into a map of all the events took 9 ms of a 1M-event timeline, for the thousand samples it keeps."""
    wanted, back = np.unique(at, return_inverse=True)
    sampled = np.zeros(events, bool)
    sampled[wanted] = True
    found = np.full(len(wanted), -1, np.int64)
    for column in (buffers.alloc_event, buffers.free_event):
        rows = np.flatnonzero(sampled[np.maximum(column, 0)] & (column >= 0))
        found[np.searchsorted(wanted, column[rows])] = rows
    result: np.ndarray = found[back]
    return result


def live_bytes(buffers: Buffers, mask: np.ndarray, at: np.ndarray) -> np.ndarray:
    """After each event index in `at`, the bytes held by the buffers selected by `mask`: made and not yet freed.

    A buffer allocated before the window is held from the start until its free.
    """
    chosen = np.flatnonzero(mask)
    sizes = buffers.chunk_bytes[chosen]
    made, freed = buffers.alloc_event[chosen], buffers.free_event[chosen]
    held = _count_upto(made, sizes, at)
    ended = freed >= 0
    result: np.ndarray = held - _count_upto(freed[ended], sizes[ended], at)
    return result


def _count_upto(event: np.ndarray, sizes: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The sum of `sizes` whose `event` index is at or before each index in `at`."""
    order = np.argsort(event, kind="stable")
    total = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes[order], dtype=np.int64)])
    result: np.ndarray = total[np.searchsorted(event[order], at, side="right")]
    return result


def never_freed_bytes(buffers: Buffers, at: np.ndarray) -> np.ndarray:
    return live_bytes(buffers, buffers.status == NEVER_FREED, at)
