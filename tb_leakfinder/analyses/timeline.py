"""Heap over time, downsampled without losing the peak or any spike."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.lifetimes import LIVE_AT_END, Buffers
from tb_leakfinder.model.memory import MemoryEvents


def held_bytes(events: MemoryEvents, buffers: Buffers, mask: np.ndarray) -> np.ndarray:
    """After each event, the bytes held by the buffers selected by `mask` that are allocated so far."""
    delta = np.zeros(len(events), np.int64)
    chosen = mask & (buffers.alloc_event >= 0)
    np.add.at(delta, buffers.alloc_event[chosen], buffers.allocation_bytes[chosen])
    return np.cumsum(delta)


def never_freed_bytes(events: MemoryEvents, buffers: Buffers) -> np.ndarray:
    return held_bytes(events, buffers, buffers.status == LIVE_AT_END)


MIN_POINTS = 8


def downsample(time_ps: np.ndarray, values: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most `points` (>= MIN_POINTS) samples of a time-sorted series, in time order.

    Each time bucket keeps its first, last, minimum and maximum sample, and the
    global maximum is always kept, so the peak and every spike survive.
    """
    n = len(time_ps)
    if n <= points:
        return np.arange(n)
    buckets = max(1, (points - 1) // 4)
    # In floats: the times of a corrupt profile can be far enough apart to overflow int64.
    offset = time_ps.astype(np.float64) - float(time_ps[0])
    bucket = np.minimum(offset * buckets / (offset[-1] + 1), buckets - 1).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    ends = np.r_[starts[1:], n] - 1
    highs = _first_extreme(values, starts, np.maximum)
    lows = _first_extreme(values, starts, np.minimum)
    return np.unique(np.concatenate([starts, ends, highs, lows, [int(np.argmax(values))]]))


def _first_extreme(values: np.ndarray, starts: np.ndarray, extreme: np.ufunc) -> np.ndarray:
    """In each run of samples from one start to the next, the first index holding the run's extreme value.

    Runs are contiguous because the series is sorted by time: a reduction per
    run replaces a sort of the whole series.
    """
    per_run = extreme.reduceat(values, starts)
    run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))
    hits = np.flatnonzero(values == per_run[run])
    first = np.r_[True, run[hits][1:] != run[hits][:-1]]
    return hits[first]
