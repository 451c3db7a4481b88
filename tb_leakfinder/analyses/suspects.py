"""Leak suspects: buffers grouped into op families, each classified by how its live memory moves step by step.

A family is (op, dtype, region): a leak of one op's output keeps its family
even when the output's shape changes from step to step, or when one buffer is
freed and made again larger (a history grown by concatenation). The verdict
follows the least a family's step-outliving buffers hold during each step,
not which buffers happen to be never freed: those remain the evidence shown.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.steps import edges_at_or_before, step_position
from tb_leakfinder.model.columns import sorted_distinct
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, NEVER_FREED, Buffers
from tb_leakfinder.model.memory import Steps

GROWING = "growing"
PERSISTENT = "persistent"
BOUNDED = "bounded"
WINDOW_END = "window_end"
# Rises of a family's live bytes, from its onset on, that make steady growth (as MIN_STEPS for steps).
MIN_RISES = 3
# A fall by this share of a family's whole range of live bytes is a release (a cache cleared, a leak
# fixed): growth is measured again from after the last one.
FALL_SHARE = 0.25
# Rises separated from the next by more than this many cadences (and ONSET_GAP_SLACK steps) are before
# the onset: a lone early blip is not where a leak began.
ONSET_GAP_CADENCES = 4
ONSET_GAP_SLACK = 4
# A leak whose growth began this many steps into the window is said to start there ("from step 20 on").
LATE_ONSET_STEPS = 3
# The share of a family's growth that its never-freed buffers must still hold at window end.
HELD_SHARE = 0.5
# A family flat for more than this share of the window (and two cadences) after its last rise stopped growing.
STOPPED_SHARE = 0.1
# Cells of one block of family-by-step series: families are measured in blocks of at most this many.
SERIES_BLOCK_CELLS = 1 << 20
_DIMS = re.compile(r"\[([^\[\]]*)\]")


@dataclass(frozen=True)
class CauseResult:
    """Why a leaking family is likely never freed, as its profile shows, and what usually fixes it
    (analyses/causes.py)."""

    id: str  # a key of causes.FIXES (the schema's CauseId)
    evidence: str  # what in the profile shows it, in words: "48 aten::zeros_like buffers made in adam.py:139 ..."
    fix: str  # one sentence; the cause's section of docs/causes.md has an example


@dataclass
class FamilyResult:
    op: int
    dtype: int
    region: int
    shape: str  # the family's shape pattern: "[32,1024]" when all agree, "[32,*]" when a dimension varies
    num_shapes: int  # distinct shapes among its kept and step-outliving buffers
    latest_shape: str  # of its newest never-freed buffer (else of its newest buffer)
    site: int  # where that buffer was made: an index into its allocator's sites
    kind: str
    count: int  # never-freed buffers
    requested_bytes: int  # tensor bytes of the never-freed buffers, as the program asked for them
    chunk_bytes: int  # the allocator's chunks, rounded up
    steps: int  # distinct steps the never-freed buffers were made in
    first_step: int | None  # step numbers, not ordinals
    last_step: int | None
    onset_step: int | None  # the step from which its live bytes grow (growing families)
    late_onset: bool  # that growth began LATE_ONSET_STEPS or more steps into the window: sentences say from when
    growth_steps: int  # steps from the onset on in which its live bytes rose
    regrown: bool  # grows by freeing a buffer and making it again larger, not by keeping more buffers
    bytes_per_step: float  # tensor bytes, fitted from the onset on (growing families; else 0)
    chunk_bytes_per_step: float
    score: float
    cause: CauseResult | None = None  # likely cause, growing families of a leaking allocator only (analyses/causes.py)


@dataclass(eq=False)
class Suspects:
    families: list[FamilyResult]  # most suspicious first
    never_freed_family: np.ndarray  # index into families of each never-freed buffer, -1 for the others
    family_of_buffer: np.ndarray  # index into families of each buffer that outlives a step or is never freed, else -1


@dataclass(eq=False)
class _Trend:
    """How one family's live bytes moved: `rises` are step ordinals, from the onset on."""

    growing: bool
    onset: int
    rises: np.ndarray
    cadence: float


