"""Memory events, step markers and step-like spans of one host, as columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_leakfinder.model.columns import ascending, packed_argsort, stable_argsort
from tb_leakfinder.model.recordings import Recordings

ALLOC = 0
FREE = 1

# Column name -> dtype of MemoryEvents; readers fill exactly these.
EVENT_COLUMNS: dict[str, type] = {
    "time_ps": np.int64,
    "kind": np.int8,
    "allocator": np.int32,
    "addr": np.uint64,
    "requested_bytes": np.int64,
    "chunk_bytes": np.int64,
    "heap_bytes": np.int64,
    "stack_bytes": np.int64,
    "free_bytes": np.int64,
    "allocator_peak_bytes": np.int64,
    "fragmentation": np.float64,
    "op": np.int32,
    "shape": np.int32,
    "region": np.int32,
    "dtype": np.int32,
    "group_id": np.int64,
    "line": np.int32,
}


@dataclass(eq=False)
class MemoryEvents:
    """Every allocation and free of a host's allocators: each allocator's in time order, and the host's either
    all in time order or grouped by allocator in index order.

    Readers hand whichever costs them less: a format whose events come in time
    order keeps that order, and the pipeline groups them (`grouping_order`);
    XProf's reader, which reorders its events anyway, puts them straight into
    groups (`event_order`), so that every column is gathered once rather than
    twice. What needs the host's time order (`find_steps`) reads the time
    column as its runs in time order.

    Times are picoseconds from the start of the profile window. String columns
    (`op`, `shape`, `region`, `dtype`: the dtype's name, "float") index into
    `strings`, where index 0 is "" (none recorded); each format maps its own
    codes into these. `allocator` indexes `allocator_names`, each allocator's
    key as its format gives it (XProf's memory id: the last of `index_on_host` /
    `device_ordinal` (decimal) or `allocator_name` on the event, "" when none).
    `free_bytes` is 0 and `group_id` -1 when the event has none. `line` is the
    position of the event's line (its thread) among its plane's lines, as
    Spans.line; -1 when its format has no threads.
    """

    time_ps: np.ndarray
    kind: np.ndarray
    allocator: np.ndarray
    addr: np.ndarray
    requested_bytes: np.ndarray
    chunk_bytes: np.ndarray
    heap_bytes: np.ndarray
    stack_bytes: np.ndarray
    free_bytes: np.ndarray
    allocator_peak_bytes: np.ndarray
    fragmentation: np.ndarray
    op: np.ndarray
    shape: np.ndarray
    region: np.ndarray
    dtype: np.ndarray
    group_id: np.ndarray
    line: np.ndarray
    strings: list[str] = field(default_factory=lambda: [""])
    allocator_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.time_ps.shape[0])

    @classmethod
    def empty(cls) -> MemoryEvents:
        columns: dict[str, Any] = {name: np.zeros(0, dtype) for name, dtype in EVENT_COLUMNS.items()}
        return cls(**columns)

    def take(self, index: np.ndarray) -> MemoryEvents:
        """The events at `index` (a boolean mask or positions), same tables."""
        columns = {name: getattr(self, name)[index] for name in EVENT_COLUMNS}
        return MemoryEvents(**columns, strings=self.strings, allocator_names=self.allocator_names)


def event_order(time_ps: np.ndarray, allocator: np.ndarray, count: int) -> np.ndarray | None:
    """The permutation that puts a host's events (of `count` allocators) in the order a reader hands them when it
    reorders them anyway: grouped by allocator, each allocator's in time order (ties in row order); None when they
    are in it already."""
    descents = int(np.count_nonzero(time_ps[1:] < time_ps[:-1]))
    if descents and count > 1:
        # Allocator, time and row packed into one key where they fit, and sorted once.
        order = packed_argsort(time_ps, allocator, count)
        if order is not None:
            return order
    time_order = None
    if descents:
        # A reader's lines come one after another, each in time order: two lines make two runs, which numpy's stable
        # sort (a timsort) merges in one pass, faster than a whole sort; more runs take it more passes.
        time_order = np.argsort(time_ps, kind="stable") if descents == 1 else stable_argsort(time_ps)
    return grouping_order(allocator, count, time_order)


def grouping_order(allocator: np.ndarray, count: int, order: np.ndarray | None = None) -> np.ndarray | None:
    """The permutation that groups events by allocator (`count` of them) in index order, after `order` (None: as
    they are), keeping their order within each allocator: `order` itself when it groups them already."""
    if count <= 1 or (order is None and ascending(allocator)):
        return order
    # A stable sort keeps the order within each allocator; on 16-bit keys numpy's is a radix sort.
    keys = allocator.astype(np.int16) if count <= np.iinfo(np.int16).max else allocator
    if order is not None:
        keys = keys[order]
        if ascending(keys):
            return order
    grouping = np.argsort(keys, kind="stable")
    del keys
    if order is None:
        return grouping
    # Composed in the grouping's own memory, not in fresh pages: take reads each index before it writes over it
    # (numpy copies `out` first only where it overlaps the array taken from).
    return np.take(order, grouping, out=grouping, mode="clip")


@dataclass(eq=False)
class Steps:
    """Step markers (`step_num` events), sorted by start time."""

    step_num: np.ndarray  # int64
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64

    def __len__(self) -> int:
        return int(self.step_num.shape[0])

    @classmethod
    def empty(cls) -> Steps:
        z = np.zeros(0, np.int64)
        return cls(z, z.copy(), z.copy())


# Spans.source: where a candidate step span comes from.
SPAN_HOST_ROOT = 0  # a /host:CPU root event (`_r`) or a call XProf groups by: TraceContext, FunctionRun, ...
SPAN_DEVICE_PROGRAM = 1  # an event of a device plane's `XLA Modules` line: one program execution
SPAN_DEVICE_STEP = 2  # an event of a device plane's `Steps` line
# A host call that says what an allocation inside it is for: a Python function the profiler's Python tracer
# recorded ("$train.py:42 train_step"), or a runtime call that moves data to a device (DevicePut, ...).
SPAN_HOST_CALL = 3
# A runtime call of one program execution (PJRT's `ExecuteHelper` > `EnqueueExecution` > `Build buffer
# allocations`, `<module>:XLA GPU module`, TPU's `ExecutePrepare`, the calls that enqueue it on a device), or a
# kernel launch that names its program by a `program_id` stat: what ties an allocation to its execution.
SPAN_HOST_RUNTIME = 4
# How every format names its host calls: a Python function "$<file>:<line> <function>" (the Python tracer's
# convention, which the attribution parses), or a runtime transfer, named by one of TRANSFER_NAMES or containing
# one of TRANSFER_PARTS.
PYTHON_CALL_PREFIX = "$"
TRANSFER_NAMES = ("DevicePut",)
TRANSFER_PARTS = ("BufferFromHostBuffer", "LinearizeHostBuffer", "TransferToDevice", "TransferLiteralToDevice")


# A host call in which a model class's method runs (PyTorch's `nn.Module: Owlv2Attention_0` events):
# `$class Owlv2Attention`. The Python frame it encloses first is that class's.
MODULE_CALL_PREFIX = f"{PYTHON_CALL_PREFIX}class "


def module_call_name(class_name: str) -> str:
    return f"{MODULE_CALL_PREFIX}{class_name}"


RUNTIME_PARTS = (
    "LoadedExecutable::Execute",
    "::EnqueueExecution",
    "Build buffer allocations",
    ":XLA GPU module",
    "ExecutePrepare",
    "AllocateOutputBufferWithInputReuse",
    "tpu::System::Execute",
    "DoEnqueueProgram",
)
# Spans.flow_out / flow_in / program_id of a span without that stat.
NO_FLOW = 0
NO_PROGRAM_ID = -1


def is_runtime_name(name: str) -> bool:
    """Whether a host event of this name is a runtime call of a program execution (SPAN_HOST_RUNTIME)."""
    return any(part in name for part in RUNTIME_PARTS)


def python_call_name(file: str, line: int | str, function: str) -> str:
    """A Python function's host call name, as the Python tracer writes it."""
    return f"{PYTHON_CALL_PREFIX}{file}:{line} {function}"


# PyTorch's python_function events name a frame by its function's first line (or, for a frame running when the
# profiler started, the line it was at then), never the line that called an op. The capture helper marks each torch
# call from Python with the line its caller runs (a record_function, category user_annotation, named
# "tb_leakfinder line <file>(<line>): <function>"); the reader keeps each as a host call named by LINE_CALL_PREFIX.
LINE_MARK_PREFIX = "tb_leakfinder line "
LINE_CALL_PREFIX = "@"


def line_call_name(file: str, line: int | str, function: str) -> str:
    """A line mark's host call name: "@/src/train.py:42 train_step" (analyses/frames gives its line to its frame)."""
    return f"{LINE_CALL_PREFIX}{file}:{line} {function}"


def is_transfer_name(name: str) -> bool:
    """Whether a host call of this name is a runtime call that copies host data to a device."""
    return name in TRANSFER_NAMES or any(part in name for part in TRANSFER_PARTS)


@dataclass(eq=False)
class Spans:
    """Candidate step spans, sorted by start (then end, source, device, name, root, line).

    `name` indexes `names` (sorted); `device` indexes HostProfile.device_planes,
    -1 on the host; `root` is True where the event carried a nonzero integer
    `_r` stat; `line` is the position of a host span's line (its thread) among
    the /host:CPU plane's lines, -1 on devices. Times are in
    MemoryEvents.time_ps's time base. `flow_out` / `flow_in` are the event's flow
    ids (the producer's `_p`, the consumer's `_c`: equal ids tie two events on
    any lines or planes), NO_FLOW when none; `program_id` is its `program_id`
    stat (a kernel launch's), NO_PROGRAM_ID when none.
    """

    source: np.ndarray  # int8, SPAN_*
    name: np.ndarray  # int32
    device: np.ndarray  # int32
    root: np.ndarray  # bool
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    line: np.ndarray  # int32
    flow_out: np.ndarray  # int64
    flow_in: np.ndarray  # int64
    program_id: np.ndarray  # int64
    names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.start_ps.shape[0])

    @classmethod
    def empty(cls) -> Spans:
        z = np.zeros(0, np.int64)
        i32 = np.zeros(0, np.int32)
        return cls(
            np.zeros(0, np.int8), i32, i32.copy(), np.zeros(0, bool), z, z.copy(), i32.copy(), z.copy(), z.copy(), z.copy()
        )


