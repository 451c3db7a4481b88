"""The server's one downsampler: a series thinned for a chart without losing its peak or any spike.

The timeline (heap over time) and the static view (heap in program order) both
use it; the frontend draws what it is given.
"""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.columns import sorted_distinct

# How many points a chart may ask for (the `points` argument of the timeline and module routes).
MIN_POINTS = 8
DEFAULT_POINTS = 1000
MAX_POINTS = 20000
# Samples looked at together when finding each bucket's extremes: a temporary of this size stays in cache.
BLOCK = 1 << 16


def downsample(x: np.ndarray, values: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most `points` (>= MIN_POINTS) samples of a series of integers sorted by `x`, in order.

    `x` is split into equal buckets; each keeps its first, last, minimum and
    maximum sample, and the first global maximum is always kept, so the peak
    and every spike survive.
    """
    n = len(x)
    if n <= points:
        return np.arange(n)
    buckets = max(1, (points - 1) // 4)
    first, width = float(x[0]), float(x[-1]) - float(x[0]) + 1

    def bucket(i: np.ndarray) -> np.ndarray:
        # In floats: the times of a corrupt profile can be far enough apart to overflow int64.
        of: np.ndarray = np.minimum((x[i].astype(np.float64) - first) * buckets / width, buckets - 1).astype(np.int64)
        return of

    # The bucket only grows along x, so each bucket's first sample is found by bisection, without a
    # bucket number per sample: a chart of a large profile needs no temporaries the size of the series.
    wanted = np.arange(1, buckets)
    lo, hi = np.zeros(len(wanted), np.int64), np.full(len(wanted), n, np.int64)
    while np.any(lo < hi):
        mid = np.minimum((lo + hi) // 2, n - 1)
        reached = bucket(mid) >= wanted
        searching = lo < hi
        hi = np.where(searching & reached, mid, hi)
        lo = np.where(searching & ~reached, mid + 1, lo)
    starts = sorted_distinct(np.concatenate([[0], lo[lo < n]]))
    ends = np.r_[starts[1:], n] - 1
    return sorted_distinct(
        np.concatenate(
            [starts, ends, _first_at(values, starts, np.maximum), _first_at(values, starts, np.minimum), [int(np.argmax(values))]]
        )
    )


def _first_at(values: np.ndarray, starts: np.ndarray, extreme: np.ufunc) -> np.ndarray:
    """The first index of each run's extreme (runs begin at `starts`), as argmax/argmin give it: one pass for the
    extremes and one to find them, not a call per run. Runs are looked at in blocks of about BLOCK samples, so
    that a large series needs no temporaries its size."""
    extremes = extreme.reduceat(values, starts)
    bounds = np.append(starts, len(values))
    first = np.empty(len(starts), np.int64)
    run = 0
    while run < len(starts):
        # The runs that start within BLOCK samples of this one (at least this one).
        end = max(run + 1, int(np.searchsorted(bounds, bounds[run] + BLOCK, side="right")) - 1)
        lo, hi = int(bounds[run]), int(bounds[end])
        hits = lo + np.flatnonzero(values[lo:hi] == np.repeat(extremes[run:end], np.diff(bounds[run : end + 1])))
        # Every run holds its own extreme, so the first hit at or after its start is inside it.
        first[run:end] = hits[np.searchsorted(hits, bounds[run:end])]
        run = end
    return first
