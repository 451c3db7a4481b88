"""Heap over time: the bytes held by chosen buffers after each event."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.memory import MemoryEvents


def held_bytes(events: MemoryEvents, buffers: Buffers, mask: np.ndarray) -> np.ndarray:
    """After each event, the bytes held by the buffers selected by `mask` that are allocated so far."""
    delta = np.zeros(len(events), np.int64)
    chosen = mask & (buffers.alloc_event >= 0)
    np.add.at(delta, buffers.alloc_event[chosen], buffers.allocation_bytes[chosen])
    return np.cumsum(delta)


def never_freed_bytes(events: MemoryEvents, buffers: Buffers) -> np.ndarray:
    return held_bytes(events, buffers, buffers.status == NEVER_FREED)
