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
(built-ins) are left out. The capture helper's marks (`cpu_op` or `user_annotation`) named
`tb_leakfinder line file.py(line): func` (the line that called a torch op, which `python_function` events do not
record) are host calls `@file.py:line func`, not ops.
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
from itertools import pairwise
from typing import Any

import numpy as np

from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    LIMIT_DEVICE,
    LINE_MARK_PREFIX,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    AllocatorInfo,
    HostProfile,
    MemoryEvents,
    Spans,
    Steps,
    line_call_name,
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
# The capture helper's mark of the line that called a torch op (model/memory.LINE_MARK_PREFIX): a record_function.
ANNOTATION_CATEGORY = "user_annotation"
_LINE_MARK = re.compile(re.escape(LINE_MARK_PREFIX) + r"(.+)\((\d{1,9})\): (.+)")


def call_name(category: object, name: str) -> str | None:
    """The host call name of a complete event that is one: a Python function (`python_function` named
    `file.py(line): func`), a module's call (`nn.Module: <Class>_<k>`), or the capture helper's line mark; else None
    (built-ins, other annotations)."""
    if category == PYTHON_CATEGORY:
        if frame := _PYTHON_FRAME.fullmatch(name):
            return python_call_name(frame.group(1), frame.group(2), frame.group(3))
        if module := _MODULE_CALL.fullmatch(name):
            return module_call_name(module.group(1))
    # PyTorch's C record_function (what the capture helper uses) writes its mark as a cpu_op, the Python one as a
    # user_annotation; the prefix is tested first, so that an op's name costs no regex.
    elif (
        name.startswith(LINE_MARK_PREFIX)
        and (category == ANNOTATION_CATEGORY or category in OP_CATEGORIES)
        and (mark := _LINE_MARK.fullmatch(name))
    ):
        return line_call_name(mark.group(1), mark.group(2), mark.group(3))
    return None


# An event's op is found this many steps down its line's stack at once for all events; deeper, one event at a time.
MAX_STACK_STEPS = 16
# A line of this many ops or more has its ops after all earlier ones on it found at once (`_op_stacks`).
LONG_LINE = 64
# Up to this many devices, the columns of events that all carry their total are made a pass per device (with
# more, gathering each device's events costs less: 16 ms against 40 ms for 434k events on eight).
FEW_DEVICES = 3
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
            elif (call := call_name(category, name)) is not None:
                self._complete(self.calls, ts, dur, event, call)
            elif category in OP_CATEGORIES:
                self._complete(self.ops, ts, dur, event, name, _shape(args))

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
    unaddressed = _unaddressed(scan.memory) if synthetic else set()
    start_time_ns = _start_time_ns(top.get("baseTimeNanoseconds"), scan.earliest, path, warnings)
    return HostProfile(
        host,
        path,
        events,
        _steps(scan),
        _ps(scan.latest, scan.earliest),
        warnings=warnings,
        spans=_spans(scan),
        allocators={name: _allocator(name, name in unaddressed) for name in events.allocator_names},
        step_marker=STEP_SPAN,
        start_time_ns=start_time_ns,
    )


def _ps(ts: float, earliest: float) -> int:
    return round((ts - earliest) * US_TO_PS)


def _times(values: array[float], earliest: float) -> np.ndarray:
    # In place: a fresh array costs its page faults, here more than the arithmetic.
    ps = np.frombuffer(values, np.float64) - earliest
    ps *= US_TO_PS
    return np.rint(ps, out=ps).astype(np.int64)


def _allocator(name: str, unaddressed: bool) -> AllocatorInfo:
    guess = "its frees are paired with allocations by size, having no address" if unaddressed else None
    cpu = name == DEVICE_TYPES[CPU_TYPE]
    # PyTorch's CPU allocator counts a buffer only when it is made while a profiler records memory, and takes it
    # off only when it is freed while one does; a CUDA device's Total Allocated is its allocator's own count.
    # A device's free bytes are its totalGlobalMem less Total Allocated (see `_events`): the device's memory.
    return AllocatorInfo("CPU" if cpu else name, cpu, guessed_pairs=guess, profiled_heap=cpu, free_bytes_of=LIMIT_DEVICE)