def leak_suspects(buffers: Buffers, steps: Steps, strings: list[str]) -> Suspects:
    """Families of the buffers that outlive a step or are never freed, each classified by its live-bytes trend."""
    n = len(steps)
    never_freed_family = np.full(len(buffers), -1, np.int32)
    family_of_buffer = np.full(len(buffers), -1, np.int32)
    never = buffers.status == NEVER_FREED
    boundary = _boundaries(steps)
    first, end = _live_boundaries(buffers, boundary)
    crossing = first < end
    members = np.flatnonzero(never | crossing)
    if len(members) == 0:
        return Suspects([], never_freed_family, family_of_buffer)
    key = family_keys(buffers, members)
    _, family = np.unique(key, return_inverse=True)
    num_families = int(family.max()) + 1
    position = step_position(buffers.alloc_time_ps[members], steps) if n else np.full(len(members), -1, np.int64)
    by_family = np.argsort(family, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(family, minlength=num_families))])
    candidates: list[tuple[FamilyResult, int]] = []
    block = max(1, SERIES_BLOCK_CELLS // (n + 2))
    for lo in range(0, num_families, block):
        hi = min(num_families, lo + block)
        in_block = (family >= lo) & (family < hi) & crossing[members]
        rows = members[in_block]
        where = family[in_block] - lo
        requested, allocated = buffers.requested_bytes[rows], buffers.chunk_bytes[rows]
        # A profile without requested sizes (or with corrupt ones) is measured by its chunks instead.
        tensor = np.where(requested > 0, requested, allocated)
        (at_boundaries, tensor_floors), (_, chunk_floors), (_, count_floors) = _step_floors(
            buffers, rows, where, first[rows], end[rows], boundary, (tensor, allocated, np.ones(len(rows))), hi - lo
        )
        series = [at_boundaries, tensor_floors, chunk_floors, count_floors]
        for f in range(lo, hi):
            chosen = by_family[starts[f] : starts[f + 1]]
            found = _classify(
                buffers, members[chosen], position[chosen], never[members[chosen]], [s[f - lo] for s in series], steps, strings
            )
            if found is not None:
                candidates.append((found, f))
    ranked = sorted(range(len(candidates)), key=lambda i: (-candidates[i][0].score, -candidates[i][0].chunk_bytes))
    rank = np.full(num_families, -1, np.int32)
    for r, i in enumerate(ranked):
        rank[candidates[i][1]] = r
    family_of_buffer[members] = rank[family]
    never_freed_family[members] = np.where(never[members], rank[family], -1)
    return Suspects([candidates[i][0] for i in ranked], never_freed_family, family_of_buffer)


def _boundaries(steps: Steps) -> np.ndarray:
    """Step boundary i is the instant before step i starts, boundary n the instant after the last step ends.

    Starts, not ends: what a step makes after its marker ends (a function's
    outputs, when the steps are its runs) is then counted with that step, as
    `step_position` places it; what the last step makes after it ends is in flight.
    """
    if len(steps) == 0:
        return np.zeros(0, np.int64)
    # Markers out of order (nested, or corrupt) still give boundaries in time order.
    return np.maximum.accumulate(np.concatenate([steps.start_ps, steps.end_ps[-1:] + 1]))


def _live_boundaries(buffers: Buffers, boundary: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each buffer is live at boundaries first..end-1 (first == end: at none): made before, freed at or after."""
    if len(boundary) == 0:
        zeros = np.zeros(len(buffers), np.int64)
        return zeros, zeros
    # As `_times` gives them, without its two columns of times: the buffers before the window and those never
    # freed are set apart after the search. Buffers are in order of allocation: their allocation times are in
    # order, their free times not.
    lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    first = edges_at_or_before(boundary, buffers.alloc_time_ps)
    first[buffers.status == BEFORE_WINDOW] = np.searchsorted(boundary, lowest, side="right")
    end = np.searchsorted(boundary, buffers.free_time_ps, side="right")
    end[buffers.status == NEVER_FREED] = np.searchsorted(boundary, highest, side="right")
    return first, end


def _times(buffers: Buffers, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """When each buffer of `rows` was made and freed; before the window and never freed lie at the int64 ends."""
    lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    status = buffers.status[rows]
    made = np.where(status == BEFORE_WINDOW, lowest, buffers.alloc_time_ps[rows])
    gone = np.where(status == NEVER_FREED, highest, buffers.free_time_ps[rows])
    return made, gone


def _step_floors(
    buffers: Buffers,
    rows: np.ndarray,
    family: np.ndarray,
    first: np.ndarray,
    end: np.ndarray,
    boundary: np.ndarray,
    weights: tuple[np.ndarray, ...],
    count: int,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each of `weights` (one value per buffer of `rows`), two (count, n + 1) arrays: per family, what its
    step-outliving buffers hold at each boundary, and the least they hold at any moment of each step (the
    last column: from the last step's end to the window's end).

    A step's floor, not the value at its start: a temporary kept past one
    boundary and freed in the next step (a spike) is not memory the family
    keeps, while a kept buffer, or a history regrown before the old one goes,
    lifts every later floor.
    """
    n = len(boundary) - 1
    width = n + 2
    made_t, gone_t = _times(buffers, rows)
    # Positions in the allocator's event stream (-1: outside the window) order the events of one time.
    made_e, gone_e = buffers.alloc_event[rows].astype(np.int64), buffers.free_event[rows].astype(np.int64)
    allocated, freed = made_e >= 0, gone_e >= 0
    # Each allocation and free inside a step (or after the last one), by (family, step) in stream order:
    # the same for every weight.
    owner = np.concatenate([np.flatnonzero(allocated), np.flatnonzero(freed)])
    sign = np.concatenate([np.ones(np.count_nonzero(allocated)), -np.ones(np.count_nonzero(freed))])
    step = np.searchsorted(boundary, np.concatenate([made_t[allocated], gone_t[freed]]), side="right") - 1
    inside = step >= 0
    cell = family[owner[inside]] * (n + 1) + step[inside]
    ranked = np.lexsort((np.concatenate([made_e[allocated], gone_e[freed]])[inside], cell))
    cell, owner, sign = cell[ranked], owner[inside][ranked], sign[inside][ranked]
    head = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]])) if len(cell) else cell
    lengths = np.diff(np.append(head, len(cell)))
    result = []
    for weight in weights:
        w = weight.astype(np.float64)
        cells = count * width
        delta = np.bincount(family * width + first, w, cells) - np.bincount(family * width + end, w, cells)
        live = np.cumsum(delta.reshape(count, width), axis=1)[:, : n + 1]
        floors = live.reshape(-1).copy()
        if len(cell):
            running = np.cumsum(sign * w[owner])
            carried = np.concatenate([[0.0], running[head[1:] - 1]])
            np.minimum.at(floors, cell, floors[cell] + running - np.repeat(carried, lengths))
        result.append((live, floors.reshape(count, n + 1)))
    return result


