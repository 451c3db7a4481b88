"""Placing memory events into the steps whose markers contain them."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.columns import ascending
from tb_leakfinder.model.memory import Steps


def step_position(time_ps: np.ndarray, steps: Steps) -> np.ndarray:
    """Ordinal of the latest step that started at or before each time (-1: before all)."""
    position = edges_at_or_before(steps.start_ps, time_ps)
    position -= 1
    return position


def containing_step(time_ps: np.ndarray, steps: Steps, dtype: type = np.int64) -> np.ndarray:
    """Ordinal of the step whose marker contains each time, -1 where none does, as `dtype`."""
    if len(steps) and len(time_ps) and ascending(time_ps) and ascending(steps.start_ps):
        # Times in order fall into each step as one run: step k holds from the first time at or after its start
        # to the last at or before its end or the next step's start, whichever comes first. One column is
        # written, run by run, and no temporary of the times' length.
        enter = np.searchsorted(time_ps, steps.start_ps, side="left")
        following = np.append(enter[1:], len(time_ps))
        leave = np.minimum(np.maximum(np.searchsorted(time_ps, steps.end_ps, side="right"), enter), following)
        values: np.ndarray = np.full(2 * len(steps) + 1, -1, dtype)
        values[1::2] = np.arange(len(steps))
        lengths = np.stack([leave - enter, following - leave], axis=1).reshape(-1)
        return np.repeat(values, np.concatenate([enter[:1], lengths]))
    pos = step_position(time_ps, steps)
    if len(steps) == 0:
        return pos.astype(dtype, copy=False)
    inside = (pos >= 0) & (time_ps <= steps.end_ps[np.clip(pos, 0, None)])
    return np.where(inside, pos, -1).astype(dtype, copy=False)


def edges_at_or_before(edges: np.ndarray, times: np.ndarray) -> np.ndarray:
    """`np.searchsorted(edges, times, side="right")` as int64: how many of the sorted `edges` lie at or before each
    time. Times in order (a stream of events, buffers by allocation) that outnumber the edges take one search per
    edge, not one per time."""
    if len(edges) and len(times) > len(edges) and ascending(times) and ascending(edges):
        enter = np.searchsorted(times, edges, side="left")  # the first time at or after each edge
        return np.repeat(np.arange(len(edges) + 1, dtype=np.int64), np.diff(enter, prepend=0, append=len(times)))
    found: np.ndarray = np.searchsorted(edges, times, side="right").astype(np.int64, copy=False)
    return found
