"""Every JSON object the routes answer and the CLI's `--json` prints, declared once.

Each object is a `TypedDict`: the serializers (`serialize.py`) return them, so mypy holds the keys and their
types to these declarations; the disk cache's shape check (`shape.py`), the frontend's wire types
(`frontend/src/wire.ts`) and the field tables of `docs/http_api.md` are derived from them
(`tools/gen_wire_types.py`). A field's one-line documentation is its `Annotated` string; a class's is its
docstring; a named choice of strings (`Verdict`) is documented by the string statement after it.

A class whose name starts with `_` holds the keys every object of a kind has, under one that adds optional keys
(`total=False`): the wire types flatten it into its subclass.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple, TypedDict

from tb_leakfinder.analyses.buffer_paging import MAX_PAGE

Verdict = Literal["leak", "no_leak", "inconclusive"]
"""The worst first: `leak` > `inconclusive` > `no_leak`."""
LeakKind = Literal["growing", "persistent", "bounded", "window_end"]
"""growing: its live bytes keep rising to the end (a leak); bounded: they stopped rising or fell back; persistent:
made early and kept; window_end: made in the last step."""
CauseId = Literal[
    "graph_kept",
    "regrown",
    "optimizer_per_step",
    "modules_per_step",
    "cache_per_step",
    "variable_per_step",
    "recompile_per_step",
]
"""Why a leaking family is likely never freed (docs/causes.md has one section each): graph_kept: a forward's
activations kept by an autograd graph that outlives the step; regrown: one buffer freed and made again larger every
step; optimizer_per_step: an optimizer's state made again each step; modules_per_step: new parameters (and their
gradients) each step; cache_per_step: a cache that gains an entry each step; variable_per_step: a tf.Variable made
each step; recompile_per_step: a function compiled again each step (a history series' compiled programs multiply)."""
BufferStatus = Literal["freed", "never_freed", "before_window"]
SiteContext = Literal["program", "transfer", "outside", ""]
"""What the host was doing when buffers were made: running a compiled program, copying host data to the device, or
neither; "" when the profile tells only the framework's op or frames."""
SiteMatch = Literal["exact", "ambiguous", "near", "none", "no_hlo", ""]
"""How an allocation made in a program was tied to one of the program's buffers: `exact` (one buffer has its size,
or allocation order and lifetime settle it), `ambiguous` (several do: `candidates` names them, `buffer` is the one
taken in order), `near` (none has it exactly and a temporaries block a few KiB off is taken, or the program was
found by time alone), `none` (no buffer comes close), `no_hlo` (the program's HLO is not in the profile); "" outside
a program."""
NearBy = Literal["time", "size", "time_and_size", ""]
"""The evidence a `near` match rests on: `time` (the program was found by time alone: the one running on the
allocation's own device then), `size` (the program is known from its execution, but none of its buffers has the
allocation's size: a temporaries block a few KiB off is taken), `time_and_size` (both); "" for any other match."""
BreakdownCategory = Literal["buffers", "stack", "before_window"]
"""`buffers`: a family of buffers live at the peak; `stack`: the stack reservation; `before_window`: heap no buffer
of the window explains."""
StepSourceKind = Literal["step_num", "group_id", "root_events", "device_programs", "time_windows", "none"]
WholeProgramReason = Literal["parameter", "live_out", "constant", "thread_local", "never_freed"]
FamilyStatus = Literal["new", "grown", "shrunk", "fixed", "unchanged"]
CaptureKind = Literal["profile", "one_moment"]
"""`profile`: memory events over a window; `one_moment`: a device memory profile's live buffers."""
ProcessMeasure = Literal["rss", "uss", "pss"]
"""What a process's memory is followed by: `rss` its resident pages, `uss` its private ones, `pss` its share of them."""
HolderKind = Literal[
    "list",
    "dict_entry",
    "attribute",
    "class_attribute",
    "default_argument",
    "closure",
    "frame_local",
    "global",
    "module",
    "buffer",
    "autograd_graph",
    "variable",
]
"""Where a holder's reference lives: an element of a list, tuple, deque or set; a dict's value
(`metrics['loss_map']`); an instance attribute (`model.heads`); a class's attribute (`ScaledSiLU.cache`); a
function's mutable default argument; a closure cell; a local of a running function (`train()`'s `total`); a
module-level name; a torch.nn.Module's parameter or submodule; its registered buffer; the tensors an autograd graph
saved, reached from a live tensor's grad_fn; a tf.Variable's value."""
HolderMatch = Literal["address", "shape"]
"""How a holder's buffers were matched to the objects it holds: `address`, an object's buffer address is the buffer's;
`shape`, no address matched (TensorFlow or JAX on a GPU) and its objects were matched by shape and dtype: its count
and bytes are exact, but which of that shape's buffers it keeps is not known."""
SearchStatus = Literal["complete", "partial", "failed"]
"""How the search for holders ended: `complete`; `partial`, a bound (objects visited, time) was hit, so what it found
is true but not everything; `failed`, its error is the `warning`."""
TimeSource = Literal["profile", "session_name", "file_mtime"]
"""Where a capture's time came from: the capture itself, its session folder's name, or its file's mtime."""
RateBasis = Literal["between_captures", "within_captures"]
"""What a history's rates are fitted to: `between_captures`, its measure from one capture to the next;
`within_captures`, what each capture kept within its own window, for a heap that counts only what a capture saw
allocated (PyTorch's CPU heap), whose captures never continue one another."""


class ErrorAnswer(TypedDict):
    """What a route answers with an error status: 4xx for bad input, 503 while still analysing, 500 (a generic
    message) for a failure of its own."""

    error: Annotated[str, "what is wrong, naming the argument, run or file"]


class UnreadableFile(TypedDict):
    """A file that could not be read (truncated, corrupt, empty, over a limit, a dangling or looping link); the
    other files are still reported."""

    run: Annotated[str, "the discovered run (session) it belongs to"]
    host: Annotated[str, "its host in that run"]
    file: Annotated[str, "its path, as discovered"]
    reason: Annotated[str, "why it could not be read: its error message without the path it opens with"]


class RunEntry(TypedDict):
    run: Annotated[str, "a discovered run: `<tb_run>/<session>`, or `<session>` at the logdir's top"]
    hosts: Annotated[list[str], "its hosts, one per profile file"]
    errors: Annotated[list[UnreadableFile], "its files found unreadable by an earlier request and unchanged since"]


class FormatListing(TypedDict):
    """A format tb_leakfinder reads, for a logdir where no profile is found: how to record one and where it goes."""

    name: Annotated[str, 'one file\'s kind: "XProf profile", "PyTorch profiler trace"']
    capture: Annotated[str, "how to record a profile of this format; `code` in backticks"]
    layout: Annotated[str, 'where its files go under the logdir: "<run>/plugins/profile/<session>/<host>.xplane.pb"']


class RunsAnswer(TypedDict):
    """`GET runs`."""

    runs: list[RunEntry]
    formats: Annotated[list[FormatListing], "every format read, in the order files are sniffed"]


class Step(TypedDict):
    step: Annotated[int, "the step's number, as its source numbers it"]
    start_ps: Annotated[int, "when it began, ps from the profile's start"]
    end_ps: Annotated[int, "when it ended"]


class Site(TypedDict):
    """Where buffers were made, as far as the profile tells (tb_leakfinder/model/sites.py)."""

    context: SiteContext
    program: Annotated[str, 'the program\'s key as the static view lists it ("jit_dot(49)"); "" when none']
    buffer: Annotated[str, 'the program buffer: "output 0", "parameter 1", "temporaries (2 buffers)"; "" when none']
    allocation: Annotated[int, "the program's buffer allocation index (the static view's `allocation`); -1 when none"]
    hlo_op: Annotated[str, 'the HLO instruction\'s op ("dot_general")']
    op_name: Annotated[str, 'the framework\'s scope of it ("jit(dot)/dot_general")']
    hlo_shape: Annotated[str, 'the HLO instruction\'s shape ("f32[1024,1024]")']
    source: Annotated[str, "the instruction's source file and line, the full path"]
    match: SiteMatch
    near_by: NearBy
    model_frame: Annotated[str, 'the innermost frame of a model library below the user\'s line; "" when none']
    candidates: Annotated[list[str], "the program buffers it could be, when more than one has its size"]
    stack: Annotated[list[str], 'the user\'s Python frames, innermost first: "train.py:42 in train_step"']


class Cause(TypedDict):
    """A leaking family's likely cause, read from the profile alone (the ops and calls around its never-freed
    buffers); given only when that evidence is there (tb_leakfinder/analyses/causes.py)."""

    id: Annotated[CauseId, "its section of docs/causes.md: `docs/causes.md#<id>`"]
    evidence: Annotated[str, "what in the profile shows it, in words"]
    fix: Annotated[str, "the change that usually fixes it, in one sentence"]


class Holder(TypedDict):
    """A reference in the training process that keeps some of a family's never-freed buffers alive, found by the
    capture helper (docs/recordings.md) and matched to the family by the buffers' addresses."""

    path: Annotated[str, 'the access path in the user\'s terms: "model.heads", "metrics[\'loss_map\']", "total"']
    kind: HolderKind
    type: Annotated[str, 'the holder\'s type: "ModuleList", "list", "Tensor"']
    count: Annotated[int, "how many of the family's never-freed buffers it keeps (of the family's `count`)"]
    requested_bytes: Annotated[int, "their tensor bytes"]
    chunk_bytes: Annotated[int, "their chunk bytes"]
    all_listed: Annotated[bool, "false when the companion file listed only some of its buffers: `count` is then a floor"]
    created: Annotated[str, 'where the holder was made: "train.py:40 in train"; "" when not known']
    created_text: Annotated[str, 'that line\'s text, recorded at capture time; "" when not recorded']
    match: HolderMatch


class HolderSearch(TypedDict):
    """How the capture helper's search for holders went on this host, as its companion file says."""

    status: SearchStatus
    warning: Annotated[str, 'why it is partial or failed; "" when complete']
    objects_visited: Annotated[int, "the Python objects it walked"]
    elapsed_s: Annotated[float, "how long it took, in seconds"]
    num_holders: Annotated[int, "holders it found, in every family"]
    unmatched_count: Annotated[
        int, "never-freed buffers of the window held by no reference it found (the ambiguous not among them)"
    ]
    unmatched_bytes: Annotated[int, "their bytes"]
    ambiguous_count: Annotated[
        int, "never-freed buffers whose shape and dtype more live objects share than there are buffers: no holder named"
    ]
    ambiguous_bytes: Annotated[int, "their bytes"]
    not_in_profile: Annotated[int, "addresses its holders list that are no never-freed buffer of this profile"]


class Family(TypedDict):
    """One op family of an allocator: the buffers of one (op, dtype, region) that outlive a step or are never
    freed. `kind` is judged from the family's live bytes at step boundaries; `count`, the bytes and the step figures
    describe its never-freed buffers."""

    family: Annotated[int, "its index: the `family` argument of `timeline` and `buffers`"]
    op: Annotated[str, "the op that made its buffers"]
    shape: Annotated[str, 'the shape pattern: "[128,1024]" when all agree, "[32,*]" when a dimension varies']
    dtype: str
    region: str
    label: Annotated[str, 'the family in words, as every view puts it: "Mean [32,*] output, 12 shapes"']
    num_shapes: Annotated[int, "distinct shapes among its never-freed and step-outliving buffers"]
    latest_shape: Annotated[str, "the shape of its newest never-freed buffer (of its newest when none is)"]
    kind: LeakKind
    count: Annotated[int, "never-freed buffers"]
    requested_bytes: Annotated[int, "tensor bytes of the never-freed buffers (what the program asked for)"]
    chunk_bytes: Annotated[int, "the allocator's chunk bytes of the never-freed buffers"]
    steps: Annotated[int, "steps that left never-freed buffers behind, first and last by step number"]
    first_step: Annotated[int | None, "the first step that left one behind; null when none did"]
    last_step: int | None
    onset_step: Annotated[int | None, "the step from which a growing family grows; null for the other kinds"]
    growth_steps: Annotated[int, "steps from the onset on in which its live bytes rose"]
    regrown: Annotated[bool, "grows by freeing one buffer and making it again larger"]
    bytes_per_step: Annotated[float, "tensor bytes per step its live bytes grow, from its onset on (0 unless growing)"]
    chunk_bytes_per_step: Annotated[float, "the same in the allocator's chunk bytes"]
    score: Annotated[float, "how strongly it looks like the leak, 0 to 1: families are listed highest first"]
    where: Annotated[str, 'the line of code its first buffer was made at ("train.py:42 in train_step"); "" unknown']
    where_text: Annotated[str, 'that line\'s text, from the companion file (or, in the CLI, the local file); "" unknown']
    site: Site
    holders: Annotated[list[Holder], "the references that keep its never-freed buffers, most first, at most 20; [] unknown"]
    cause: Annotated[Cause | None, "its likely cause; null unless it grows on a leaking allocator and the profile shows one"]


class BreakdownRow(TypedDict):
    """A part of the heap at the peak: a family of live buffers of one (op, shape, dtype, region), the stack
    reservation, or the heap no buffer of the window explains."""

    category: BreakdownCategory
    op: str
    shape: str
    dtype: str
    region: str
    count: Annotated[int | None, "null on the stack and before-window rows, which are not buffers"]
    bytes: int
    where: Annotated[str, 'where its first buffer was made ("" and an empty site on the stack and before-window rows)']
    site: Site


ForecastLimit = Literal["allocator", "device", "machine"]
"""What a forecast runs against, the smallest that applies: `allocator` (its own limit: BFC's memory limit),
`device` (the device's memory: a CUDA device's `totalGlobalMem` in a PyTorch trace), `machine` (for host memory, the
machine's physical memory: its host's when the profile records it, else the machine that read the profile)."""


class Forecast(TypedDict):
    """When the allocator runs out at the measured growth, from what is still free at window end of the smallest
    limit that applies."""

    limit: ForecastLimit
    limit_bytes: Annotated[int, "the whole of that limit: the allocator's capacity, the device's or the machine's memory"]
    bytes_available: Annotated[int, "free at window end, of that limit"]
    growth_bytes_per_step: Annotated[float, "the leak rate it extrapolates"]
    steps_to_oom: int
    step_duration_ps: Annotated[int, "the median from one step's start to the next; 0 when unknown"]
    seconds_to_oom: Annotated[float | None, "null when the step duration is unknown"]
    description: Annotated[str, '"At +512 KiB/step the 15.2 GiB still free runs out in about 31,000 steps (…)."']


class HeldAtError(TypedDict):
    """Where memory held at an out-of-memory error was made: the frame that tells its buffers apart, else the op,
    else what the capture could not name."""

    where: Annotated[str, "the frame that tells its buffers apart (below a helper many share), else their op"]
    bytes: int
    count: Annotated[int, "buffers; 0 for the memory held from before the trace began"]
    stack: Annotated[list[str], "the user's frames of its largest buffer, innermost first; [] when none"]


class OutOfMemory(TypedDict):
    """What held an allocator's memory when the capture was taken at an out-of-memory error."""

    cause: Annotated[str, 'what says the capture was taken at one: "its trace records 1 oom entry"']
    held_bytes: Annotated[int, "in use at the error: the heap at the capture's end"]
    capacity_bytes: Annotated[int, "what the allocator had reserved from the device (at least held_bytes)"]
    held_at_error: Annotated[list[HeldAtError], "by where it was made, largest first, at most 10; a last row folds the rest"]
    description: str
    request_bytes: Annotated[int | None, "what the failed request asked for; null when the capture does not say"]
    device_free_bytes: Annotated[int | None, "what the device had free at the error; null when not recorded"]
    reserved_free_bytes: Annotated[int, "reserved by the allocator but held by no buffer (cached, fragmented)"]


class AllocatorReport(TypedDict):
    memory_id: Annotated[str, "the key XProf's Memory Profile lists the allocator under"]
    allocator: Annotated[str, "a readable label: `TPU:2`, `GPU:0`, else its memory id"]
    num_allocations: Annotated[int, "allocation events in the window"]
    num_deallocations: Annotated[int, "deallocation events in the window"]
    balance: Annotated[int, "allocations less deallocations"]
    peak_bytes_in_use: Annotated[int, "stack reserved + heap in use at the peak (XProf's peakBytesInUse)"]
    peak_heap_bytes: Annotated[int, "heap in use at the peak"]
    peak_stack_reserved_bytes: Annotated[int, "stack reserved at the peak"]
    memory_capacity_bytes: Annotated[int, "reserved + in use + available at the peak; 0 when the profile does not say"]
    peak_time_ps: Annotated[int | None, "when the peak was, ps from the profile's start; null with no events"]
    peak_step: Annotated[int | None, "the step the peak fell in; null outside every step"]
    peak_fragmentation: Annotated[float, "the allocator's fragmentation at the peak, 0 to 1"]
    peak_before_window_bytes: Annotated[int, "heap at the peak that no buffer allocated in the window explains"]
    never_freed_count: Annotated[int, "buffers allocated in the window and still live at its end"]
    never_freed_bytes: Annotated[int, "their chunk bytes"]
    never_freed_requested_bytes: Annotated[int, "their tensor bytes: the figure shown, chunks beside it where they differ"]
    freed_before_window_count: Annotated[int, "buffers allocated before the window began and freed in it"]
    growth_bytes_per_step: Annotated[float, "slope of the heap in use at step ends, over all steps: not a leak rate"]
    leak_bytes_per_step: Annotated[float, "the growing families' tensor bytes per step summed; 0 unless it leaks"]
    heap_start_bytes: Annotated[int, "the heap in use when the capture window began (before its first event)"]
    heap_end_bytes: Annotated[int, "the heap in use when the window ended"]
    heap_floor_bytes: Annotated[int, "the least it held at any moment of the window: what outlives every step"]
    verdict: Verdict
    reason: Annotated[str, "the verdict in a sentence, naming the top growing family and its rate"]
    forecast: Annotated[Forecast | None, "when it runs out at the leak rate; null unless it leaks with memory free at window end"]
    out_of_memory: Annotated[OutOfMemory | None, "null unless the capture was taken at an out-of-memory error"]
    fragmentation_note: Annotated[str | None, "a sentence when free memory at the peak is too scattered; else null"]
    warnings: Annotated[list[str], "what limits the analysis of this allocator (events missing, pairs guessed)"]
    families: Annotated[list[Family], "its op families, the likeliest leak first"]
    peak_breakdown: Annotated[list[BreakdownRow], "rows add up to `peak_bytes_in_use`"]
    stack_hint: Annotated[str | None, "how to get Python frames, when none of its buffers has them; null when some do"]
    host_memory: Annotated[
        bool, "it hands out host RAM (pinned for a device, or a CPU allocator), as its format says; false: device memory"
    ]
    cannot_tell: Annotated[
        bool, "its verdict is inconclusive because a warning undermines a no-leak (addresses reused, frees paired by size)"
    ]


class StepSource(TypedDict):
    """Where the host's steps came from: "30 steps from the group_id stat"."""

    kind: StepSourceKind
    name: Annotated[str | None, "the stat or event the steps came from, when one did"]
    num_steps: int
    description: Annotated[str, "where the steps came from, in words"]


class HloBufferInfo(TypedDict):
    """What identifies a logical buffer of a compiled program, and where it came from."""

    logical_buffer: Annotated[int | None, "null on a row of small buffers folded"]
    instruction: str
    opcode: str
    op_name: str
    shape: str
    source: str
    last_user: Annotated[str, 'the user that runs last in the schedule ("" when the proto has no schedule)']
    bytes: int


class WholeProgramBuffer(HloBufferInfo):
    reason: WholeProgramReason
    why: str
    allocation: int
    parameter_number: int | None
    live_out: bool
    aliases_parameter: bool
    actionable: bool


class ListedWholeProgramBuffer(WholeProgramBuffer):
    """A whole-program buffer as a row of the report's and the comparison's lists, which count each row's
    buffers."""

    count: Literal[1]


class SmallBuffers(HloBufferInfo):
    """Buffers below `limits.small_buffer_bytes`, folded into one row of a list, so that its total stays whole: its
    keys of one buffer are "" and null."""

    label: Annotated[str, '"small (<16 KiB)"']
    count: int


class SmallWholeProgramBuffers(SmallBuffers):
    reason: Literal["small"]


WholeProgramRow = ListedWholeProgramBuffer | SmallWholeProgramBuffers
"""A row of the report's whole-program buffers: one buffer, or the small ones folded."""


class Actionable(TypedDict):
    instruction: str
    op_name: str
    shape: str
    source: str
    bytes: int
    reason: WholeProgramReason
    message: str


class PeakBuffer(HloBufferInfo):
    kind: Annotated[Literal["temporary"] | WholeProgramReason, "`temporary`, or why it lives for the whole program"]
    count: Literal[1]


class SmallPeakBuffers(SmallBuffers):
    kind: Literal["small"]


PeakRow = PeakBuffer | SmallPeakBuffers
"""A row of `GET module`'s buffers at the peak: one buffer, or the small ones folded."""


class LongLivedTemporary(HloBufferInfo):
    """A freed temporary whose range covers at least half of the program."""

    start: int
    end: int
    fraction: Annotated[float, "the share of the program's positions it is live over"]
    why: str


class LogicalBuffer(HloBufferInfo):
    """One logical buffer's live range in program order: [start, end)."""

    allocation: int | None
    offset: int
    start: int
    end: int
    kind: Annotated[str, "`temporary`, or why it lives for the whole program"]
    shares_with: Annotated[int | None, "the logical buffer whose memory it uses"]


class ModuleFigures(TypedDict):
    """One compiled XLA program and memory space: what the report's `modules` and `GET module` both say of it."""

    name: Annotated[str, '"<module>(<program_id>)"']
    module: str
    program_id: int | None
    memory_space: int
    num_instructions: int
    num_positions: int
    peak_heap_bytes: int
    peak_position: int | None
    peak_instruction: str | None
    peak_temporary_bytes: int
    whole_program_bytes: int
    live_out_bytes: int
    parameter_bytes: int
    aliased_bytes: Annotated[
        int, "in both `live_out_bytes` and `parameter_bytes`: parameters returned in place (an output aliasing its input)"
    ]
    constant_bytes: int
    thread_local_bytes: int
    actionable: list[Actionable]


class ModuleSummary(ModuleFigures):
    """One program as summarised in the report (`modules`)."""

    whole_program_buffers: list[WholeProgramRow]
    num_long_lived_temporaries: int
    long_lived_temporaries: Annotated[
        list[LongLivedTemporary], "the first few, largest bytes x share first; `num_long_lived_temporaries` counts all"
    ]


class HeapCurve(TypedDict):
    position: list[int]
    heap_bytes: list[int]
    instruction: list[str | None]


class ModuleDetailBody(ModuleFigures):
    """One program in detail (what `GET module` adds its run and host to)."""

    memory_spaces: list[int]
    curve: HeapCurve
    peak_buffers: Annotated[list[PeakRow], "their bytes add up to `peak_heap_bytes`"]
    whole_program_buffers: Annotated[list[WholeProgramBuffer], "every one, none folded"]
    long_lived_temporaries: list[LongLivedTemporary]
    buffers: Annotated[list[LogicalBuffer], "in program order: the largest ones when there are more than sent"]
    num_buffers: Annotated[int, "how many logical buffers have a range; more than `buffers` when only the largest came"]


class ModuleAnswer(ModuleDetailBody):
    """`GET module`: one program in detail."""

    run: str
    host: str


class CompiledPrograms(TypedDict):
    """One device's compiled programs in a device memory profile."""

    device: Annotated[str, 'the allocator\'s key of that device ("device unknown" when the profile names none)']
    count: int
    bytes: int


class FormatHints(TypedDict):
    """What a host's format tells its users: the CLI and the tab show these rather than knowing the formats."""

    name: Annotated[str, 'one file\'s kind: "XProf profile", "PyTorch profiler trace"']
    record_events: Annotated[
        str, "why a host of this format may hold no memory events and how to record them; `code` in backticks"
    ]
    memory_id_note: Annotated[str, 'what follows "memory id <id>": where the format\'s memory ids come from']
    static_modules: Annotated[bool, "its sessions hold compiled programs: the module selector and the static view"]
    xprof_tools: Annotated[bool, "XProf's own tools (Memory Profile, Memory Viewer) open its files"]
    shape_label: Annotated[str, 'what a buffer\'s shape is: "shape", or "input shapes" (of the op that made it)']
    live_entry: Annotated[
        str, 'what one entry of a file of one moment is, counted: "buffer" (a snapshot\'s block), "buffer group"'
    ]


class ProcessCause(TypedDict):
    """A likely reason for memory that grows outside the allocator."""

    id: Annotated[str, "`worker_cache`, `kept_objects` or `native`"]
    title: str
    fix: Annotated[str, "what to do about it"]
    doc: Annotated[str, "the docs/ page that says more"]


class WorkerMemory(TypedDict):
    """One child process of the training process (a DataLoader worker) over the window."""

    pid: int
    measure: ProcessMeasure
    bytes_per_step: Annotated[float, "its fitted rate"]
    grows: Annotated[bool, "its rate reaches the threshold and it grows through the window"]
    bytes: Annotated[list[int | None], "its memory at each of `steps`; null where it was not read"]


class ProcessMemory(TypedDict):
    """What grows outside the allocators: the training process's memory and its DataLoader workers', as the capture
    helper recorded them at the end of each step (its companion file)."""

    verdict: Annotated[Verdict, "`leak`: memory grows outside the allocators; judged apart from them"]
    reason: str
    source: Annotated[str, '"psutil" or "proc" (Linux\'s /proc, without psutil)']
    status: Annotated[SearchStatus, "as a holder search's: `partial` when it was switched off part-way"]
    warning: Annotated[str, 'why it was recorded only in part, or without USS/PSS; "" when not']
    threshold_bytes_per_step: Annotated[int, "the rate from which a process is said to grow"]
    bytes_per_step: Annotated[
        float,
        "the training process's growth outside the host-memory allocators: its RSS rate less their heap growth and"
        " the growth of malloc's free memory",
    ]
    main_grows: Annotated[bool, "the training process grows outside them: `bytes_per_step` reaches the threshold, steadily"]
    rss_bytes_per_step: Annotated[float, "the training process's RSS rate"]
    allocator_bytes_per_step: Annotated[float, "the host-memory allocators' heap growth, taken off the RSS rate"]
    malloc_free_bytes_per_step: Annotated[
        float, "the growth of what glibc's malloc holds free (freed memory RSS still counts), taken off too; 0: not known"
    ]
    allocators: Annotated[list[str], "those allocators' labels"]
    workers: Annotated[list[WorkerMemory], "each child process, by pid"]
    workers_bytes_per_step: Annotated[float, "the workers' rates summed"]
    causes: Annotated[list[ProcessCause], "with a leak: its likely causes, the likeliest first"]
    steps: Annotated[list[int], "the step whose end each sample was read at; the lists below have one value per step"]
    time_ps: Annotated[list[int | None], "each step's end in the profile's clock; null for a step the profile lacks"]
    main_bytes: Annotated[list[int], "the training process's RSS"]
    workers_bytes: Annotated[list[int | None], "the workers' memory summed; null where one of them was not read"]


DefaultAllocatorRule = Literal["only", "leaks", "leaks_fastest", "highest_peak", "named"]


class DefaultAllocator(TypedDict):
    """The allocator a host opens on when none is named (the tab's first, the routes' and the CLI's default), and why."""

    memory_id: str
    allocator: str
    rule: Annotated[
        DefaultAllocatorRule,
        "`only`: the host's one allocator; `leaks`: the one that leaks; `leaks_fastest`: of several that leak, device "
        "memory first, then the fastest leak; `highest_peak`: none leaks, device memory with the highest peak; `named`: "
        "the one a report was asked for (`--allocator`)",
    ]
    reason: Annotated[str, 'the rule in words: "the device memory that leaks fastest"']


class _HostReportKeys(TypedDict):
    host: Annotated[str, "the host, as its profile file names it"]
    format: Annotated[
        str,
        'the format its file was read as, by its name in the format registry ("xplane", "torch_trace", ...); "" on an '
        "unreadable host whose file no longer reads as any format",
    ]
    format_hints: FormatHints
    verdict: Annotated[Verdict, "the host's verdict: its worst allocator's, or why there is none"]
    reason: str
    warnings: Annotated[list[str], "what limits the analysis of the whole profile"]
    duration_ps: Annotated[int, "the capture window's length"]
    start_time_ns: Annotated[int | None, "when the capture began (ns since the epoch), where its format records it"]
    event_clock_ps: Annotated[int | None, "set when its clock counts allocations, not time: this many ps each"]
    one_moment: Annotated[bool, "the buffers live at one moment (a device memory profile), not events over a window"]
    compiled_programs: Annotated[list[CompiledPrograms], "a device memory profile's compiled executables per device"]
    step_source: StepSource
    num_steps: int
    steps: list[Step]
    allocators: Annotated[list[AllocatorReport], "one per allocator (XProf memory id) with memory events"]
    modules: Annotated[list[ModuleSummary], "the compiled XLA programs of an XProf profile; [] for other formats"]
    recordings_file: Annotated[str, 'the companion file read with the profile (docs/recordings.md); "" when none was']
    holder_search: Annotated[HolderSearch | None, "how the search for holders went; null when none was recorded"]
    cause: Annotated[
        Cause | None,
        "the likely cause its compiled programs show: recompile_per_step when one program name has as many program ids"
        " as the capture has steps; else null",
    ]
    cannot_tell: Annotated[
        bool,
        "its verdict is inconclusive because a warning undermines an allocator's no-leak: `check` fails on it, as on a leak",
    ]
    default_allocator: Annotated[DefaultAllocator | None, "null when it has no allocator"]


class HostReport(_HostReportKeys, total=False):
    process_memory: Annotated[ProcessMemory, "when the capture helper recorded the process's memory beside the profile"]
    error: Annotated[str, "set, with no allocators, when its profile could not be analysed"]
    file: Annotated[str, "with `error`: the path of the file that could not be read"]


class RunReport(TypedDict):
    run: str
    verdict: Annotated[Verdict, "the worst of its hosts'"]
    hosts: list[HostReport]


class Limits(TypedDict):
    """What the server sends at most, so that the tab asks for no more."""

    small_buffer_bytes: Annotated[int, 'buffers below this size are folded into one row ("small")']
    page_size: Annotated[int, "the most rows one `buffers` request returns"]
    default_page_size: Annotated[int, "the rows one `buffers` request returns when it gives no `limit`"]
    max_points: Annotated[int, "the most points one `timeline` or `module` request returns"]


class HistoryCapture(TypedDict):
    """One capture of one allocator, as a run's history follows it."""

    capture: Annotated[str, "the discovered session (a run as `runs` lists it): the tab opens it"]
    kind: CaptureKind
    time_s: Annotated[float, "when it began, seconds since the epoch"]
    time_source: TimeSource
    duration_s: float
    heap_start_bytes: int
    peak_heap_bytes: int
    heap_end_bytes: int
    heap_floor_bytes: int
    measure_bytes: Annotated[
        int,
        "what the trend follows: a profile's heap floor, a snapshot's live bytes; within captures, what it kept in its window",
    ]
    never_freed_bytes: Annotated[int, "tensor bytes never freed in the capture, its report's `never_freed_requested_bytes`"]
    first_step: int | None
    last_step: int | None
    program: Annotated[str, 'its programs\' names without ids, joined; "" when it ran none']
    verdict: Verdict


class HistoryFamily(TypedDict):
    """A family that grew over the captures."""

    key: str
    label: str
    where: str
    stack: list[str]
    bytes_first: int
    bytes_last: int
    growth_bytes: int
    growing_captures: int
    bytes_per_step: float
    bytes_per_hour: Annotated[float | None, "its rate over wall-clock time; null: no clock"]
    captures: Annotated[list[str], "the captures it appears in"]
    agrees: Annotated[bool, "what it kept within the windows accounts for the growth between captures"]


class HistorySeries(TypedDict):
    """One allocator of one host over a run's captures."""

    host: str
    memory_id: str
    allocator: str
    verdict: Verdict
    reason: str
    rate_basis: RateBasis
    rise_bytes: Annotated[int, "the measure's last less its first; within captures, the rate per step over the steps they span"]
    bytes_per_hour: Annotated[
        float | None, "null when the captures' times (within captures: steps) say nothing of the job's pace"
    ]
    bytes_per_step: float | None
    bytes_per_capture: float
    hours_to_oom: float | None
    capacity_bytes: int
    time_note: Annotated[str | None, "where the captures' times came from, when not every one from itself"]
    unexplained: Annotated[str | None, "a leak no family accounts for: that it grew before each window"]
    captures: Annotated[list[HistoryCapture], "in time order (step order when some carry only a file's mtime)"]
    families: Annotated[list[HistoryFamily], "the culprit first"]
    cause: Annotated[
        Cause | None,
        "its likely cause: recompile_per_step when its compiled programs multiply capture after capture, whatever its"
        " bytes do; else null",
    ]


class HistoryAnswer(TypedDict):
    """`GET history`: a TensorBoard run's captures as one history (also each of the report's `histories`)."""

    tb_run: str
    num_captures: int
    verdict: Verdict
    reason: str
    note: Annotated[str | None, "why captures are not one series (different hosts), or null"]
    errors: Annotated[list[UnreadableFile], "the files of its captures that could not be read"]
    series: Annotated[list[HistorySeries], "worst first"]
    gate_verdict: Annotated[
        Verdict,
        "the verdict a CI gate (`check`, `history`) takes for the run: the history's when it decides (leak or no leak),"
        " else the worst of its captures' own",
    ]


class ReportAnswer(TypedDict):
    """`GET report`, and what `tb-leakfinder report --json` prints."""

    version: Annotated[int, "the report format's version"]
    limits: Limits
    runs: list[RunReport]
    histories: Annotated[list[HistoryAnswer], "the histories of the TensorBoard runs among `runs` with several captures"]
    errors: Annotated[list[UnreadableFile], "every host of `runs` whose file could not be read; [] when all were read"]


class TimelinePeak(TypedDict):
    time_ps: int | None
    bytes: int
    step: int | None


class _TimelineKeys(TypedDict):
    allocator: Annotated[str, "the allocator's label, as in its report"]
    memory_id: str
    total_events: Annotated[int, "the allocator's memory events, all of them (not only the range's)"]
    time_ps: Annotated[list[int], "the samples' times; the lists below have one value per sample"]
    heap_bytes: list[int]
    stack_bytes: list[int]
    fragmentation: list[float]
    never_freed_bytes: Annotated[list[int], "chunk bytes live at each sample that are never freed"]
    event_bytes: Annotated[list[int], "the chunk bytes of the event each sample is at: + an allocation, - a free"]
    event_op: Annotated[list[str], 'the op of that event\'s buffer; "" when unknown']
    event_where: Annotated[list[str], 'the line of code that made that event\'s buffer; "" when unknown']
    window_start_ps: Annotated[int, "what the charts span, whatever the range asked: the allocator's first event or step"]
    window_end_ps: Annotated[int, "its last event, or the end of the last step around its events"]
    peak: Annotated[TimelinePeak, "the allocator's peak (`peak_bytes_in_use`), wherever the range is"]
    steps: list[Step]


class TimelineBody(_TimelineKeys, total=False):
    family: Annotated[int, "with the `family` argument: that family's index"]
    family_bytes: Annotated[list[int], "with `family`: its live bytes at each sample (chunks that outlive a step)"]


class TimelineAnswer(TimelineBody):
    """`GET timeline`."""

    run: str
    host: str


class Buffer(TypedDict):
    id: Annotated[int, "its row in the allocator's buffers"]
    address: Annotated[str, 'its address, in hex ("0x7f3a00000000")']
    alloc_time_ps: Annotated[int | None, "null when it was allocated before the window"]
    free_time_ps: Annotated[int | None, "null when it is never freed"]
    alloc_step: Annotated[int | None, "the step number it was allocated in; null outside every step"]
    free_step: int | None
    requested_bytes: Annotated[int, "tensor bytes: what the program asked for"]
    chunk_bytes: Annotated[int, "chunk bytes: what the allocator handed out"]
    op: str
    shape: str
    dtype: str
    region: str
    status: BufferStatus
    family: Annotated[int | None, "the family it belongs to (a `family` of the report); null when none"]
    where: Annotated[str, 'the line of code it was made at; "" when unknown']
    site: Annotated[int, "its site: an index into its page's `sites`"]


class BufferPage(TypedDict):
    total: Annotated[int, "buffers that match the query, over all pages"]
    offset: int
    limit: int
    buffers: list[Buffer]
    sites: Annotated[list[Site], "the sites of the page's buffers, each once"]


BufferSort = Literal["bytes", "alloc_time_ps", "free_time_ps", "lifetime_ps", "op"]
"""What `buffers` sorts by: chunk bytes, allocation or free time, lifetime (a never-freed buffer's runs to now), op."""
BufferOrder = Literal["asc", "desc"]


class _BuffersArgsKeys(TypedDict):
    run: Annotated[str, "the run"]


class Bounds(NamedTuple):
    """The values an integer query argument may take, beside its doc in the `Annotated`; None: int64's bound."""

    lo: int | None = None
    hi: int | None = None


# The route parses each argument from its type here (views/route_args.py's arg_parsers): an integer within its
# `Bounds`, a choice of strings as text a user types, a `str` as a name from the profile; one not given takes the
# query's default. So a new argument is this one line and the query's parameter.
class BuffersArgs(_BuffersArgsKeys, total=False):
    """`GET buffers`' query arguments: `run`, and the others when given (a route's arguments are declared as
    `<Route>Args`; the client builds its query from this declaration, and the route refuses any other)."""

    host: Annotated[str, "a host of the run; its first when not given"]
    allocator: Annotated[str, "an allocator's label or memory id; the host's `default_allocator` when not given"]
    offset: Annotated[int, "the first row of the page, from 0", Bounds(0)]
    limit: Annotated[
        int,
        "rows in the page: the report's `limits.default_page_size` when not given, at most `limits.page_size`",
        Bounds(1, MAX_PAGE),
    ]
    sort: Annotated[BufferSort, "`bytes` when not given"]
    order: Annotated[BufferOrder, "`desc` when not given"]
    family: Annotated[int, "only that never-freed family's buffers (its index in the allocator's `families`)", Bounds(0)]
    status: Annotated[BufferStatus, "only buffers of that status"]
    start_ps: Annotated[int, "only buffers live at some time at or after this"]
    end_ps: Annotated[int, "only buffers live at some time at or before this"]
    program: Annotated[str, "only buffers made in that compiled program (a module's `name`)"]
    allocation: Annotated[
        int, "with `program`: only those of that buffer allocation of it (the static view's program buffer)", Bounds(0)
    ]


class BuffersAnswer(BufferPage):
    """`GET buffers`: a page of an allocator's buffers."""

    run: str
    host: str
    allocator: Annotated[str, "the allocator's label, as in its report"]
    memory_id: str


class Delta(TypedDict):
    """A figure of both runs: `delta` is b - a."""

    a: float
    b: float
    delta: float


class FamilyDiff(TypedDict):
    """A family matched across the runs by (op, shape pattern, dtype, region)."""

    op: str
    shape: str
    dtype: str
    region: str
    status: FamilyStatus
    label: Annotated[str, "the family's `label` in B's report, else in A's"]
    kind_a: LeakKind | None
    kind_b: LeakKind | None
    count_a: int
    count_b: int
    chunk_bytes_a: Annotated[int, "the chunk bytes of its never-freed buffers in A"]
    chunk_bytes_b: int
    requested_bytes_a: Annotated[int, "their tensor bytes in A: the figure shown"]
    requested_bytes_b: int
    bytes_per_step_a: float
    bytes_per_step_b: float
    onset_step_a: Annotated[int | None, "the earliest onset of the side's growing families; null when none grows"]
    onset_step_b: int | None
    new_leak: Annotated[bool, "growing in B and not in A"]


class AllocatorDiff(TypedDict):
    allocator_a: Annotated[str | None, "null on the side that has no allocator of that label"]
    allocator_b: str | None
    verdict_a: Verdict | None
    verdict_b: Verdict | None
    reason_a: str | None
    reason_b: str | None
    out_of_memory_a: Annotated[str | None, "when A was captured at an out-of-memory error: what held the memory then"]
    out_of_memory_b: Annotated[str | None, "the same of B"]
    peak_bytes_in_use: Delta
    never_freed_bytes: Annotated[Delta, "chunk bytes"]
    never_freed_requested_bytes: Annotated[Delta, "tensor bytes: the figure shown"]
    growth_bytes_per_step: Delta
    num_allocations: Delta
    num_deallocations: Delta
    families: list[FamilyDiff]


class ModuleDiff(TypedDict):
    name: Annotated[str, "the module's name without its program id"]
    name_a: str | None
    name_b: str | None
    peak_heap_bytes: Delta
    live_out_bytes: Delta
    whole_program_buffers_added: Annotated[
        list[ListedWholeProgramBuffer], "one by one: buffers below `limits.small_buffer_bytes` are not compared"
    ]
    whole_program_buffers_removed: list[ListedWholeProgramBuffer]


class HostDiff(TypedDict):
    host_a: str
    host_b: str
    verdict_a: Verdict
    verdict_b: Verdict
    reason_a: str
    reason_b: str
    allocators: list[AllocatorDiff]
    modules: list[ModuleDiff]


class ComparisonAnswer(TypedDict):
    """`GET compare`, and what `tb-leakfinder diff --json` prints: run B (the change) against run A (the base)."""

    run_a: str
    run_b: str
    verdict_a: Verdict
    verdict_b: Verdict
    hosts: list[HostDiff]
    unmatched_hosts: list[str]
    regression: bool
    regressions: list[str]


class OverviewRow(TypedDict):
    """One host and allocator of a pod; `error` is set (and the allocator's keys null) for a host that could not be
    read."""

    host: str
    memory_id: str | None
    allocator: str | None
    verdict: Verdict
    bytes_per_step: Annotated[float | None, "the allocator's `growth_bytes_per_step`"]
    leak_bytes_per_step: Annotated[float | None, "the allocator's `leak_bytes_per_step`"]
    peak_bytes_in_use: int | None
    memory_capacity_bytes: int | None
    step_source: StepSource
    error: str | None


class OverviewAnswer(TypedDict):
    """`GET overview`: rows worst first."""

    run: str
    num_hosts: int
    num_leaking_hosts: int
    rows: list[OverviewRow]