@dataclass(eq=False)
class Groups:
    """Extent of each `group_id` seen on /host:CPU events: the earliest start and latest end, sorted by start."""

    group_id: np.ndarray  # int64
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64

    def __len__(self) -> int:
        return int(self.group_id.shape[0])

    @classmethod
    def empty(cls) -> Groups:
        z = np.zeros(0, np.int64)
        return cls(z, z.copy(), z.copy())


# AllocatorInfo.free_bytes_of, and which limit a forecast ran against (Forecast.limit).
LIMIT_ALLOCATOR = "allocator"  # the allocator's own limit (BFC's memory limit)
LIMIT_DEVICE = "device"  # the device's memory
LIMIT_MACHINE = "machine"  # the physical memory of the machine, for an allocator of host memory
# HostProfile.machine_memory_of: whose physical memory machine_memory_bytes is.
MACHINE_PROFILED = "profiled_host"  # the profile records its host's
MACHINE_READER = "reader"  # the profile does not: the machine that read it (the CLI's, TensorBoard's)

# How an allocator whose events carry no key for it is named.
NO_ALLOCATOR_KEY = "(no memory id)"


@dataclass
class AllocatorInfo:
    """What a profile's format says of one allocator, beyond its events."""

    label: str  # how users name it: "TPU:2", "GPU:0", else its memory id
    host_memory: bool  # hands out host RAM (pinned for a device, or a CPU allocator), not device memory
    partial: str | None = None  # why its events cover only part of what it allocates, when they do
    # What says the capture was taken at an out-of-memory error ("every segment of its memory is full"), "" if not.
    out_of_memory: str = ""
    reserved_bytes: int = 0  # the memory its pools held from the device at the capture's end, 0 when not known
    oom_request_bytes: int | None = None  # what the request that failed asked for, when the capture records it
    oom_device_free_bytes: int | None = None  # what the device had free then, when recorded
    guessed_pairs: str | None = None  # how its frees were paired with allocations by a guess, when they were
    # Whose memory its events' free bytes are: the allocator's own limit (a BFC allocator's bytes_available) or the
    # device's (a CUDA device's totalGlobalMem less what PyTorch's allocator holds): LIMIT_*.
    free_bytes_of: str = "allocator"
    # Its heap counts only what was allocated while a profiler recorded (PyTorch's CPU `Total Allocated`): what is
    # freed while none records is never taken off, so one capture's heap does not continue the last one's.
    profiled_heap: bool = False
    # What verdict sentences call it when its label is a raw memory id: the memory it hands out and that id, as XProf's
    # Memory Profile lists it ("CPU allocator (bfc_cpu_allocator_for_gpu)"); "" for "the <label> allocator".
    spoken: str = ""


