"""Leak suspects: never-freed buffers grouped by (op, shape, dtype, region), and their kind."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.steps import step_position
from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.memory import Steps

GROWING = "growing"
PERSISTENT = "persistent"
BOUNDED = "bounded"
WINDOW_END = "window_end"


@dataclass
class SuspectGroup:
    op: int
    shape: int
    dtype: int
    region: int
    kind: str
    count: int
    requested_bytes: int  # tensor bytes, as the program asked for them
    bytes: int  # allocated: the allocator's chunks, rounded up
    steps: int  # distinct steps the never-freed buffers were made in
    first_step: int | None  # step numbers, not ordinals
    last_step: int | None
    bytes_per_step: float  # tensor bytes, fitted across steps (growing groups; else 0)
    allocated_bytes_per_step: float
    score: float


@dataclass
class Suspects:
    groups: list[SuspectGroup]  # most suspicious first
    group_of_buffer: np.ndarray  # index into groups, -1 for buffers in none


def leak_suspects(buffers: Buffers, steps: Steps) -> Suspects:
    """Group the buffers live at window end and classify how each group came to be."""
    num_steps = len(steps)
    group_of_buffer = np.full(len(buffers), -1, np.int32)
    live = np.flatnonzero(buffers.status == NEVER_FREED)
    if len(live) == 0:
        return Suspects([], group_of_buffer)
    key_id = group_keys(buffers)
    live_ids, live_group = np.unique(key_id[live], return_inverse=True)
    position = step_position(buffers.alloc_time_ps, steps)
    # Earliest step in which each key had a buffer that was freed: a rolling cache evicts.
    freed_pos = np.full(len(live_ids), np.iinfo(np.int64).max, np.int64)
    freed = np.flatnonzero((buffers.status != NEVER_FREED) & (position >= 0))
    slot = np.searchsorted(live_ids, key_id[freed])
    hit = slot < len(live_ids)
    hit[hit] = live_ids[slot[hit]] == key_id[freed][hit]
    np.minimum.at(freed_pos, slot[hit], position[freed][hit])
    by_group = live[np.argsort(live_group, kind="stable")]
    bounds = np.cumsum(np.bincount(live_group, minlength=len(live_ids)))[:-1]
    groups: list[SuspectGroup] = []
    for g, members in enumerate(np.split(by_group, bounds)):
        groups.append(_classify(buffers, members, int(freed_pos[g]), position, steps, num_steps))
    order = sorted(range(len(groups)), key=lambda i: (-groups[i].score, -groups[i].bytes))
    rank = np.empty(len(groups), np.int64)
    rank[order] = np.arange(len(groups))
    group_of_buffer[live] = rank[live_group]
    return Suspects([groups[i] for i in order], group_of_buffer)


def group_keys(buffers: Buffers, rows: np.ndarray | None = None) -> np.ndarray:
    """One int64 per buffer (or per buffer in `rows`), equal exactly when (op, shape, dtype, region) are,
    and ordered as those are."""
    columns = [c if rows is None else c[rows] for c in (buffers.op, buffers.shape, buffers.dtype, buffers.region)]
    key = np.zeros(len(columns[0]), np.int64)
    if len(key) == 0:
        return key
    low = [int(c.min()) for c in columns]
    sizes = [int(c.max()) - lo + 1 for c, lo in zip(columns, low, strict=True)]
    if math.prod(sizes) < 1 << 62:
        # Each column's offset from its minimum as one digit: no sort (np.unique sorts every column).
        for column, lo, size in zip(columns, low, sizes, strict=True):
            key = key * size + (column.astype(np.int64) - lo)
        return key
    for column in columns:  # too many distinct values to combine as digits: their ranks instead
        values, codes = np.unique(column, return_inverse=True)
        key = key * len(values) + codes
    return key


def _classify(
    buffers: Buffers,
    members: np.ndarray,
    first_freed_position: int,
    position: np.ndarray,
    steps: Steps,
    num_steps: int,
) -> SuspectGroup:
    head = members[0]
    op, shape, dtype, region = (int(c[head]) for c in (buffers.op, buffers.shape, buffers.dtype, buffers.region))
    requested, allocated = buffers.requested_bytes[members], buffers.allocation_bytes[members]
    ords = position[members]
    in_steps = np.unique(ords[ords >= 0])
    distinct = len(in_steps)
    first = int(in_steps[0]) if distinct else None
    last = int(in_steps[-1]) if distinct else None
    kind, score, per_step, allocated_per_step = PERSISTENT, 0.1, 0.0, 0.0
    if num_steps and distinct and first is not None and first >= num_steps - 1:
        kind, score = WINDOW_END, 0.05
    elif num_steps == 0 or first is None or last is None or last <= max(0, num_steps // 10) or distinct <= 1:
        kind, score = PERSISTENT, 0.1
    else:
        # A rolling cache keeps its newest entries and frees older ones of the same kind.
        evicted = first_freed_position < first
        span = last - first + 1
        # Steps between additions: a leak may add every step or, say, every 10th (periodic logging).
        cadence = float(np.median(np.diff(in_steps)))
        still_adding = num_steps - 1 - last <= max(2.0, 2 * cadence)
        if distinct >= 3 and still_adding and not (evicted and distinct <= num_steps // 2):
            # In flight: made after the last step ended, so not part of its growth.
            fitted = (ords >= 0) & (buffers.alloc_time_ps[members] <= steps.end_ps[-1])
            kind = GROWING
            per_step = fitted_rate(ords[fitted], requested[fitted])
            allocated_per_step = fitted_rate(ords[fitted], allocated[fitted])
            regularity = min(1.0, distinct / ((last - first) / cadence + 1))
            score = 0.5 + 0.5 * min(1.0, span / max(3.0, num_steps / 2)) * regularity
        else:
            kind, score = BOUNDED, 0.3 * distinct / (num_steps - first)
    step_nums = steps.step_num
    return SuspectGroup(
        op=op,
        shape=shape,
        dtype=dtype,
        region=region,
        kind=kind,
        count=len(members),
        requested_bytes=int(requested.sum()),
        bytes=int(allocated.sum()),
        steps=distinct,
        first_step=int(step_nums[first]) if first is not None else None,
        last_step=int(step_nums[last]) if last is not None else None,
        bytes_per_step=per_step,
        allocated_bytes_per_step=allocated_per_step,
        score=round(min(1.0, score), 3),
    )


def fitted_rate(position: np.ndarray, sizes: np.ndarray) -> float:
    """Bytes per step: the least-squares slope of the bytes kept so far against the step they were kept in.

    One X-byte buffer every N steps gives exactly X/N; total / span would
    count one step too many. 0 with fewer than two steps.
    """
    steps, where = np.unique(position, return_inverse=True)
    if len(steps) < 2:
        return 0.0
    kept = np.cumsum(np.bincount(where, weights=sizes.astype(np.float64)))
    # Rounded to a thousandth of a byte: exact rates come out exact, not a rounding error off.
    return round(float(np.polyfit(steps.astype(np.float64), kept, 1)[0]), 3)
