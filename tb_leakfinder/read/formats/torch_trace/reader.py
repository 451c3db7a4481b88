"""Reading one PyTorch profiler trace (Kineto's Chrome trace JSON, gzipped or not) into the model.

A trace is `{"traceEvents": [...]}`. Its `[memory]` instant events (`ph: "i"`) carry `args.Bytes`, positive
on allocation and negative on free, `Device Type` (0 CPU, 1 CUDA, 6 HIP) and `Device Id`; newer ones add
`Addr`, `Total Allocated` and `Total Reserved`. Each device is an allocator ("cpu", "cuda:0", "hip:0").
An event with `Addr` is paired by (device, address), as the model pairs; one without (PyTorch 1.9) gets a
synthetic address: a free takes that of the most recent unfreed allocation of its size on its device (LIFO
by size), which the profile's warnings say. `heap_bytes` is `Total Allocated` when the event has it, else the
device's running sum of the window's bytes (raised so that it never goes below zero: the frees of buffers
allocated before the trace began were live then); `free_bytes` is the device's `totalGlobalMem`
(`deviceProperties`) less `Total Allocated` when both are known, else 0.

`ProfilerStep#N` complete events (`ph: "X"`) are the steps, and host root spans named `ProfilerStep` too.
An allocation's op is the innermost `cpu_op` (or `Operator`) event around it on its thread (pid, tid) that
computes, its shape the op's `Input type` and `Input Dims`: an allocation primitive (`aten::empty`,
`aten::empty_strided`, `aten::empty_like`, `aten::new_empty...`) inside another op allocates that op's output
(`aten::clone`, `aten::_to_copy`, `aten::zeros_like`), so the enclosing op names it. `python_function` events
named `file.py(line): func` are host calls `$file.py:line func` on their thread, and those named
`nn.Module: <Class>_<k>` host calls `$class <Class>` (the module whose forward runs inside); others of theirs
(built-ins) are left out.
Each (pid, tid) is a line, numbered in order of first appearance. `ts` and `dur` are µs; times are ps from
the trace's earliest event, the duration to its latest end. The capture's start is `baseTimeNanoseconds`
(the epoch time in ns Kineto's `ts` count from) plus the earliest `ts`; unknown when the trace has none.

The file is read as a stream by `stream.py` (the JSON tokenizer: gunzip, a window of text, the top-level object);
this module is the Kineto decoding. `traceEvents` is streamed into compact columns (`array`s, strings stored
once): runs of events read at once (`chunks.py`) by the compiled scanner (`_kineto_scan.c`) where it is built,
else by msgspec where it is installed, and any run neither takes, or every event without msgspec, one at a time
(`_Scan.add`, from the json module's objects). Of the other top-level values only `deviceProperties` and
`baseTimeNanoseconds` are kept.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    module_call_name,
    python_call_name,
)
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.common.interning import Interned
from tb_leakfinder.read.formats.common.rows import spans_from_rows
from tb_leakfinder.read.formats.torch_trace import stream
from tb_leakfinder.read.formats.torch_trace.stream import Counted, not_readable, parse_trace

MEMORY_EVENT = "[memory]"
# The top-level values the model needs; the others (metadata, versions, distributed info) are parsed and dropped.
KEPT_KEYS = ("deviceProperties", "baseTimeNanoseconds")
OP_CATEGORIES = ("cpu_op", "Operator")
# Ops that only allocate, for the op around them: `.clone()` allocates through empty_like or empty_strided.
ALLOCATION_PRIMITIVES = frozenset(
    ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided")
)
PYTHON_CATEGORY = "python_function"
STEP_PREFIX = "ProfilerStep#"
STEP_SPAN = "ProfilerStep"
# Kineto names reduced-precision dtypes by their C++ type (`c10::BFloat16`, `c10::Half`).
C10_PREFIX = "c10::"
MAX_STEP_DIGITS = 18  # a step number fits the model's int64
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
US_TO_NS = 1_000
# An absent `Total Allocated`: outside ±MAX_BYTES, so no real total is mistaken for it.
NO_TOTAL = -(1 << 62)
# A line number of more digits is no line: the analysis reads it as an int.
_PYTHON_FRAME = re.compile(r"(.+)\((\d{1,9})\): (.+)")
# Kineto's event for a module's call: its class and the module's index among that class's ("Linear_3").
_MODULE_CALL = re.compile(r"nn\.Module: ([A-Za-z_][A-Za-z0-9_]*?)(?:_\d+)?")
# An event's op is found this many steps down its line's stack at once for all events; deeper, one event at a time.
MAX_STACK_STEPS = 16
# Off, every event is decoded by the json module and checked one at a time: the reader without msgspec.
CHUNKED = True


def read_host(path: str, host: str) -> HostProfile:
    """One trace file into the model, read as a stream; raises LeakfinderError naming the file."""
    return decode(files.read_blocks(path, limit=stream.MAX_TRACE_BYTES), host, path)


def _number(value: Any, limit: float, path: str, what: str, k: int) -> float:
    """`value` when it is a finite number within ±`limit`; else the error naming `what` (formatted with `k`)."""
    if type(value) is float and -limit <= value <= limit:  # the common case first: most events are fine
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > limit:
        raise not_readable(path, f"{what.format(k)} is {value!r}, not a number within ±{limit:g}")
    return value


def _integer(value: Any, limit: int, path: str, what: str, k: int) -> int:
    """`value` when it is an integer within ±`limit`; else the error naming `what` (formatted with `k`)."""
    if type(value) is not int or not -limit <= value <= limit:
        raise not_readable(path, f"{what.format(k)} is {value!r}, not an integer within ±{limit}")
    return value


@dataclass
class _Memory:
    """The [memory] events in file order, in compact columns: a trace of millions holds no Python number per event."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    line: array[int] = field(default_factory=lambda: array("q"))
    device: array[int] = field(default_factory=lambda: array("q"))  # an index into `devices`
    nbytes: array[int] = field(default_factory=lambda: array("q"))
    addr: array[int] = field(default_factory=lambda: array("Q"))
    has_addr: bytearray = field(default_factory=bytearray)
    allocated: array[int] = field(default_factory=lambda: array("q"))  # NO_TOTAL when absent
    devices: Interned = field(default_factory=Interned)


