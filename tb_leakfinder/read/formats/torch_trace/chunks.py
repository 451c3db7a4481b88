"""A PyTorch trace's `traceEvents` decoded a chunk at a time by msgspec, into the reader's columns.

msgspec decodes a megabyte of events at once into typed structs: the fields the reader looks at, `args`
reduced to the memory figures and an op's shapes (kept raw, decoded once per distinct text); every other field is
skipped in C. The chunk's events then go into `reader._Scan`'s columns a column at a time (numpy over the chunk,
and what an event is worked out once per distinct (ph, name, cat, pid, tid), not per event), each figure checked
as `_Scan.add` checks it.

A chunk is taken only when each of its events is of the common, well-formed kind: a field of another type, a
figure out of range, a time that float64 would round or JSON msgspec refuses (NaN, which the json module takes)
makes `Chunks.take` say -1 before anything is stored, and the reader decodes that chunk an event at a time as
before (`_Scan.add`), which keeps or refuses them with its own messages. The two paths give the same profile;
`tools/torch_trace_identity.py` and the tests compare them. A change to what `_Scan` makes of an event is a change
here too: the tests run every trace they build through both paths.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, cast

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from tb_leakfinder.model.memory import module_call_name, python_call_name
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.torch_trace.reader import (
    _MODULE_CALL,
    _PYTHON_FRAME,
    CPU_TYPE,
    DEVICE_TYPES,
    GPU_CATEGORY_PREFIX,
    MAX_BYTES,
    MAX_STEP_DIGITS,
    MAX_US,
    MEMORY_EVENT,
    NO_TOTAL,
    OP_CATEGORIES,
    PYTHON_CATEGORY,
    STEP_PREFIX,
    STEP_SPAN,
    _Scan,
    _shape,
)
from tb_leakfinder.read.formats.torch_trace.stream import not_readable

# Times and durations as float64 equal their JSON numbers below this (an int of more bits would be rounded).
EXACT = float(1 << 52)
MAX_DEVICE = 1 << 16
# What an event is to the reader: metadata (no time), a time only, a [memory] event, a complete event (its
# duration counts) that is nothing more, a step, an op or a Python call; or one `_Scan` refuses.
UNTIMED, TIMED, MEMORY, COMPLETE, STEP, OP, CALL, REFUSED = range(8)
MAX_CACHED = 1 << 16
_NO_RAW = msgspec.Raw(b"")
_NO_SHAPE = (b"", b"")


class Args(msgspec.Struct, gc=False, rename={
    "nbytes": "Bytes",
    "device_type": "Device Type",
    "device_id": "Device Id",
    "addr": "Addr",
    "total": "Total Allocated",
    "dims": "Input Dims",
    "types": "Input type",
}):  # fmt: skip
    """The `args` the reader uses; their defaults are what `_Scan` takes for an absent key."""

    nbytes: int | None = None
    device_type: int = CPU_TYPE
    device_id: int = -1
    addr: int | None = None
    total: int | None = None
    dims: msgspec.Raw = _NO_RAW
    types: msgspec.Raw = _NO_RAW


class Event(msgspec.Struct, gc=False):
    """One trace event's fields the reader uses. A null `ts` or `dur` is refused (the event path says why);
    an absent one is UNSET. Thread ids of another type than int or str are refused too: equal ids must have
    equal text, which 7 and 7.0 do not."""

    ph: str | None = None
    name: str | None = None
    cat: str | None = None
    ts: int | float | UnsetType = UNSET
    dur: int | float | UnsetType = UNSET
    pid: int | str = ""
    tid: int | str = ""
    args: Args | UnsetType | None = UNSET


DECODER = msgspec.json.Decoder(list[Event])
_TIME = attrgetter("ts")
_BYTES, _DEVICE_TYPE, _DEVICE_ID, _ADDR, _TOTAL = map(attrgetter, ("nbytes", "device_type", "device_id", "addr", "total"))


def decode(text: str) -> list[Event] | None:
    """The events of `text` (elements of the array, comma separated), or None when msgspec refuses them."""
    try:
        return DECODER.decode(f"[{text}]")
    except (msgspec.DecodeError, RecursionError, MemoryError, UnicodeEncodeError):  # a lone surrogate: the event path
        return None


class _Kinds(dict[tuple[Any, ...], int]):
    """Each distinct (ph, name, cat, pid, tid) numbered, with what an event of it is to the reader (`code`), its
    name's or its step marker's index in its kind's strings (`name`), a step's number (`step`), its thread's ids
    as text and its line once an event of it is kept (`line`, -1 until then): each worked out once."""

    def __init__(self, scan: _Scan) -> None:
        super().__init__()
        self.scan = scan
        self.code: list[int] = []
        self.name: list[int] = []
        self.step: list[int] = []
        self.thread: list[tuple[str, str]] = []
        self.line: list[int] = []
        self._arrays: tuple[np.ndarray, ...] | None = None

    def __missing__(self, key: tuple[Any, ...]) -> int:
        phase, name, category, pid, tid = key
        scan = self.scan
        code, number, step = TIMED, -1, 0
        if phase == "M":
            code = UNTIMED
        elif name == MEMORY_EVENT and phase in ("i", "I"):
            code = MEMORY
        elif phase == "X":
            code = COMPLETE
            if isinstance(name, str):
                on_host = not (isinstance(category, str) and category.startswith(GPU_CATEGORY_PREFIX))
                if on_host and name.startswith(STEP_PREFIX) and (digits := name[len(STEP_PREFIX) :]).isdecimal():
                    if len(digits) > MAX_STEP_DIGITS:
                        code = REFUSED
                    else:
                        code, number, step = STEP, scan.steps.strings(STEP_SPAN), int(digits)
                elif category in OP_CATEGORIES:
                    code, number = OP, scan.ops.strings(name)
                elif category == PYTHON_CATEGORY and (frame := _PYTHON_FRAME.fullmatch(name)):
                    code, number = CALL, scan.calls.strings(python_call_name(frame.group(1), frame.group(2), frame.group(3)))
                elif category == PYTHON_CATEGORY and (module := _MODULE_CALL.fullmatch(name)):
                    code, number = CALL, scan.calls.strings(module_call_name(module.group(1)))
        self[key] = len(self.code)
        self.code.append(code)
        self.name.append(number)
        self.step.append(step)
        self.thread.append((str(pid), str(tid)))
        self.line.append(-1)
        self._arrays = None
        return self[key]

    def lines_for(self, kinds: np.ndarray) -> None:
        """Numbers the lines of these kinds' threads (kinds of kept events, in file order) that have none yet, in
        order of first appearance, as `_Scan._line` numbers them."""
        distinct, first = np.unique(kinds, return_index=True)
        lines = self.scan.lines
        for kind in distinct[np.argsort(first)].tolist():
            if self.line[kind] < 0:
                thread = self.thread[kind]
                number = lines.get(thread)
                if number is None:
                    limits.check_lines(len(lines) + 1, self.scan.path, not_readable)
                    number = lines[thread] = len(lines)
                self.line[kind] = number
                self._arrays = None

    def arrays(self) -> tuple[np.ndarray, ...]:
        """`code`, `name`, `step` and `line` as arrays, to index by the numbers of a chunk's events."""
        if self._arrays is None:
            self._arrays = tuple(
                np.array(v, t)
                for v, t in zip((self.code, self.name, self.step, self.line), (np.int8, *[np.int64] * 3), strict=True)
            )
        return self._arrays


