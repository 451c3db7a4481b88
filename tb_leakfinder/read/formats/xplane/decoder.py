"""Reference XSpace decoder over protobuf message objects.

Clear and slow (Python-level iteration per event): the model it builds is the
one the fast scanner must reproduce exactly.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError, Message

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    PYTHON_CALL_PREFIX,
    SPAN_DEVICE_PROGRAM,
    SPAN_DEVICE_STEP,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    Groups,
    HostProfile,
    MemoryEvents,
    Steps,
    is_transfer_name,
)
from tb_leakfinder.read.formats.xplane import clock, hlo
from tb_leakfinder.read.formats.xplane.labels import in_neutral_terms
from tb_leakfinder.read.formats.xplane.rows import groups_from_rows, spans_from_rows, steps_from_markers
from tb_leakfinder.read.formats.xplane.stat_spec import (
    FILL_OF_STAT,
    FILLS,
    FLOAT,
    GROUP_STAT,
    INT,
    INT32,
    INT_ID_STATS,
    NAME_ID_STAT,
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


def refuse_empty(data: bytes | memoryview, path: str) -> None:
    if not data:
        raise LeakfinderError(f"{path}: the file is empty, not an XSpace profile", source=path)


def corrupt_profile(path: str, detail: object) -> LeakfinderError:
    """The error for bytes that do not decode as an XSpace, in the words of both decoders."""
    return LeakfinderError(f"{path}: incomplete or corrupt profile, not a readable XSpace ({detail})", source=path)


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
    cpu = planes.get(HOST_CPU_PLANE)
    if cpu is None:
        if not space.planes:
            warnings.append(f"{path}: the profile has no planes")
        return HostProfile(host, path, MemoryEvents.empty(), Steps.empty(), 0, hlo_protos, warnings, devices)
    spans = _SpanRows()
    events, steps, groups, duration, base_ns = _decode_cpu_plane(cpu, warnings, spans)
    for index, name in enumerate(devices):
        _device_spans(planes[name], index, base_ns, spans)
    profile = HostProfile(
        host, path, events, steps, duration, hlo_protos, warnings, devices, spans_from_rows(*spans.columns()), groups
    )
    profile.start_time_ns = clock.wall_clock_start_ns(base_ns, clock.profile_start_ns(data))
    return profile


class _SpanRows:
    """Spans as they are found: (source, name, device, root, start, end, line) rows, names interned."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, bool, int, int, int]] = []
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, source: int, name: str, device: int, root: bool, start: int, end: int, line: int = -1) -> None:
        index = self._index.setdefault(name, len(self.names))
        if index == len(self.names):
            self.names.append(name)
        self.rows.append((source, index, device, root, start, end, line))

    def columns(
        self,
    ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        dtypes = (np.int8, np.int32, np.int32, bool, np.int64, np.int64, np.int32)
        cols = [np.asarray([row[k] for row in self.rows], dtype) for k, dtype in enumerate(dtypes)]
        return cols[0], cols[1], self.names, cols[2], cols[3], cols[4], cols[5], cols[6]


def _device_spans(plane: Message, device: int, base_ns: int, spans: _SpanRows) -> None:
    """The events of a device plane's `XLA Modules` and `Steps` lines, in the host's time base."""
    event_names = {key: md.name for key, md in plane.event_metadata.items()}
    for line in plane.lines:
        source = DEVICE_SPAN_LINES.get(line.name)
        if source is None:
            continue
        line_base = (line.timestamp_ns - base_ns) * 1000
        for event in line.events:
            start = _as_int64(line_base + event.offset_ps)
            spans.add(source, event_names.get(event.metadata_id, ""), device, False, start, _as_int64(start + event.duration_ps))


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
                step, root, group = _other_event_stats(event, stat_names)
                if step is not None:
                    step_rows.append((step, start, end))
                if root or event.metadata_id in span_names:
                    spans.add(SPAN_HOST_ROOT, event_names.get(event.metadata_id, ""), -1, root, start, end, position)
                elif event.metadata_id in call_names:
                    spans.add(SPAN_HOST_CALL, event_names[event.metadata_id], -1, False, start, end, position)
                if group is not None:
                    group_rows.append((group, start, end))
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
    order = np.argsort(arrays["time_ps"], kind="stable")
    events = MemoryEvents(**{n: a[order] for n, a in arrays.items()}, strings=strings, allocator_names=allocators)
    groups = groups_from_rows(*(np.asarray([row[k] for row in group_rows], np.int64) for k in range(3)))
    return events, steps_from_markers(step_rows, warnings), groups, end_ps, base_ns


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


def _other_event_stats(event: Message, stat_names: dict[int, str]) -> tuple[int | None, bool, int | None]:
    """A non-memory event's step number (the first integer `step_num`), whether it is a root (the last `_r`
    is a nonzero integer) and its group (the last integer `group_id`)."""
    step: int | None = None
    root = False
    group: int | None = None
    for stat in event.stats:
        name = stat_names.get(stat.metadata_id)
        if name not in (STEP_STAT, ROOT_STAT, GROUP_STAT):
            continue
        value = _stat_value(stat, stat_names)
        integer = _as_int64(value) if isinstance(value, int) else None
        if name == STEP_STAT and step is None:
            step = integer
        elif name == ROOT_STAT:
            root = bool(integer)
        elif name == GROUP_STAT and integer is not None:
            group = integer
    return step, root, group