@dataclass
class _Complete:
    """Complete events of one kind: start and end in µs, thread line, name and shape (indexes into `strings`)."""

    start: array[float] = field(default_factory=lambda: array("d"))
    end: array[float] = field(default_factory=lambda: array("d"))
    line: array[int] = field(default_factory=lambda: array("q"))
    name: array[int] = field(default_factory=lambda: array("q"))
    shape: array[int] = field(default_factory=lambda: array("q"))
    strings: Interned = field(default_factory=Interned)


def _dims(dims: list[Any]) -> str:
    return f"[{','.join(str(d) for d in dims)}]"


def _shape(args: dict[str, Any]) -> str:
    """An op's tensor inputs as `dtype[dims]` (a tensor list as `TensorList[[dims],[dims]]`), from its `Input type`
    and `Input Dims` (record_shapes). Scalars, sizes and flags (`Scalar`, `double`, `GenericList`, `Int`, `Bool`,
    whose dims are empty) are left out: they would make one op's family a new one for every argument it was given."""
    dims = args.get("Input Dims")
    types = args.get("Input type")
    dims = dims if isinstance(dims, list) else []
    types = types if isinstance(types, list) else []
    parts = []
    for k, dim in enumerate(dims):
        if not isinstance(dim, list) or not dim:
            continue
        kind = str(types[k]) if k < len(types) else ""
        if all(isinstance(d, list) for d in dim):
            parts.append(f"{kind}[{','.join(_dims(d) for d in dim)}]")
        else:
            parts.append(kind.removeprefix(C10_PREFIX) + _dims(dim))
    return ", ".join(parts)


# The events are counted against the file's bytes once every this many.
_EVENT_CHECK_EVERY = 1 << 16


