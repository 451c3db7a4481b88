"""Placing memory events into the steps whose markers contain them."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.memory import Steps


def step_position(time_ps: np.ndarray, steps: Steps) -> np.ndarray:
    """Ordinal of the latest step that started at or before each time (-1: before all)."""
    return np.searchsorted(steps.start_ps, time_ps, side="right").astype(np.int64) - 1


def containing_step(time_ps: np.ndarray, steps: Steps) -> np.ndarray:
    """Ordinal of the step whose marker contains each time, -1 where none does."""
    pos = step_position(time_ps, steps)
    if len(steps) == 0:
        return pos
    inside = (pos >= 0) & (time_ps <= steps.end_ps[np.clip(pos, 0, None)])
    return np.where(inside, pos, -1)
