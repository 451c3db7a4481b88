"""Reading one PyTorch profiler trace (Kineto's Chrome trace JSON, gzipped or not) into the model.

A trace is `{"traceEvents": [...]}`. Its `[memory]` instant events (`ph: "i"`) carry `args.Bytes`, positive
on allocation and negative on free, `Device Type` (0 CPU, 1 CUDA, 6 HIP) and `Device Id`; newer ones add
`Addr`, `Total Allocated` and `Total Reserved`. Each device is an allocator ("cpu", "cuda:0", "hip:0").
An event with `Addr` is paired by (device, address), as the model pairs; one without (PyTorch 1.9) gets a
synthetic address: a free takes that of the most recent unfreed allocation of its size on its device (LIFO
by size), which the profile's warnings say. `heap_bytes` is `Total Allocated` when the event has it, else the
device's running sum of the window's bytes; `free_bytes` is the device's `totalGlobalMem`
(`deviceProperties`) less `Total Allocated` when both are known, else 0.

`ProfilerStep#N` complete events (`ph: "X"`) are the steps, and host root spans named `ProfilerStep` too.
An allocation's op is the innermost `cpu_op` (or `Operator`) event around it on its thread (pid, tid), its
shape the op's `Input type` and `Input Dims`. `python_function` events named `file.py(line): func` are host
calls `$file.py:line func` on their thread; others of theirs (`nn.Module: ...`, built-ins) are left out.
Each (pid, tid) is a line, numbered in order of first appearance. `ts` and `dur` are µs; times are ps from
the trace's earliest event, the duration to its latest end.

The whole file is parsed with `json` at once: a trace of a gigabyte needs a streaming reader, not done.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    AllocatorInfo,
    HostProfile,
    MemoryEvents,
    Spans,
    Steps,
    python_call_name,
)
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.pprof.reader import GZIP_MAGIC, gunzip
from tb_leakfinder.read.formats.xplane.rows import spans_from_rows

# Files larger than this are refused, and so is one that decompresses to more (a gzip bomb stops there).
MAX_FILE_BYTES = 1 << 30
MAX_TRACE_BYTES = 2 << 30
MEMORY_EVENT = "[memory]"
OP_CATEGORIES = ("cpu_op", "Operator")
PYTHON_CATEGORY = "python_function"
STEP_PREFIX = "ProfilerStep#"
STEP_SPAN = "ProfilerStep"
# Newer traces repeat each step on the GPU's timeline (`gpu_user_annotation`): the host's is the step.
GPU_CATEGORY_PREFIX = "gpu_"
# Kineto's Device Type codes (c10::DeviceType) and the allocator names they become.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip"}
CPU_TYPE = 0
# Largest magnitudes taken as real: bytes of one buffer or total, and a time or duration in µs (~3 years).
MAX_BYTES = 1 << 56
MAX_US = 1e14
MAX_TS_US = 1e17  # an epoch time in µs is ~1.7e15
# Synthetic addresses of events without `Addr`: above any real one, a page apart.
SYNTHETIC_BASE = 1 << 62
ADDRESS_STRIDE = 1 << 12
US_TO_PS = 1_000_000
_PYTHON_FRAME = re.compile(r"(.+)\((\d+)\): (.+)")


def not_readable(path: str, detail: object) -> LeakfinderError:
    """The error for a file that is not a PyTorch profiler trace, or not a whole one."""
    return LeakfinderError(f"{path}: not a readable PyTorch profiler trace ({detail})", source=path)


def read_host(path: str, host: str) -> HostProfile:
    """One trace file into the model; raises LeakfinderError naming the file."""
    return decode(files.read_bytes(path, limit=MAX_FILE_BYTES), host, path)


def parse_trace(data: bytes, path: str) -> dict[str, Any]:
    raw: bytes | bytearray = gunzip(data, path, MAX_TRACE_BYTES, not_readable) if data[:2] == GZIP_MAGIC else data
    if not raw.strip():
        raise not_readable(path, "the file is empty")
    try:
        trace = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise not_readable(path, f"bad JSON: {exc}") from exc
    except MemoryError as exc:
        raise not_readable(path, "out of memory parsing its JSON") from exc
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise not_readable(path, 'no "traceEvents" list at its top')
    return trace


def _number(value: Any, path: str, what: str, limit: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > limit:
        raise not_readable(path, f"{what} is {value!r}, not a number within ±{limit:g}")
    return value


def _integer(value: Any, path: str, what: str, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > limit:
        raise not_readable(path, f"{what} is {value!r}, not an integer within ±{limit}")
    return value


@dataclass
class _Memory:
    ts: list[float] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    device: list[str] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    addr: list[int | None] = field(default_factory=list)
    allocated: list[int | None] = field(default_factory=list)


@dataclass
class _Complete:
    """Complete events of one kind: start and end in µs, thread line, name."""

    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    shape: list[str] = field(default_factory=list)


def _shape(args: dict[str, Any]) -> str:
    """An op's inputs as `type[dims]`, from its `Input type` and `Input Dims` (record_shapes)."""
    dims = args.get("Input Dims")
    types = args.get("Input type")
    dims = dims if isinstance(dims, list) else []
    types = types if isinstance(types, list) else []
    parts = []
    for k in range(max(len(dims), len(types))):
        kind = str(types[k]) if k < len(types) else ""
        dim = dims[k] if k < len(dims) else []
        text = f"[{','.join(str(d) for d in dim)}]" if isinstance(dim, list) and dim else ""
        if kind or text:
            parts.append(kind + text)
    return ", ".join(parts)