class _Scan:
    """One pass over the events as they stream in (`add`): what the model needs of them, checked."""

    def __init__(self, path: str, read: Counted) -> None:
        self.path = path
        self.read = read
        self.lines: dict[tuple[str, str], int] = {}
        self.memory = _Memory()
        self.ops = _Complete()
        self.calls = _Complete()
        self.steps = _Complete()
        self.step_num = array("q")
        self.earliest = math.inf
        self.latest = -math.inf
        self.zero_bytes = 0

    def add(self, k: int, event: Any) -> None:
        if not k % _EVENT_CHECK_EVERY:
            limits.check_events(k, self.read.bytes, self.path, not_readable)
        if not isinstance(event, dict):
            raise not_readable(self.path, f"event {k} is {type(event).__name__}, not an object")
        if event.get("ph") != "M" and "ts" in event:
            self._event(k, event)

    def _line(self, event: dict[str, Any]) -> int:
        key = (str(event.get("pid", "")), str(event.get("tid", "")))
        line = self.lines.get(key)
        if line is None:
            limits.check_lines(len(self.lines) + 1, self.path, not_readable)
            line = self.lines[key] = len(self.lines)
        return line

    def _event(self, k: int, event: dict[str, Any]) -> None:
        ts = _number(event["ts"], MAX_TS_US, self.path, "event {}'s ts", k)
        phase = event.get("ph")
        dur = _number(event.get("dur", 0), MAX_US, self.path, "event {}'s dur", k) if phase == "X" else 0.0
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
            if on_host and name.startswith(STEP_PREFIX) and (digits := name[len(STEP_PREFIX) :]).isdecimal():
                if len(digits) > MAX_STEP_DIGITS:
                    raise not_readable(self.path, f"event {k}'s step number {digits[:40]}... is out of range")
                self._complete(self.steps, ts, dur, event, STEP_SPAN)
                self.step_num.append(int(digits))
            elif category in OP_CATEGORIES:
                self._complete(self.ops, ts, dur, event, name, _shape(args))
            elif category == PYTHON_CATEGORY:
                frame = _PYTHON_FRAME.fullmatch(name)
                module = _MODULE_CALL.fullmatch(name)
                if frame:
                    call = python_call_name(frame.group(1), frame.group(2), frame.group(3))
                    self._complete(self.calls, ts, dur, event, call)
                elif module:
                    self._complete(self.calls, ts, dur, event, module_call_name(module.group(1)))

    def _complete(self, into: _Complete, ts: float, dur: float, event: dict[str, Any], name: str, shape: str = "") -> None:
        into.start.append(ts)
        into.end.append(ts + dur)
        into.line.append(self._line(event))
        into.name.append(into.strings(name))
        into.shape.append(into.strings(shape))

    def _memory(self, k: int, ts: float, event: dict[str, Any], args: dict[str, Any]) -> None:
        nbytes = _integer(args.get("Bytes"), MAX_BYTES, self.path, "[memory] event {}'s Bytes", k)
        if nbytes == 0:
            self.zero_bytes += 1
            return
        kind = _integer(args.get("Device Type", CPU_TYPE), 1 << 16, self.path, "[memory] event {}'s Device Type", k)
        index = _integer(args.get("Device Id", -1), 1 << 16, self.path, "[memory] event {}'s Device Id", k)
        addr = args.get("Addr")
        if addr is not None and _integer(addr, (1 << 64) - 1, self.path, "[memory] event {}'s Addr", k) < 0:
            raise not_readable(self.path, f"[memory] event {k}'s Addr is negative ({addr})")
        total = args.get("Total Allocated")
        what = "[memory] event {}'s Total Allocated"
        allocated = NO_TOTAL if total is None else _integer(total, MAX_BYTES, self.path, what, k)
        prefix = DEVICE_TYPES.get(kind, f"device_type_{kind}")
        memory = self.memory
        memory.ts.append(ts)
        memory.line.append(self._line(event))
        memory.device.append(memory.devices(prefix if kind == CPU_TYPE else f"{prefix}:{index}"))
        limits.check_allocators(len(memory.devices.values), self.path, not_readable)
        memory.nbytes.append(nbytes)
        memory.addr.append(0 if addr is None else addr)
        memory.has_addr.append(addr is not None)
        memory.allocated.append(allocated)


