"""Reading one PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`'s pickle) into the model.

A snapshot is a dict of builtins, loaded by `unpickle.load`, which refuses every class. `device_traces[d]`
is device d's history: entries with `action`, `addr`, `size` (the bytes requested), `frames` (innermost
first, each a `filename`, `line` and `name`) and, in newer versions, `time_us`. Each device is an allocator,
`cuda:<d>`. An `alloc` entry is an allocation, and a `free_completed` one (when the memory can be reused;
`free_requested` in a trace that has none) its free, paired by address as the model pairs. Segment actions
(`segment_alloc`, `segment_free`, ...) move reserved memory, not buffers; they, `snapshot` and `oom` entries
are no events.

`requested_bytes` is the requested size. `chunk_bytes` is what the caching allocator handed out: the size of the
block at that address in `segments[].blocks[]` when the block is still live at the dump and was requested at
that size (a block may hold more than the size rounded up, a remainder too small to split), else the size
rounded up to 512 bytes, its smallest block. `heap_bytes` is the device's running sum of chunk bytes, from
what was live when the window opened: the trace is a ring buffer of `max_entries` entries, so a free whose
allocation it dropped, and a block live at the dump with no entry at all, were allocated before it. Those
frees stay (the model counts them as freed before the window); the profile's warnings say how many and how
much was live at the start.

Times are `time_us` from the earliest entry, in ps; entries are kept in time order and at least STRIDE_PS
apart, so that each allocation's Python frames (those whose file is a `.py`) become nested host calls around
it, as a device memory profile's stacks do (`common.rows.stack_spans`), and the attribution names the user's
line. Without `time_us` the clock counts allocations (`allocation_tick` ps each, the entries between them 1 ps
apart in their order), which a warning says.
`external_annotations` (START and END `stage`s with `name` and `time_us`, recorded with
`global_record_annotations`) are host root spans by name, and `ProfilerStep#N` ones the steps; without those,
the optimizer's `Optimizer.step#…` annotations end the steps (a snapshot of one training step is one step, not
time windows); the step source's cascade picks from those and from repeated user annotations, else makes time
windows.

A snapshot recorded without history (`enabled="state"`) has no entries: its live blocks, with their frames,
are then one moment, read as a device memory profile is (allocations never freed, `HostProfile.one_moment`); so
is one whose entries hold at most one allocation or free (PyTorch 2.0 keeps a single entry unless told more: after
an out-of-memory error, its `oom`; at the end of a run, its last free), which makes no window.

Snapshots from PyTorch 1.13 on are read. Before 2.1 a block has no `address` (its segment's address plus the
sizes of the blocks before it), its requested size and frames are its `history`'s first record's (`real_size`,
`frames`), a block awaiting its stream is `active_pending_free`, entries carry no time_us, an `oom` entry names
`device_free` in place of `addr`, and C++ frames (2.0) are one backtrace text, `cpp_frames`. An allocation
without Python frames is named by the op its C++ frames name (`ops.computing_op`).

Each device's allocator says how much its segments reserve at the dump, and whether the snapshot is one taken
at an out-of-memory error: its trace has an `oom` entry, every segment is full (an allocator that cannot meet a
request first releases its free cached blocks), or the file's name says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    SPAN_HOST_ROOT,
    AllocatorInfo,
    HostProfile,
    MemoryEvents,
    Spans,
    Steps,
    python_call_name,
)
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.common.interning import Interned
from tb_leakfinder.read.formats.common.rows import spans_from_rows, stack_spans
from tb_leakfinder.read.formats.torch_snapshot.ops import computing_op
from tb_leakfinder.read.formats.torch_snapshot.unpickle import MAX_FILE_BYTES, load, not_readable

# A pickle's memo can hold one list many times over: at most this many entries, blocks and frames are walked.
MAX_RECORDS = 20_000_000
MAX_FRAMES_WALKED = 200_000_000
MAX_DEVICES = 1 << 12
MAX_BYTES = 1 << 56
MAX_ADDRESS = (1 << 64) - 1
MAX_TIME_US = 1e17  # an epoch time in µs is ~1.8e15
EPOCH_US = 1e15  # a time_us above this is a wall-clock time (after 2001), so the capture's start
US_TO_PS = 1_000_000
# Entries lie at least this far apart; an allocation's frames nest within half of it on either side.
STRIDE_PS = 1000
MAX_FRAMES = STRIDE_PS // 2 - 1
MAX_BACKTRACE_CHARS = 1 << 20  # of one PyTorch 2.0 `cpp_frames` text
BLOCK_BYTES = 512  # the caching allocator's smallest block, and what it rounds requests up to
ALLOCATE = "alloc"
FREE_COMPLETED = "free_completed"
FREE_REQUESTED = "free_requested"
OOM = "oom"
KNOWN_ACTIONS = frozenset(
    {ALLOCATE, FREE_REQUESTED, FREE_COMPLETED, OOM, "segment_alloc", "segment_free", "segment_map", "segment_unmap", "snapshot"}
)
# PyTorch 1.13 and 2.0 call a block awaiting its stream's free `active_pending_free`; 2.1 on `active_awaiting_free`.
LIVE_STATES = frozenset({"active_allocated", "active_awaiting_free", "active_pending_free"})
MEMORY_ACTIONS = frozenset({ALLOCATE, FREE_REQUESTED, FREE_COMPLETED})
ANNOTATION_START = "START"
ANNOTATION_END = "END"
STEP_PREFIX = "ProfilerStep#"
STEP_SPAN = "ProfilerStep"
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"  # torch.optim's profiling annotation of each step: "Optimizer.step#AdamW.step"
# "oom_snapshot.pickle", "rank0-OOM.pkl", "out_of_memory_1.pickle": a name that says the job ran out of memory.
_OOM_NAME = re.compile(r"(?<![a-z])(oom|out_of_memory|outofmemory)(?![a-z])", re.IGNORECASE)
PYTHON_SUFFIX = ".py"
ALLOCATOR_PREFIX = "cuda"


def read_host(path: str, host: str) -> HostProfile:
    """One snapshot file into the model; raises LeakfinderError naming the file."""
    return decode(files.read_bytes(path, limit=MAX_FILE_BYTES), host, path)


def _kind(value: object) -> str:
    """A value of the file as an error message shows it: never its repr, which a hostile object makes huge."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    return f"a {type(value).__name__}"