def family_keys(buffers: Buffers, rows: np.ndarray | None = None) -> np.ndarray:
    """One int64 per buffer (or per buffer in `rows`), equal exactly when (op, dtype, region) are."""
    return _combined_keys([buffers.op, buffers.dtype, buffers.region], rows)


def breakdown_keys(buffers: Buffers, rows: np.ndarray | None = None) -> np.ndarray:
    """One int64 per buffer (or per buffer in `rows`), equal exactly when (op, shape, dtype, region) are,
    and ordered as those are."""
    return _combined_keys([buffers.op, buffers.shape, buffers.dtype, buffers.region], rows)


def _combined_keys(all_columns: list[np.ndarray], rows: np.ndarray | None) -> np.ndarray:
    columns = [c if rows is None else c[rows] for c in all_columns]
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


def _trend(live: np.ndarray, at_boundaries: np.ndarray) -> _Trend | None:
    """Whether a family's floors (`live`, one per step and one after) grow steadily to the end, and from when.

    Growth is measured after the last fall (a cleared cache, a fixed leak); its
    onset is the first rise that the later rises follow at their cadence. It
    grows when it rose in at least MIN_RISES steps, was still rising in the
    last part of the window, and ends above the most it held at any step
    boundary before the onset (a sawtooth's last tooth does not: a tooth's top
    is seen at a boundary, though the floors of the step that clears it miss it).
    """
    n = len(live) - 1
    change = np.diff(live)
    span = float(live.max() - live.min())
    if span <= 0:
        return None
    falls = np.flatnonzero(change < -FALL_SHARE * span)
    start = int(falls[-1]) + 1 if len(falls) else 0
    rises = start + np.flatnonzero(change[start:] > 0)
    if len(rises) == 0:
        return _Trend(False, start, rises, math.inf)
    gaps = np.diff(rises)
    if len(gaps):
        cadence = float(np.median(gaps))
        wide = np.flatnonzero(gaps > max(ONSET_GAP_CADENCES * cadence, cadence + ONSET_GAP_SLACK))
        if len(wide):
            rises = rises[int(wide[-1]) + 1 :]
    cadence = float(np.median(np.diff(rises))) if len(rises) > 1 else math.inf
    onset = int(rises[0])
    flat_tail = n - 1 - int(rises[-1])
    still_rising = flat_tail <= max(2.0, 2 * cadence if len(rises) > 1 else 2.0, STOPPED_SHARE * n)
    new_high = at_boundaries[-1] > at_boundaries[: onset + 1].max()
    return _Trend(len(rises) >= MIN_RISES and still_rising and bool(new_high), onset, rises, cadence)


