"""The server's one downsampler: a series thinned for a chart without losing its peak or any spike.

The timeline (heap over time) and the static view (heap in program order) both
use it; the frontend draws what it is given.
"""

from __future__ import annotations

import numpy as np

# How many points a chart may ask for (the `points` argument of the timeline and module routes).
MIN_POINTS = 8
DEFAULT_POINTS = 1000
MAX_POINTS = 20000


def downsample(x: np.ndarray, values: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most `points` (>= MIN_POINTS) samples of a series sorted by `x`, in order.

    `x` is split into equal buckets; each keeps its first, last, minimum and
    maximum sample, and the first global maximum is always kept, so the peak
    and every spike survive.
    """
    n = len(x)
    if n <= points:
        return np.arange(n)
    buckets = max(1, (points - 1) // 4)
    # In floats: the times of a corrupt profile can be far enough apart to overflow int64.
    offset = x.astype(np.float64) - float(x[0])
    bucket = np.minimum(offset * buckets / (offset[-1] + 1), buckets - 1).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    ends = np.r_[starts[1:], n] - 1
    highs = _first_extreme(values, starts, np.maximum)
    lows = _first_extreme(values, starts, np.minimum)
    return np.unique(np.concatenate([starts, ends, highs, lows, [int(np.argmax(values))]]))


def _first_extreme(values: np.ndarray, starts: np.ndarray, extreme: np.ufunc) -> np.ndarray:
    """In each run of samples from one start to the next, the first index holding the run's extreme value.

    Runs are contiguous because the series is sorted: a reduction per run
    replaces a sort of the whole series.
    """
    per_run = extreme.reduceat(values, starts)
    run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))
    hits = np.flatnonzero(values == per_run[run])
    first = np.r_[True, run[hits][1:] != run[hits][:-1]]
    return hits[first]
