"""The model's spans, groups and steps from the rows a reader finds, in one canonical order.

XSpace's compiled scanner and reference decoder walk the file differently but
hand their rows here, so both give the same model whatever order they met them in;
the other readers hand theirs here too, and their allocations' stacks as nested calls (`stack_spans`).
"""

from __future__ import annotations

import numpy as np

from tb_leakfinder.model.columns import sorted_distinct
from tb_leakfinder.model.memory import NO_FLOW, NO_PROGRAM_ID, SPAN_HOST_CALL, Groups, Spans, Steps


def spans_from_rows(
    source: np.ndarray,
    name: np.ndarray,
    names: list[str],
    device: np.ndarray,
    root: np.ndarray,
    start_ps: np.ndarray,
    end_ps: np.ndarray,
    line: np.ndarray,
    flows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Spans:
    """Spans in their canonical order, with `names` sorted, whatever order the rows were found in. `flows`:
    each row's flow_out, flow_in and program_id (none: a format without them)."""
    if not len(start_ps):
        return Spans.empty()
    if flows is None:
        flows = (
            np.full(len(start_ps), NO_FLOW, np.int64),
            np.full(len(start_ps), NO_FLOW, np.int64),
            np.full(len(start_ps), NO_PROGRAM_ID, np.int64),
        )
    flow_out, flow_in, program_id = flows
    used = sorted({names[i] for i in sorted_distinct(name).tolist()})
    position = {text: k for k, text in enumerate(used)}
    remap = np.asarray([position.get(text, -1) for text in names], np.int32)
    name = remap[name]
    order = np.lexsort((program_id, flow_in, flow_out, line, root, name, device, source, end_ps, start_ps))
    return Spans(
        source[order].astype(np.int8),
        name[order],
        device[order].astype(np.int32),
        root[order].astype(bool),
        start_ps[order].astype(np.int64),
        end_ps[order].astype(np.int64),
        line[order].astype(np.int32),
        np.asarray(flow_out, np.int64)[order],
        np.asarray(flow_in, np.int64)[order],
        np.asarray(program_id, np.int64)[order],
        used,
    )


def groups_from_rows(group_id: np.ndarray, start_ps: np.ndarray, end_ps: np.ndarray) -> Groups:
    """One row per group id: its earliest start and latest end, sorted by start (then id)."""
    if not len(group_id):
        return Groups.empty()
    ids, start, end, _ = _union_per_key(group_id, start_ps, end_ps)
    by_start = np.lexsort((ids, start))
    return Groups(ids[by_start], start[by_start], end[by_start])


def steps_from_markers(step: np.ndarray, start_ps: np.ndarray, end_ps: np.ndarray, warnings: list[str]) -> Steps:
    """One interval per step number (the union of its markers), sorted by start; steps starting together in the
    order their first markers came."""
    if not len(step):
        return Steps.empty()
    numbers, start, end, first_row = _union_per_key(step, start_ps, end_ps)
    by_start = np.lexsort((first_row, start))
    steps = Steps(numbers[by_start], start[by_start], end[by_start])
    if len(steps) > 1 and bool(np.any(steps.start_ps[1:] < steps.end_ps[:-1])):
        warnings.append("step markers overlap; each memory event is given to the latest step that started before it")
    return steps


def _union_per_key(
    key: np.ndarray, start_ps: np.ndarray, end_ps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each distinct key (sorted), the earliest start and latest end of its rows, and the row it first appears in."""
    order = np.argsort(key, kind="stable")
    keys = key[order]
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    start = np.minimum.reduceat(start_ps[order], first)
    end = np.maximum.reduceat(end_ps[order], first)
    return keys[first], start, end, order[first]  # the stable sort keeps each key's rows in row order


def stack_spans(times: np.ndarray, stacks: list[tuple[int, ...]], names: list[str], max_frames: int) -> Spans:
    """Each allocation's frames (indexes into `names`, innermost first) as nested host calls on line 0 around its
    time: frame j from t - (j + 1) to t + (j + 1), its innermost `max_frames` of them. The attribution then gives
    the allocation the user's frames of its stack, as it does a Python tracer's calls; the times must lie more than
    2 * max_frames apart."""
    kept = [stack[:max_frames] for stack in stacks]
    depth = np.asarray([len(s) for s in kept], np.int64)
    total = int(depth.sum()) if len(depth) else 0
    if not total:
        return Spans.empty()
    first = np.cumsum(depth) - depth
    width = np.arange(total, dtype=np.int64) - np.repeat(first, depth) + 1
    time = np.repeat(np.asarray(times, np.int64), depth)
    name = np.fromiter((frame for stack in kept for frame in stack), np.int32, total)
    zeros = np.zeros(total, np.int32)
    return spans_from_rows(
        np.full(total, SPAN_HOST_CALL, np.int8),
        name,
        names,
        np.full(total, -1, np.int32),
        np.zeros(total, bool),
        time - width,
        time + width,
        zeros,
    )
