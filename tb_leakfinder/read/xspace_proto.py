"""Reference XSpace decoder over protobuf message objects.

Clear and slow (Python-level iteration per event): the model it builds is the
one the fast scanner must reproduce exactly.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError, Message

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, EVENT_COLUMNS, FREE, HostProfile, MemoryEvents, Steps

HOST_CPU_PLANE = "/host:CPU"
METADATA_PLANE = "/host:metadata"
ALLOC_EVENT = "MemoryAllocation"
FREE_EVENT = "MemoryDeallocation"
STEP_STAT = "step_num"

# stat name -> event column; strings are interned into MemoryEvents.strings.
INT_STATS = {
    "requested_bytes": "requested_bytes",
    "allocation_bytes": "allocation_bytes",
    "bytes_allocated": "bytes_in_use",
    "bytes_reserved": "bytes_reserved",
    "peak_bytes_in_use": "peak_bytes_in_use",
}
STRING_STATS = {"tf_op": "op", "shape": "shape", "region_type": "region"}
U64 = 1 << 64


def parse_xspace(data: bytes, path: str) -> Message:
    if not data:
        raise LeakfinderError(f"{path}: the file is empty, not an XSpace profile", source=path)
    try:
        return proto.XSpace().FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise LeakfinderError(f"{path}: incomplete or corrupt profile, not a readable XSpace ({exc})", source=path) from exc


def _stat_value(stat: Message, stat_names: dict[int, str]) -> int | float | str | bytes | None:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    return getattr(stat, kind) if kind else None


def decode(data: bytes, host: str, path: str) -> HostProfile:
    space = parse_xspace(data, path)
    warnings: list[str] = []
    hlo_protos: dict[str, bytes] = {}
    planes = {plane.name: plane for plane in space.planes}
    if METADATA_PLANE in planes:
        from tb_leakfinder.read.hlo import hlo_protos_from_metadata_plane

        hlo_protos = hlo_protos_from_metadata_plane(planes[METADATA_PLANE])
    cpu = planes.get(HOST_CPU_PLANE)
    if cpu is None:
        if not space.planes:
            warnings.append(f"{path}: the profile has no planes")
        return HostProfile(host, path, MemoryEvents.empty(), Steps.empty(), 0, hlo_protos, warnings)
    events, steps, duration = _decode_cpu_plane(cpu, warnings)
    return HostProfile(host, path, events, steps, duration, hlo_protos, warnings)


def _decode_cpu_plane(plane: Message, warnings: list[str]) -> tuple[MemoryEvents, Steps, int]:
    stat_names = {key: md.name for key, md in plane.stat_metadata.items()}
    event_names = {key: md.name for key, md in plane.event_metadata.items()}
    kinds = {
        key: ALLOC if name == ALLOC_EVENT else FREE for key, name in event_names.items() if name in (ALLOC_EVENT, FREE_EVENT)
    }
    lines = [line for line in plane.lines if line.events]
    base_ns = min((line.timestamp_ns for line in lines), default=0)
    columns: dict[str, list] = {name: [] for name in EVENT_COLUMNS}
    strings = [""]
    string_index = {"": 0}
    allocators: list[str] = []
    allocator_index: dict[str, int] = {}
    step_rows: list[tuple[int, int, int]] = []
    end_ps = 0

    def intern(value: str) -> int:
        if value not in string_index:
            string_index[value] = len(strings)
            strings.append(value)
        return string_index[value]

    for line in lines:
        line_base = (line.timestamp_ns - base_ns) * 1000
        for event in line.events:
            # Absurd timestamps wrap around int64, exactly as the compiled scanner's arithmetic does.
            start = _as_int64(line_base + event.offset_ps)
            end = _as_int64(start + event.duration_ps)
            end_ps = max(end_ps, end)
            kind = kinds.get(event.metadata_id)
            if kind is None:
                step = _step_num(event, stat_names)
                if step is not None:
                    step_rows.append((step, start, end))
                continue
            row = {
                "requested_bytes": 0,
                "allocation_bytes": 0,
                "bytes_in_use": 0,
                "bytes_reserved": 0,
                "peak_bytes_in_use": 0,
                "dtype": -1,
                "op": 0,
                "shape": 0,
                "region": 0,
                "fragmentation": 0.0,
                "addr": 0,
            }
            allocator = ""
            for stat in event.stats:
                name = stat_names.get(stat.metadata_id, "")
                value = _stat_value(stat, stat_names)
                if value is None:
                    continue
                if name == "allocator_name":
                    allocator = str(value)
                elif name == "addr" and isinstance(value, int):
                    row["addr"] = value % U64
                elif name == "fragmentation" and isinstance(value, (int, float)):
                    row["fragmentation"] = float(value)
                elif name == "data_type" and isinstance(value, int):
                    row["dtype"] = _as_int32(value)
                elif name in INT_STATS and isinstance(value, int):
                    row[INT_STATS[name]] = _as_int64(value)
                elif name in STRING_STATS and isinstance(value, str):
                    row[STRING_STATS[name]] = intern(value)
            if allocator not in allocator_index:
                allocator_index[allocator] = len(allocators)
                allocators.append(allocator)
            row["allocator"] = allocator_index[allocator]
            row["time_ps"] = start
            row["kind"] = kind
            for name in EVENT_COLUMNS:
                columns[name].append(row[name])

    arrays = {
        name: np.asarray(values, dtype) for name, (values, dtype) in ((n, (columns[n], d)) for n, d in EVENT_COLUMNS.items())
    }
    order = np.argsort(arrays["time_ps"], kind="stable")
    events = MemoryEvents(**{n: a[order] for n, a in arrays.items()}, strings=strings, allocator_names=allocators)
    return events, steps_from_markers(step_rows, warnings), end_ps


def _as_int64(value: int) -> int:
    value %= U64
    return value - U64 if value >= 1 << 63 else value


def _as_int32(value: int) -> int:
    value %= 1 << 32
    return value - (1 << 32) if value >= 1 << 31 else value


def _step_num(event: Message, stat_names: dict[int, str]) -> int | None:
    for stat in event.stats:
        if stat_names.get(stat.metadata_id) == STEP_STAT:
            value = _stat_value(stat, stat_names)
            if isinstance(value, int):
                return _as_int64(value)
    return None


def steps_from_markers(rows: list[tuple[int, int, int]], warnings: list[str]) -> Steps:
    """One interval per step number (the union of its markers), sorted by start."""
    merged: dict[int, tuple[int, int]] = {}
    for step, start, end in rows:
        lo, hi = merged.get(step, (start, end))
        merged[step] = (min(lo, start), max(hi, end))
    ordered = sorted(merged.items(), key=lambda item: item[1][0])
    steps = Steps(
        np.asarray([s for s, _ in ordered], np.int64),
        np.asarray([span[0] for _, span in ordered], np.int64),
        np.asarray([span[1] for _, span in ordered], np.int64),
    )
    if len(steps) > 1 and bool(np.any(steps.start_ps[1:] < steps.end_ps[:-1])):
        warnings.append("step markers overlap; each memory event is given to the latest step that started before it")
    return steps