def _capacities(properties: Any) -> dict[str, int]:
    """Each CUDA device's memory (`deviceProperties`' totalGlobalMem), by allocator name."""
    found: dict[str, int] = {}
    for device in properties if isinstance(properties, list) else []:
        if not isinstance(device, dict):
            continue
        ident, total = device.get("id"), device.get("totalGlobalMem")
        if isinstance(ident, int) and isinstance(total, int) and 0 < total < MAX_BYTES:
            found[f"{DEVICE_TYPES[1]}:{ident}"] = total
    return found


def _start_time_ns(base: Any, earliest: float, path: str, warnings: list[str]) -> int | None:
    """When the earliest event happened, in ns since the epoch: Kineto's `ts` count µs from `baseTimeNanoseconds`."""
    if base is None:
        return None
    if isinstance(base, bool) or not isinstance(base, int) or not 0 <= base < 1 << 62:
        warnings.append(f"{path}: its baseTimeNanoseconds is {base!r}, not a time in ns: the capture's start is unknown")
        return None
    start = base + round(earliest * US_TO_NS)
    return start if 0 <= start < 1 << 63 else None


def _chunk_reader(scan: _Scan) -> Callable[[str, int, int], int] | None:
    """What takes runs of events at once (`chunks.py`: the window's text and a run's bounds in it), or None without
    msgspec or with CHUNKED off: every event then goes through `_Scan.add`."""
    if not CHUNKED:
        return None
    try:
        from tb_leakfinder.read.formats.torch_trace.chunks import Chunks
    except ImportError:  # msgspec is not installed: the pure-Python reader
        return None
    return Chunks(scan).take


def decode(blocks: Iterable[bytes], host: str, path: str) -> HostProfile:
    """One trace's bytes (gzipped or not, in blocks as they are read), read from `path`."""
    counted = Counted(blocks)
    scan = _Scan(path, counted)
    top = parse_trace(counted, path, KEPT_KEYS, scan.add, _chunk_reader(scan))
    if not math.isfinite(scan.earliest):
        raise not_readable(path, "it has no timed events")
    if (scan.latest - scan.earliest) * US_TO_PS >= 1 << 62:
        raise not_readable(path, f"its events span {scan.latest - scan.earliest:g} µs")
    warnings: list[str] = []
    if scan.zero_bytes:
        warnings.append(f"{path}: {scan.zero_bytes} [memory] events of 0 bytes are left out")
    if not scan.memory.ts:
        warnings.append(f"{path}: the trace has no [memory] events (was it recorded with profile_memory=True?)")
    events, synthetic = _events(scan, _capacities(top.get("deviceProperties")))
    if synthetic:
        warnings.append(
            f"{path}: {synthetic} [memory] events carry no address (PyTorch before 1.10): each free is paired with the "
            "most recent unfreed allocation of its size on its device, so the lifetimes of buffers of equal size may "
            "be swapped (the bytes live at each moment are right)"
        )
    start_time_ns = _start_time_ns(top.get("baseTimeNanoseconds"), scan.earliest, path, warnings)
    return HostProfile(
        host,
        path,
        events,
        _steps(scan),
        _ps(scan.latest, scan.earliest),
        warnings=warnings,
        spans=_spans(scan),
        allocators={name: _allocator(name, name in _unaddressed(scan.memory)) for name in events.allocator_names},
        step_marker=STEP_SPAN,
        start_time_ns=start_time_ns,
    )


def _ps(ts: float, earliest: float) -> int:
    return round((ts - earliest) * US_TO_PS)


def _times(values: array[float], earliest: float) -> np.ndarray:
    return np.rint((np.frombuffer(values, np.float64) - earliest) * US_TO_PS).astype(np.int64)


