"""Reference XSpace decoder over protobuf message objects.

Clear and slow (Python-level iteration per event): the model it builds is the
one the fast scanner must reproduce exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from google.protobuf.message import DecodeError, Message

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    NO_FLOW,
    NO_PROGRAM_ID,
    PYTHON_CALL_PREFIX,
    SPAN_DEVICE_PROGRAM,
    SPAN_DEVICE_STEP,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    SPAN_HOST_RUNTIME,
    Groups,
    HostProfile,
    MemoryEvents,
    Spans,
    Steps,
    event_order,
    is_runtime_name,
    is_transfer_name,
)
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.common.rows import groups_from_rows, spans_from_rows, steps_from_markers
from tb_leakfinder.read.formats.xplane import clock, hlo
from tb_leakfinder.read.formats.xplane.labels import in_neutral_terms
from tb_leakfinder.read.formats.xplane.scan import corrupt_profile, refuse_empty
from tb_leakfinder.read.formats.xplane.stat_spec import (
    FILL_OF_STAT,
    FILLS,
    FLOAT,
    FLOW_IN_STAT,
    FLOW_OUT_STAT,
    GROUP_STAT,
    INT,
    INT32,
    INT_ID_STATS,
    NAME_ID_STAT,
    PROGRAM_ID_STAT,
    ROOT_STAT,
    STEP_STAT,
    STRING,
    UINT64,
)

HOST_CPU_PLANE = "/host:CPU"
METADATA_PLANE = "/host:metadata"
DEVICE_PLANE_PREFIX = "/device:"
ALLOC_EVENT = "MemoryAllocation"
FREE_EVENT = "MemoryDeallocation"
# A device plane's lines whose events are step-like spans, and their Spans.source.
DEVICE_SPAN_LINES = {"XLA Modules": SPAN_DEVICE_PROGRAM, "Steps": SPAN_DEVICE_STEP}
# Host events XProf groups steps by even without `_r`: exact names, then name prefixes (PjitFunction(...) also ends in ")").
HOST_SPAN_NAMES = ("TraceContext", "FunctionRun")
HOST_SPAN_PREFIXES = ("__inference_", "PjitFunction(")

U64 = 1 << 64
# A memory event's columns before its stats are read.
_DEFAULTS: dict[str, int | float] = {fill.column: fill.default for fill in FILLS}


def is_host_span_name(name: str) -> bool:
    """Whether a /host:CPU event of this name is a candidate step span even without `_r`."""
    if name in HOST_SPAN_NAMES or name.startswith(HOST_SPAN_PREFIXES[0]):
        return True
    return name.startswith(HOST_SPAN_PREFIXES[1]) and name.endswith(")")


def is_host_call_name(name: str) -> bool:
    """Whether a /host:CPU event of this name is a host call (a Python function, a transfer), when not a span."""
    return (len(name) > 1 and name.startswith(PYTHON_CALL_PREFIX)) or is_transfer_name(name)


def beyond_limits(path: str, detail: object) -> LeakfinderError:
    """The error for a well-formed XSpace that names more of something than is read (limits.py)."""
    return LeakfinderError(f"{path}: an XSpace profile too large to read ({detail})", source=path)


def check_planes(path: str, planes: int, devices: int) -> None:
    """Refuses a profile of too many planes or devices, before its /host:CPU plane is read (both decoders)."""
    limits.check_planes(planes, path, beyond_limits)
    limits.check_allocators(devices, path, beyond_limits)


def check_host(path: str, events: MemoryEvents, spans: Spans) -> None:
    """Refuses a /host:CPU plane of too many allocators, or of events and host spans on too many threads (both
    decoders): each costs the analysis a pass."""
    limits.check_allocators(len(events.allocator_names), path, beyond_limits)
    parts = (events.line, spans.line[spans.line >= 0])
    # Positions in [0, MAX_LINES) name at most MAX_LINES lines: only others need counting (a sort of every event),
    # and only then are the parts joined (a copy of a column).
    if not all(not len(part) or (int(part.min()) >= 0 and int(part.max()) < limits.MAX_LINES) for part in parts):
        limits.check_lines(len(np.unique(np.concatenate(parts))), path, beyond_limits)


def parse_xspace(data: bytes, path: str) -> Message:
    refuse_empty(data, path)
    try:
        return proto.XSpace().FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise corrupt_profile(path, exc) from exc


def _stat_value(stat: Message, stat_names: dict[int, str]) -> int | float | str | bytes | None:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    return getattr(stat, kind) if kind else None


def decode(data: bytes, host: str, path: str) -> HostProfile:
    return in_neutral_terms(_decode(data, host, path))


def _decode(data: bytes, host: str, path: str) -> HostProfile:
    space = parse_xspace(data, path)
    warnings: list[str] = []
    hlo_protos: dict[str, bytes] = {}
    planes = {plane.name: plane for plane in space.planes}
    if METADATA_PLANE in planes:
        hlo_protos = hlo.hlo_protos_from_metadata_plane(planes[METADATA_PLANE])
    devices = [name for name in planes if name.startswith(DEVICE_PLANE_PREFIX)]
    check_planes(path, len(space.planes), len(devices))
    cpu = planes.get(HOST_CPU_PLANE)
    if cpu is None:
        if not space.planes:
            warnings.append(f"{path}: the profile has no planes")
        return HostProfile(host, path, MemoryEvents.empty(), Steps.empty(), 0, hlo_protos, warnings, devices)
    spans = _SpanRows()
    events, steps, groups, duration, base_ns = _decode_cpu_plane(cpu, warnings, spans)
    for index, name in enumerate(devices):
        _device_spans(planes[name], index, base_ns, spans)
    profile = HostProfile(host, path, events, steps, duration, hlo_protos, warnings, devices, spans.columns(), groups)
    check_host(path, profile.events, profile.spans)
    profile.start_time_ns = clock.wall_clock_start_ns(base_ns, clock.profile_start_ns(data))
    return profile


class _HostStats(NamedTuple):
    """What a non-memory event's stats give: its step number (the first integer `step_num`), whether it is a
    root (the last `_r` is a nonzero integer), its group (the last integer `group_id`), and its flow ids and
    program id (the last integer `_p`, `_c`, `program_id`)."""

    step: int | None = None
    root: bool = False
    group: int | None = None
    flow_out: int = NO_FLOW
    flow_in: int = NO_FLOW
    program_id: int = NO_PROGRAM_ID


NO_STATS = _HostStats()


class _SpanRows:
    """Spans as they are found: (source, name, device, root, start, end, line, flow_out, flow_in, program_id)
    rows, names interned."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, bool, int, int, int, int, int, int]] = []
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, source: int, name: str, device: int, root: bool, start: int, end: int, line: int, stats: _HostStats) -> None:
        index = self._index.setdefault(name, len(self.names))
        if index == len(self.names):
            self.names.append(name)
        self.rows.append((source, index, device, root, start, end, line, stats.flow_out, stats.flow_in, stats.program_id))

    def columns(self) -> Spans:
        dtypes = (np.int8, np.int32, np.int32, bool, np.int64, np.int64, np.int32, np.int64, np.int64, np.int64)
        cols = [np.asarray([row[k] for row in self.rows], dtype) for k, dtype in enumerate(dtypes)]
        source, name, device, root, start, end, line, flow_out, flow_in, program_id = cols
        return spans_from_rows(source, name, self.names, device, root, start, end, line, (flow_out, flow_in, program_id))


