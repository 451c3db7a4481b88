"""Heap over time: the bytes held by chosen buffers after chosen events."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers


def held_bytes(buffers: Buffers, mask: np.ndarray, at: np.ndarray) -> np.ndarray:
    """After each event index in `at`, the bytes held by the buffers selected by `mask` that are allocated so far.

    Only the chosen buffers are summed, not a running total per event: a chart
    of a large profile asks for a thousand points.
    """
    chosen = mask & (buffers.alloc_event >= 0)
    made = buffers.alloc_event[chosen]
    order = np.argsort(made, kind="stable")
    total = np.concatenate([np.zeros(1, np.int64), np.cumsum(buffers.allocation_bytes[chosen][order], dtype=np.int64)])
    return total[np.searchsorted(made[order], at, side="right")]


def never_freed_bytes(buffers: Buffers, at: np.ndarray) -> np.ndarray:
    return held_bytes(buffers, buffers.status == NEVER_FREED, at)
