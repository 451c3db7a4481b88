"""Reading one JAX device memory profile (a gzipped pprof Profile) into the model.

JAX writes one sample per set of live buffers that share a Python stack, a
device and a kind (`count` buffers of `bytes` together), with the labels
`kind` ("buffer", "executable") and `device` ("cpu:0"; empty in older JAX:
DEVICE_UNKNOWN), and the stack where they were made (locations, innermost
first, of lines of functions). A snapshot has no time axis and frees nothing,
so each buffer sample that holds bytes becomes one allocation of them all,
live at the end, at a time of its own: the k-th such sample at 1000 * (k + 1)
ps, in the `device` label's allocator, its region the `kind` label, its op
unnamed. An executable's samples are compiled programs' code and constants,
not buffers: each counts its first value's programs (JAX's `allocations`; one
when it has no other value), 0 bytes included (JAX's executables on CPU), per
device in `compiled_programs` and per device and stack in `program_sites`,
apart from the allocators. Buffer samples of 0 bytes hold nothing and are left
out. A stack becomes nested host calls around its sample's
time on line 0, the outermost widest, named as the profiler's Python tracer
names functions: `$<filename>:<first line> <function>` (pprof's whole path,
the function's first line), so that the attribution gives each allocation
the user's frames of its stack.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from google.protobuf.message import DecodeError, Message

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import (
    ALLOC,
    DEVICE_UNKNOWN,
    EVENT_COLUMNS,
    AllocatorInfo,
    CompiledProgramsInfo,
    HostProfile,
    MemoryEvents,
    ProgramSite,
    Spans,
    Steps,
    python_call_name,
)
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.common.interning import Interned
from tb_leakfinder.read.formats.common.rows import stack_spans

# Files larger than this are refused, and so is one that decompresses to more: a gzip bomb stops here.
MAX_FILE_BYTES = 256 << 20
MAX_PROFILE_BYTES = 256 << 20
GZIP_MAGIC = files.GZIP_MAGIC
# Label keys JAX gives each sample, and the value types that say what a sample's values are.
DEVICE_LABEL = "device"
KIND_LABEL = "kind"
EXECUTABLE_KIND = "executable"
BYTES_UNIT = "bytes"
COUNT_UNIT = "count"
SPACE_TYPE = "space"
# Sample k is allocated at (k + 1) * SAMPLE_PS; its stack's calls end within half of that on either side.
SAMPLE_PS = 1000
# The innermost frames of a stack kept: its calls nest within SAMPLE_PS / 2 of the sample's time.
MAX_FRAMES = SAMPLE_PS // 2 - 1
# Synthetic addresses, one per sample: a page apart.
ADDRESS_STRIDE = 1 << 12


def not_readable(path: str, detail: object) -> LeakfinderError:
    """The error for a file that is not a device memory profile, or not a whole one."""
    return LeakfinderError(f"{path}: not a readable device memory profile ({detail})", source=path)


def gunzip(
    data: bytes,
    path: str,
    limit: int = MAX_PROFILE_BYTES,
    refuse: Callable[[str, object], LeakfinderError] = not_readable,
) -> bytearray:
    """The bytes of a gzip file's members; refuses more than `limit` of them before holding more (with `refuse`'s
    error: the format's own words for a file it cannot read)."""
    if not data:
        raise refuse(path, "the file is empty")
    if data[:2] != GZIP_MAGIC:
        raise refuse(path, "not gzip-compressed")
    out = bytearray()
    try:
        for block in files.gunzip_blocks((data,), path, limit, refuse):
            out += block
    except MemoryError as exc:  # below the limit, but more than this machine has free
        raise refuse(path, f"out of memory after decompressing {len(out)} bytes") from exc
    return out


def parse_profile(data: bytes, path: str) -> Message:
    """The Profile in a file's bytes (gzipped)."""
    raw = gunzip(data, path)
    try:
        profile = proto.PprofProfile().FromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise not_readable(path, f"not a pprof Profile: {exc}") from exc
    if not profile.string_table and not profile.sample_type and not profile.sample:
        raise not_readable(path, "the profile is empty")
    return profile


def read_host(path: str, host: str) -> HostProfile:
    """One device memory profile's file into the model; raises LeakfinderError naming the file."""
    return decode(files.read_bytes(path, limit=MAX_FILE_BYTES), host, path)