def _device_spans(plane: Message, device: int, base_ns: int, spans: _SpanRows) -> None:
    """The events of a device plane's `XLA Modules` and `Steps` lines, in the host's time base."""
    event_names = {key: md.name for key, md in plane.event_metadata.items()}
    stat_names = {key: md.name for key, md in plane.stat_metadata.items()}
    for line in plane.lines:
        source = DEVICE_SPAN_LINES.get(line.name)
        if source is None:
            continue
        line_base = (line.timestamp_ns - base_ns) * 1000
        for event in line.events:
            start = _as_int64(line_base + event.offset_ps)
            end = _as_int64(start + event.duration_ps)
            stats = _other_event_stats(event, stat_names)
            spans.add(source, event_names.get(event.metadata_id, ""), device, False, start, end, -1, stats)


def _memory_id(name: str, stat: Message, value: int | float | str | bytes | None) -> str:
    """An id stat's memory id as XProf's converter spells it (its IntValue / StrOrRefValue of other kinds).

    An integer id is decimal (uint64 too: this project reads uint64 as an integer
    everywhere, where XProf reads 0); other kinds give "0". A name that is not a
    string gives "".
    """
    if name == NAME_ID_STAT:
        return value if isinstance(value, str) else ""
    if stat.WhichOneof("value") == "uint64_value":
        return str(stat.uint64_value)
    return str(stat.int64_value)


