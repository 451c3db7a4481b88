"""Naming each allocation by where it was made: the program execution and program buffer, and the user's line.

PJRT's memory events carry only sizes and addresses. What names them is the
host's spans and the flows between threads (the format notes, "Which program
made an allocation"), in this order of evidence:

1. The runtime's execution around it on its thread (GPU: `ExecuteHelper` >
   `EnqueueExecution` > `Build buffer allocations`; TPU: `ExecutePrepare` >
   `AllocateOutputBufferWithInputReuse`). Its module is named by the span
   inside it (`<module>:XLA GPU module`), told from same-name modules by the
   `program_id` of the kernels launched during it, or (TPU) by following its
   flows down to the device's `XLA Modules` run. The flow it consumes ties it
   to its caller's `PjitFunction` call on another thread, and so to that
   call's Python frames.
2. Else the jitted call (`PjitFunction(f)`) around it on its thread.
3. Else, by time alone, a program running at that moment on the allocation's
   own device: such a match is `near`, never `exact`.

Allocations inside a runtime call that copies host data to the device are
transfers; a transfer the next call takes as a parameter of its size is named
so ("parameter 0 of jit__psum(3)"). The rest, in a profile that shows
programs, are outside any program. The Python tracer's frames enclosing an
allocation on its thread (or enclosing the call that launched its execution)
give the user's line.

One execution's allocations are matched against each candidate module by
requested size, in order: the module that explains most of them is the
program. Inside `Build buffer allocations` the order is the buffer-allocation
index order, and lifetime tells a temporaries block (freed inside its own
execution) from an output (which outlives it), so equal sizes are settled;
elsewhere a size that several buffers share is ambiguous, with the
candidates. A temporaries block a few KiB off is `near`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tb_leakfinder.analyses.frames import model_frame, telling_frames, user_frames
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.model.memory import (
    ALLOC,
    FREE,
    NO_FLOW,
    NO_PROGRAM_ID,
    PYTHON_CALL_PREFIX,
    SPAN_DEVICE_PROGRAM,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    SPAN_HOST_RUNTIME,
    MemoryEvents,
    Spans,
    is_runtime_name,
    is_transfer_name,
)
from tb_leakfinder.model.sites import (
    CONTEXT_OUTSIDE,
    CONTEXT_PROGRAM,
    CONTEXT_TRANSFER,
    MATCH_AMBIGUOUS,
    MATCH_EXACT,
    MATCH_NEAR,
    MATCH_NO_HLO,
    MATCH_NONE,
    NEAR_BY_SIZE,
    NEAR_BY_TIME,
    NEAR_BY_TIME_AND_SIZE,
    NO_SITE,
    SiteInfo,
)

# A temporaries block this far from an allocation's size may still be it: runtimes pad the block they ask for.
NEAR_BYTES = 4096
TRANSFER_PREFIX = "transfer to device"
TRANSFER_LABEL = f"{TRANSFER_PREFIX}, outside any program"
# Executions that allocate more buffers than this are matched one by one, not as rows of one table.
MAX_TABLE_WIDTH = 256
# Calls nested deeper than this (Python's own recursion limit is 1000) are taken as this deep: a corrupt file
# of a million nested calls costs a million searches otherwise.
MAX_DEPTH = 2000
OUTSIDE_LABEL = "outside any program"
_JITTED_CALL = re.compile(r"^PjitFunction\((?P<function>.*)\)$")
# The runtime call inside which PJRT allocates an execution's outputs and temporaries, in buffer-allocation order.
BUILD_ALLOCATIONS = "Build buffer allocations"
# The span inside an execution that names its module (`jit_f:XLA GPU module`).
GPU_MODULE_SUFFIX = ":XLA GPU module"
# Flows followed from an execution to its device run: TPU's is execution -> enqueue task -> device (2 hops).
MAX_FLOW_HOPS = 3
# A memory id of device memory: GPU_<ordinal>_bfc, or a device's ordinal (TPU's index_on_host).
_DEVICE_ALLOCATOR = re.compile(r"^(?:(?P<kind>[A-Z]+)_)?(?P<ordinal>\d+)(?:_bfc)?$")
_SHAPE = re.compile(r"^(?P<dtype>[A-Za-z0-9_]+)(?P<dims>\[.*\])")


# Values spread over at most this many integers are made unique by counting, not by sorting.
DENSE_SPAN = 1 << 22


def small_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of integers: by a table when they span little (a loop's chains,
    sites and keys are a few hundred distinct values among millions), else by np.unique's sort."""
    if not len(values):
        return values.astype(np.int64), np.zeros(0, np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= DENSE_SPAN:
        uniques, inverse = np.unique(values, return_inverse=True)
        return uniques, inverse.reshape(-1)
    offsets = values - lo
    present = np.flatnonzero(np.bincount(offsets, minlength=hi - lo + 1))
    table = np.zeros(hi - lo + 1, np.int64)
    table[present] = np.arange(len(present))
    return present + lo, table[offsets]


class _Chains:
    """Chains of host call names, interned: chain k is (name[k], the chain outside it: parent[k], -1 at the top)."""

    def __init__(self) -> None:
        # Each extend's new chains, joined once asked: joining at every extend costs a pass per thread.
        self._added: list[tuple[np.ndarray, np.ndarray]] = []
        self._joined = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._count = 0

    def extend(self, names: np.ndarray, parents: np.ndarray) -> np.ndarray:
        """The chains of calls named `names` inside chains `parents` (-1: none), new ones added: one per distinct
        pair, so that a loop's millions of calls are as many chains as the loop has distinct stacks."""
        if not len(names):
            return np.zeros(0, np.int64)
        width = int(names.max()) + 1
        pairs, inverse = small_unique((parents + 1) * width + names)
        first = self._count
        self._added.append((pairs % width, pairs // width - 1))
        self._count += len(pairs)
        ids: np.ndarray = first + inverse.reshape(-1)
        return ids

    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(name, parent) of every chain."""
        if self._added:
            names, parents = zip(*self._added, strict=True)
            self._joined = (np.concatenate([self._joined[0], *names]), np.concatenate([self._joined[1], *parents]))
            self._added = []
        return self._joined

    def names(self, chain: int) -> list[int]:
        """The name indices of a chain, innermost first."""
        name, parent = self._columns()
        out = []
        while chain >= 0:
            out.append(int(name[chain]))
            chain = int(parent[chain])
        return out


class _Forest:
    """Nested intervals (one thread's calls), with each one's parent and chain of names: which encloses a time.

    In start order, an interval's depth is how many before it have not ended by its start, and its parent is
    the last one before it a level up: both found level by level with sorted searches, not a walk per call.
    """

    def __init__(self, start: np.ndarray, end: np.ndarray, rows: np.ndarray, names: np.ndarray, chains: _Chains | None) -> None:
        order = np.lexsort((-end, start))
        self.start, self.end, self.rows = start[order], end[order], rows[order]
        n = len(order)
        position = np.arange(n)
        depth = position - np.searchsorted(np.sort(self.end), self.start, side="left")
        depth = np.clip(depth, 0, MAX_DEPTH)
        parent = np.full(n, -1, np.int64)
        chain = np.full(n, -1, np.int64)
        name_of = names[order].astype(np.int64)
        levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1 if n else 0)]
        for d, level in enumerate(levels):
            if d:
                above = levels[d - 1]
                at = np.searchsorted(above, level, side="left") - 1
                parent[level] = np.where(at >= 0, above[np.maximum(at, 0)], -1)
            if chains is not None:
                up = parent[level]
                chain[level] = chains.extend(name_of[level], np.where(up >= 0, chain[np.maximum(up, 0)], -1))
        self.parent = parent
        self.chain = chain

    def top(self) -> np.ndarray:
        """Each interval's outermost enclosing interval (itself at the top), as a position."""
        top = np.arange(len(self.start))
        for _ in range(len(self.start) + 1):
            up = self.parent[top]
            if not (up >= 0).any():
                break
            top = np.where(up >= 0, up, top)
        return top

    def innermost(self, times: np.ndarray) -> np.ndarray:
        """The position of the innermost interval enclosing each time (start <= t <= end), -1 when none."""
        at = np.searchsorted(self.start, times, side="right") - 1
        for _ in range(len(self.start) + 1):
            outside = (at >= 0) & (self.end[np.maximum(at, 0)] < times)
            if not outside.any():
                break
            at = np.where(outside, self.parent[np.maximum(at, 0)], at)
        return at


@dataclass(frozen=True)
class _Program:
    """What an execution runs, as far as its profile tells: the modules it may be (their keys, most likely first)
    and the program's name when none is in the profile ("jit_f")."""

    modules: tuple[str, ...]
    name: str
    causal: bool = False  # its allocations were seen inside `Build buffer allocations`: order and lifetime settle ties
    near: bool = False  # found by time alone (a device's run at that moment): never an exact match


@dataclass(eq=False)
class _Tops:
    """The host's executions (their outermost runtime calls), sorted by span row: what each runs (index into
    `programs`) and the call that launched it on another thread (line, time; line -1 when none)."""

    row: np.ndarray
    program: np.ndarray
    caller: np.ndarray  # (n, 2)
    programs: list[_Program]


@dataclass(eq=False)
class CallIndex:
    """A host's calls by thread, to look up what encloses an allocation. Built once per host, used per allocator."""

    spans: Spans
    calls: dict[int, _Forest]  # line -> its host calls (Python frames, transfers)
    chains: _Chains  # the calls' chains of names
    programs: dict[int, _Forest]  # line -> its jitted calls
    roots: _Forest | None  # every host root span, on any line: the launcher of work on other threads
    device_programs: dict[int, _Forest]  # device plane -> its program executions, in host time
    runtime: dict[int, _Forest]  # line -> its runtime calls of program executions (ExecuteHelper, ...)
    runtime_top: dict[int, np.ndarray]  # line -> per runtime call (forest position), the outermost one around it
    launches: tuple[np.ndarray, np.ndarray]  # kernel launches' start times (sorted) and program ids
    device_planes: list[str]
    modules: dict[str, HloModule]  # by key
    by_name: dict[str, list[HloModule]]
    by_id: dict[int, list[HloModule]]
    user_files: set[str]
    has_programs: bool
    _frames: dict[int, tuple[tuple[str, ...], bool, str]] = field(default_factory=dict)
    _tops: _Tops | None = None
    _consumers: dict[int, list[int]] | None = None  # flow id -> the span rows that consume it, once asked

    def chain_frames(self, chain: int) -> tuple[tuple[str, ...], bool, str]:
        """The user frames of a chain of calls, whether one of the calls is a transfer, and the model library frame
        below the user's line ("" when none)."""
        if chain < 0:
            return (), False, ""
        if chain not in self._frames:
            names = [self.spans.names[i] for i in self.chains.names(chain)]
            transfer = any(is_transfer_name(n) for n in names if not n.startswith(PYTHON_CALL_PREFIX))
            self._frames[chain] = (user_frames(names, self.user_files), transfer, model_frame(names, self.user_files))
        return self._frames[chain]

    def inside(self, row: int) -> np.ndarray:
        """The runtime calls on a runtime call's line that lie within it, itself included (span rows)."""
        spans = self.spans
        forest = self.runtime.get(int(spans.line[row]))
        if forest is None:  # a kernel launch's line: no runtime calls around it
            return np.asarray([row], np.int64)
        lo = int(np.searchsorted(forest.start, spans.start_ps[row], side="left"))
        hi = int(np.searchsorted(forest.start, spans.end_ps[row], side="right"))
        rows = forest.rows[lo:hi]
        inside: np.ndarray = rows[spans.end_ps[rows] <= spans.end_ps[row]]
        return inside

    def consumers(self) -> dict[int, list[int]]:
        """The span rows that consume each flow id."""
        if self._consumers is None:
            self._consumers = {}
            for r in np.flatnonzero(self.spans.flow_in != NO_FLOW).tolist():
                self._consumers.setdefault(int(self.spans.flow_in[r]), []).append(r)
        return self._consumers

    def tops(self) -> _Tops:
        """Every execution (the outermost runtime call of each), resolved once for all allocators."""
        if self._tops is None:
            self._tops = _resolve_tops(self)
        return self._tops

    def keys_in_window(self, row: int, named: str) -> list[str]:
        """The modules of the kernels launched during execution `row` (of that name, when it is known)."""
        starts, ids = self.launches
        lo, hi = np.searchsorted(starts, [self.spans.start_ps[row], self.spans.end_ps[row]], side="left")
        launched = sorted(set(ids[lo:hi].tolist()))
        return [m.key for pid in launched for m in self.by_id.get(pid, []) if not named or m.name == named]

    def device_runs(self, inside: np.ndarray) -> list[str]:
        """The programs that the flows leaving these calls reach on a device, hop by hop through the host calls
        that consume them (the TPU runtime's `tpu::System::Execute` -> `DoEnqueueProgram` -> `XLA Modules`)."""
        spans = self.spans
        frontier = set(spans.flow_out[inside][spans.flow_out[inside] != NO_FLOW].tolist())
        seen: set[int] = set()
        found: list[str] = []
        for _ in range(MAX_FLOW_HOPS):
            following: set[int] = set()
            for flow in frontier - seen:
                seen.add(flow)
                for consumer in self.consumers().get(flow, ()):
                    if spans.source[consumer] == SPAN_DEVICE_PROGRAM:
                        found.append(spans.names[int(spans.name[consumer])])
                    elif spans.source[consumer] == SPAN_HOST_RUNTIME:
                        more = self.inside(consumer)
                        following.update(spans.flow_out[more][spans.flow_out[more] != NO_FLOW].tolist())
            frontier = following
        return [key for key in found if key in self.modules]


def _grouped(rows: np.ndarray, keys: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """`rows` grouped by their `keys`, in increasing key, each group in the rows' order: one sort, not a pass over
    every row per key (a profile may name tens of thousands of threads)."""
    if len(keys) and keys[0] == keys[-1] and bool((keys == keys[0]).all()):  # one thread: no sort
        return [(int(keys[0]), rows)]
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(np.diff(keys[order])) + 1
    return [(int(keys[group[0]]), rows[group]) for group in np.split(order, cuts) if len(group)]


def call_index(spans: Spans, modules: Sequence[HloModule], device_planes: Sequence[str] = ()) -> CallIndex:
    chains = _Chains()
    calls: dict[int, _Forest] = {}
    programs: dict[int, _Forest] = {}
    runtime: dict[int, _Forest] = {}
    is_call = spans.source == SPAN_HOST_CALL
    jitted = np.asarray([_JITTED_CALL.match(n) is not None for n in spans.names], bool)
    is_program = (spans.source == SPAN_HOST_ROOT) & (jitted[spans.name] if len(spans.names) else False)
    is_host_runtime = spans.source == SPAN_HOST_RUNTIME
    named_runtime = np.asarray([is_runtime_name(n) for n in spans.names], bool)
    is_runtime = is_host_runtime & (named_runtime[spans.name] if len(spans.names) else False)
    for mask, into in ((is_call, calls), (is_program, programs), (is_runtime, runtime)):
        rows = np.flatnonzero(mask)
        for line, mine in _grouped(rows, spans.line[rows]):
            into[line] = _Forest(
                spans.start_ps[mine], spans.end_ps[mine], mine, spans.name[mine], chains if into is calls else None
            )
    roots = np.flatnonzero(spans.source == SPAN_HOST_ROOT)
    device = np.flatnonzero(spans.source == SPAN_DEVICE_PROGRAM)
    device_programs = {
        plane: _Forest(spans.start_ps[mine], spans.end_ps[mine], mine, spans.name[mine], None)
        for plane, mine in _grouped(device, spans.device[device])
    }
    launch = np.flatnonzero(is_host_runtime & (spans.program_id != NO_PROGRAM_ID))  # spans are sorted by start
    user_files = {m.instructions.source[i].split(":")[0].rsplit("/", 1)[-1] for m in modules for i in range(len(m.instructions))}
    user_files.discard("")
    by_name: dict[str, list[HloModule]] = {}
    by_id: dict[int, list[HloModule]] = {}
    for module in sorted(modules, key=lambda m: m.key):
        by_name.setdefault(module.name, []).append(module)
        if module.program_id is not None:
            by_id.setdefault(module.program_id, []).append(module)
    return CallIndex(
        spans,
        calls,
        chains,
        programs,
        _Forest(spans.start_ps[roots], spans.end_ps[roots], roots, spans.name[roots], None) if len(roots) else None,
        device_programs,
        runtime,
        {line: forest.top() for line, forest in runtime.items()},
        (spans.start_ps[launch], spans.program_id[launch]),
        list(device_planes),
        {m.key: m for m in modules},
        by_name,
        by_id,
        user_files,
        bool(is_program.any() or len(device) or is_runtime.any()),
    )


def _resolve_tops(index: CallIndex) -> _Tops:
    """What each execution runs, by arrays: its module's name (the `<module>:XLA GPU module` span inside it),
    the program id of the kernels launched during it (of that name), its caller (the producer, on another
    thread, of the first flow it consumes) and the jitted call around that; TPU's flows to the device, and
    launches of several programs in one execution, one execution at a time."""
    spans = index.spans
    if not index.runtime:
        empty = np.zeros(0, np.int64)
        return _Tops(empty, empty, np.zeros((0, 2), np.int64), [])
    rows = np.concatenate([forest.rows for forest in index.runtime.values()])
    top_of = np.concatenate([forest.rows[index.runtime_top[line]] for line, forest in index.runtime.items()])
    tops, inverse = np.unique(top_of, return_inverse=True)
    top_index = inverse.reshape(-1)
    n = len(tops)
    name_ids = spans.name[rows]
    causal = np.zeros(n, bool)
    causal[top_index[np.asarray([name == BUILD_ALLOCATIONS for name in spans.names], bool)[name_ids]]] = True
    module_names = sorted({name[: -len(GPU_MODULE_SUFFIX)] for name in spans.names if name.endswith(GPU_MODULE_SUFFIX)})
    code_of = {name: k for k, name in enumerate(module_names)}
    span_code = np.asarray([code_of.get(name[: -len(GPU_MODULE_SUFFIX)], -1) for name in spans.names], np.int64)
    named = np.full(n, -1, np.int64)
    has_name = span_code[name_ids] >= 0
    named[top_index[has_name]] = span_code[name_ids[has_name]]
    start, end = spans.start_ps[tops], spans.end_ps[tops]
    pid, mixed = _launched(index, named, code_of, start, end)
    # The caller: the producer of the first flow consumed inside the execution, when on another thread.
    consumed = np.flatnonzero(spans.flow_in[rows] != NO_FLOW)
    at_line, at_time = spans.line[tops].astype(np.int64), start.copy()
    caller = np.full((n, 2), -1, np.int64)
    if len(consumed):
        first_top, first = np.unique(top_index[consumed], return_index=True)
        flow = spans.flow_in[rows[consumed[first]]]
        producers = np.flatnonzero(spans.flow_out != NO_FLOW)
        producers = producers[np.argsort(spans.flow_out[producers], kind="stable")]
        at = np.minimum(np.searchsorted(spans.flow_out[producers], flow), max(len(producers) - 1, 0))
        producer = producers[at] if len(producers) else np.zeros(0, np.int64)
        launched = (
            (spans.flow_out[producer] == flow) & (spans.line[producer] != spans.line[tops[first_top]])
            if len(producers)
            else np.zeros(len(flow), bool)
        )
        which, by = first_top[launched], producer[launched]
        at_line[which], at_time[which] = spans.line[by], spans.start_ps[by]
        caller[which, 0], caller[which, 1] = spans.line[by], spans.start_ps[by]
    jitted = np.full(n, -1, np.int64)  # the span name of the jitted call around the caller (else the execution)
    for line, forest in index.programs.items():
        mine = np.flatnonzero(at_line == line)
        found = forest.innermost(at_time[mine])
        inside = found >= 0
        jitted[mine[inside]] = spans.name[forest.rows[found[inside]]]
    programs: list[_Program] = []
    ids: dict[_Program, int] = {}
    # Without launches, the flows from an execution may reach its device run (TPU): the run's name, one per
    # execution (-2: several).
    run = np.where(pid == NO_PROGRAM_ID, _device_runs(index, rows, top_index, tops), -1)
    slow = mixed | (run == -2)
    # Executions alike (name, program id, device run, jitted call, causal) run the same program: resolved once.
    codes = np.stack([named, pid, run, jitted, causal.astype(np.int64), np.where(slow, np.arange(n), -1)], axis=1)
    distinct, first_of, kind = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    program_of_kind = np.zeros(len(distinct), np.int64)
    for k, (code, pid_k, run_k, jit_k, causal_k, _) in enumerate(distinct.tolist()):
        row = int(tops[first_of[k]])
        name = module_names[code] if code >= 0 else _jitted_program(spans.names[jit_k]) if jit_k >= 0 else ""
        if slow[first_of[k]]:
            keys = index.keys_in_window(row, module_names[code] if code >= 0 else "")
            keys = keys or index.device_runs(index.inside(row))
        elif run_k >= 0:
            keys = [spans.names[run_k]] if spans.names[run_k] in index.modules else []
        else:
            keys = [m.key for m in index.by_id.get(pid_k, []) if code < 0 or m.name == module_names[code]]
        if not keys and name:
            keys = [m.key for m in index.by_name.get(name, [])]
        found_program = _Program(tuple(dict.fromkeys(keys)), name, bool(causal_k))
        if found_program not in ids:
            ids[found_program] = len(programs)
            programs.append(found_program)
        program_of_kind[k] = ids[found_program]
    return _Tops(tops, program_of_kind[kind.reshape(-1)], caller, programs)


def _device_runs(index: CallIndex, rows: np.ndarray, top_index: np.ndarray, tops: np.ndarray) -> np.ndarray:
    """Per execution, the device program run its flows reach (span name), hop by hop through the executions
    that consume them (TPU: execution -> enqueue task -> the chip's `XLA Modules` run): -1 when none, -2 when
    several."""
    spans = index.spans
    found = np.full(len(tops), -1, np.int64)
    consumers = np.flatnonzero(spans.flow_in != NO_FLOW)
    if not len(consumers):
        return found
    consumers = consumers[np.argsort(spans.flow_in[consumers], kind="stable")]
    consumed = spans.flow_in[consumers]
    top_of_row = np.full(len(spans), -1, np.int64)
    top_of_row[rows] = top_index
    producing = np.flatnonzero(spans.flow_out[rows] != NO_FLOW)
    producing = producing[np.argsort(top_index[producing], kind="stable")]
    by_top = np.searchsorted(top_index[producing], np.arange(len(tops) + 1))
    # (execution, flow) pairs to follow: first each execution's own flows.
    owner, flow = top_index[producing], spans.flow_out[rows[producing]]
    for _ in range(MAX_FLOW_HOPS):
        lo, hi = np.searchsorted(consumed, flow, side="left"), np.searchsorted(consumed, flow, side="right")
        owner, consumer = _expand(owner, lo, hi), consumers[_ranges(lo, hi)]
        device = spans.source[consumer] == SPAN_DEVICE_PROGRAM
        name = spans.name[consumer[device]].astype(np.int64)
        first = found[owner[device]] == -1
        found[owner[device][first]] = name[first]
        other = (found[owner[device]] >= 0) & (found[owner[device]] != name)
        found[owner[device][other]] = -2
        # Flows into another execution's calls: follow that execution's own flows.
        onward = top_of_row[consumer[~device]]
        keep = onward >= 0
        owner, onward = owner[~device][keep], onward[keep]
        lo, hi = by_top[onward], by_top[onward + 1]
        owner, flow = _expand(owner, lo, hi), spans.flow_out[rows[producing[_ranges(lo, hi)]]]
        if not len(flow):
            break
    return found


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The positions lo[i]..hi[i]-1 of every i, concatenated."""
    counts = np.maximum(hi - lo, 0)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    ranges: np.ndarray = np.repeat(lo, counts) + np.arange(int(counts.sum())) - offsets
    return ranges


def _expand(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """values[i] repeated once per position of lo[i]..hi[i]-1, as _ranges lists them."""
    expanded: np.ndarray = np.repeat(values, np.maximum(hi - lo, 0))
    return expanded


def _launched(
    index: CallIndex, named: np.ndarray, code_of: dict[str, int], start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per execution, the one program id of the kernels launched during it (of its module's name, when known),
    NO_PROGRAM_ID when none; and whether they were of several."""
    starts, ids = index.launches
    pid = np.full(len(named), NO_PROGRAM_ID, np.int64)
    mixed = np.zeros(len(named), bool)
    if not len(starts):
        return pid, mixed
    unique_ids, id_of = np.unique(ids, return_inverse=True)
    id_code = np.asarray(
        [code_of.get(index.by_id[p][0].name, -2) if p in index.by_id else -2 for p in unique_ids.tolist()], np.int64
    )
    launch_code = id_code[id_of.reshape(-1)]
    for code in np.unique(named).tolist():
        these = np.flatnonzero(named == code)
        chosen = np.flatnonzero(launch_code == code) if code >= 0 else np.arange(len(starts))
        if not len(chosen):
            continue
        s, p = starts[chosen], ids[chosen]
        lo, hi = np.searchsorted(s, start[these], side="left"), np.searchsorted(s, end[these], side="left")
        changes = np.concatenate([[0], np.cumsum(p[1:] != p[:-1])])
        has = hi > lo
        last, first = np.maximum(hi - 1, 0), np.minimum(lo, len(p) - 1)
        uniform = has & (changes[last] == changes[first])
        pid[these[uniform]] = p[first[uniform]]
        mixed[these[has & ~uniform]] = True
    return pid, mixed


def _jitted_program(call: str) -> str:
    """The program a jitted call runs, "jit_f" for `PjitFunction(f)`."""
    jitted = _JITTED_CALL.match(call)
    return f"jit_{jitted['function']}" if jitted else ""


@dataclass(eq=False)
class Attribution:
    site: np.ndarray  # int32 per event: index into `sites` (0 for frees and what the profile does not tell)
    sites: list[SiteInfo]
    # Every host call around each event, the frameworks' too, for what the user's frames alone cannot tell (an
    # optimizer's step, a module's __init__): `stack` per event is a stack's index (-1: none), `calls` its call
    # names, innermost first ("$torch/optim/adam.py:139 _init_group", "$class Linear"), found when asked.
    stack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    _chains: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _index: CallIndex | None = None

    def calls(self, stack: int) -> tuple[str, ...]:
        """The host call names of stack `stack` (an index `stack` holds), innermost first."""
        if self._index is None:
            return ()
        index = self._index
        return tuple(index.spans.names[i] for i in index.chains.names(int(self._chains[stack])))


@dataclass
class _ProgramBuffer:
    label: str  # "output 0"
    allocation: int
    size: int
    temporary: bool
    rank: int  # lower is preferred among equal sizes: outputs and temporaries before parameters and constants


def attribute(events: MemoryEvents, index: CallIndex) -> Attribution:
    """Each allocation's site; allocations whose framework named no op get the site's name as their op, shape and
    dtype (events.strings grows by those names), so that groups and families name them.

    Work is per distinct (program buffer, chain of calls, named or not), not per allocation: a million
    allocations of a training loop are a few dozen of those.
    """
    sites: list[SiteInfo] = [NO_SITE]
    site = np.zeros(len(events), np.int32)
    allocs = np.flatnonzero(events.kind == ALLOC)
    if not len(allocs) or not (index.calls or index.has_programs):
        return Attribution(site, sites, np.full(len(events), -1, np.int32))
    times = events.time_ps[allocs]
    lines = events.line[allocs]
    found = _executions(index, events, allocs)
    chain = _anchored_chains(index, times, lines, found.callers)
    chains, chain_of = small_unique(chain)
    transfer = np.asarray([index.chain_frames(int(c))[1] for c in chains.tolist()], bool)[chain_of]
    unnamed = events.op[allocs] == 0
    results: list[tuple[SiteInfo, str, str, str]] = []
    # An allocation its framework named (TensorFlow's tf_op) keeps that name: only its frames are added.
    job = _Naming(events, allocs, found, index, results)
    matched = _program_sites(job, unnamed & ~transfer)
    matched = np.where(transfer & unnamed, _parameters_fed(job, transfer & unnamed), matched)
    results_of, result_index = small_unique(matched)
    # One integer per (program buffer, chain, transfer, named): its digits are those four codes.
    key = ((result_index.reshape(-1) * len(chains) + chain_of.reshape(-1)) * 2 + transfer) * 2 + unnamed
    codes, inverse = small_unique(key)
    inverse = inverse.reshape(-1)
    distinct = [
        (int(results_of[c // 4 // len(chains)]), int(chains[c // 4 % len(chains)]), (c // 2) % 2, c % 2) for c in codes.tolist()
    ]
    strings = events.strings
    string_ids = {text: i for i, text in enumerate(strings)}

    def intern(text: str) -> int:
        if text not in string_ids:
            string_ids[text] = len(strings)
            strings.append(text)
        return string_ids[text]

    site_ids: dict[SiteInfo, int] = {NO_SITE: 0}
    row_site, row_names = [], []
    telling = telling_frames([index.chain_frames(int(c))[0] for c in chains.tolist()])
    for program_result, chain_id, is_transfer, is_unnamed in distinct:
        frames, _, model = index.chain_frames(chain_id)
        depth = telling.get(frames, 0)
        if program_result >= 0:
            this, label, shape, dtype = results[program_result]
            this = _with_frames(this, frames, model, depth)
        elif is_transfer:
            this = SiteInfo(context=CONTEXT_TRANSFER, stack=frames, model_frame=model, telling=depth)
            label, shape, dtype = TRANSFER_LABEL, "", ""
        else:
            context = CONTEXT_OUTSIDE if index.has_programs and is_unnamed else ""
            # Without programs, an unnamed buffer's line is its name (a device memory profile's buffers, a
            # snapshot's blocks): the frame that tells them apart, not a helper they share.
            label = OUTSIDE_LABEL if context else (f"made at {frames[depth]}" if frames else "")
            this, shape, dtype = SiteInfo(context=context, stack=frames, model_frame=model, telling=depth), "", ""
        if this not in site_ids:
            site_ids[this] = len(sites)
            sites.append(this)
        row_site.append(site_ids[this])
        named = bool(is_unnamed) and bool(label)
        row_names.append(
            [intern(label) if named else -1, intern(shape) if named and shape else -1, intern(dtype) if named and dtype else -1]
        )
    site[allocs] = np.asarray(row_site, np.int32)[inverse]
    names = np.asarray(row_names, np.int64).reshape(-1, 3)
    for k, name in enumerate(("op", "shape", "dtype")):
        if not (names[:, k] >= 0).any():  # no allocation is given this name (a trace's ops name them all)
            continue
        given = names[:, k][inverse]
        column = getattr(events, name).copy()
        column[allocs] = np.where(given >= 0, given, column[allocs])
        setattr(events, name, column)
    stack = np.full(len(events), -1, np.int32)
    stack[allocs] = np.where(chains[chain_of] >= 0, chain_of, -1).reshape(-1)
    return Attribution(site, sites, stack, chains, index)


def _with_frames(site: SiteInfo, frames: tuple[str, ...], model: str, telling: int) -> SiteInfo:
    if not frames and not model:
        return site
    return SiteInfo(**{**vars(site), "stack": frames, "model_frame": model, "telling": telling})


def _anchored_chains(index: CallIndex, times: np.ndarray, lines: np.ndarray, callers: np.ndarray) -> np.ndarray:
    """For each allocation, the chain of host calls around it on its thread; on a thread without one, the calls
    around its execution's caller (the producer of the flow that launched it, `callers`: (line, time) rows, line
    -1 when none), else around the start of the innermost host root (on any thread) that encloses it. -1: none."""
    chain = np.full(len(times), -1, np.int64)

    def around(rows: np.ndarray, at_lines: np.ndarray, at_times: np.ndarray) -> None:
        for thread, on in _grouped(np.arange(len(rows)), at_lines):
            forest = index.calls.get(thread)
            if forest is not None:
                at = forest.innermost(at_times[on])
                chain[rows[on]] = np.where(at >= 0, forest.chain[np.maximum(at, 0)], -1)

    around(np.arange(len(times)), lines, times)
    launched = np.flatnonzero((chain < 0) & (callers[:, 0] >= 0))
    if len(launched):
        around(launched, callers[launched, 0], callers[launched, 1])
    missing = np.flatnonzero(chain < 0)
    if len(missing) and index.roots is not None:
        root = index.roots.innermost(times[missing])
        found = root >= 0
        rows = index.roots.rows[root[found]]
        around(missing[found], index.spans.line[rows], index.spans.start_ps[rows])
    return chain


@dataclass(eq=False)
class _Executions:
    """Per allocation: its execution (a span row, -1: none), what that runs (index into `programs`), whether it is
    freed before its execution ends, and the execution's caller (line, time; line -1: none)."""

    row: np.ndarray
    program: np.ndarray
    freed_inside: np.ndarray
    callers: np.ndarray
    programs: list[_Program]
    # Executions with a known program, by start: the next call after a transfer.
    starts: np.ndarray
    started: np.ndarray  # their programs


def _executions(index: CallIndex, events: MemoryEvents, allocs: np.ndarray) -> _Executions:
    """The execution each allocation happened in, by causal evidence first: the outermost runtime call of a
    program execution around it on its thread; else the innermost jitted call on its thread; else, by time alone
    and marked near, a program running then on the allocation's own device."""
    spans = index.spans
    times, lines = events.time_ps[allocs], events.line[allocs]
    row = np.full(len(allocs), -1, np.int64)
    program = np.full(len(allocs), -1, np.int64)
    callers = np.full((len(allocs), 2), -1, np.int64)
    programs: list[_Program] = []
    ids: dict[_Program, int] = {}

    def program_id(p: _Program) -> int:
        if p not in ids:
            ids[p] = len(programs)
            programs.append(p)
        return ids[p]

    def of_rows(rows: np.ndarray, near: bool) -> np.ndarray:
        """The program of each jitted call or device run (by name: one per distinct name)."""
        names, inverse = small_unique(spans.name[rows].astype(np.int64))
        known = [program_id(_candidates(spans.names[n], index, near)) for n in names.tolist()]
        return np.asarray(known, np.int64)[inverse.reshape(-1)] if len(rows) else np.zeros(0, np.int64)

    resolved = index.tops()
    # The host's programs, as this allocator's: a few distinct ones.
    remap = np.asarray([program_id(p) for p in resolved.programs], np.int64)
    for thread, forest in index.runtime.items():
        mine = np.flatnonzero(lines == thread)
        at = forest.innermost(times[mine])
        mine = mine[at >= 0]
        tops = forest.rows[index.runtime_top[thread][at[at >= 0]]]
        position = np.searchsorted(resolved.row, tops)
        row[mine] = tops
        program[mine] = remap[resolved.program[position]]
        callers[mine] = resolved.caller[position]
    for thread, forest in index.programs.items():
        mine = np.flatnonzero((lines == thread) & (row < 0))
        at = forest.innermost(times[mine])
        inside = at >= 0
        row[mine[inside]] = forest.rows[at[inside]]
        program[mine[inside]] = of_rows(forest.rows[at[inside]], False)
    device = _device_of(events, index.device_planes)
    if device in index.device_programs:  # by time alone, on its own device only
        forest = index.device_programs[device]
        rest = np.flatnonzero(row < 0)
        at = forest.innermost(times[rest])
        inside = at >= 0
        row[rest[inside]] = forest.rows[at[inside]]
        program[rest[inside]] = of_rows(forest.rows[at[inside]], True)
    freed_inside = np.zeros(len(allocs), bool)
    causal_program = np.asarray([p.causal for p in programs] + [False], bool)  # the last: no program (-1)
    causal = np.flatnonzero(causal_program[program])
    if len(causal):
        freed_inside[causal] = _free_times(events, allocs[causal]) <= spans.end_ps[row[causal]]
    known = np.asarray([bool(p.modules) for p in resolved.programs] + [False], bool)[resolved.program]
    starts, started = _known_executions(index, program_id, spans.start_ps[resolved.row[known]], remap[resolved.program[known]])
    return _Executions(row, program, freed_inside, callers, programs, starts, started)


def _known_executions(
    index: CallIndex, program_id: Callable[[_Program], int], start: np.ndarray, program: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The start and program of every execution whose modules are known (the runtime's, given, and the jitted
    calls), by start: what a transfer feeds is the next of them."""
    spans = index.spans
    for forest in index.programs.values():
        names, inverse = small_unique(spans.name[forest.rows].astype(np.int64))
        known = np.asarray([program_id(_candidates(spans.names[n], index, False)) for n in names.tolist()], np.int64)
        start = np.concatenate([start, forest.start])
        program = np.concatenate([program, known[inverse.reshape(-1)] if len(forest.rows) else known[:0]])
    order = np.argsort(start, kind="stable")
    return start[order], program[order]


def _free_times(events: MemoryEvents, allocs: np.ndarray) -> np.ndarray:
    """When each allocation (event positions, of one allocator) is freed: the next event at its address, if a
    free; the largest time when never."""
    never = np.iinfo(np.int64).max
    order = np.lexsort((events.time_ps, events.addr))
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    following = position[allocs] + 1
    valid = following < len(order)
    nxt = order[np.minimum(following, len(order) - 1)]
    freed = valid & (events.kind[nxt] == FREE) & (events.addr[nxt] == events.addr[allocs])
    return np.where(freed, events.time_ps[nxt], never)


def _memory_id(events: MemoryEvents) -> str:
    """The memory id of one allocator's events."""
    return events.allocator_names[int(events.allocator[0])] if len(events) else ""


def _device_of(events: MemoryEvents, device_planes: Sequence[str]) -> int:
    """The device plane of an allocator's events (`GPU_1_bfc` -> /device:GPU:1; TPU's index_on_host "2" ->
    /device:TPU:2), -1 when it is host memory or its plane is not in the profile."""
    if not len(events) or not device_planes:
        return -1
    found = _DEVICE_ALLOCATOR.match(_memory_id(events))
    if found is None:
        return -1
    suffix = f"{found['kind'] or ''}:{found['ordinal']}"
    planes = [k for k, plane in enumerate(device_planes) if plane.endswith(suffix)]
    return planes[0] if len(planes) == 1 else -1


@dataclass(eq=False)
class _Naming:
    """One allocator's allocations (event positions) being named: their executions, and the rows of results
    (site, op label, shape, dtype) found so far."""

    events: MemoryEvents
    allocs: np.ndarray
    found: _Executions
    index: CallIndex
    results: list[tuple[SiteInfo, str, str, str]]

    def sizes(self, rows: np.ndarray) -> np.ndarray:
        """The requested size of allocations `rows`, else their chunk's."""
        requested = self.events.requested_bytes[self.allocs[rows]]
        sizes: np.ndarray = np.where(requested > 0, requested, self.events.chunk_bytes[self.allocs[rows]])
        return sizes


def _program_sites(job: _Naming, eligible: np.ndarray) -> np.ndarray:
    """For each allocation, its row in `results` when it was made inside a program execution and is
    `eligible`, else -1. One execution's allocations are matched together, and executions of one program that
    allocate the same sizes in the same order (and freed alike) are matched once."""
    found, results = job.found, job.results
    out = np.full(len(job.allocs), -1, np.int64)
    execution = found.row
    inside = np.flatnonzero((execution >= 0) & eligible)
    if not len(inside):
        return out
    order = inside[np.argsort(execution[inside], kind="stable")]  # allocations stay in time order within each
    sizes = job.sizes(order)
    # A size and whether it is freed inside its execution, as one integer: rows of equal codes match alike.
    codes = sizes * 2 + found.freed_inside[order]
    bounds = np.flatnonzero(np.r_[True, execution[order][1:] != execution[order][:-1], True])
    starts, lengths = bounds[:-1], np.diff(bounds)
    program = found.program[order[starts]]
    width = int(lengths.max())
    if width > MAX_TABLE_WIDTH:  # a program of very many outputs: one execution at a time
        kinds = np.arange(len(starts))
    else:  # executions as rows (program, then size codes padded with -1): equal rows are matched once
        table = np.full((len(starts), width + 1), -1, np.int64)
        table[:, 0] = program
        execution_of = np.repeat(np.arange(len(starts)), lengths)
        table[execution_of, 1 + np.arange(len(order)) - np.repeat(starts, lengths)] = codes
        _, first, kinds = np.unique(table, axis=0, return_index=True, return_inverse=True)
        kinds = first[kinds.reshape(-1)]  # each execution's kind: the first execution like it
    first_row = np.zeros(len(starts), np.int64)  # of a kind's results: one per allocation of its execution, in order
    for k in np.unique(kinds).tolist():
        lo, hi = int(starts[k]), int(starts[k] + lengths[k])
        first_row[k] = len(results)
        this = found.programs[int(program[k])]
        freed = found.freed_inside[order[lo:hi]].tolist() if this.causal else None
        results.extend(_match(sizes[lo:hi].tolist(), freed, this, job.index))
    out[order] = np.repeat(first_row[kinds], lengths) + np.arange(len(order)) - np.repeat(starts, lengths)
    return out


def _parameters_fed(job: _Naming, eligible: np.ndarray) -> np.ndarray:
    """For each transfer to a device (`eligible`), its row in `results` when the next call takes it as a
    parameter (one of its program's parameters has its size), else -1."""
    found, results = job.found, job.results
    out = np.full(len(job.allocs), -1, np.int64)
    rows = np.flatnonzero(eligible)
    if not len(rows) or not len(found.starts) or _DEVICE_ALLOCATOR.match(_memory_id(job.events)) is None:
        return out
    following = np.searchsorted(found.starts, job.events.time_ps[job.allocs[rows]], side="right")
    rows = rows[following < len(found.starts)]
    program = found.started[following[following < len(found.starts)]]
    sizes, size_of = np.unique(job.sizes(rows), return_inverse=True)
    pairs, inverse = small_unique(program * len(sizes) + size_of.reshape(-1))
    known = np.full(len(pairs), -1, np.int64)
    for k, pair in enumerate(pairs.tolist()):
        fed = _parameter(int(sizes[pair % len(sizes)]), found.programs[pair // len(sizes)], job.index)
        if fed is not None:
            known[k] = len(results)
            results.append(fed)
    out[rows] = known[inverse.reshape(-1)]
    return out


def _parameter(size: int, program: _Program, index: CallIndex) -> tuple[SiteInfo, str, str, str] | None:
    """A transfer of `size` bytes that the next call of `program` takes: which parameter (several of that size:
    the first, with the others as candidates)."""
    for key in program.modules:
        module = index.modules[key]
        taken = [b for b in _program_buffers(module) if b.label.startswith("parameter") and b.size == size]
        if taken:
            how = MATCH_AMBIGUOUS if len(taken) > 1 else MATCH_EXACT
            candidates = tuple(f"{b.label} of {key}" for b in taken) if len(taken) > 1 else ()
            site, label, shape, dtype = _program_site(module, taken[0], how, candidates)
            site = SiteInfo(**{**vars(site), "context": CONTEXT_TRANSFER})
            return site, f"{TRANSFER_PREFIX}, {label}", shape, dtype
    return None


def _candidates(name: str, index: CallIndex, near: bool) -> _Program:
    """What an execution named `name` runs: `PjitFunction(f)` is any `jit_f(<id>)`, a device's `<module>(<id>)`
    is that module."""
    jitted = _JITTED_CALL.match(name)
    if jitted is not None:
        program = f"jit_{jitted['function']}"
        return _Program(tuple(m.key for m in index.by_name.get(program, [])), program, near=near)
    return _Program((name,) if name in index.modules else (), name, near=near)


def _program_buffers(module: HloModule) -> list[_ProgramBuffer]:
    a = module.allocations
    outputs = [k for k in range(len(a)) if a.maybe_live_out[k] and not a.is_thread_local[k]]
    found = []
    for rank, k in enumerate(outputs):
        aliased = f" (aliases parameter {int(a.parameter_number[k])})" if a.is_parameter[k] else ""
        found.append(_ProgramBuffer(f"output {rank}{aliased}", k, int(a.size[k]), False, 0))
    for k in range(len(a)):
        if a.maybe_live_out[k] or a.is_thread_local[k]:
            continue
        if a.is_parameter[k]:
            found.append(_ProgramBuffer(f"parameter {int(a.parameter_number[k])}", k, int(a.size[k]), False, 1))
        elif a.is_constant[k]:
            found.append(_ProgramBuffer("constant", k, int(a.size[k]), False, 1))
        else:
            count = int(np.count_nonzero(module.buffers.allocation == k))
            label = "temporaries" if count <= 1 else f"temporaries ({count} buffers)"
            found.append(_ProgramBuffer(label, k, int(a.size[k]), True, 0))
    return found


def _assign(
    sizes: list[int], freed: list[bool] | None, buffers: list[_ProgramBuffer]
) -> list[tuple[_ProgramBuffer | None, str, list[_ProgramBuffer]]]:
    """Each size's program buffer taken in order (the preferred unused one of its size, else a temporaries block
    within NEAR_BYTES), how it matched, and all the buffers of that size. With `freed` (whether each allocation
    was freed inside its execution: seen inside `Build buffer allocations`), a temporaries block is preferred for
    what its execution freed and an output for what outlived it, and the allocation order (the buffer-allocation
    index order) settles equal sizes."""
    used: set[int] = set()
    out: list[tuple[_ProgramBuffer | None, str, list[_ProgramBuffer]]] = []
    for k, size in enumerate(sizes):
        temporary_first = freed is not None and freed[k]
        same = sorted(
            (b for b in buffers if b.size == size), key=lambda b: (b.rank, b.temporary != temporary_first, b.allocation)
        )
        # A parameter or a constant is named only when no output or temporaries block of the size is left.
        same = [b for b in same if b.rank == same[0].rank] if same else same
        free = [b for b in same if b.allocation not in used]
        if free:
            used.add(free[0].allocation)
            settled = freed is not None or len(same) == 1
            out.append((free[0], MATCH_EXACT if settled else MATCH_AMBIGUOUS, [] if freed is not None else same))
            continue
        near = [b for b in buffers if b.temporary and b.allocation not in used and abs(b.size - size) <= NEAR_BYTES]
        if near:
            used.add(near[0].allocation)
            out.append((near[0], MATCH_NEAR, near))
        else:
            out.append((None, MATCH_NONE, []))
    return out


def _match(
    sizes: list[int], freed: list[bool] | None, program: _Program, index: CallIndex
) -> list[tuple[SiteInfo, str, str, str]]:
    modules = [index.modules[key] for key in program.modules]
    if not modules:
        label = f"in {program.name} (its HLO is not in the profile)"
        return [(SiteInfo(context=CONTEXT_PROGRAM, program=program.name, match=MATCH_NO_HLO), label, "", "")] * len(sizes)
    scored = []
    for module in modules:
        assigned = _assign(sizes, freed, _program_buffers(module))
        exact = sum(how in (MATCH_EXACT, MATCH_AMBIGUOUS) for _, how, _ in assigned)
        near = sum(how == MATCH_NEAR for _, how, _ in assigned)
        scored.append(((exact, near), module, assigned))
    best = max(score for score, _, _ in scored)
    tied = [(module, assigned) for score, module, assigned in scored if score == best]
    module, assigned = tied[0]
    out = []
    for k, (buffer, how, same) in enumerate(assigned):
        if buffer is None:
            label = f"in {module.key}, no buffer of this size"
            out.append((SiteInfo(context=CONTEXT_PROGRAM, program=module.key, match=MATCH_NONE), label, "", ""))
            continue
        candidates = [f"{b.label} of {module.key}" for b in same] if len(same) > 1 else []
        others = [f"{taken.label} of {m.key}" for m, a in tied[1:] if (taken := a[k][0]) is not None]
        if others:
            how = MATCH_AMBIGUOUS
            candidates = [f"{buffer.label} of {module.key}", *others] if not candidates else [*candidates, *others]
        near_by = _near_by(by_time=program.near, by_size=how == MATCH_NEAR)
        if program.near and how in (MATCH_EXACT, MATCH_AMBIGUOUS):
            how = MATCH_NEAR  # the program was found by time alone
        out.append(_program_site(module, buffer, how, tuple(candidates), near_by))
    return out


def _near_by(by_time: bool, by_size: bool) -> str:
    """The evidence a near match rests on: the program found by time alone, a buffer's size a few KiB off, or both."""
    if by_time and by_size:
        return NEAR_BY_TIME_AND_SIZE
    return NEAR_BY_TIME if by_time else NEAR_BY_SIZE if by_size else ""


def _program_site(
    module: HloModule, buffer: _ProgramBuffer, how: str, candidates: tuple[str, ...], near_by: str = ""
) -> tuple[SiteInfo, str, str, str]:
    b = module.buffers
    rows = np.flatnonzero(b.allocation == buffer.allocation)
    hlo_op = op_name = hlo_shape = source = ""
    ins = module.instructions
    if len(rows):
        # The largest of its logical buffers, one that an op defines before a parameter's own (an output may
        # hold both), then the first in memory.
        parameter = np.asarray([b.instruction[r] >= 0 and ins.opcode[b.instruction[r]] == "parameter" for r in rows])
        row = int(rows[np.lexsort((b.offset[rows], parameter, -b.size[rows]))[0]])
        hlo_shape = b.shape[row]
        instruction = int(b.instruction[row])
        if instruction >= 0:
            op_name, source = ins.op_name[instruction], ins.source[instruction]
            # A scope names the op last ("jit(f)/jvp()/dot_general"); a bare name is an argument's, not an op's.
            hlo_op = op_name.rsplit("/", 1)[-1] if "/" in op_name else ins.opcode[instruction]
    site = SiteInfo(
        context=CONTEXT_PROGRAM,
        program=module.key,
        buffer=buffer.label,
        allocation=int(module.allocations.index[buffer.allocation]),
        hlo_op=hlo_op,
        op_name=op_name,
        hlo_shape=hlo_shape,
        source=source,
        match=how,
        near_by=near_by,
        candidates=candidates,
    )
    shape = _SHAPE.match(hlo_shape)
    dims, dtype = (shape["dims"], shape["dtype"]) if shape and not buffer.temporary else ("", "")
    return site, f"{buffer.label} of {module.key}", dims, dtype
