"""A PyTorch trace's `traceEvents` taken a run at a time into the reader's columns: scanned in C, else by msgspec.

A run (about a megabyte of whole events, as text: the window's str and where the run lies in it) goes first to the
compiled scanner (`_kineto_scan.c`, built by setup.py) where it is built: it reads the events straight from the
text into fixed-size records (RECORD: the numbers of their (ph, name, cat, pid, tid) kind and of their op's shape
text, interned in C by their raw bytes, `ts`, `dur` and the memory figures), handing each kind and shape it has
not met back once to be classified here. When the scanner is not built, or gives a run up (anything it does not
read exactly as msgspec would: see the C file), msgspec decodes the run into typed structs: the fields the reader
looks at, `args` reduced to the memory figures and an op's shapes (kept raw, decoded once per distinct text). Either
way the run's events then go into `reader._Scan`'s columns a column at a time (`Chunks._store`: numpy over the run,
and what an event is worked out once per distinct kind (`_Kinds`), not per event), each figure checked as
`_Scan.add` checks it.

A run is taken only when each of its events is of the common, well-formed kind: a field of another type, a
figure out of range, a time that float64 would round or JSON msgspec refuses (NaN, which the json module takes)
makes `Chunks.take` say -1 before anything is stored, and the reader decodes that run an event at a time as
before (`_Scan.add`), which keeps or refuses them with its own messages. The three paths give the same profile;
`tools/torch_trace_identity.py`, the tests and a fuzz test of the scanner against msgspec compare them. A change
to what `_Scan` makes of an event is a change here too: the tests run every trace they build through all three.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from types import ModuleType
from typing import Any, cast

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from tb_leakfinder import compiled
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.torch_trace.reader import (
    CPU_TYPE,
    DEVICE_TYPES,
    GPU_CATEGORY_PREFIX,
    MAX_BYTES,
    MAX_STEP_DIGITS,
    MAX_US,
    MEMORY_EVENT,
    NO_TOTAL,
    OP_CATEGORIES,
    STEP_PREFIX,
    STEP_SPAN,
    _Scan,
    _shape,
    call_name,
)
from tb_leakfinder.read.formats.torch_trace.stream import not_readable

# Times and durations as float64 equal their JSON numbers below this (an int of more bits would be rounded).
EXACT = float(1 << 52)
MAX_DEVICE = 1 << 16
# What an event is to the reader: metadata (no time), a time only, a [memory] event, a complete event (its
# duration counts) that is nothing more, a step, an op or a Python call; or one `_Scan` refuses.
UNTIMED, TIMED, MEMORY, COMPLETE, STEP, OP, CALL, REFUSED = range(8)
MAX_CACHED = 1 << 16
# The compiled scanner's copies of the kinds' and shapes' texts: a trace of long distinct names starts afresh here.
MAX_HELD_BYTES = 64 << 20
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
# One event as the compiled scanner gives it (`_kineto_scan.c`'s Record): its kind's and shape's numbers, `ts` and
# `dur` (0 where absent), the memory figures (`_Scan`'s defaults where absent, NO_TOTAL for no total) and `flags`.
RECORD = np.dtype(
    [("ts", "f8"), ("dur", "f8"), ("nbytes", "i8"), ("device_type", "i8"), ("device_id", "i8"), ("total", "i8"),
     ("addr", "u8"), ("kind", "i4"), ("shape", "i4"), ("flags", "u1")],
    align=True,
)  # fmt: skip
# Which of them an event gave (and whether `ts`, `dur` were JSON ints), as the scanner sets `flags`.
TS_GIVEN, TS_INT, DUR_GIVEN, DUR_INT, ARGS_GIVEN, BYTES_GIVEN, ADDR_GIVEN = (1 << k for k in range(7))
# Off, runs go to msgspec only: the tests and tools/torch_trace_identity.py compare the paths.
COMPILED = True

# Not built (no compiler at install time): msgspec decodes the runs.
_scanner = compiled.built("tb_leakfinder.read.formats.torch_trace._kineto_scan")
if _scanner is not None and (RECORD.itemsize, ADDR_GIVEN) != (_scanner.RECORD_SIZE, _scanner.ADDR_GIVEN):
    _scanner = None  # a build of another revision: msgspec serves (the tests require it rebuilt)


def compiled_scanner() -> ModuleType | None:
    """The compiled scanner module, or None when it is not built, COMPILED is off or TB_LEAKFINDER_PURE_PYTHON=1."""
    return None if not COMPILED or compiled.pure_python() else _scanner


_TIME = attrgetter("ts")
_BYTES, _DEVICE_TYPE, _DEVICE_ID, _ADDR, _TOTAL = map(attrgetter, ("nbytes", "device_type", "device_id", "addr", "total"))


def _scan(scanner: Any, text: str, start: int, end: int) -> tuple[bytes, list[Any], list[Any]] | None:
    """The compiled scanner's reading of text[start:end], or None when it gives the run up.

    It reads a str's data only when the str is ASCII: a window with a character past it anywhere is sliced, and
    the run, most often ASCII itself, read from its copy, else from its UTF-8 (which a lone surrogate, let
    through by the file's decoder, cannot be: such a run is left to msgspec).
    """
    if text.isascii():
        found: tuple[bytes, list[Any], list[Any]] | None = scanner.scan(text, start, end)
        return found
    run = text[start:end]
    if run.isascii():
        return _scan(scanner, run, 0, len(run))
    try:
        data = run.encode()
    except UnicodeEncodeError:
        return None
    found = scanner.scan(data, 0, len(data))
    return found


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
                elif (call := call_name(category, name)) is not None:
                    code, number = CALL, scan.calls.strings(call)
                elif category in OP_CATEGORIES:
                    code, number = OP, scan.ops.strings(name)
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
    """What one trace's runs share: its (ph, name, cat, pid, tid) kinds and each op's shape, by their text, and the
    compiled scanner's numbers for them."""

    def __init__(self, scan: _Scan) -> None:
        self.scan = scan
        self.decoded = 0
        # The devices named so far: each key (as `_store_memory` makes it), sorted, and its index in `scan.memory`'s.
        self.device_keys = np.zeros(0, np.int64)
        self.device_numbers = np.zeros(0, np.int64)
        self._fresh()

    def _fresh(self) -> None:
        """Forgets the kinds and shapes met so far (a trace of many distinct ones holds at most MAX_CACHED)."""
        self.kinds = _Kinds(self.scan)
        self.shapes = _Shapes(self.scan)
        module = compiled_scanner()
        self.scanner = None if module is None else module.Scanner()
        self.kind_of = np.zeros(0, np.int64)  # the scanner's kind numbers -> `kinds`' numbers
        self.shape_of = np.zeros(0, np.int64)  # its shape numbers -> indexes into the ops' strings, -1 until needed
        self.shape_keys: list[tuple[bytes, bytes]] = []

    def take(self, text: str, start: int, end: int) -> int:
        """A run of events (text[start:end], comma separated) into the scan; how many, or -1 when none was stored."""
        held = (0, 0) if self.scanner is None else self.scanner.held
        if max(len(self.kinds), len(self.shapes), held[0]) >= MAX_CACHED or held[1] >= MAX_HELD_BYTES:
            self._fresh()
        if self.scanner is not None and (found := _scan(self.scanner, text, start, end)) is not None:
            records = np.frombuffer(found[0], RECORD)
            self._learn(found[1], found[2])
            self._count(len(records))
            if self._add_records(records):
                return len(records)
            self.decoded -= len(records)  # counted again by the path that reads the run now
        events = decode(text[start:end])
        if events is not None:
            self._count(len(events))
        return len(events) if events is not None and self.add(events) else -1

    def _count(self, events: int) -> None:
        # As `_Scan.add` counts them: a few bytes of gzip must not stand for millions of events.
        self.decoded += events
        limits.check_events(self.decoded, self.scan.read.bytes, self.scan.path, not_readable)

    def _learn(self, kinds: list[tuple[Any, ...]], shapes: list[tuple[bytes, bytes]]) -> None:
        """The kinds and shapes the scanner met for the first time, in the order it numbered them."""
        if kinds:
            known = self.kinds
            self.kind_of = np.concatenate([self.kind_of, np.array([known[kind] for kind in kinds], np.int64)])
        if shapes:
            self.shape_keys += shapes
            self.shape_of = np.concatenate([self.shape_of, np.full(len(shapes), -1, np.int64)])

    def _add_records(self, records: np.ndarray) -> bool:
        """The compiled scanner's records into the scan's columns, as `add` puts msgspec's events."""
        kind = self.kind_of[records["kind"]]
        codes = self.kinds.arrays()[0][kind]
        if (codes == UNTIMED).any():
            timed = np.flatnonzero(codes != UNTIMED)
            records, kind, codes = records[timed], kind[timed], codes[timed]
        if not len(records) or (codes == REFUSED).any():
            return not len(records)
        flags = records["flags"]
        if not (flags & TS_GIVEN).all():  # a timed event without a time: the event path skips it
            return False
        times = np.ascontiguousarray(records["ts"])
        spans = np.where(codes >= COMPLETE, records["dur"], 0.0)
        rows = np.flatnonzero(codes == MEMORY)
        memory = None
        if ((flags[rows] & (ARGS_GIVEN | BYTES_GIVEN)) == ARGS_GIVEN | BYTES_GIVEN).all():
            # A field at a time: a structured array's rows copied whole cost more than the columns they hold.
            sizes, kinds, indexes, addr, allocated = (
                records[name][rows] for name in ("nbytes", "device_type", "device_id", "addr", "total")
            )
            has_addr = ((flags[rows] & ADDR_GIVEN) != 0).astype(np.uint8)
            memory = _checked_memory(rows, sizes, kinds, indexes, addr, has_addr, allocated)
        ops = np.flatnonzero(codes == OP)
        shapes = self._compiled_shapes(records["shape"][ops])
        if memory is None or shapes is None:
            return False

        def number(k: int, what: str, given: int, exact: int) -> float:
            value = records[what][k]
            return (int(value) if flags[k] & exact else float(value)) if flags[k] & given else 0

        def end(k: int) -> float:
            return number(k, "ts", TS_GIVEN, TS_INT) + (number(k, "dur", DUR_GIVEN, DUR_INT) if codes[k] >= COMPLETE else 0.0)

        return self._store(kind, codes, times, spans, memory, ops, shapes, lambda k: number(k, "ts", TS_GIVEN, TS_INT), end)

    def _compiled_shapes(self, numbers: np.ndarray) -> np.ndarray | None:
        """Ops' shapes from the scanner's shape numbers, each distinct text parsed once; None when msgspec refuses one."""
        missing = numbers[self.shape_of[numbers] < 0]
        try:
            for k in np.unique(missing).tolist() if len(missing) else ():
                self.shape_of[k] = self.shapes[self.shape_keys[k]]
        except (msgspec.DecodeError, RecursionError):
            return None
        found: np.ndarray = self.shape_of[numbers]
        return found

    def add(self, events: list[Event]) -> bool:
        """The chunk's events into the scan's columns, as `_Scan.add` would put them one by one; False (nothing
        stored) when one of them is not of the common kind this path checks."""
        kinds = self.kinds
        # A comprehension's attribute loads beat attrgetter's here (a third less per event, measured).
        kind = np.array([kinds[e.ph, e.name, e.cat, e.pid, e.tid] for e in events], np.int64)
        codes = kinds.arrays()[0][kind]
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
        memory = self._memory(events, np.flatnonzero(codes == MEMORY))
        ops = np.flatnonzero(codes == OP)
        shapes = self._shapes([events[k].args for k in ops.tolist()])
        if memory is None or shapes is None:
            return False

        def end(k: int) -> float:
            duration = durations[int(np.searchsorted(complete, k))] if codes[k] >= COMPLETE else 0.0
            return cast(float, events[k].ts) + cast(float, duration)

        return self._store(kind, codes, times, spans, memory, ops, shapes, lambda k: cast(float, events[k].ts), end)

    def _store(
        self,
        kind: np.ndarray,
        codes: np.ndarray,
        times: np.ndarray,
        spans: np.ndarray,
        memory: tuple[np.ndarray, dict[str, np.ndarray], int],
        ops: np.ndarray,
        shapes: np.ndarray,
        time_of: Callable[[int], float],
        end_of: Callable[[int], float],
    ) -> bool:
        """A run's timed events into the scan's columns: their kinds (`kinds`' numbers) and codes, times and spans
        in µs (0 for all but complete events), the checked [memory] events, the ops and their shapes, and the JSON
        numbers of an event's time and end (`time_of`, `end_of`); False, nothing stored, when a time is out of range."""
        if not ((np.abs(times) <= EXACT).all() and ((spans >= 0) & (spans <= MAX_US)).all()):
            return False
        kinds = self.kinds
        _, name_of, step_of, _ = kinds.arrays()
        mem_rows, mem_columns, zero_bytes = memory
        scan = self.scan
        spans_of = [(scan.steps, np.flatnonzero(codes == STEP)), (scan.ops, ops), (scan.calls, np.flatnonzero(codes == CALL))]
        kept = np.concatenate([mem_rows, *(rows for _, rows in spans_of)])
        if (kinds.arrays()[3][kind[kept]] < 0).any():  # a kind kept for the first time: lines in file order
            kinds.lines_for(kind[np.sort(kept)])
        lines = kinds.arrays()[3][kind]
        # Earliest and latest as `_Scan` keeps them: the JSON numbers themselves (an int stays an int), the first
        # of equal ones. Below EXACT their float64 values compare as the numbers do.
        scan.earliest = min(scan.earliest, time_of(int(np.argmin(times))))
        ends = times + spans
        scan.latest = max(scan.latest, end_of(int(np.argmax(ends))))
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
        found = self._each_figure(given)
        return None if found is None else _checked_memory(rows, *found)

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
        # Most runs name only devices met before: looked up in the sorted keys of those, not sorted again.
        at = np.minimum(np.searchsorted(self.device_keys, key), len(self.device_keys) - 1)
        if len(self.device_keys) and (self.device_keys[at] == key).all():
            devices = self.device_numbers[at]
        else:
            distinct, first, which = np.unique(key, return_index=True, return_inverse=True)
            device = np.zeros(len(distinct), np.int64)
            for d in np.argsort(first).tolist():
                kind, index = int(columns["kinds"][first[d]]), int(columns["indexes"][first[d]])
                prefix = DEVICE_TYPES.get(kind, f"device_type_{kind}")
                device[d] = memory.devices(prefix if kind == CPU_TYPE else f"{prefix}:{index}")
            devices = device[which.ravel()]
            merged = np.unique(np.concatenate([self.device_keys, distinct]), return_index=True)[1]
            self.device_keys = np.concatenate([self.device_keys, distinct])[merged]
            self.device_numbers = np.concatenate([self.device_numbers, device])[merged]
        memory.ts.frombytes(times[rows].tobytes())
        memory.line.frombytes(lines[rows].tobytes())
        memory.device.frombytes(devices.tobytes())
        memory.nbytes.frombytes(columns["nbytes"].tobytes())
        memory.addr.frombytes(columns["addr"].tobytes())
        memory.has_addr.extend(columns["has_addr"].tobytes())
        memory.allocated.frombytes(columns["totals"].tobytes())


def _checked_memory(
    rows: np.ndarray,
    sizes: np.ndarray,
    kinds: np.ndarray,
    indexes: np.ndarray,
    addr: np.ndarray,
    has_addr: np.ndarray,
    allocated: np.ndarray,
) -> tuple[np.ndarray, dict[str, np.ndarray], int] | None:
    """The [memory] events among `rows` (their figures given) that are not of 0 bytes, their columns, and how many
    are; None when a figure is out of the range `_Scan` takes."""
    known = allocated != NO_TOTAL
    if not (
        (np.abs(sizes) <= MAX_BYTES).all()
        and (np.abs(kinds) <= MAX_DEVICE).all()
        and (np.abs(indexes) <= MAX_DEVICE).all()
        and (np.abs(allocated[known]) <= MAX_BYTES).all()
    ):
        return None
    columns: dict[str, np.ndarray] = {
        "nbytes": sizes, "kinds": kinds, "indexes": indexes, "addr": addr, "has_addr": has_addr, "totals": allocated
    }  # fmt: skip
    if sizes.all():
        return rows, columns, 0
    nonzero = np.flatnonzero(sizes)
    return rows[nonzero], {name: column[nonzero] for name, column in columns.items()}, len(sizes) - len(nonzero)
