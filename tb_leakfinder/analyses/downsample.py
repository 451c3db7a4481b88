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
    starts = np.unique(np.concatenate([[0], lo[lo < n]]))
    ends = np.r_[starts[1:], n] - 1
    # First index of each run's extreme (argmax/argmin return the first).
    runs = list(zip(starts.tolist(), ends.tolist(), strict=True))
    highs = np.asarray([s + int(np.argmax(values[s : e + 1])) for s, e in runs], np.int64)
    lows = np.asarray([s + int(np.argmin(values[s : e + 1])) for s, e in runs], np.int64)
    return np.unique(np.concatenate([starts, ends, highs, lows, [int(np.argmax(values))]]))
