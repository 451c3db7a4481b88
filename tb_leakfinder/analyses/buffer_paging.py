"""The buffers route's query: one allocator's buffers filtered, sorted and cut into a page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_leakfinder.analyses.pipeline import AllocatorAnalysis
from tb_leakfinder.analyses.words import short_program_ids
from tb_leakfinder.errors import BadArgumentError, NotFoundError
from tb_leakfinder.model.lifetimes import NO_TIME, STATUS_NAMES, Buffers

SORT_KEYS = ("bytes", "alloc_time_ps", "free_time_ps", "lifetime_ps", "op")
ORDERS = ("asc", "desc")
DEFAULT_PAGE = 100
MAX_PAGE = 5000


@dataclass(eq=False)
class BufferPageResult:
    total: int  # buffers that pass the filters
    offset: int
    limit: int
    rows: np.ndarray  # int64 indices into the allocator's buffers, in the asked order


def check_family(a: AllocatorAnalysis, family: int) -> None:
    if not 0 <= family < len(a.suspects.families):
        raise NotFoundError(f"allocator {a.label!r} has no never-freed family {family}; it has {len(a.suspects.families)}")


def query_buffers(
    a: AllocatorAnalysis,
    offset: int = 0,
    limit: int = DEFAULT_PAGE,
    sort: str = "bytes",
    order: str = "desc",
    family: int | None = None,
    status: str | None = None,
    start_ps: int | None = None,
    end_ps: int | None = None,
    program: str | None = None,
    allocation: int | None = None,
) -> BufferPageResult:
    """The buffers of `family` and `status` live at some time in [start_ps, end_ps], sorted, from `offset`;
    with `program`, only those made in it (with `allocation` too, those tied to that buffer allocation of it:
    the static view's program buffer)."""
    b = a.buffers
    if sort not in SORT_KEYS:
        raise BadArgumentError(f"sort must be one of {', '.join(SORT_KEYS)}, not {sort!r}")
    if order not in ORDERS:
        raise BadArgumentError(f"order must be asc or desc, not {order!r}")
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise BadArgumentError(f"offset must be >= 0 and limit between 1 and {MAX_PAGE}")
    # No mask while nothing filters (the first page of a table): no copy of the column sorted by.
    mask: np.ndarray | None = None
    if family is not None:
        check_family(a, family)
        mask = _narrowed(mask, a.suspects.never_freed_family == family)
    if status is not None:
        if status not in STATUS_NAMES:
            raise BadArgumentError(f"status must be one of {', '.join(STATUS_NAMES)}, not {status!r}")
        mask = _narrowed(mask, b.status == STATUS_NAMES.index(status))
    if program is not None:
        sites = [i for i, s in enumerate(a.sites) if s.program == program and allocation in (None, s.allocation)]
        mask = _narrowed(mask, np.isin(b.site, sites))
    elif allocation is not None:
        raise BadArgumentError("allocation is a program's buffer allocation: give the program too")
    if start_ps is not None:
        mask = _narrowed(mask, _end_times(b) >= start_ps)
    if end_ps is not None:
        mask = _narrowed(mask, b.alloc_time_ps <= end_ps)
    rows = np.flatnonzero(mask) if mask is not None else None
    total = len(b) if rows is None else len(rows)
    if sort == "op":
        rows = np.arange(len(b)) if rows is None else rows
        # By the op as the route writes it (a long program id cut short), so that a page sorts as it reads.
        labels = {op: short_program_ids(a.events.strings[op]) for op in np.unique(b.op[rows]).tolist()}
        key = np.array([labels[i] for i in b.op[rows].tolist()], dtype=object) if len(rows) else rows
        ranked = rows[np.argsort(key, kind="stable")]
        if order == "desc":
            ranked = ranked[::-1]
    else:
        if sort == "bytes":
            column = b.chunk_bytes
        elif sort == "alloc_time_ps":
            column = b.alloc_time_ps
        elif sort == "free_time_ps":
            column = _end_times(b)
        else:
            column = _end_times(b) - np.where(b.alloc_time_ps == NO_TIME, 0, b.alloc_time_ps)
        ranks = _first_ranks(column if rows is None else column[rows], offset + limit, order == "desc")
        ranked = ranks if rows is None else rows[ranks]
    return BufferPageResult(total, offset, limit, ranked[offset : offset + limit])


def _end_times(b: Buffers) -> np.ndarray:
    """When each buffer was freed, the latest time for those never freed."""
    ends: np.ndarray = np.where(b.free_time_ps == NO_TIME, np.iinfo(np.int64).max, b.free_time_ps)
    return ends


def _narrowed(mask: np.ndarray | None, keep: np.ndarray) -> np.ndarray:
    """`mask` (None: every buffer) and `keep`."""
    if mask is None:
        return keep
    mask &= keep
    return mask


def _first_ranks(values: np.ndarray, count: int, descending: bool) -> np.ndarray:
    """Positions of the first `count` values in a stable sort (ascending), or in its reverse (descending).

    A page needs only its first ranks: the values past the page's last one are
    cut off by a partition, and only the rest are sorted.
    """
    if count < len(values):
        cut = _cut(values, count, descending)
        kept = np.flatnonzero(values >= cut if descending else values <= cut)  # ties with the cut all stay
    else:
        kept = np.arange(len(values))
    ranked = kept[np.argsort(values[kept], kind="stable")]
    return ranked[::-1][:count] if descending else ranked[:count]


def _cut(values: np.ndarray, count: int, descending: bool) -> Any:
    """The `count`-th smallest of integer `values`, or largest when `descending`. numpy's selection near the end of
    an array of few distinct values (buffer sizes) takes three times as long as near its start (16 ms against 5 for
    500,000 buffers of 7 sizes): the largest are selected as the smallest of their bitwise inverse, which reverses
    their order without overflow."""
    if descending:
        return ~np.partition(~values, count - 1)[count - 1]
    return np.partition(values, count - 1)[count - 1]