class _Strings:
    """The profile's string table, each entry decoded once; 0 is "" even in a table without it."""

    def __init__(self, table: list[bytes], path: str) -> None:
        self.table = table
        self.path = path
        self.decoded: dict[int, str] = {0: ""}

    def __call__(self, index: int) -> str:
        text = self.decoded.get(index)
        if text is None:
            if not 0 <= index < len(self.table):
                raise not_readable(self.path, f"string {index} is not in the table of {len(self.table)}")
            text = self.decoded[index] = self.table[index].decode("utf-8", "replace")
        return text


def _bytes_value(profile: Message, string: _Strings, path: str) -> int:
    """Which of a sample's values is its bytes: the sample type in bytes ("space" first)."""
    types = [(string(t.type), string(t.unit)) for t in profile.sample_type]
    in_bytes = [k for k, (_, unit) in enumerate(types) if unit == BYTES_UNIT]
    if not in_bytes:
        listed = ", ".join(f"{kind}/{unit}" for kind, unit in types) or "none"
        raise not_readable(path, f"no sample type counts bytes; its sample types: {listed}")
    return next((k for k in in_bytes if types[k][0] == SPACE_TYPE), in_bytes[0])


def _count_value(profile: Message, string: _Strings) -> int | None:
    """Which of a sample's values counts what it holds (JAX's `allocations/count`); None when none does."""
    units = [string(t.unit) for t in profile.sample_type]
    return next((k for k, unit in enumerate(units) if unit == COUNT_UNIT), None)


class _LocationFrames:
    """Each location's frames as host call names (innermost first), interned in `names`."""

    def __init__(self, profile: Message, string: _Strings, path: str) -> None:
        self.path = path
        self._intern = Interned()
        self.names = self._intern.values
        functions = {f.id: (string(f.filename), string(f.name), f.start_line) for f in profile.function}
        self.locations: dict[int, tuple[int, ...]] = {}
        for location in profile.location:
            frames = []
            for line in location.line:
                function = functions.get(line.function_id)
                if function is None:
                    raise not_readable(path, f"location {location.id} names function {line.function_id}, which it lacks")
                filename, name, start_line = function
                # The line being run when the buffer was made: what a user looks for (the Python tracer, which has
                # only the function's first line, names frames by that instead). A writer that records none: the first.
                at = line.line if line.line > 0 else start_line
                frames.append(self._intern(python_call_name(filename, at, name)))
            self.locations[location.id] = tuple(frames)
        self._stacks: dict[tuple[int, ...], tuple[int, ...]] = {}

    def stack(self, location_ids: tuple[int, ...]) -> tuple[int, ...]:
        """A sample's frames, innermost first: the innermost MAX_FRAMES + 1 at most (only those are ever used, and
        one more says it was deeper), however many times its locations repeat a location of many lines."""
        frames = self._stacks.get(location_ids)
        if frames is None:
            found: list[int] = []
            for location in location_ids:
                mine = self.locations.get(location)
                if mine is None:
                    raise not_readable(self.path, f"a sample names location {location}, which the profile lacks")
                found.extend(mine[: MAX_FRAMES + 1 - len(found)])
                if len(found) > MAX_FRAMES:
                    break
            frames = self._stacks[location_ids] = tuple(found)
        return frames