def _decode_cpu_plane(plane: Message, warnings: list[str], spans: _SpanRows) -> tuple[MemoryEvents, Steps, Groups, int, int]:
    stat_names = {key: md.name for key, md in plane.stat_metadata.items()}
    event_names = {key: md.name for key, md in plane.event_metadata.items()}
    kinds = {
        key: ALLOC if name == ALLOC_EVENT else FREE for key, name in event_names.items() if name in (ALLOC_EVENT, FREE_EVENT)
    }
    span_names = {key for key, name in event_names.items() if is_host_span_name(name)}
    call_names = {key for key, name in event_names.items() if key not in span_names and is_host_call_name(name)}
    runtime_names = {key for key, name in event_names.items() if is_runtime_name(name)}
    # Each line keeps its position among all of the plane's lines: a host span's `line` (its thread).
    lines = [(position, line) for position, line in enumerate(plane.lines) if line.events]
    base_ns = min((line.timestamp_ns for _, line in lines), default=0)
    columns: dict[str, list[int | float]] = {name: [] for name in EVENT_COLUMNS}
    strings = [""]
    string_index = {"": 0}
    allocators: list[str] = []
    allocator_index: dict[str, int] = {}
    step_rows: list[tuple[int, int, int]] = []
    group_rows: list[tuple[int, int, int]] = []
    end_ps = 0

    def intern(value: str) -> int:
        if value not in string_index:
            string_index[value] = len(strings)
            strings.append(value)
        return string_index[value]

    for position, line in lines:
        line_base = (line.timestamp_ns - base_ns) * 1000
        for event in line.events:
            # Absurd timestamps wrap around int64, exactly as the compiled scanner's arithmetic does.
            start = _as_int64(line_base + event.offset_ps)
            end = _as_int64(start + event.duration_ps)
            end_ps = max(end_ps, end)
            kind = kinds.get(event.metadata_id)
            if kind is None:
                stats = _other_event_stats(event, stat_names)
                if stats.step is not None:
                    step_rows.append((stats.step, start, end))
                name = event_names.get(event.metadata_id, "")
                if stats.root or event.metadata_id in span_names:
                    spans.add(SPAN_HOST_ROOT, name, -1, stats.root, start, end, position, stats)
                elif event.metadata_id in call_names:
                    spans.add(SPAN_HOST_CALL, name, -1, False, start, end, position, stats)
                elif event.metadata_id in runtime_names or stats.program_id != NO_PROGRAM_ID:
                    spans.add(SPAN_HOST_RUNTIME, name, -1, False, start, end, position, stats)
                if stats.group is not None:
                    group_rows.append((stats.group, start, end))
                continue
            row = dict(_DEFAULTS)
            allocator = ""
            grouped = False
            for stat in event.stats:
                name = stat_names.get(stat.metadata_id, "")
                value = _stat_value(stat, stat_names)
                if name == NAME_ID_STAT or name in INT_ID_STATS:  # any kind, even none, names the allocator (as XProf)
                    allocator = _memory_id(name, stat, value)
                    continue
                fill = FILL_OF_STAT.get(name)
                if fill is None or value is None:
                    continue
                if fill.kind == STRING:
                    if isinstance(value, str):
                        row[fill.column] = intern(value)
                elif fill.kind == FLOAT:
                    if isinstance(value, (int, float)):
                        row[fill.column] = float(value)
                elif isinstance(value, int):
                    row[fill.column] = _INTEGER[fill.kind](value)
                    grouped = grouped or name == GROUP_STAT
            if allocator not in allocator_index:
                allocator_index[allocator] = len(allocators)
                allocators.append(allocator)
            row["allocator"] = allocator_index[allocator]
            row["time_ps"] = start
            row["kind"] = kind
            row["line"] = position
            if grouped:
                group_rows.append((int(row["group_id"]), start, end))
            for name in EVENT_COLUMNS:
                columns[name].append(row[name])

    arrays: dict[str, np.ndarray] = {name: np.asarray(columns[name], dtype) for name, dtype in EVENT_COLUMNS.items()}
    # In the compiled reader's order: by allocator, each allocator's events in time order (ties in file order).
    order = event_order(arrays["time_ps"], arrays["allocator"], len(allocators))
    events = MemoryEvents(
        **{n: a if order is None else a[order] for n, a in arrays.items()}, strings=strings, allocator_names=allocators
    )
    groups = groups_from_rows(*(np.asarray([row[k] for row in group_rows], np.int64) for k in range(3)))
    step, start, end = np.asarray(step_rows, np.int64).reshape(-1, 3).T
    return events, steps_from_markers(step, start, end, warnings), groups, end_ps, base_ns


def _as_int64(value: int) -> int:
    value %= U64
    return value - U64 if value >= 1 << 63 else value


def _as_int32(value: int) -> int:
    value %= 1 << 32
    return value - (1 << 32) if value >= 1 << 31 else value


def _as_uint64(value: int) -> int:
    return value % U64


# An integer stat's value in a column of each integer kind (stat_spec), as the scanner's C casts give it.
_INTEGER = {INT: _as_int64, UINT64: _as_uint64, INT32: _as_int32}


_KEPT_STATS = (STEP_STAT, ROOT_STAT, GROUP_STAT, FLOW_OUT_STAT, FLOW_IN_STAT, PROGRAM_ID_STAT)
# The stats whose last integer value is kept as it is, by _HostStats field.
_LAST_INTEGER = {GROUP_STAT: "group", FLOW_OUT_STAT: "flow_out", FLOW_IN_STAT: "flow_in", PROGRAM_ID_STAT: "program_id"}


def _other_event_stats(event: Message, stat_names: dict[int, str]) -> _HostStats:
    found: dict[str, int | bool | None] = {}
    for stat in event.stats:
        name = stat_names.get(stat.metadata_id)
        if name not in _KEPT_STATS:
            continue
        value = _stat_value(stat, stat_names)
        integer = _as_int64(value) if isinstance(value, int) else None
        if name == STEP_STAT and "step" not in found:
            if integer is not None:
                found["step"] = integer
        elif name == ROOT_STAT:
            found["root"] = bool(integer)
        elif name in _LAST_INTEGER and integer is not None:
            found[_LAST_INTEGER[name]] = integer
    return _HostStats(**found) if found else NO_STATS  # type: ignore[arg-type]
