"""The timeline's samples: the window the charts span and the event each sample is at."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, analyze_host
from tb_leakfinder.analyses.timeline import buffer_of_events, timeline, window
from tb_leakfinder.model.memory import ALLOC, FREE, Steps
from tests.support import columns

KIB = 1024


def _allocator(marks: Steps | None = None, duration_ps: int | None = None) -> AllocatorAnalysis:
    # A 4 KiB buffer made by MatMul at 10 ps and freed at 40; an 8 KiB one by Add at 30, never freed.
    sizes = [4 * KIB, 8 * KIB, 4 * KIB]
    events = columns.memory_events([10, 30, 40], [ALLOC, ALLOC, FREE], [0x100, 0x200, 0x100], sizes, op=["MatMul", "Add", ""])
    extra = {} if duration_ps is None else {"duration_ps": duration_ps}
    (a,) = analyze_host(columns.host_profile(events, marks, **extra)).allocators
    return a


def test_the_window_is_the_allocators_events_not_the_whole_profile():
    # The profile lasts 1,000 ps; the allocator's events span 10-40.
    assert window(_allocator(duration_ps=1000)) == (10, 40)


def test_the_window_reaches_to_the_steps_around_the_events():
    a = _allocator(columns.steps((0, 5, 25), (1, 25, 45)))
    marks = columns.steps((0, 5, 25), (1, 25, 45), (2, 500, 600))
    # Steps 0 and 1 overlap the events and widen the window; step 2, far after, does not.
    assert window(a, marks) == (5, 45)


def test_each_sample_names_its_event():
    a = _allocator()
    t = timeline(a, 100)
    assert t.time_ps.tolist() == [10, 30, 40]
    assert t.event_bytes.tolist() == [4 * KIB, 8 * KIB, -4 * KIB]
    ops = [a.events.strings[int(a.buffers.op[b])] for b in t.event_buffer.tolist()]
    # The free names the buffer it frees: MatMul's.
    assert ops == ["MatMul", "Add", "MatMul"]
    assert (t.window_start_ps, t.window_end_ps) == (10, 40)


def test_each_sample_names_the_buffer_its_event_makes_or_frees():
    # Reused addresses, frees before any allocation, frees of a freed address, and samples repeated and out of
    # order: each sampled event's buffer is the one whose allocation or free it is.
    rng = np.random.default_rng(5)
    n = 3_000
    kind = rng.integers(0, 2, n).astype(np.int8)
    events = columns.memory_events(np.arange(n), kind, rng.integers(0, 40, n) * 0x100, KIB)
    (a,) = analyze_host(columns.host_profile(events)).allocators
    at = rng.integers(0, n, 500)
    made = {int(e): row for row, e in enumerate(a.buffers.alloc_event.tolist()) if e >= 0}
    freed = {int(e): row for row, e in enumerate(a.buffers.free_event.tolist()) if e >= 0}
    expected = [freed.get(e, made.get(e, -1)) for e in at.tolist()]
    assert buffer_of_events(a.buffers, n, at).tolist() == expected
    assert -1 in expected and len(set(expected)) > 100