def _unaddressed(memory: _Memory) -> set[str]:
    """The devices some of whose [memory] events carry no address."""
    devices = np.frombuffer(memory.device, np.int64)[np.frombuffer(memory.has_addr, np.uint8) == 0]
    return {memory.devices.values[d] for d in np.flatnonzero(np.bincount(devices)).tolist()}


def _innermost(times: np.ndarray, lines: np.ndarray, ops: _Complete, earliest: float) -> np.ndarray:
    """For each event (in time order), the index of the innermost op around it on its line (nested events) that is
    no allocation primitive, else the innermost op (a primitive called on its own); -1 when none.

    The ops of a line are taken by start, the outer of equal starts first, onto a stack that drops each op ended
    before the next one starts (`_op_stacks`): an event's op is then the last op started by its time, or the first
    below it on the stack, going down, that has not ended by then."""
    if not len(ops.start) or not len(times):
        return np.full(len(times), -1, np.int64)
    primitive = np.asarray([name in ALLOCATION_PRIMITIVES for name in ops.strings.values], bool)
    starts, ends = _times(ops.start, earliest), _times(ops.end, earliest)
    op_lines = np.frombuffer(ops.line, np.int64)
    # Sorted by line once, each line's ops are a slice: by start, the outer of equal starts first.
    order = np.lexsort((-ends, starts, op_lines))
    starts, ends, op_lines = starts[order], ends[order], op_lines[order]
    below, computing = _op_stacks(starts, ends, op_lines, primitive[np.frombuffer(ops.name, np.int64)[order]])
    op = _last_started(times, lines, starts, op_lines)
    # The events on an op that has ended, every event looked at once (one in no op, -1, reads the last op's end).
    live = np.flatnonzero((ends[op] < times) & (op >= 0))
    for _ in range(MAX_STACK_STEPS):
        if not len(live):
            break
        op[live] = below[op[live]]
        live = live[op[live] >= 0]
        live = live[ends[op[live]] < times[live]]
    else:
        _down_the_stacks(op, live[np.lexsort((times[live], lines[live]))], times, ends, below)
    found: np.ndarray = order[computing[op]]  # an event in no op (-1) reads the last op here, and is given -1 again
    found[op < 0] = -1
    return found


