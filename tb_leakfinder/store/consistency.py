"""Whether an analysis read back from a disk cache entry contradicts itself: an entry is hostile input (anyone
who can write the cache folder wrote it), and the views index arrays with what it holds."""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_leakfinder.analyses.pipeline import HostAnalysis
from tb_leakfinder.model.lifetimes import STATUS_NAMES
from tb_leakfinder.model.memory import EVENT_COLUMNS
from tb_leakfinder.model.sites import SiteInfo


def check_consistent(h: HostAnalysis) -> None:
    """ValueError where an analysis contradicts itself: one read back from a cache entry someone else wrote.

    What the views index with is checked: every table's columns are 1-D, of the dtypes the readers give
    and of one length, and every index lies in what it indexes; the numbers themselves are the entry's.
    """
    steps = _table(h.profile.steps, dict.fromkeys(vars(h.profile.steps)))
    for a in h.allocators:
        events, buffers, strings = a.events, a.buffers, len(a.events.strings)
        num_events = _table(events, {name: np.dtype(dtype) for name, dtype in EVENT_COLUMNS.items()})
        num_buffers = _table(buffers, dict.fromkeys(vars(buffers)))
        _within(events.allocator, 0, len(events.allocator_names), "events.allocator")
        for name in ("op", "shape", "region", "dtype"):
            _within(getattr(events, name), 0, strings, f"events.{name}")
            _within(getattr(buffers, name), 0, strings, f"buffers.{name}")
        for name in ("alloc_event", "free_event"):
            _within(getattr(buffers, name), -1, num_events, f"buffers.{name}")
        for name in ("alloc_step", "free_step"):
            _within(getattr(buffers, name), -1, steps, f"buffers.{name}")
        _within(buffers.status, 0, len(STATUS_NAMES), "buffers.status")
        _within(buffers.site, 0, len(a.sites), "buffers.site")
        if not a.sites or not all(isinstance(site, SiteInfo) for site in a.sites):
            raise ValueError(f"{a.label}: its sites are not a table of sites")
        if _table(a.suspects, {"never_freed_family": None, "family_of_buffer": None}) != num_buffers:
            raise ValueError(f"{a.label}: {len(a.suspects.never_freed_family)} groups of buffers for {num_buffers} buffers")
        for name in ("never_freed_family", "family_of_buffer"):
            _within(getattr(a.suspects, name), -1, len(a.suspects.families), name)
        indices = [(g.op, g.region) for g in a.suspects.families] + [(r.op, r.shape, r.region) for r in a.breakdown]
        if not all(0 <= index < strings for row in indices for index in row):
            raise ValueError(f"{a.label}: a group names a string past the {strings} strings")
        if not -1 <= a.summary.peak_event < max(num_events, 0):
            raise ValueError(f"{a.label}: the peak is event {a.summary.peak_event} of {num_events}")


def _table(table: object, dtypes: dict[str, np.dtype[Any] | None]) -> int:
    """The length of a table's columns: 1-D, integers (or the dtype given), all of one length."""
    lengths = set()
    for name, dtype in dtypes.items():
        column = getattr(table, name)
        if not isinstance(column, np.ndarray) or column.ndim != 1:
            raise ValueError(f"{type(table).__name__}.{name} is not a column")
        if (column.dtype != dtype) if dtype is not None else column.dtype.kind not in "iu":
            raise ValueError(f"{type(table).__name__}.{name} holds {column.dtype}")
        lengths.add(column.shape[0])
    if len(lengths) > 1:
        raise ValueError(f"the columns of {type(table).__name__} differ in length: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def _within(column: np.ndarray, lo: int, hi: int, what: str) -> None:
    if len(column) and not (lo <= int(column.min()) and int(column.max()) < hi):
        raise ValueError(f"{what} lies outside [{lo}, {hi})")
