"""The readers' shared row helpers (read/formats/common/rows.py)."""

from __future__ import annotations

import itertools
import random

import numpy as np

from tb_leakfinder.read.formats.common.rows import steps_from_markers


def _union_per_step(rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The rule, written out: each step number's markers joined into one interval, sorted by start, steps starting
    together in the order their first markers came."""
    merged: dict[int, tuple[int, int]] = {}
    for step, start, end in rows:
        lo, hi = merged.get(step, (start, end))
        merged[step] = (min(lo, start), max(hi, end))
    return [(step, lo, hi) for step, (lo, hi) in sorted(merged.items(), key=lambda item: item[1][0])]


def test_markers_join_into_one_interval_per_step_in_order_of_start():
    rng = random.Random(7)
    for _ in range(500):
        count = rng.randint(1, 60)
        rows = [(rng.randint(-3, 12), rng.randint(0, 40), rng.randint(0, 40)) for _ in range(count)]
        step, start, end = np.asarray(rows, np.int64).T
        warnings: list[str] = []
        steps = steps_from_markers(step, start, end, warnings)
        found = list(zip(steps.step_num.tolist(), steps.start_ps.tolist(), steps.end_ps.tolist(), strict=True))
        expected = _union_per_step(rows)
        assert found == expected, rows
        overlap = any(later[1] < earlier[2] for earlier, later in itertools.pairwise(expected))
        assert bool(warnings) == overlap


def test_no_markers_make_no_steps():
    none = np.zeros(0, np.int64)
    steps = steps_from_markers(none, none, none, [])
    assert len(steps) == 0 and steps.step_num.dtype == np.int64