class _Scan:
    """One pass over the events: what the model needs of them, checked."""

    def __init__(self, events: list[Any], path: str) -> None:
        self.path = path
        self.lines: dict[tuple[str, str], int] = {}
        self.memory = _Memory()
        self.ops = _Complete()
        self.calls = _Complete()
        self.steps = _Complete()
        self.step_num: list[int] = []
        self.earliest = math.inf
        self.latest = -math.inf
        self.zero_bytes = 0
        for k, event in enumerate(events):
            if not isinstance(event, dict):
                raise not_readable(path, f"event {k} is {type(event).__name__}, not an object")
            if event.get("ph") == "M" or "ts" not in event:
                continue
            self._event(k, event)

    def _line(self, event: dict[str, Any]) -> int:
        key = (str(event.get("pid", "")), str(event.get("tid", "")))
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = len(self.lines)
        return line

    def _event(self, k: int, event: dict[str, Any]) -> None:
        ts = _number(event["ts"], self.path, f"event {k}'s ts", MAX_TS_US)
        phase = event.get("ph")
        dur = _number(event.get("dur", 0), self.path, f"event {k}'s dur", MAX_US) if phase == "X" else 0.0
        if dur < 0:
            raise not_readable(self.path, f"event {k}'s dur is negative ({dur})")
        self.earliest = min(self.earliest, ts)
        self.latest = max(self.latest, ts + dur)
        name = event.get("name")
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        if name == MEMORY_EVENT and phase in ("i", "I"):
            self._memory(k, ts, event, args)
        elif phase == "X" and isinstance(name, str):
            category = event.get("cat")
            on_host = not (isinstance(category, str) and category.startswith(GPU_CATEGORY_PREFIX))
            if on_host and name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX) :].isdecimal():
                self._complete(self.steps, ts, dur, event, STEP_SPAN)
                self.step_num.append(int(name[len(STEP_PREFIX) :]))
            elif category in OP_CATEGORIES:
                self._complete(self.ops, ts, dur, event, name, _shape(args))
            elif category == PYTHON_CATEGORY:
                frame = _PYTHON_FRAME.fullmatch(name)
                if frame:
                    call = python_call_name(frame.group(1), frame.group(2), frame.group(3))
                    self._complete(self.calls, ts, dur, event, call)

    def _complete(self, into: _Complete, ts: float, dur: float, event: dict[str, Any], name: str, shape: str = "") -> None:
        into.start.append(ts)
        into.end.append(ts + dur)
        into.line.append(self._line(event))
        into.name.append(name)
        into.shape.append(shape)

    def _memory(self, k: int, ts: float, event: dict[str, Any], args: dict[str, Any]) -> None:
        what = f"[memory] event {k}'s"
        nbytes = _integer(args.get("Bytes"), self.path, f"{what} Bytes", MAX_BYTES)
        if nbytes == 0:
            self.zero_bytes += 1
            return
        kind = _integer(args.get("Device Type", CPU_TYPE), self.path, f"{what} Device Type", 1 << 16)
        index = _integer(args.get("Device Id", -1), self.path, f"{what} Device Id", 1 << 16)
        prefix = DEVICE_TYPES.get(kind, f"device_type_{kind}")
        memory = self.memory
        memory.ts.append(ts)
        memory.line.append(self._line(event))
        memory.device.append(prefix if kind == CPU_TYPE else f"{prefix}:{index}")
        memory.nbytes.append(nbytes)
        addr = args.get("Addr")
        if addr is not None and _integer(addr, self.path, f"{what} Addr", (1 << 64) - 1) < 0:
            raise not_readable(self.path, f"{what} Addr is negative ({addr})")
        memory.addr.append(addr)
        total = args.get("Total Allocated")
        memory.allocated.append(None if total is None else _integer(total, self.path, f"{what} Total Allocated", MAX_BYTES))