def _allocator(name: str, unaddressed: bool) -> AllocatorInfo:
    guess = "its frees are paired with allocations by size, having no address" if unaddressed else None
    return AllocatorInfo("CPU" if name == DEVICE_TYPES[CPU_TYPE] else name, name == DEVICE_TYPES[CPU_TYPE], guessed_pairs=guess)


def _unaddressed(memory: _Memory) -> set[str]:
    """The devices some of whose [memory] events carry no address."""
    devices = np.frombuffer(memory.device, np.int64)[np.frombuffer(memory.has_addr, np.uint8) == 0]
    return {memory.devices.values[d] for d in np.unique(devices).tolist()}


def _innermost(times: np.ndarray, lines: np.ndarray, ops: _Complete, earliest: float) -> np.ndarray:
    """For each event, the index of the innermost op around it on its line (nested events) that is no allocation
    primitive, else the innermost op (a primitive called on its own); -1 when none.

    The ops of a line are taken by start, the outer of equal starts first, onto a stack that drops each op ended
    before the next one starts (`_op_stacks`): an event's op is then the last op started by its time, or the first
    below it on the stack, going down, that has not ended by then."""
    found = np.full(len(times), -1, np.int64)
    if not ops.start or not len(times):
        return found
    primitive = np.asarray([name in ALLOCATION_PRIMITIVES for name in ops.strings.values], bool)
    starts, ends = _times(ops.start, earliest), _times(ops.end, earliest)
    op_lines = np.frombuffer(ops.line, np.int64)
    # Sorted by line once, each line's ops and events are a slice: by start, the outer of equal starts first; by time.
    order = np.lexsort((-ends, starts, op_lines))
    starts, ends, op_lines = starts[order], ends[order], op_lines[order]
    below, computing = _op_stacks(starts, ends, op_lines, primitive[np.frombuffer(ops.name, np.int64)[order]])
    event_order = np.lexsort((times, lines))
    unique = np.unique(lines)
    op_bounds = np.searchsorted(op_lines, unique, "left"), np.searchsorted(op_lines, unique, "right")
    event_bounds = np.searchsorted(lines[event_order], unique, "left"), np.searchsorted(lines[event_order], unique, "right")
    op = np.full(len(times), -1, np.int64)  # the op on top of the stack at each event, in sorted order
    for line in range(len(unique)):
        first, last = op_bounds[0][line], op_bounds[1][line]
        if first < last:
            events = event_order[event_bounds[0][line] : event_bounds[1][line]]
            op[events] = first + np.searchsorted(starts[first:last], times[events], "right") - 1
            op[events[op[events] < first]] = -1
    live = np.flatnonzero(op >= 0)
    for _ in range(MAX_STACK_STEPS):
        live = live[ends[op[live]] < times[live]]
        if not len(live):
            break
        op[live] = below[op[live]]
        live = live[op[live] >= 0]
    else:
        _down_the_stacks(op, live[np.lexsort((times[live], lines[live]))], times, ends, below)
    on_stack = op >= 0
    found[on_stack] = order[computing[op[on_stack]]]
    return found