def _last_started(times: np.ndarray, lines: np.ndarray, starts: np.ndarray, op_lines: np.ndarray) -> np.ndarray:
    """For each event (in time order), the last op started by its time on its line, -1 for none (ops sorted by line
    and start)."""
    if lines[0] == lines[-1] and bool((lines == lines[0]).all()):  # the events of one thread: all of them at once
        groups: list[tuple[np.ndarray | None, int]] = [(None, int(lines[0]))]
    else:
        # A stable sort of the lines (16-bit: a radix sort) keeps each line's events in time order.
        event_order = np.argsort(lines.astype(np.uint16) if int(lines.max()) < 1 << 16 else lines, kind="stable")
        cuts = np.flatnonzero(np.diff(lines[event_order])) + 1
        bounds = [0, *cuts.tolist(), len(times)]
        groups = [(event_order[a:b], int(lines[event_order[a]])) for a, b in pairwise(bounds)]
    op = np.full(len(times), -1, np.int64)
    for events, line in groups:
        first, last = int(np.searchsorted(op_lines, line, "left")), int(np.searchsorted(op_lines, line, "right"))
        if first == last:
            continue
        at = np.searchsorted(starts[first:last], times if events is None else times[events], "right")
        at += first - 1
        at[at < first] = -1
        if events is None:
            return at
        op[events] = at
    return op


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
    first_of_line = np.flatnonzero(np.diff(lines, prepend=lines[:1] - 1))
    below[first_of_line] = -1  # an op that starts its line has none below
    # Nor has an op that starts after every earlier op of its line has ended: found at once from the line's latest
    # end so far, where pointer jumping would take a round per doubling of its chain (ops one after another).
    edges = np.append(first_of_line, n).tolist()
    for first, last in pairwise(edges):
        if last - first >= LONG_LINE:
            below[first + 1 : last][np.maximum.accumulate(ends[first : last - 1]) < starts[first + 1 : last]] = -1
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
    # Events mostly come in time order: then every column is taken as it is, not gathered into a new array.
    order = None if bool((times[1:] >= times[:-1]).all()) else np.argsort(times, kind="stable")
    times = _in_order(times, order)
    lines = _in_order(np.frombuffer(memory.line, np.int64), order)
    nbytes = _in_order(np.frombuffer(memory.nbytes, np.int64), order)
    device = _in_order(np.frombuffer(memory.device, np.int64), order)
    allocated = _in_order(np.frombuffer(memory.allocated, np.int64), order)
    devices = memory.devices.values
    allocator_names = sorted(devices)
    position = {name: k for k, name in enumerate(allocator_names)}
    allocator_of = np.asarray([position[name] for name in devices], np.int32)
    capacity = [capacities.get(name, -1) for name in devices]
    heap, peak, free = _device_columns(device, nbytes, allocated, capacity, scan.path)
    addr, synthetic = _addresses(memory, order)
    size = np.abs(nbytes)
    columns: dict[str, np.ndarray] = {
        "time_ps": times,
        "kind": np.where(nbytes > 0, np.int8(ALLOC), np.int8(FREE)),
        "allocator": allocator_of[device] if len(devices) > 1 else np.zeros(n, np.int32),
        "addr": addr,
        "requested_bytes": size,
        "chunk_bytes": size.copy(),
        "heap_bytes": heap,
        "free_bytes": free,
        "allocator_peak_bytes": peak,
        "group_id": np.full(n, -1, np.int64),
        "line": lines.astype(np.int32),
    }
    columns["op"], columns["shape"], strings = _op_columns(times, lines, scan.ops, scan.earliest)
    for name, dtype in EVENT_COLUMNS.items():
        if name not in columns:
            columns[name] = np.zeros(n, dtype)
    return MemoryEvents(**columns, strings=strings, allocator_names=allocator_names), synthetic