def _integer(value: object, path: str, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise not_readable(path, f"{what} is {_kind(value)}, not an integer from {low} to {high}")
    return value


def _time(value: object, path: str, what: str) -> float:
    """A time in µs, kept an int when it is one: an epoch time in ns is beyond a float's exact integers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_TIME_US:
        raise not_readable(path, f"{what} is {_kind(value)}, not a time in µs from 0 to {MAX_TIME_US:g}")
    return value


def _text(value: object, path: str, what: str) -> str:
    if not isinstance(value, str):
        raise not_readable(path, f"{what} is {_kind(value)}, not a string")
    return value


def _list(value: object, path: str, what: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise not_readable(path, f"{what} is {_kind(value)}, not a list")
    return list(value)


def _dict(value: object, path: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise not_readable(path, f"{what} is {_kind(value)}, not a dict")
    return value


def rounded(size: int) -> int:
    """The block the caching allocator hands out for a request of `size` bytes (without roundup_power2_divisions)."""
    return max(BLOCK_BYTES, -(-size // BLOCK_BYTES) * BLOCK_BYTES)


class _PythonFrames:
    """Python frames as host call names (innermost first), interned, and the op the C++ frames name; each frames
    list of the file read once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._intern = Interned()
        self.names = self._intern.values
        self.ops = Interned()
        self.ops("")  # index 0: no op named, as the model's string tables have it
        self._stacks: dict[tuple[int, int], tuple[tuple[int, ...], int]] = {}
        self._lists: list[object] = []  # keeps each read list alive, so that its id stays its own
        self.walked = 0
        self.deep = 0

    def stack(self, frames: object, what: str, backtrace: object = None) -> tuple[tuple[int, ...], int]:
        """The Python frames of a frames list, and, when it has none, the op (an index into `ops`) that its C++
        frames, or PyTorch 2.0's `cpp_frames` backtrace text, name."""
        if frames is None and backtrace is None:
            return (), 0
        key = (id(frames), id(backtrace))
        known = self._stacks.get(key)
        if known is not None:
            return known
        items = [] if frames is None else _list(frames, self.path, f"{what}'s frames")
        self.walked += len(items)
        if self.walked > MAX_FRAMES_WALKED:
            raise not_readable(self.path, f"more than {MAX_FRAMES_WALKED} frames in all")
        found: list[int] = []
        native: list[str] = []
        for k, item in enumerate(items):
            frame = _dict(item, self.path, f"{what}'s frame {k}")
            filename = _text(frame.get("filename", ""), self.path, f"{what}'s frame {k}'s filename")
            name = _text(frame.get("name", ""), self.path, f"{what}'s frame {k}'s name")
            if not filename.endswith(PYTHON_SUFFIX):
                native.append(name)  # a C++ frame: it may name the op
                continue
            line = _integer(frame.get("line", 0), self.path, f"{what}'s frame {k}'s line", 0, 1 << 31)
            found.append(self._intern(python_call_name(filename, line, name)))
        if backtrace is not None:
            native += _text(backtrace, self.path, f"{what}'s cpp_frames")[:MAX_BACKTRACE_CHARS].splitlines()
        self.deep += len(found) > MAX_FRAMES
        # With Python frames the user's line names the buffer (snapshots record no shapes, so an op alone would
        # merge every line's adds into one family); without them the C++ frames name its op.
        stack = self._stacks[key] = (tuple(found), 0 if found else self.ops(computing_op(native)))
        self._lists += [frames, backtrace]
        return stack


@dataclass
class _Entry:
    device: int
    position: int  # in its device's trace
    action: str
    addr: int
    size: int
    time_us: float | None
    frames: object
    backtrace: object  # PyTorch 2.0's `cpp_frames` text, None in other versions
    device_free: int | None = None  # an oom entry's: what the device had free


@dataclass
class _Block:
    device: int
    addr: int
    size: int
    requested: int
    frames: object
    backtrace: object


@dataclass
class _Rows:
    """The memory events, in time order, before they become columns."""

    time_ps: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    allocator: list[int] = field(default_factory=list)
    addr: list[int] = field(default_factory=list)
    tensor: list[int] = field(default_factory=list)
    chunk: list[int] = field(default_factory=list)
    stacks: list[tuple[int, ...]] = field(default_factory=list)  # of the allocations, in their order
    op: list[int] = field(default_factory=list)  # per event: indexes _Frames.ops, 0 for a free

    def add(self, time_ps: int, kind: int, allocator: int, addr: int, tensor: int, chunk: int, op: int = 0) -> None:
        self.op.append(op)
        self.time_ps.append(time_ps)
        self.kind.append(kind)
        self.allocator.append(allocator)
        self.addr.append(addr)
        self.tensor.append(tensor)
        self.chunk.append(chunk)


def _snapshot(data: bytes, path: str) -> dict[str, Any]:
    snapshot = load(data, path)
    if not isinstance(snapshot, dict) or not ("segments" in snapshot or "device_traces" in snapshot):
        raise not_readable(path, f"its pickle is {_kind(snapshot)}, not a dict with segments or device_traces")
    return snapshot


def _count(total: int, more: int, path: str) -> int:
    if total + more > MAX_RECORDS:
        raise not_readable(path, f"more than {MAX_RECORDS} trace entries and blocks")
    return total + more


def _once(item: object, seen: set[int], path: str, what: str) -> None:
    """Refuses a record met before: PyTorch makes each entry and block a dict of its own, and a pickle's memo lets two
    bytes list one again, so that a small file would be walked as millions."""
    if id(item) in seen:
        raise not_readable(path, f"{what} is a record listed before (a pickle memo reference): a snapshot lists each once")
    seen.add(id(item))


def _entries(snapshot: dict[str, Any], path: str) -> tuple[list[_Entry], int]:
    traces = _list(snapshot.get("device_traces", []), path, "device_traces")
    if len(traces) > MAX_DEVICES:
        raise not_readable(path, f"device_traces lists {len(traces)} devices")
    found: list[_Entry] = []
    total = 0
    seen: set[int] = set()
    for device, trace in enumerate(traces):
        items = _list(trace, path, f"device_traces[{device}]")
        total = _count(total, len(items), path)
        for k, item in enumerate(items):
            what = f"device_traces[{device}][{k}]"
            entry = _dict(item, path, what)
            _once(entry, seen, path, what)
            action = _text(entry.get("action"), path, f"{what}'s action")
            addr = entry.get("addr", 0)
            # An oom entry names what the device had free in place of an address.
            free = entry.get("device_free") if action == OOM else None
            addr = 0 if action == OOM else _integer(addr, path, f"{what}'s addr", 0, MAX_ADDRESS)
            device_free = None if free is None else _integer(free, path, f"{what}'s device_free", 0, MAX_BYTES)
            size = _integer(entry.get("size", 0), path, f"{what}'s size", 0, MAX_BYTES)
            time_us = entry.get("time_us")
            when = None if time_us is None else _time(time_us, path, f"{what}'s time_us")
            found.append(_Entry(device, k, action, addr, size, when, entry.get("frames"), entry.get("cpp_frames"), device_free))
    return found, total


@dataclass
class _Segments:
    """What the segments say at the dump: the live blocks, and per device the bytes reserved and whether every
    segment was full (no inactive block: what an out-of-memory error leaves, once the allocator has released its
    free cached blocks and still cannot fit the request)."""

    blocks: list[_Block] = field(default_factory=list)
    reserved: dict[int, int] = field(default_factory=dict)
    full: dict[int, bool] = field(default_factory=dict)


def _blocks(snapshot: dict[str, Any], path: str, total: int) -> _Segments:
    """The blocks live at the dump, by segment. Before PyTorch 2.1 a block has no `address` (it follows from its
    segment's and the sizes of the blocks before it), and its requested size and frames are those of its
    `history`'s first (latest) record, `real_size` and `frames`."""
    found = _Segments()
    seen: set[int] = set()
    for s, item in enumerate(_list(snapshot.get("segments", []), path, "segments")):
        what = f"segments[{s}]"
        segment = _dict(item, path, what)
        device = _integer(segment.get("device", 0), path, f"{what}'s device", 0, MAX_DEVICES - 1)
        blocks = _list(segment.get("blocks", []), path, f"{what}'s blocks")
        total = _count(total, len(blocks), path)
        start = segment.get("address")
        offset = 0
        sizes = 0
        full = bool(blocks)
        for b, block_item in enumerate(blocks):
            where = f"{what}'s block {b}"
            block = _dict(block_item, path, where)
            _once(block, seen, path, where)
            state = _text(block.get("state", ""), path, f"{where}'s state")
            size = _integer(block.get("size"), path, f"{where}'s size", 0, MAX_BYTES)
            at = offset
            offset += size
            sizes += size
            if state not in LIVE_STATES:
                full = False
                continue
            if "address" in block:
                addr = _integer(block["address"], path, f"{where}'s address", 0, MAX_ADDRESS)
            else:
                base = _integer(start, path, f"{what}'s address (its block {b} has none)", 0, MAX_ADDRESS)
                addr = _integer(base + at, path, f"{where}'s address (its segment's plus {at:,} bytes)", 0, MAX_ADDRESS)
            history = _list(block.get("history") or [{}], path, f"{where}'s history")
            latest = _dict(history[0], path, f"{where}'s history[0]")
            requested = block.get("requested_size", latest.get("real_size", size))
            requested = _integer(requested, path, f"{where}'s requested_size", 0, MAX_BYTES)
            if "frames" in block:
                found.blocks.append(_Block(device, addr, size, requested, block["frames"], None))
            else:
                found.blocks.append(_Block(device, addr, size, requested, latest.get("frames"), latest.get("cpp_frames")))
        reserved = _integer(segment.get("total_size", sizes), path, f"{what}'s total_size", 0, MAX_BYTES)
        found.reserved[device] = found.reserved.get(device, 0) + reserved
        found.full[device] = found.full.get(device, True) and full
    return found


@dataclass
class _Annotation:
    name: str
    start_us: float
    end_us: float


def _annotations(snapshot: dict[str, Any], path: str) -> tuple[list[_Annotation], int]:
    """The START/END pairs of `external_annotations` (an END closes the latest open START of its name and
    device), and how many ends or starts have no partner."""
    items = _list(snapshot.get("external_annotations", []), path, "external_annotations")
    if len(items) > MAX_RECORDS:
        raise not_readable(path, f"more than {MAX_RECORDS} annotations")
    open_at: dict[tuple[str, object], list[float]] = {}
    pairs: list[_Annotation] = []
    unpaired = 0
    for k, item in enumerate(items):
        what = f"external_annotations[{k}]"
        annotation = _dict(item, path, what)
        stage = _text(annotation.get("stage"), path, f"{what}'s stage")
        name = _text(annotation.get("name"), path, f"{what}'s name")
        device = _integer(annotation.get("device", 0), path, f"{what}'s device", -1, MAX_DEVICES)
        when = _time(annotation.get("time_us"), path, f"{what}'s time_us")
        starts = open_at.setdefault((name, device), [])
        if stage == ANNOTATION_START:
            starts.append(when)
        elif stage == ANNOTATION_END and starts and starts[-1] <= when:
            pairs.append(_Annotation(name, starts.pop(), when))
        else:
            unpaired += 1
    unpaired += sum(len(starts) for starts in open_at.values())
    pairs.sort(key=lambda a: (a.start_us, -a.end_us))
    return pairs, unpaired


def decode(data: bytes, host: str, path: str) -> HostProfile:
    """One snapshot's bytes, read from `path`."""
    snapshot = _snapshot(data, path)
    entries, total = _entries(snapshot, path)
    segments = _blocks(snapshot, path, total)
    frames = _PythonFrames(path)
    warnings: list[str] = []
    # A trace of only oom or segment entries, or of one allocation or free (PyTorch 2.0 keeps one entry unless told
    # more), makes no window: the live blocks, with their frames, are what there is.
    memory_entries = sum(e.action in MEMORY_ACTIONS for e in entries)
    if memory_entries == 0 or (memory_entries == 1 and segments.blocks):
        profile = _moment(segments.blocks, frames, host, path, warnings, len(entries))
    else:
        profile = _window(snapshot, entries, segments.blocks, frames, host, path, warnings)
    profile.allocators = _infos(profile.events.allocator_names, entries, segments, path)
    if frames.deep:
        warnings.append(f"{path}: {frames.deep} stacks are deeper than {MAX_FRAMES} Python frames; their innermost are kept")
    return profile


def out_of_memory_cause(file_name: str, oom_entries: int, every_segment_full: bool) -> str:
    """Why a device's snapshot is taken to be one of an out-of-memory error ("" when it is not): what says so."""
    if oom_entries:
        return f"its trace records {oom_entries} oom entr{'y' if oom_entries == 1 else 'ies'}"
    if every_segment_full:
        return "every segment of its memory is full"
    if _OOM_NAME.search(file_name):
        return "its file name says so"
    return ""


def _infos(names: list[str], entries: list[_Entry], segments: _Segments, path: str) -> dict[str, AllocatorInfo]:
    """Each device's allocator, with the memory its segments reserve and whether the snapshot is one of an
    out-of-memory error."""
    ooms: dict[int, int] = {}
    last: dict[int, _Entry] = {}  # the latest oom entry of each device: the request that failed
    for entry in entries:
        if entry.action == OOM:
            ooms[entry.device] = ooms.get(entry.device, 0) + 1
            last[entry.device] = entry
    infos = {}
    for name in names:
        device = int(name.split(":", 1)[1])
        cause = out_of_memory_cause(files.basename(path), ooms.get(device, 0), segments.full.get(device, False))
        failed = last.get(device)
        infos[name] = AllocatorInfo(
            name,
            False,
            out_of_memory=cause,
            reserved_bytes=segments.reserved.get(device, 0),
            oom_request_bytes=failed.size if failed is not None and failed.size else None,
            oom_device_free_bytes=None if failed is None else failed.device_free,
        )
    return infos


def _allocators(devices: list[int], path: str) -> tuple[list[str], dict[int, int]]:
    names = [f"{ALLOCATOR_PREFIX}:{d}" for d in sorted(set(devices))]
    limits.check_allocators(len(names), path, not_readable)
    return names, {d: k for k, d in enumerate(sorted(set(devices)))}


def _moment(blocks: list[_Block], frames: _PythonFrames, host: str, path: str, warnings: list[str], entries: int) -> HostProfile:
    """A snapshot without history: each live block an allocation never freed, STRIDE_PS apart."""
    blocks = sorted(blocks, key=lambda b: (b.device, b.addr))
    names, allocator_of = _allocators([b.device for b in blocks], path)
    rows = _Rows()
    for k, block in enumerate(blocks):
        stack, op = frames.stack(block.frames, f"the block at {block.addr:#x}", block.backtrace)
        rows.add(STRIDE_PS * (k + 1), ALLOC, allocator_of[block.device], block.addr, block.requested, block.size, op)
        rows.stacks.append(stack)
    why = (
        "no trace entries (recorded without history, enabled='state'?)"
        if not entries
        # read/ may not use analyses.words' count_of: the two counts are worded here, singular for one.
        else f"{'one trace entry' if entries == 1 else f'{entries} trace entries'} and at most one an allocation or free "
        "(PyTorch 2.0 keeps one unless told more)"
    )
    live = "its one live block is" if len(blocks) == 1 else f"its {len(blocks)} live blocks are"
    warnings.append(f"{path}: the snapshot has {why}: {live} read as one moment")
    events = _columns(rows, names, [0] * len(names), frames.ops.values)
    return HostProfile(
        host,
        path,
        events,
        Steps.empty(),
        STRIDE_PS * (len(blocks) + 1),
        warnings=warnings,
        spans=stack_spans(events.time_ps[events.kind == ALLOC], rows.stacks, frames.names, MAX_FRAMES),
        one_moment=True,
    )


def _clock(entries: list[_Entry], annotations: list[_Annotation], path: str) -> tuple[list[int], float | None]:
    """Each entry's time in ps (entries in time order, at least STRIDE_PS apart), and the earliest time_us when
    the entries carry it."""
    timed = all(e.time_us is not None for e in entries)
    if not timed:
        return _allocation_clock(entries), None
    earliest = min([*(e.time_us or 0 for e in entries), *(a.start_us for a in annotations)])
    latest = max([*(e.time_us or 0 for e in entries), *(a.end_us for a in annotations)])
    if (latest - earliest) * US_TO_PS + STRIDE_PS * len(entries) >= 1 << 62:
        raise not_readable(path, f"its entries span {latest - earliest:g} µs")
    times: list[int] = []
    previous = -STRIDE_PS
    for entry in entries:
        at = max(round(((entry.time_us or 0) - earliest) * US_TO_PS), previous + STRIDE_PS)
        times.append(at)
        previous = at
    return times, earliest


def _allocation_clock(entries: list[_Entry]) -> list[int]:
    """Times for entries without time_us that count allocations: the k-th allocation at k ticks of
    `allocation_tick(entries)`, the other entries after it one ps apart (frees sit between the allocations they
    follow and precede)."""
    tick = allocation_tick(entries)
    times: list[int] = []
    allocations = 0
    at = 0
    for entry in entries:
        if entry.action == ALLOCATE:
            allocations += 1
            at = tick * allocations
        else:
            at += 1
        times.append(at)
    return times


def allocation_tick(entries: list[_Entry]) -> int:
    """The ps of one allocation on the clock of a trace without time_us: STRIDE_PS, or more when more entries lie
    between two allocations than fit in the half of it after the first (its frames nest within STRIDE_PS / 2)."""
    longest = run = 0
    for entry in entries:
        run = 0 if entry.action == ALLOCATE else run + 1
        longest = max(longest, run)
    half = STRIDE_PS // 2
    return STRIDE_PS if longest < half else STRIDE_PS * -(-(longest + half + 1) // STRIDE_PS)


def _ordered(entries: list[_Entry]) -> list[_Entry]:
    if all(e.time_us is not None for e in entries):
        return sorted(entries, key=lambda e: (e.time_us or 0, e.device, e.position))
    return sorted(entries, key=lambda e: (e.device, e.position))


def _window(
    snapshot: dict[str, Any],
    entries: list[_Entry],
    blocks: list[_Block],
    frames: _PythonFrames,
    host: str,
    path: str,
    warnings: list[str],
) -> HostProfile:
    """A snapshot with history: its entries as events over their window."""
    annotations, unpaired = _annotations(snapshot, path)
    entries = _ordered(entries)
    times, earliest = _clock(entries, annotations, path)
    tick = allocation_tick(entries) if earliest is None else None
    if tick is not None:
        warnings.append(
            f"{path}: its trace entries carry no time_us: the clock counts allocations ({tick} ps an allocation, "
            "the frees between them in their order), so time windows count allocations, not time"
        )
        annotations = []
    if unpaired:
        warnings.append(f"{path}: {unpaired} external annotations have no START or END to pair with; they are left out")
    devices = sorted({e.device for e in entries})
    names, allocator_of = _allocators(devices, path)
    completes = {e.device for e in entries if e.action == FREE_COMPLETED}
    requesting = {e.device for e in entries if e.action == FREE_REQUESTED}
    requested_only = sorted(requesting - completes)
    if requested_only:
        listed = ", ".join(names[allocator_of[d]] for d in requested_only)
        warnings.append(f"{path}: {listed} record no free_completed entries: their frees are the free_requested ones")
    walk = _Walk(len(names), {(b.device, b.addr): b for b in blocks})
    for entry, at in zip(entries, times, strict=True):
        free_action = FREE_COMPLETED if entry.device in completes else FREE_REQUESTED
        walk.entry(entry, at, allocator_of[entry.device], free_action, frames)
    rows, start = walk.rows, walk.start
    touched = {(e.device, e.addr) for e in entries}
    untraced = [b for b in blocks if (b.device, b.addr) not in touched and b.device in allocator_of]
    for block in untraced:
        start[allocator_of[block.device]] += block.size
    if walk.freed_before or untraced:
        held = walk.freed_before_bytes + sum(b.size for b in untraced)
        warnings.append(
            f"{path}: {walk.freed_before + len(untraced)} buffers ({held:,} bytes) were live when the trace began, "
            f"allocated before its first entry (its ring buffer keeps the last max_entries): {walk.freed_before} are "
            f"freed in it, {len(untraced)} blocks live at the dump have no entry; the heap starts with them"
        )
    walk.warn(path, warnings)
    events = _columns(rows, names, start, frames.ops.values)
    steps, marker = _steps(annotations, earliest)
    alloc_times = events.time_ps[events.kind == ALLOC]
    end = max([times[-1], *(_ps(a.end_us, earliest) for a in annotations)]) + STRIDE_PS
    return HostProfile(
        host,
        path,
        events,
        steps,
        end,
        warnings=warnings,
        spans=_merge(stack_spans(alloc_times, rows.stacks, frames.names, MAX_FRAMES), _annotation_spans(annotations, earliest)),
        start_time_ns=round(earliest * 1000) if earliest is not None and earliest >= EPOCH_US else None,
        event_clock_ps=tick,
        step_marker=marker,
    )


@dataclass
class _Walk:
    """The pairing of one trace's entries, in time order: allocations by address, and what was live before."""

    allocators: int
    live_blocks: dict[tuple[int, int], _Block]  # (device, address) -> the block there at the dump
    rows: _Rows = field(default_factory=_Rows)
    live: dict[tuple[int, int], int] = field(default_factory=dict)  # -> chunk bytes
    start: list[int] = field(default_factory=list)  # per allocator: the heap before the first entry
    freed_before: int = 0  # frees of buffers allocated before the window
    freed_before_bytes: int = 0
    oom: int = 0
    unknown: int = 0
    reallocated: int = 0

    def __post_init__(self) -> None:
        self.start = [0] * self.allocators

    def entry(self, entry: _Entry, at: int, allocator: int, free_action: str, frames: _PythonFrames) -> None:
        key = (entry.device, entry.addr)
        if entry.action == ALLOCATE:
            block = self.live_blocks.get(key)
            chunk = block.size if block is not None and block.requested == entry.size else rounded(entry.size)
            self.reallocated += key in self.live
            self.live[key] = chunk
            stack, op = frames.stack(entry.frames, f"device_traces[{entry.device}][{entry.position}]", entry.backtrace)
            self.rows.stacks.append(stack)
            self.rows.add(at, ALLOC, allocator, entry.addr, entry.size, chunk, op)
        elif entry.action == free_action:
            chunk = self.live.pop(key, -1)
            if chunk < 0:
                chunk = rounded(entry.size)
                self.start[allocator] += chunk
                self.freed_before += 1
                self.freed_before_bytes += chunk
            self.rows.add(at, FREE, allocator, entry.addr, entry.size, chunk)
        else:
            self.oom += entry.action == OOM
            self.unknown += entry.action not in KNOWN_ACTIONS

    def warn(self, path: str, warnings: list[str]) -> None:
        if self.oom:
            times = "once in the trace (its oom entry)" if self.oom == 1 else f"{self.oom} times in the trace (its oom entries)"
            warnings.append(f"{path}: the allocator ran out of memory {times}")
        if self.unknown:
            which = "one trace entry has" if self.unknown == 1 else f"{self.unknown} trace entries have"
            warnings.append(f"{path}: {which} an action this reader does not know, left out")
        if self.reallocated:
            warnings.append(f"{path}: {self.reallocated} allocations reuse an address whose buffer the trace never freed")


def _columns(rows: _Rows, names: list[str], start: list[int], ops: list[str]) -> MemoryEvents:
    """The events' columns; each allocator's heap is `start` plus its running sum of chunk bytes, raised where a
    hostile file's frees would take it below zero."""
    n = len(rows.time_ps)
    columns: dict[str, np.ndarray] = {name: np.zeros(n, dtype) for name, dtype in EVENT_COLUMNS.items()}
    columns["group_id"][:] = -1
    columns["time_ps"] = np.asarray(rows.time_ps, np.int64).reshape(n)
    columns["kind"] = np.asarray(rows.kind, np.int8).reshape(n)
    allocator = np.asarray(rows.allocator, np.int32).reshape(n)
    columns["allocator"] = allocator
    columns["addr"] = np.asarray(rows.addr, np.uint64).reshape(n)
    columns["requested_bytes"] = np.asarray(rows.tensor, np.int64).reshape(n)
    chunk = np.asarray(rows.chunk, np.int64).reshape(n)
    columns["chunk_bytes"] = chunk
    columns["op"] = np.asarray(rows.op, np.int32).reshape(n)
    signed = np.where(columns["kind"] == ALLOC, chunk, -chunk)
    heap = np.zeros(n, np.int64)
    peak = np.zeros(n, np.int64)
    for a in range(len(names)):
        mine = allocator == a
        if not mine.any():
            continue
        running = np.cumsum(signed[mine])
        heap[mine] = running + max(start[a], -int(running.min()))
        peak[mine] = np.maximum.accumulate(heap[mine])
    columns["heap_bytes"] = heap
    columns["allocator_peak_bytes"] = peak
    return MemoryEvents(**columns, strings=list(ops), allocator_names=names)


def _ps(time_us: float, earliest: float | None) -> int:
    return round((time_us - (earliest or 0)) * US_TO_PS)


def _step_number(name: str) -> int | None:
    number = name[len(STEP_PREFIX) :]
    return int(number) if name.startswith(STEP_PREFIX) and number.isdecimal() and len(number) < 18 else None


def _steps(annotations: list[_Annotation], earliest: float | None) -> tuple[Steps, str]:
    """The steps, and what their markers are called: the `ProfilerStep#N` annotations; else, from the optimizer's
    steps (the most frequent `Optimizer.step#…` name), the training steps each one ends: from the previous one's end
    (the first from the trace's start) to its own, so that a step holds its forward and backward passes."""
    numbered = [(a, _step_number(a.name)) for a in annotations]
    steps = [(_ps(a.start_us, earliest), _ps(a.end_us, earliest), n) for a, n in numbered if n is not None]
    if steps:
        steps.sort()
        start, end, number = (np.asarray(column, np.int64) for column in zip(*steps, strict=True))
        return Steps(number, start, end), STEP_SPAN
    optimizer = [a for a in annotations if a.name.startswith(OPTIMIZER_STEP_PREFIX)]
    if not optimizer:
        return Steps.empty(), STEP_SPAN
    counts: dict[str, int] = {}
    for a in optimizer:
        counts[a.name] = counts.get(a.name, 0) + 1
    name = max(counts, key=lambda n: (counts[n], n))
    ends = sorted(_ps(a.end_us, earliest) for a in optimizer if a.name == name)
    starts = [0, *ends[:-1]]
    return Steps(np.arange(len(ends), dtype=np.int64), np.asarray(starts, np.int64), np.asarray(ends, np.int64)), name


def _annotation_spans(annotations: list[_Annotation], earliest: float | None) -> Spans:
    """The annotations as host root spans on line 0, a step's named ProfilerStep."""
    if not annotations:
        return Spans.empty()
    labels = [STEP_SPAN if _step_number(a.name) is not None else a.name for a in annotations]
    names = sorted(set(labels))
    position = {text: k for k, text in enumerate(names)}
    n = len(annotations)
    return spans_from_rows(
        np.full(n, SPAN_HOST_ROOT, np.int8),
        np.asarray([position[label] for label in labels], np.int32),
        names,
        np.full(n, -1, np.int32),
        np.zeros(n, bool),
        np.asarray([_ps(a.start_us, earliest) for a in annotations], np.int64),
        np.asarray([_ps(a.end_us, earliest) for a in annotations], np.int64),
        np.zeros(n, np.int32),
    )


def _merge(*parts: Spans) -> Spans:
    """Spans of several sources as one (spans_from_rows makes one sorted table of their names)."""
    present = [p for p in parts if len(p)]
    if len(present) <= 1:
        return present[0] if present else Spans.empty()
    offsets = np.cumsum([0, *(len(p.names) for p in present[:-1])])

    def column(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in present])

    return spans_from_rows(
        column("source"),
        np.concatenate([p.name + offset for p, offset in zip(present, offsets.tolist(), strict=True)]).astype(np.int32),
        [name for p in present for name in p.names],
        column("device"),
        column("root"),
        column("start_ps"),
        column("end_ps"),
        column("line"),
    )