def _op_stacks(starts: np.ndarray, ends: np.ndarray, lines: np.ndarray, primitive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ops sorted by line and start, the op below each on its line's stack when it is pushed (-1 for none), and
    the op that names its allocations: its own, or for a primitive inside a computing op, that op's.

    A stack that pops each op ended before the next one starts leaves on top the last op before it on its line
    that has not ended by its start: the ops after that one ended earlier and were popped, and it was never popped,
    the starts coming in order. So each op's is found by pointer jumping, for all ops at once: a candidate that
    has ended is replaced by its own candidate, which skips only ops that had ended before the candidate's start.
    The computing op likewise: a primitive's is the first op that computes down its chain of primitives."""
    n = len(starts)
    below = np.arange(-1, n - 1, dtype=np.int64)
    below[np.flatnonzero(np.diff(lines, prepend=lines[:1] - 1))] = -1  # an op that starts its line has none below
    pending = np.flatnonzero(below >= 0)
    while len(pending):
        pending = pending[ends[below[pending]] < starts[pending]]
        below[pending] = below[below[pending]]
        pending = pending[below[pending] >= 0]
    # A primitive's computing op is its parent's, once some op around it computes.
    computing = np.where(primitive, below, -1)
    pending = np.flatnonzero(computing >= 0)
    while len(pending):
        pending = pending[primitive[computing[pending]]]
        computing[pending] = computing[computing[pending]]
        pending = pending[computing[pending] >= 0]
    own = computing < 0
    computing[own] = np.flatnonzero(own)
    return below, computing


def _down_the_stacks(op: np.ndarray, events: np.ndarray, times: np.ndarray, ends: np.ndarray, below: np.ndarray) -> None:
    """Walks the events left on an ended op (in order of line and time) down their stacks one at a time. The ops
    passed over have ended for every later event of the line too: each then points past them, so deep stacks are
    walked once, not once per event."""
    below = below.copy()
    for event in events.tolist():
        t, passed = times[event], []
        k = int(op[event])
        while k >= 0 and ends[k] < t:
            passed.append(k)
            k = int(below[k])
        below[passed] = k
        op[event] = k


def _events(scan: _Scan, capacities: dict[str, int]) -> tuple[MemoryEvents, int]:
    """The [memory] events sorted by time (ties in file order), and how many got a synthetic address."""
    memory = scan.memory
    n = len(memory.ts)
    times = _times(memory.ts, scan.earliest)
    order = np.argsort(times, kind="stable")
    columns: dict[str, np.ndarray] = {name: np.zeros(n, dtype) for name, dtype in EVENT_COLUMNS.items()}
    columns["group_id"][:] = -1
    devices = memory.devices.values
    allocator_names = sorted(devices)
    position = {name: k for k, name in enumerate(allocator_names)}
    allocator_of = np.asarray([position[name] for name in devices], np.int64)
    lines = np.frombuffer(memory.line, np.int64)
    nbytes = np.frombuffer(memory.nbytes, np.int64)
    device = np.frombuffer(memory.device, np.int64)
    allocated = np.frombuffer(memory.allocated, np.int64)
    addr, synthetic = _addresses(memory, order)
    heap = _heap_bytes(device[order], nbytes[order], allocated[order], scan.path)
    sorted_allocated = allocated[order]
    columns["time_ps"][:] = times[order]
    columns["kind"][:] = np.where(nbytes[order] > 0, ALLOC, FREE)
    columns["allocator"][:] = allocator_of[device[order]] if n else 0
    columns["addr"][:] = addr
    columns["requested_bytes"][:] = columns["chunk_bytes"][:] = np.abs(nbytes[order])
    columns["heap_bytes"][:] = heap
    capacity = np.asarray([capacities.get(name, -1) for name in devices], np.int64)[device[order]] if n else np.zeros(0, np.int64)
    known = (sorted_allocated != NO_TOTAL) & (capacity >= 0)
    columns["free_bytes"][known] = np.maximum(0, capacity[known] - sorted_allocated[known])
    columns["line"][:] = lines[order]
    op_at = _innermost(times, lines, scan.ops, scan.earliest)[order]
    in_op = op_at >= 0
    # The ops' names and shapes go into the profile's table in the order the events first name them.
    pairs = np.stack([np.frombuffer(column, np.int64)[op_at[in_op]] for column in (scan.ops.name, scan.ops.shape)], 1)
    strings = [""]
    mapping = np.zeros(len(scan.ops.strings.values), np.int64)
    distinct, first = np.unique(pairs.ravel(), return_index=True)
    for index in distinct[np.argsort(first)].tolist():
        text = scan.ops.strings.values[index]
        if text:
            mapping[index] = len(strings)
            strings.append(text)
    columns["op"][in_op] = mapping[pairs[:, 0]]
    columns["shape"][in_op] = mapping[pairs[:, 1]]
    for a in range(len(allocator_names)):
        mine = columns["allocator"] == a
        columns["allocator_peak_bytes"][mine] = np.maximum.accumulate(columns["heap_bytes"][mine]) if mine.any() else 0
    return MemoryEvents(**columns, strings=strings, allocator_names=allocator_names), synthetic


def _addresses(memory: _Memory, order: np.ndarray) -> tuple[np.ndarray, int]:
    """Each event's address in time order, a synthetic one where it has none, and how many have none."""
    addr = np.frombuffer(memory.addr, np.uint64)[order]
    rows = np.flatnonzero(np.frombuffer(memory.has_addr, np.uint8)[order] == 0)
    devices = np.frombuffer(memory.device, np.int64)[order][rows].tolist()
    sizes = np.frombuffer(memory.nbytes, np.int64)[order][rows].tolist()
    unfreed: dict[tuple[int, int], list[int]] = {}
    next_address = SYNTHETIC_BASE
    for row, device, nbytes in zip(rows.tolist(), devices, sizes, strict=True):
        pool = unfreed.setdefault((device, abs(nbytes)), [])
        if nbytes < 0 and pool:
            addr[row] = pool.pop()
            continue
        addr[row] = next_address
        if nbytes > 0:
            pool.append(next_address)
        next_address += ADDRESS_STRIDE
    return addr, len(rows)


def _heap_bytes(device: np.ndarray, nbytes: np.ndarray, allocated: np.ndarray, path: str) -> np.ndarray:
    """Each event's bytes in use on its device (events in time order): its `Total Allocated`, else the last one's
    plus the bytes allocated since, else the device's running sum of the window's bytes."""
    heap = np.zeros(len(nbytes), np.int64)
    for d in np.unique(device).tolist():
        mine = np.flatnonzero(device == d)
        if float(np.abs(nbytes[mine]).astype(np.float64).sum()) >= 1 << 62:
            raise not_readable(path, "its [memory] events add up to more than 2^62 bytes")
        total, summed = allocated[mine], np.cumsum(nbytes[mine])
        given = total != NO_TOTAL
        last = np.maximum.accumulate(np.where(given, np.arange(len(mine)), -1))
        anchored = last >= 0
        in_use = summed.copy()
        in_use[anchored] += (total - summed)[last[anchored]]
        # Before any total, the sum counts from an unknown start: frees of buffers allocated before the trace would
        # take it below zero. The heap held at least those bytes when the window opened, so it starts that much higher.
        floor = int(in_use[~anchored].min()) if not anchored.all() else 0
        in_use[~anchored] -= min(floor, 0)
        heap[mine] = in_use
    return heap


def _steps(scan: _Scan) -> Steps:
    if not scan.step_num:
        return Steps.empty()
    starts, ends = _times(scan.steps.start, scan.earliest), _times(scan.steps.end, scan.earliest)
    numbers = np.asarray(scan.step_num, np.int64)
    order = np.lexsort((numbers, starts))
    return Steps(numbers[order], starts[order], ends[order])


def _spans(scan: _Scan) -> Spans:
    """The steps as host roots named ProfilerStep, and the Python calls, on their threads' lines."""
    calls = scan.calls
    call_names = np.frombuffer(calls.name, np.int64)
    used = np.unique(call_names)
    names = [STEP_SPAN, *sorted(calls.strings.values[i] for i in used.tolist())]
    where = {name: k for k, name in enumerate(names)}
    position = np.zeros(len(calls.strings.values), np.int32)
    position[used] = [where[calls.strings.values[i]] for i in used.tolist()]
    rows = (SPAN_HOST_ROOT, scan.steps), (SPAN_HOST_CALL, calls)
    source = np.concatenate([np.full(len(r.start), s, np.int8) for s, r in rows])
    total = len(source)
    if not total:
        return Spans.empty()
    return spans_from_rows(
        source,
        np.concatenate([np.zeros(len(scan.steps.start), np.int32), position[call_names]]),
        names,
        np.full(total, -1, np.int32),
        source == SPAN_HOST_ROOT,
        np.concatenate([_times(r.start, scan.earliest) for _, r in rows]),
        np.concatenate([_times(r.end, scan.earliest) for _, r in rows]),
        np.concatenate([np.frombuffer(r.line, np.int64) for _, r in rows]).astype(np.int32),
    )