def _classify(
    buffers: Buffers,
    members: np.ndarray,
    position: np.ndarray,
    never: np.ndarray,
    series: list[np.ndarray],
    steps: Steps,
    strings: list[str],
) -> FamilyResult | None:
    """One family's figures, or None when it keeps nothing and does not grow."""
    num_steps = len(steps)
    at_boundaries, live_requested, live_allocated, live_count = series
    trend = _trend(live_requested, at_boundaries) if num_steps else None
    kept = members[never]
    growing = trend is not None and trend.growing and _still_held(buffers, kept, live_requested, trend.onset)
    if not growing and len(kept) == 0:
        return None
    head = members[0]
    op, dtype, region = (int(c[head]) for c in (buffers.op, buffers.dtype, buffers.region))
    ords = position[never]
    in_steps = sorted_distinct(ords[ords >= 0])
    distinct = len(in_steps)
    first = int(in_steps[0]) if distinct else None
    last = int(in_steps[-1]) if distinct else None
    per_step = allocated_per_step = 0.0
    onset: int | None = None
    regrown = False
    if growing and trend is not None:
        kind, onset = GROWING, trend.onset
        per_step = _rate(trend.rises, live_requested)
        allocated_per_step = _rate(trend.rises, live_allocated)
        regrown = 2 * (live_count[-1] - live_count[onset]) < len(trend.rises)
        cadence = trend.cadence
        regularity = min(1.0, len(trend.rises) / ((int(trend.rises[-1]) - onset) / cadence + 1))
        span = num_steps - onset
        score = 0.5 + 0.5 * min(1.0, span / max(3.0, num_steps / 2)) * regularity
    elif num_steps and first is not None and first >= num_steps - 1:
        kind, score = WINDOW_END, 0.05
    elif num_steps == 0 or first is None or last is None or last <= max(0, num_steps // 10) or distinct <= 1:
        kind, score = PERSISTENT, 0.1
    else:
        kind, score = BOUNDED, 0.3 * distinct / (num_steps - first)
    shapes = sorted_distinct(buffers.shape[members])
    latest = _latest(buffers, members, never)
    step_nums = steps.step_num
    return FamilyResult(
        op=op,
        dtype=dtype,
        region=region,
        shape=shape_pattern([strings[s] for s in shapes]),
        num_shapes=len(shapes),
        latest_shape=strings[int(buffers.shape[latest])],
        site=int(buffers.site[latest]),
        kind=kind,
        count=len(kept),
        requested_bytes=int(buffers.requested_bytes[kept].sum()),
        chunk_bytes=int(buffers.chunk_bytes[kept].sum()),
        steps=distinct,
        first_step=int(step_nums[first]) if first is not None else None,
        last_step=int(step_nums[last]) if last is not None else None,
        onset_step=int(step_nums[onset]) if onset is not None else None,
        late_onset=onset is not None and onset >= LATE_ONSET_STEPS,
        growth_steps=len(trend.rises) if growing and trend is not None else 0,
        regrown=bool(regrown),
        bytes_per_step=per_step,
        chunk_bytes_per_step=allocated_per_step,
        score=round(min(1.0, score), 3),
    )


def _still_held(buffers: Buffers, kept: np.ndarray, live: np.ndarray, onset: int) -> bool:
    """Whether the growth from the onset is still held at window end, by never-freed buffers.

    A family whose step-outliving buffers were all freed after the last step
    (a sweep of ever larger configurations, a pipeline draining) only looked
    as if it grew.
    """
    requested = buffers.requested_bytes[kept]
    held = np.where(requested > 0, requested, buffers.chunk_bytes[kept]).sum()
    return bool(held >= HELD_SHARE * (live[-1] - live[onset]))


def _latest(buffers: Buffers, members: np.ndarray, never: np.ndarray) -> int:
    """The family's newest never-freed buffer, else its newest member."""
    pool = members[never] if np.any(never) else members
    return int(pool[np.argmax(buffers.alloc_time_ps[pool])])


def _rate(rises: np.ndarray, live: np.ndarray) -> float:
    """Bytes per step: the least-squares slope of the live bytes after each rise against the rise's step.

    One X-byte buffer kept every N steps gives exactly X/N; a buffer regrown by
    X every step gives X. 0 with fewer than two rises.
    """
    if len(rises) < 2:
        return 0.0
    # Rounded to a thousandth of a byte: exact rates come out exact, not a rounding error off.
    return round(float(np.polyfit(rises.astype(np.float64), live[rises + 1], 1)[0]), 3)


def shape_pattern(shapes: list[str]) -> str:
    """The shapes of one family as one: the shape when all agree, "[32,*]" when some dimensions vary,
    "*" when their ranks differ or they are not dimension lists."""
    distinct = sorted(set(shapes))
    if len(distinct) == 1:
        return distinct[0]
    parsed = [_DIMS.fullmatch(s.strip()) for s in distinct]
    if not all(parsed):
        return "*"
    dims = [[d.strip() for d in m.group(1).split(",")] if m and m.group(1).strip() else [] for m in parsed]
    if len({len(d) for d in dims}) != 1:
        return "*"
    return "[" + ",".join(column[0] if len(set(column)) == 1 else "*" for column in zip(*dims, strict=True)) + "]"
