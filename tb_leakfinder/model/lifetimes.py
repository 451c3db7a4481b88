"""Buffer lifetimes of one allocator, as columns.

Lifetimes on two layers: here the columns; analyses/lifetimes.py pairs the events into them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FREED = 0
NEVER_FREED = 1
BEFORE_WINDOW = 2
STATUS_NAMES = ("freed", "never_freed", "before_window")
NO_TIME = -1  # alloc_time_ps of a buffer allocated before the window, free_time_ps of a live one


@dataclass(eq=False)
class Buffers:
    """One row per buffer: an allocation paired with its free, or one of them alone.

    `alloc_event`/`free_event` index the allocator's event stream (-1 when
    outside the window; int32 unless the stream is longer). Steps are int32
    ordinals into the host's `Steps` (-1: not inside any step marker).
    """

    alloc_event: np.ndarray
    free_event: np.ndarray
    alloc_time_ps: np.ndarray
    free_time_ps: np.ndarray
    alloc_step: np.ndarray
    free_step: np.ndarray
    addr: np.ndarray
    requested_bytes: np.ndarray
    chunk_bytes: np.ndarray
    op: np.ndarray
    shape: np.ndarray
    dtype: np.ndarray
    region: np.ndarray
    status: np.ndarray
    site: np.ndarray  # int32: index into its allocator's sites (model/sites.py), 0 when not known

    def __len__(self) -> int:
        return int(self.status.shape[0])