def _capacities(trace: dict[str, Any]) -> dict[str, int]:
    """Each CUDA device's memory (`deviceProperties`' totalGlobalMem), by allocator name."""
    found: dict[str, int] = {}
    properties = trace.get("deviceProperties")
    for device in properties if isinstance(properties, list) else []:
        if not isinstance(device, dict):
            continue
        ident, total = device.get("id"), device.get("totalGlobalMem")
        if isinstance(ident, int) and isinstance(total, int) and 0 < total < MAX_BYTES:
            found[f"{DEVICE_TYPES[1]}:{ident}"] = total
    return found


def decode(data: bytes, host: str, path: str) -> HostProfile:
    """One trace's bytes (gzipped or not), read from `path`."""
    trace = parse_trace(data, path)
    scan = _Scan(trace["traceEvents"], path)
    if not math.isfinite(scan.earliest):
        raise not_readable(path, "it has no timed events")
    if (scan.latest - scan.earliest) * US_TO_PS >= 1 << 62:
        raise not_readable(path, f"its events span {scan.latest - scan.earliest:g} µs")
    warnings: list[str] = []
    if scan.zero_bytes:
        warnings.append(f"{path}: {scan.zero_bytes} [memory] events of 0 bytes are left out")
    if not scan.memory.ts:
        warnings.append(f"{path}: the trace has no [memory] events (was it recorded with profile_memory=True?)")
    events, synthetic = _events(scan, _capacities(trace))
    if synthetic:
        warnings.append(
            f"{path}: {synthetic} [memory] events carry no address (PyTorch before 1.10): each free is paired with the "
            "most recent unfreed allocation of its size on its device, so the lifetimes of buffers of equal size may "
            "be swapped (the bytes live at each moment are right)"
        )
    steps = _steps(scan)
    return HostProfile(
        host,
        path,
        events,
        steps,
        _ps(scan.latest, scan.earliest),
        warnings=warnings,
        spans=_spans(scan),
        allocators={name: _allocator(name) for name in events.allocator_names},
        step_marker=STEP_SPAN,
    )


def _ps(ts: float, earliest: float) -> int:
    return round((ts - earliest) * US_TO_PS)


def _times(values: Iterable[float], earliest: float) -> np.ndarray:
    return np.rint((np.asarray(list(values), np.float64) - earliest) * US_TO_PS).astype(np.int64)


def _allocator(name: str) -> AllocatorInfo:
    return AllocatorInfo("CPU" if name == DEVICE_TYPES[CPU_TYPE] else name, name == DEVICE_TYPES[CPU_TYPE])


def _innermost(times: np.ndarray, lines: np.ndarray, ops: _Complete, earliest: float) -> np.ndarray:
    """For each event, the index of the innermost op around it on its line (nested events), -1 when none."""
    found = np.full(len(times), -1, np.int64)
    if not ops.start:
        return found
    starts, ends = _times(ops.start, earliest), _times(ops.end, earliest)
    op_lines = np.asarray(ops.line, np.int64)
    for line in np.unique(lines).tolist():
        mine = np.flatnonzero(op_lines == line)
        if not len(mine):
            continue
        mine = mine[np.lexsort((-ends[mine], starts[mine]))]  # by start, the outer of equal starts first
        events = np.flatnonzero(lines == line)
        events = events[np.argsort(times[events], kind="stable")]
        stack: list[int] = []
        next_op = 0
        for event in events.tolist():
            t = times[event]
            while next_op < len(mine) and starts[mine[next_op]] <= t:
                op = int(mine[next_op])
                while stack and ends[stack[-1]] < starts[op]:
                    stack.pop()
                stack.append(op)
                next_op += 1
            while stack and ends[stack[-1]] < t:
                stack.pop()
            if stack:
                found[event] = stack[-1]
    return found


