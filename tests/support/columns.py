"""Model columns built directly from a few lists, so that an analysis test can skip the wire format.

    events = memory_events([10, 20, 30], [ALLOC, ALLOC, FREE], [0x10, 0x20, 0x10], [MIB, 2 * MIB, MIB], op=["A", "B", ""])
    marks = steps((0, 0, 15), (1, 15, 40))
    pairing = pair_events(events, marks)

Each argument is one value or one per event. What a reader would give where a
test says nothing: `requested_bytes` and `chunk_bytes` are `nbytes`;
`heap_bytes` is each allocator's running total after the event and
`allocator_peak_bytes` its running maximum (as TF's BFC allocator reports them);
the other columns hold MemoryEvents' "none" values (0, 0.0, dtype 0: "",
group_id -1). Any column of EVENT_COLUMNS may be given by name instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, FREED, NEVER_FREED, NO_TIME, Buffers
from tb_leakfinder.model.memory import ALLOC, EVENT_COLUMNS, HostProfile, MemoryEvents, Steps

NONE_VALUES = {"group_id": -1}  # other columns' "none" is 0 (the dtype's: "")


def _per_event(value: Any, n: int, dtype: Any) -> np.ndarray:
    column = np.asarray(value, dtype=dtype)
    return np.array(np.broadcast_to(column, (n,)), dtype=dtype) if column.ndim == 0 else column


def _intern(values: Any, n: int, table: list[str]) -> np.ndarray:
    """Indexes of `values` (one string or one per event) in `table`, appending the new ones in order of first use."""
    strings = [values] * n if isinstance(values, str) else [str(v) for v in values]
    index = []
    for s in strings:
        if s not in table:
            table.append(s)
        index.append(table.index(s))
    return np.array(index, np.int32)


def memory_events(
    time_ps: Sequence[int] | np.ndarray,
    kind: int | Sequence[int] | np.ndarray,
    addr: int | Sequence[int] | np.ndarray,
    nbytes: int | Sequence[int] | np.ndarray,
    *,
    allocator: str | Sequence[str] = "GPU_0_bfc",
    op: str | Sequence[str] = "",
    shape: str | Sequence[str] = "",
    region: str | Sequence[str] = "",
    **columns: Any,
) -> MemoryEvents:
    """Memory events sorted by time (ties keep the order given), as a reader gives them."""
    unknown = set(columns) - set(EVENT_COLUMNS)
    if unknown:
        raise TypeError(f"not a column of MemoryEvents: {sorted(unknown)}")
    times = np.asarray(time_ps, np.int64)
    n = int(times.shape[0])
    given: dict[str, np.ndarray] = {
        "time_ps": times,
        "kind": _per_event(kind, n, np.int8),
        "addr": _per_event(addr, n, np.uint64),
    }
    given["chunk_bytes"] = given["requested_bytes"] = _per_event(nbytes, n, np.int64)
    strings = [""]
    for name, values in (("op", op), ("shape", shape), ("region", region)):
        given[name] = _intern(values, n, strings)
    allocator_names: list[str] = []
    given["allocator"] = _intern(allocator, n, allocator_names)
    for name, value in columns.items():
        given[name] = _per_event(value, n, EVENT_COLUMNS[name])
    order = np.argsort(times, kind="stable")
    out = {name: column[order] for name, column in given.items()}
    # Each allocator's heap in use after each event, and its peak so far, in time order.
    in_use = np.zeros(n, np.int64)
    peak = np.zeros(n, np.int64)
    delta = np.where(out["kind"] == ALLOC, out["chunk_bytes"], -out["chunk_bytes"])
    for a in range(len(allocator_names)):
        rows = out["allocator"] == a
        in_use[rows] = np.cumsum(delta[rows])
        peak[rows] = np.maximum.accumulate(in_use[rows])
    out.setdefault("heap_bytes", in_use)
    out.setdefault("allocator_peak_bytes", peak)
    for name, dtype in EVENT_COLUMNS.items():
        out.setdefault(name, np.full(n, NONE_VALUES.get(name, 0), dtype))
    return MemoryEvents(
        **{name: out[name].astype(dtype, copy=False) for name, dtype in EVENT_COLUMNS.items()},
        strings=strings,
        allocator_names=allocator_names,
    )


def steps(*markers: tuple[int, int, int]) -> Steps:
    """Step markers from (step_num, start_ps, end_ps) triples, sorted by start."""
    if not markers:
        return Steps.empty()
    step_num, start_ps, end_ps = (np.array(column, np.int64) for column in zip(*markers, strict=True))
    order = np.argsort(start_ps, kind="stable")
    return Steps(step_num[order], start_ps[order], end_ps[order])


def buffers(
    alloc_time_ps: Sequence[int],
    free_time_ps: Sequence[int],
    nbytes: int | Sequence[int],
    *,
    strings: list[str] | None = None,
    op: str | Sequence[str] = "",
    shape: str | Sequence[str] = "",
    region: str | Sequence[str] = "",
    **columns: Any,
) -> Buffers:
    """Buffer lifetimes, one row per buffer in the order given.

    NO_TIME as an allocation time is a buffer allocated before the window, as a
    free time one never freed. `alloc_event` and `free_event` index the stream
    of these buffers' allocations and frees in time order (the allocations
    first at equal times), as pair_events gives them for that stream. `op`,
    `shape` and `region` are interned into `strings` (pass the events' table to
    share it). Any other column of Buffers may be given by name.
    """
    alloc = np.asarray(alloc_time_ps, np.int64)
    free = np.asarray(free_time_ps, np.int64)
    n = int(alloc.shape[0])
    table = [""] if strings is None else strings
    status = np.where(alloc == NO_TIME, BEFORE_WINDOW, np.where(free == NO_TIME, NEVER_FREED, FREED)).astype(np.int8)
    size = _per_event(nbytes, n, np.int64)
    # The event stream: every allocation and free in the window, by time, allocations first at equal times.
    alloc_rows, free_rows = np.flatnonzero(alloc != NO_TIME), np.flatnonzero(free != NO_TIME)
    stream_time = np.concatenate([alloc[alloc_rows], free[free_rows]])
    stream_kind = np.concatenate([np.zeros(len(alloc_rows), np.int8), np.ones(len(free_rows), np.int8)])
    position = np.empty(len(stream_time), np.int32)
    position[np.lexsort((stream_kind, stream_time))] = np.arange(len(stream_time), dtype=np.int32)
    alloc_event = np.full(n, -1, np.int32)
    free_event = np.full(n, -1, np.int32)
    alloc_event[alloc_rows] = position[: len(alloc_rows)]
    free_event[free_rows] = position[len(alloc_rows) :]
    out: dict[str, np.ndarray] = {
        "alloc_event": alloc_event,
        "free_event": free_event,
        "alloc_time_ps": alloc,
        "free_time_ps": free,
        "alloc_step": np.full(n, -1, np.int32),
        "free_step": np.full(n, -1, np.int32),
        "addr": np.arange(1, n + 1, dtype=np.uint64) << np.uint64(12),
        "requested_bytes": size,
        "chunk_bytes": size,
        "op": _intern(op, n, table),
        "shape": _intern(shape, n, table),
        "dtype": np.zeros(n, np.int32),
        "region": _intern(region, n, table),
        "status": status,
        "site": np.zeros(n, np.int32),
    }
    for name, value in columns.items():
        if name not in out:
            raise TypeError(f"not a column of Buffers: {name}")
        out[name] = _per_event(value, n, out[name].dtype)
    return Buffers(**out)


def host_profile(
    events: MemoryEvents | None = None, marks: Steps | None = None, *, host: str = "host0", **fields: Any
) -> HostProfile:
    """One host's profile holding `events` and step markers `marks`; its duration ends at the last event or step."""
    events = MemoryEvents.empty() if events is None else events
    marks = Steps.empty() if marks is None else marks
    ends = [int(events.time_ps.max()) if len(events) else 0, int(marks.end_ps.max()) if len(marks) else 0]
    fields.setdefault("duration_ps", max(ends))
    return HostProfile(host, f"/logs/run/plugins/profile/s/{host}.xplane.pb", events, marks, **fields)