def _in_order(values: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    return values if order is None else values[order]


def _device_columns(
    device: np.ndarray, nbytes: np.ndarray, allocated: np.ndarray, capacity: list[int], path: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each event's bytes in use on its device (events in time order), the most in use on it so far, and its free
    bytes: its capacity less its `Total Allocated` when both are known, else 0."""
    n = len(nbytes)
    # No device's bytes can add up to 2^62 when the largest event's times their count is well below it.
    check_sum = n > 0 and max(int(nbytes.max()), -int(nbytes.min())) * n >= 1 << 61
    if len(capacity) == 1:
        return _one_device(nbytes, allocated, capacity[0], check_sum, path)
    if len(capacity) <= FEW_DEVICES and not check_sum and bool((allocated != NO_TOTAL).all()):
        return _few_devices(device, allocated, capacity)
    heap, peak, free = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    for d, cap in enumerate(capacity):
        mine = np.flatnonzero(device == d)
        heap[mine], peak[mine], free[mine] = _one_device(nbytes[mine], allocated[mine], cap, check_sum, path)
    return heap, peak, free


def _few_devices(device: np.ndarray, allocated: np.ndarray, capacity: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_device_columns` of events that all carry `Total Allocated`, on a few devices: a pass over every event per
    device instead of each device's events gathered and scattered back (fresh arrays, whose page faults cost more)."""
    heap = allocated.copy()
    free = np.asarray(capacity, np.int64)[device]
    unknown = free < 0
    np.subtract(free, allocated, out=free)
    np.maximum(free, 0, out=free)
    np.copyto(free, 0, where=unknown)
    peak, running = np.empty(len(heap), np.int64), np.empty(len(heap), np.int64)
    for d in range(len(capacity)):
        mine = device == d
        running.fill(np.iinfo(np.int64).min)
        np.copyto(running, heap, where=mine)
        np.maximum.accumulate(running, out=running)
        np.copyto(peak, running, where=mine)
    return heap, peak, free


def _one_device(
    sizes: np.ndarray, total: np.ndarray, capacity: int, check_sum: bool, path: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_device_columns` of one device's events. The bytes in use are the event's `Total Allocated`, else the last
    one's plus the bytes allocated since, else the device's running sum of the window's bytes."""
    if check_sum and float(np.abs(sizes).astype(np.float64).sum()) >= 1 << 62:
        raise not_readable(path, "its [memory] events add up to more than 2^62 bytes")
    given = total != NO_TOTAL
    every = bool(given.all())
    heap = total.copy() if every else _in_use(sizes, total, given)
    if capacity < 0:
        free = np.zeros(len(sizes), np.int64)
    else:
        free = capacity - total
        np.maximum(free, 0, out=free)
        if not every:
            free[~given] = 0
    return heap, np.maximum.accumulate(heap), free


def _in_use(sizes: np.ndarray, total: np.ndarray, given: np.ndarray) -> np.ndarray:
    """A device's bytes in use where some events lack `Total Allocated`: the last given one's plus the bytes
    allocated since, else the running sum of the window's bytes."""
    in_use = np.cumsum(sizes)
    if given.any():
        last = np.maximum.accumulate(np.where(given, np.arange(len(sizes)), -1))
        anchored = last >= 0
        in_use[anchored] += (total - in_use)[last[anchored]]
    else:
        anchored = given
    # Before any total, the sum counts from an unknown start: frees of buffers allocated before the trace would
    # take it below zero. The heap held at least those bytes when the window opened, so it starts that much higher.
    floor = int(in_use[~anchored].min()) if not anchored.all() else 0
    in_use[~anchored] -= min(floor, 0)
    return in_use


def _op_columns(
    times: np.ndarray, lines: np.ndarray, ops: _Complete, earliest: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Each event's op and shape (events in time order) as indexes into the strings they return: the names and
    shapes of the ops around events, in the order the events first name them."""
    op_at = _innermost(times, lines, ops, earliest)
    in_op = op_at >= 0
    op_at = op_at[in_op]
    names, shapes = np.frombuffer(ops.name, np.int64), np.frombuffer(ops.shape, np.int64)
    # An event in the op of the event before it names nothing new: the first namings are among the others.
    changed = op_at[np.flatnonzero(np.diff(op_at, prepend=-1))]
    pairs = np.empty(2 * len(changed), np.uint16 if len(ops.strings.values) <= 1 << 16 else np.int64)
    pairs[0::2], pairs[1::2] = names[changed], shapes[changed]
    # A stable sort of 16-bit keys is a radix sort: the first occurrences come cheaply.
    distinct, first = np.unique(pairs, return_index=True)
    strings = [""]
    mapping = np.zeros(len(ops.strings.values), np.int32)
    for index in distinct[np.argsort(first)].tolist():
        text = ops.strings.values[index]
        if text:
            mapping[index] = len(strings)
            strings.append(text)
    op, shape = np.zeros(len(times), np.int32), np.zeros(len(times), np.int32)
    op[in_op], shape[in_op] = mapping[names][op_at], mapping[shapes][op_at]
    return op, shape, strings


def _addresses(memory: _Memory, order: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Each event's address in time order, a synthetic one where it has none, and how many have none."""
    addr = np.frombuffer(memory.addr, np.uint64)
    addr = addr.copy() if order is None else addr[order]
    rows = np.flatnonzero(_in_order(np.frombuffer(memory.has_addr, np.uint8), order) == 0)
    if not len(rows):
        return addr, 0
    devices = _in_order(np.frombuffer(memory.device, np.int64), order)[rows].tolist()
    sizes = _in_order(np.frombuffer(memory.nbytes, np.int64), order)[rows].tolist()
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
    used = np.flatnonzero(np.bincount(call_names, minlength=len(calls.strings.values)))
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