class _Shapes(dict[tuple[bytes, bytes], int]):
    """Each distinct (`Input Dims`, `Input type`) text of an op, its shape's index in the ops' strings: parsed once."""

    def __init__(self, scan: _Scan) -> None:
        super().__init__()
        self.scan = scan

    def __missing__(self, key: tuple[bytes, bytes]) -> int:
        parsed = {field: msgspec.json.decode(raw) for field, raw in zip(("Input Dims", "Input type"), key, strict=True) if raw}
        self[key] = self.scan.ops.strings(_shape(parsed))
        return self[key]


class Chunks:
    """What one trace's chunks share: its (ph, name, cat, pid, tid) kinds and each op's shape, by their text."""

    def __init__(self, scan: _Scan) -> None:
        self.scan = scan
        self.kinds = _Kinds(scan)
        self.shapes = _Shapes(scan)
        self.decoded = 0

    def take(self, text: str) -> int:
        """A run of events (their text, comma separated) into the scan; how many, or -1 when none was stored."""
        events = decode(text)
        if events is not None:
            # As `_Scan.add` counts them: a few bytes of gzip must not stand for millions of events.
            self.decoded += len(events)
            limits.check_events(self.decoded, self.scan.read.bytes, self.scan.path, not_readable)
        return len(events) if events is not None and self.add(events) else -1

    def add(self, events: list[Event]) -> bool:
        """The chunk's events into the scan's columns, as `_Scan.add` would put them one by one; False (nothing
        stored) when one of them is not of the common kind this path checks."""
        if len(self.kinds) >= MAX_CACHED:
            self.kinds = _Kinds(self.scan)
        kinds = self.kinds
        # A comprehension's attribute loads beat attrgetter's here (a third less per event, measured).
        kind = np.array([kinds[e.ph, e.name, e.cat, e.pid, e.tid] for e in events], np.int64)
        code_of, name_of, step_of, _ = kinds.arrays()
        codes = code_of[kind]
        if (codes == UNTIMED).any():  # metadata: no time, nothing the reader keeps
            timed = np.flatnonzero(codes != UNTIMED)
            events, kind, codes = [events[k] for k in timed.tolist()], kind[timed], codes[timed]
        if not events or (codes == REFUSED).any():
            return not events
        try:
            # An absent time (UNSET) is refused here: that event is skipped, which the other path does.
            times = np.fromiter(map(_TIME, events), np.float64, len(events))
            complete = np.flatnonzero(codes >= COMPLETE)
            durations = [events[k].dur for k in complete.tolist()]
            spans = np.zeros(len(events))
            try:
                spans[complete] = np.fromiter(durations, np.float64, len(durations))
            except TypeError:  # an absent duration (UNSET) is 0
                durations = [0 if d is UNSET else d for d in durations]
                spans[complete] = np.fromiter(durations, np.float64, len(durations))
        except TypeError:
            return False
        if not ((np.abs(times) <= EXACT).all() and ((spans >= 0) & (spans <= MAX_US)).all()):
            return False
        memory = self._memory(events, np.flatnonzero(codes == MEMORY))
        if memory is None:
            return False
        ops = np.flatnonzero(codes == OP)
        shapes = self._shapes([events[k].args for k in ops.tolist()])
        if shapes is None:
            return False
        mem_rows, mem_columns, zero_bytes = memory
        scan = self.scan
        spans_of = [(scan.steps, np.flatnonzero(codes == STEP)), (scan.ops, ops), (scan.calls, np.flatnonzero(codes == CALL))]
        kept = np.sort(np.concatenate([mem_rows, *(rows for _, rows in spans_of)]))
        if (kinds.arrays()[3][kind[kept]] < 0).any():  # a kind kept for the first time
            kinds.lines_for(kind[kept])
        lines = kinds.arrays()[3][kind]
        # Earliest and latest as `_Scan` keeps them: the JSON numbers themselves (an int stays an int), the first
        # of equal ones. Below EXACT their float64 values compare as the numbers do.
        scan.earliest = min(scan.earliest, cast(float, events[int(np.argmin(times))].ts))
        ends = times + spans
        last = int(np.argmax(ends))
        end = durations[int(np.searchsorted(complete, last))] if codes[last] >= COMPLETE else 0.0
        scan.latest = max(scan.latest, cast(float, events[last].ts) + cast(float, end))
        scan.zero_bytes += zero_bytes
        self._store_memory(mem_rows, mem_columns, times, lines)
        for into, rows in spans_of:
            if len(rows):
                if into is scan.steps:
                    scan.step_num.frombytes(step_of[kind[rows]].tobytes())
                into.start.frombytes(times[rows].tobytes())
                into.end.frombytes(ends[rows].tobytes())
                into.line.frombytes(lines[rows].tobytes())
                into.name.frombytes(name_of[kind[rows]].tobytes())
                into.shape.frombytes((shapes if into is scan.ops else np.full(len(rows), into.strings(""))).tobytes())
        return True

    def _shapes(self, given: list[Args | UnsetType | None]) -> np.ndarray | None:
        """Ops' shapes (indexes into the ops' strings) from their raw `Input Dims` and `Input type`, each distinct
        text parsed once; None when msgspec refuses one's JSON."""
        if len(self.shapes) >= MAX_CACHED:
            self.shapes = _Shapes(self.scan)
        known = self.shapes
        try:
            return np.array(
                [known[bytes(a.dims), bytes(a.types)] if type(a) is Args else known[_NO_SHAPE] for a in given], np.int64
            )
        except (msgspec.DecodeError, RecursionError):
            return None

    def _memory(self, events: list[Event], rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray], int] | None:
        """The [memory] events among `rows` that are not of 0 bytes, their checked columns, and how many are."""
        given = [events[k].args for k in rows.tolist()]
        if not given:
            return rows, {}, 0
        n = len(given)
        found = self._each_figure(given)
        if found is None:
            return None
        sizes, kinds, indexes, addr, has_addr, allocated = found
        known = allocated != NO_TOTAL
        if not (
            (np.abs(sizes) <= MAX_BYTES).all()
            and (np.abs(kinds) <= MAX_DEVICE).all()
            and (np.abs(indexes) <= MAX_DEVICE).all()
            and (np.abs(allocated[known]) <= MAX_BYTES).all()
        ):
            return None
        nonzero = np.flatnonzero(sizes)
        columns: dict[str, np.ndarray] = {
            "nbytes": sizes, "kinds": kinds, "indexes": indexes, "addr": addr, "has_addr": has_addr, "totals": allocated
        }  # fmt: skip
        return rows[nonzero], {name: column[nonzero] for name, column in columns.items()}, n - len(nonzero)

    @staticmethod
    def _each_figure(given: list[Args | UnsetType | None]) -> tuple[np.ndarray, ...] | None:
        """The memory figures a column at a time: sizes, device types and ids, addresses, whether each was given,
        and totals (NO_TOTAL where absent); None where one is absent that must be given, or out of range, or an
        event has no `args` object."""
        n = len(given)
        try:
            sizes = np.fromiter(map(_BYTES, given), np.int64, n)
            kinds = np.fromiter(map(_DEVICE_TYPE, given), np.int64, n)
            indexes = np.fromiter(map(_DEVICE_ID, given), np.int64, n)
            # None (absent) is rare: met as the TypeError it raises, and only then looked for.
            has_addr = np.ones(n, np.uint8)
            try:
                addr = np.fromiter(map(_ADDR, given), np.uint64, n)
            except TypeError:
                addresses = list(map(_ADDR, given))
                has_addr[:] = [a is not None for a in addresses]
                addr = np.fromiter([0 if a is None else a for a in addresses], np.uint64, n)
            try:
                allocated = np.fromiter(map(_TOTAL, given), np.int64, n)
            except TypeError:
                allocated = np.fromiter([NO_TOTAL if t is None else t for t in map(_TOTAL, given)], np.int64, n)
        except (AttributeError, OverflowError, TypeError):  # no args, None where a number must be, or out of range
            return None
        return sizes, kinds, indexes, addr, has_addr, allocated

    def _store_memory(self, rows: np.ndarray, columns: dict[str, np.ndarray], times: np.ndarray, lines: np.ndarray) -> None:
        if not len(rows):
            return
        memory = self.scan.memory
        # A device's key: its type and index (each within ±MAX_DEVICE) in one number; named in order of first use.
        key = columns["kinds"] * (4 * MAX_DEVICE) + columns["indexes"]
        distinct, first, which = np.unique(key, return_index=True, return_inverse=True)
        device = np.zeros(len(distinct), np.int64)
        for d in np.argsort(first).tolist():
            kind, index = int(columns["kinds"][first[d]]), int(columns["indexes"][first[d]])
            prefix = DEVICE_TYPES.get(kind, f"device_type_{kind}")
            device[d] = memory.devices(prefix if kind == CPU_TYPE else f"{prefix}:{index}")
        memory.ts.frombytes(times[rows].tobytes())
        memory.line.frombytes(lines[rows].tobytes())
        memory.device.frombytes(device[which.ravel()].tobytes())
        memory.nbytes.frombytes(columns["nbytes"].tobytes())
        memory.addr.frombytes(columns["addr"].tobytes())
        memory.has_addr.extend(columns["has_addr"].tobytes())
        memory.allocated.frombytes(columns["totals"].tobytes())