@dataclass(frozen=True)
class CompiledProgramsInfo:
    """A device's compiled programs in a device memory profile: their code and constants, not buffers."""

    device: str  # its allocator's key ("gpu:0", DEVICE_UNKNOWN)
    count: int
    bytes: int


@dataclass(frozen=True)
class ProgramSite:
    """The compiled programs of one device made at one Python stack (where `jax.jit` compiled them), as a device
    memory profile counts them: a program compiled again each step from one line makes its count grow."""

    device: str  # its allocator's key, as CompiledPrograms'
    stack: tuple[str, ...]  # host call names (`python_call_name`), innermost first
    count: int
    bytes: int  # 0 on CPU: there a program's code is not device memory


# How a device memory profile's sample without a device label (older JAX) names its device.
DEVICE_UNKNOWN = "device unknown"


@dataclass
class HostProfile:
    """What one host's file (a `<host>.xplane.pb`, a device memory profile, a PyTorch trace) holds that tb_leakfinder uses."""

    host: str
    path: str
    events: MemoryEvents
    steps: Steps
    duration_ps: int
    hlo_protos: dict[str, bytes] = field(default_factory=dict)  # "<module>(<id>)" -> serialized HloProto
    warnings: list[str] = field(default_factory=list)
    device_planes: list[str] = field(default_factory=list)  # "/device:TPU:2", ... in file order
    spans: Spans = field(default_factory=Spans.empty)
    groups: Groups = field(default_factory=Groups.empty)
    allocators: dict[str, AllocatorInfo] = field(default_factory=dict)  # memory id -> what its format says of it
    # When the capture began, in ns since the epoch, when its format records it (a device memory profile's
    # time_nanos); None: the history takes the file's mtime less the duration.
    start_time_ns: int | None = None
    # The clock is the allocations' order, not time: this many ps an allocation (a PyTorch memory snapshot without
    # time_us; its frees lie between the allocations they follow and precede).
    event_clock_ps: int | None = None
    one_moment: bool = False  # the buffers live at one moment (a device memory profile), not events over a window
    compiled_programs: list[CompiledProgramsInfo] = field(default_factory=list)  # by device, apart from the buffers
    program_sites: list[ProgramSite] = field(default_factory=list)  # the same programs by where they were compiled
    # What the format's step markers are called, for sentences ("10 steps from ProfilerStep markers").
    step_marker: str = "step_num"
    # The physical memory of the machine whose host memory its host-memory allocators hand out, 0 when not known,
    # and whose it is (MACHINE_*): the profile's own record of its host, else the machine that read it.
    machine_memory_bytes: int = 0
    machine_memory_of: str = ""
    # The registry name of the format that read it ("xplane", "pprof", "torch_trace"): the engine sets it, for the
    # views that offer what only one format has (XProf's tools, its capture advice).
    format: str = ""
    # The framework whose allocator its memory events are ("PyTorch"), when its format or file tells, for the verdicts'
    # "whose memory": the engine sets it from the format's hints; an XSpace, which TensorFlow or JAX may write, from
    # what the file says (xplane/labels.framework_of), else "".
    framework: str = ""
    # What one of its live entries is called when counted ("buffer", "buffer group"): the engine sets it from the
    # format's hints, for the sentence of a file of one moment.
    live_entry: str = "buffer"
    # What the capture helper recorded beside the profile (docs/recordings.md), and that file's path: the engine
    # reads it with the host; None and "" without one, or when it could not be read (a warning then says why).
    recordings: Recordings | None = None
    recordings_file: str = ""