def _events(scan: _Scan, capacities: dict[str, int]) -> tuple[MemoryEvents, int]:
    """The [memory] events sorted by time (ties in file order), and how many got a synthetic address."""
    memory = scan.memory
    n = len(memory.ts)
    times = _times(memory.ts, scan.earliest)
    order = np.argsort(times, kind="stable").tolist()
    columns: dict[str, np.ndarray] = {name: np.zeros(n, dtype) for name, dtype in EVENT_COLUMNS.items()}
    columns["group_id"][:] = -1
    allocator_names = sorted(set(memory.device))
    allocator_of = {name: k for k, name in enumerate(allocator_names)}
    lines = np.asarray(memory.line, np.int64)
    op_at = _innermost(times, lines, scan.ops, scan.earliest)
    strings = [""]
    string_at = {"": 0}

    def intern(text: str) -> int:
        index = string_at.get(text)
        if index is None:
            index = string_at[text] = len(strings)
            strings.append(text)
        return index

    heap: dict[str, int] = {}
    unfreed: dict[tuple[str, int], list[int]] = {}
    next_address = SYNTHETIC_BASE
    synthetic = 0
    for row, k in enumerate(order):
        device, nbytes = memory.device[k], memory.nbytes[k]
        size = abs(nbytes)
        addr = memory.addr[k]
        if addr is None:
            synthetic += 1
            pool = unfreed.setdefault((device, size), [])
            if nbytes < 0 and pool:
                addr = pool.pop()
            else:
                addr = next_address
                next_address += ADDRESS_STRIDE
                if nbytes > 0:
                    pool.append(addr)
        allocated = memory.allocated[k]
        in_use = allocated if allocated is not None else heap.get(device, 0) + nbytes
        heap[device] = in_use
        columns["time_ps"][row] = times[k]
        columns["kind"][row] = ALLOC if nbytes > 0 else FREE
        columns["allocator"][row] = allocator_of[device]
        columns["addr"][row] = addr
        columns["tensor_bytes"][row] = columns["chunk_bytes"][row] = size
        columns["heap_bytes"][row] = in_use
        capacity = capacities.get(device)
        if allocated is not None and capacity is not None:
            columns["free_bytes"][row] = max(0, capacity - allocated)
        columns["line"][row] = memory.line[k]
        op = int(op_at[k])
        if op >= 0:
            columns["op"][row] = intern(scan.ops.name[op])
            columns["shape"][row] = intern(scan.ops.shape[op])
    for a in range(len(allocator_names)):
        mine = columns["allocator"] == a
        columns["allocator_peak_bytes"][mine] = np.maximum.accumulate(columns["heap_bytes"][mine]) if mine.any() else 0
    return MemoryEvents(**columns, strings=strings, allocator_names=allocator_names), synthetic


def _steps(scan: _Scan) -> Steps:
    if not scan.step_num:
        return Steps.empty()
    starts, ends = _times(scan.steps.start, scan.earliest), _times(scan.steps.end, scan.earliest)
    numbers = np.asarray(scan.step_num, np.int64)
    order = np.lexsort((numbers, starts))
    return Steps(numbers[order], starts[order], ends[order])


def _spans(scan: _Scan) -> Spans:
    """The steps as host roots named ProfilerStep, and the Python calls, on their threads' lines."""
    names = [STEP_SPAN, *sorted(set(scan.calls.name))]
    position = {text: k for k, text in enumerate(names)}
    rows = (SPAN_HOST_ROOT, scan.steps), (SPAN_HOST_CALL, scan.calls)
    source = np.concatenate([np.full(len(r.start), s, np.int8) for s, r in rows])
    total = len(source)
    if not total:
        return Spans.empty()
    return spans_from_rows(
        source,
        np.asarray([position[name] for _, r in rows for name in r.name], np.int32),
        names,
        np.full(total, -1, np.int32),
        source == SPAN_HOST_ROOT,
        np.concatenate([_times(r.start, scan.earliest) for _, r in rows]),
        np.concatenate([_times(r.end, scan.earliest) for _, r in rows]),
        np.asarray([line for _, r in rows for line in r.line], np.int32),
    )