def decode(data: bytes, host: str, path: str) -> HostProfile:
    """One device memory profile's bytes (gzipped), read from `path`."""
    profile = parse_profile(data, path)
    string = _Strings(list(profile.string_table), path)
    value_at = _bytes_value(profile, string, path)
    count_at = _count_value(profile, string)
    frames = _LocationFrames(profile, string, path)
    warnings: list[str] = []
    sizes: list[int] = []
    devices: list[str] = []
    kinds: list[str] = []
    stacks: list[tuple[int, ...]] = []
    programs: dict[tuple[str, tuple[int, ...]], tuple[int, int]] = {}  # (device, stack) -> its executables' count, bytes
    no_bytes = negative = 0
    for sample in profile.sample:
        if len(sample.value) <= value_at:
            no_bytes += 1
            continue
        size = sample.value[value_at]
        if size < 0:
            negative += 1
            continue
        labels = {string(label.key): label.str for label in sample.label}
        device = string(labels.get(DEVICE_LABEL, 0)) or DEVICE_UNKNOWN
        kind = string(labels.get(KIND_LABEL, 0))
        if kind == EXECUTABLE_KIND:
            # JAX writes one sample per stack, however many programs were compiled there: its count value says.
            count = sample.value[count_at] if count_at is not None and len(sample.value) > count_at else 1
            where = (device, frames.stack(tuple(sample.location_id)))
            had, total = programs.get(where, (0, 0))
            programs[where] = (had + max(count, 0), total + size)
            continue
        if size == 0:  # holds nothing: no allocation to make
            continue
        sizes.append(size)
        devices.append(device)
        kinds.append(kind)
        stacks.append(frames.stack(tuple(sample.location_id)))
    if no_bytes:
        warnings.append(f"{path}: {no_bytes} samples have no bytes value; they are left out")
    if negative:
        warnings.append(f"{path}: {negative} samples have a negative bytes value; they are left out")
    if not sizes:
        warnings.append(f"{path}: the device memory profile holds no live buffers")
    deep = sum(len(s) > MAX_FRAMES for s in stacks)
    if deep:
        warnings.append(f"{path}: {deep} samples' stacks are deeper than {MAX_FRAMES} frames; their innermost are kept")
    events = _events(sizes, devices, kinds, path)
    return HostProfile(
        host,
        path,
        events,
        Steps.empty(),
        SAMPLE_PS * (len(sizes) + 1),
        warnings=warnings,
        spans=_spans(stacks, frames.names),
        allocators={d: _allocator(d) for d in events.allocator_names},
        start_time_ns=int(profile.time_nanos) if profile.time_nanos > 0 else None,
        one_moment=True,
        compiled_programs=_per_device(programs),
        program_sites=[
            ProgramSite(device, tuple(frames.names[f] for f in stack), count, total)
            for (device, stack), (count, total) in programs.items()
        ],
    )


def _per_device(programs: dict[tuple[str, tuple[int, ...]], tuple[int, int]]) -> list[CompiledProgramsInfo]:
    by_device: dict[str, tuple[int, int]] = {}
    for (device, _), (count, total) in programs.items():
        had, held = by_device.get(device, (0, 0))
        by_device[device] = (had + count, held + total)
    return [CompiledProgramsInfo(d, count, total) for d, (count, total) in sorted(by_device.items())]


def _allocator(device: str) -> AllocatorInfo:
    return AllocatorInfo(device, "cpu" in device.lower())


def _events(sizes: list[int], devices: list[str], kinds: list[str], path: str) -> MemoryEvents:
    """One allocation per sample, in sample order; each allocator's heap is the running sum of its samples."""
    n = len(sizes)
    columns: dict[str, np.ndarray] = {name: np.zeros(n, dtype) for name, dtype in EVENT_COLUMNS.items()}
    columns["group_id"][:] = -1
    columns["time_ps"] = SAMPLE_PS * np.arange(1, n + 1, dtype=np.int64)
    columns["kind"][:] = ALLOC
    columns["addr"] = ADDRESS_STRIDE * np.arange(1, n + 1, dtype=np.uint64)
    size = np.asarray(sizes, np.int64).reshape(n)
    columns["requested_bytes"] = size
    columns["chunk_bytes"] = size.copy()
    allocator_names = sorted(set(devices))
    limits.check_allocators(len(allocator_names), path, not_readable)
    allocator = _indexes(devices, allocator_names)
    columns["allocator"] = allocator
    heap = np.zeros(n, np.int64)
    for a in range(len(allocator_names)):
        mine = allocator == a
        heap[mine] = np.cumsum(size[mine])
    columns["heap_bytes"] = heap
    strings = ["", *sorted(set(kinds) - {""})]
    columns["region"] = _indexes(kinds, strings)
    return MemoryEvents(**columns, strings=strings, allocator_names=allocator_names)


def _indexes(values: list[str], table: list[str]) -> np.ndarray:
    position = {text: k for k, text in enumerate(table)}
    return np.fromiter((position[v] for v in values), np.int32, len(values))


def _spans(stacks: list[tuple[int, ...]], names: list[str]) -> Spans:
    return stack_spans(SAMPLE_PS * np.arange(1, len(stacks) + 1, dtype=np.int64), stacks, names, MAX_FRAMES)
