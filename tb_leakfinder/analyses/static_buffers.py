"""Static buffer lifetimes of a compiled XLA program, from its buffer assignment.

This is what XProf's Memory Viewer shows for one module, for every module:
the heap in program order, each logical buffer's live range, the buffers that
live for the whole program and why, and what is live at the peak.

Program order is the index of an event in the module's heap-simulator trace.
The heap follows XProf 2.24's memory_viewer, so peak and curve agree with it:
- allocations that are entry parameters, maybe-live-out or constants live for
  the whole program: their sizes are added to every point. Thread-local
  allocations are whole-program too but outside the heap, as in XProf;
- the trace is the one whose first event's buffer sits in a temporary
  allocation of the memory space, else the one with most events there;
- SHARE_WITH makes a buffer reuse its canonical buffer's memory, which comes
  back only when every sharer is freed;
- a buffer with no FREE lives to the end.
A logical buffer's range is [start, end): live after event `start` (its ALLOC
or SHARE_WITH) until event `end` (its FREE; the number of events if none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.errors import BadArgumentError, LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import ALLOC, FREE, SHARE_WITH, HeapTrace, HloModule

# XProf's Memory Viewer groups buffers below this size as "small".
SMALL_BUFFER_BYTES = 16 * 1024
# A returned buffer worth checking is at least this share of the peak (and not small).
LARGE_FRACTION = 0.05
# A temporary is long-lived when its range covers at least this share of the program.
LONG_LIVED_FRACTION = 0.5
DEFAULT_POINTS = 1000
MAX_POINTS = 20000
_INT64_MAX = (1 << 63) - 1

_WHY = {
    "parameter": "entry computation parameter: the caller's input, held for the whole call",
    "live_out": "maybe-live-out: returned by the program, so it is kept until the end",
    "constant": "constant of the program",
    "thread_local": "thread-local scratch, reserved for the whole program outside the heap",
    "never_freed": "no FREE in the heap trace: kept from its allocation to the end",
}


@dataclass
class _Simulation:
    space: int
    trace: HeapTrace | None
    num_events: int
    heap_after: np.ndarray  # int64 simulated bytes after each event (whole-program bytes excluded)
    peak_position: int | None
    # Per logical buffer row: its own range, and the buffer whose memory it uses.
    start: np.ndarray  # int64, -1 if not in the trace
    end: np.ndarray  # int64, num_events if never freed
    root: np.ndarray  # int64 row
    # Memory blocks: a root buffer's bytes held in the heap over [start, end).
    block_root: np.ndarray
    block_start: np.ndarray
    block_end: np.ndarray
    whole_rows: np.ndarray  # allocation rows living for the whole program, in the heap
    whole_bytes: int
    thread_local_rows: np.ndarray  # whole-program too, but outside the heap

    @property
    def peak_temporary_bytes(self) -> int:
        return int(self.heap_after[self.peak_position]) if self.peak_position is not None else 0

    @property
    def peak_bytes(self) -> int:
        return self.peak_temporary_bytes + self.whole_bytes

    def instruction_at(self, position: int | None) -> str | None:
        return self.trace.instruction[position] if self.trace is not None and position is not None else None


def memory_space_of(module: HloModule, memory_space: int | None) -> int:
    """The memory space to analyse: the given one (NotFoundError if absent), else 0 or the first."""
    spaces = module.memory_spaces
    if memory_space is None:
        return 0 if 0 in spaces or not spaces else spaces[0]
    if memory_space not in spaces:
        raise NotFoundError(f"{module.source}: HLO module {module.key} has no memory space {memory_space} (it has {spaces})")
    return memory_space


def _choose_trace(module: HloModule, space: int) -> HeapTrace | None:
    allocations = module.allocations
    buffers = module.buffers
    trace_of_allocation: dict[int, int] = {}
    for i, trace in enumerate(module.traces):
        if len(trace) and trace.buffer[0] >= 0 and buffers.allocation[trace.buffer[0]] >= 0:
            trace_of_allocation[int(buffers.allocation[trace.buffer[0]])] = i
    indefinite = allocations.is_indefinite
    for row in range(len(allocations)):
        if allocations.color[row] == space and not indefinite[row] and row in trace_of_allocation:
            return module.traces[trace_of_allocation[row]]
    best, best_count = None, 0
    for trace in module.traces:
        count = int(np.count_nonzero(buffers.color[trace.buffer[trace.buffer >= 0]] == space))
        if count > best_count:
            best, best_count = trace, count
    return best


def _whole_program_allocations(module: HloModule, space: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the whole-program allocations that hold a non-empty buffer: (in the heap, thread-local)."""
    allocations = module.allocations
    buffers = module.buffers
    holds_buffer = np.zeros(len(allocations), bool)
    holds_buffer[buffers.allocation[(buffers.allocation >= 0) & (buffers.size > 0)]] = True
    whole = allocations.is_indefinite & (allocations.color == space) & holds_buffer
    return np.flatnonzero(whole & ~allocations.is_thread_local), np.flatnonzero(whole & allocations.is_thread_local)


def _simulate(module: HloModule, space: int) -> _Simulation:
    whole_rows, thread_local_rows = _whole_program_allocations(module, space)
    whole_bytes = int(module.allocations.size[whole_rows].sum())
    trace = _choose_trace(module, space)
    n = len(trace) if trace is not None else 0
    if trace is None:
        empty = np.zeros(0, np.int64)
        heap_after, start, end = empty, np.full(len(module.buffers), -1, np.int64), np.zeros(len(module.buffers), np.int64)
        root, blocks = np.arange(len(module.buffers)), (empty, empty, empty)
    else:
        heap_after, start, end, root, blocks = _run_trace(module, trace)
    peak_position = None
    if len(heap_after) and heap_after.max() > 0:
        peak_position = int(np.argmax(heap_after))  # the first position that reaches the peak, as XProf
    return _Simulation(
        space, trace, n, heap_after, peak_position, start, end, root, *blocks, whole_rows, whole_bytes, thread_local_rows
    )


def _run_trace(
    module: HloModule, trace: HeapTrace
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    where = f"{module.source}: HLO module {module.key}"
    size = module.buffers.size.tolist()
    n = len(trace)
    heap_after = np.empty(n, np.int64)
    start = np.full(len(size), -1, np.int64)
    end = np.full(len(size), n, np.int64)
    root = np.arange(len(size), dtype=np.int64)
    canonical: dict[int, int] = {}  # sharer -> the buffer it shares
    refs: dict[int, int] = {}  # root -> number of buffers using its memory
    open_block: dict[int, int] = {}  # root -> index of its open block
    block_root: list[int] = []
    block_start: list[int] = []
    block_end: list[int] = []

    def root_of(row: int) -> int:
        while row in canonical:
            row = canonical[row]
        return row

    def take(r: int, i: int) -> None:
        open_block[r] = len(block_root)
        block_root.append(r)
        block_start.append(i)
        block_end.append(n)

    heap = 0
    events = zip(trace.kind.tolist(), trace.buffer.tolist(), trace.share_with.tolist(), strict=True)
    for i, (kind, row, shared) in enumerate(events):
        if row < 0 or (kind == SHARE_WITH and shared < 0):
            heap_after[i] = heap  # an id the assignment does not know: XProf skips it too
            continue
        if kind == ALLOC:
            r = root_of(row)
            refs[r] = refs.get(r, 0) + 1
            heap += size[row]
            start[row] = i
            take(r, i)
        elif kind == FREE:
            r = root_of(row)
            refs[r] = refs.get(r, 0) - 1
            if refs[r] < 0:
                raise LeakfinderError(f"{where}: logical buffer {module.buffers.id[row]} is freed more than once")
            end[row] = i
            if refs[r] == 0:
                heap -= size[r]
                if heap < 0:
                    raise LeakfinderError(f"{where}: the heap size becomes negative at event {i}")
                if r in open_block:
                    block_end[open_block.pop(r)] = i
        elif kind == SHARE_WITH:
            canonical[row] = shared
            r = root_of(shared)
            refs[r] = refs.get(r, 0) + 1
            start[row] = i
            root[row] = r
            if refs[r] == 1:  # the canonical buffer was freed: its memory is taken again
                heap += size[r]
                take(r, i)
        else:
            raise LeakfinderError(f"{where}: unknown heap-simulator event kind {kind} at event {i}")
        if heap > _INT64_MAX:
            raise LeakfinderError(f"{where}: the heap size passes 2^63 bytes at event {i}: the buffer sizes are corrupt")
        heap_after[i] = heap
    blocks = (np.array(block_root, np.int64), np.array(block_start, np.int64), np.array(block_end, np.int64))
    return heap_after, start, end, root, blocks


def _holders(sim: _Simulation, roots: np.ndarray, position: int) -> np.ndarray:
    """For each root, the buffer using its memory at `position`: the latest one live there."""
    live = np.flatnonzero((sim.start >= 0) & (sim.start <= position) & (position < sim.end))
    order = live[np.lexsort((sim.start[live], sim.root[live]))]
    last_of_root = {int(sim.root[row]): int(row) for row in order}  # later starts overwrite
    return np.array([last_of_root.get(int(r), int(r)) for r in roots], np.int64)


def _reason(module: HloModule, allocation: int) -> str:
    a = module.allocations
    if a.is_parameter[allocation]:
        return "parameter"
    if a.maybe_live_out[allocation]:
        return "live_out"
    if a.is_constant[allocation]:
        return "constant"
    return "thread_local"


def _representative(module: HloModule, allocation: int, reason: str) -> int:
    """The logical buffer that names an allocation: its largest, preferring the
    `parameter` instruction for a parameter and a computed value otherwise."""
    buffers = module.buffers
    opcodes = module.instructions.opcode

    def preference(row: int) -> tuple[int, bool, int]:
        instruction = int(buffers.instruction[row])
        is_param = instruction >= 0 and opcodes[instruction] == "parameter"
        return int(buffers.size[row]), is_param == (reason == "parameter"), -int(buffers.id[row])

    return max(np.flatnonzero(buffers.allocation == allocation).tolist(), key=preference)


def _describe(module: HloModule, row: int) -> dict:
    """Where a logical buffer comes from, JSON-ready."""
    buffers = module.buffers
    instructions = module.instructions
    instruction = int(buffers.instruction[row])
    known = instruction >= 0
    return {
        "logical_buffer": int(buffers.id[row]),
        "instruction": instructions.name[instruction] if known else "",
        "opcode": instructions.opcode[instruction] if known else "",
        "op_name": instructions.op_name[instruction] if known else "",
        "shape": buffers.shape[row],
        "source": instructions.source[instruction] if known else "",
        "last_user": instructions.last_user[instruction] if known else "",
    }


def _whole_program_buffers(module: HloModule, sim: _Simulation) -> list[dict]:
    """One entry per whole-program allocation and per never-freed heap block, largest first."""
    allocations = module.allocations
    large = max(SMALL_BUFFER_BYTES, int(sim.peak_bytes * LARGE_FRACTION))
    # A program with a single result returns it on purpose: only one of several results is suspect.
    results = allocations.maybe_live_out & ~allocations.is_tuple & (allocations.color == sim.space)
    single_result = int(np.count_nonzero(results)) <= 1
    entries: list[dict] = []
    for allocation in [*sim.whole_rows.tolist(), *sim.thread_local_rows.tolist()]:
        reason = _reason(module, allocation)
        live_out = bool(allocations.maybe_live_out[allocation])
        aliased = reason == "parameter" and live_out
        size = int(allocations.size[allocation])
        why = _WHY[reason]
        if aliased:
            why += "; also returned: the output reuses (aliases) this input's buffer"
        elif reason == "live_out" and single_result:
            why += "; it is the program's only result"
        entries.append(
            {
                **_describe(module, _representative(module, allocation, reason)),
                "bytes": size,
                "reason": reason,
                "why": why,
                "allocation": int(allocations.index[allocation]),
                "parameter_number": int(allocations.parameter_number[allocation]) if reason == "parameter" else None,
                "live_out": live_out,
                "aliases_parameter": aliased,
                # What the program returns is its author's choice; its inputs are not.
                "actionable": reason == "live_out" and size >= large and not single_result,
            }
        )
    never_released = np.flatnonzero(sim.block_end == sim.num_events)
    roots = sim.block_root[never_released]
    for root, holder in zip(roots.tolist(), _holders(sim, roots, sim.num_events - 1).tolist(), strict=True):
        size = int(module.buffers.size[root])
        entries.append(
            {
                **_describe(module, holder),
                "bytes": size,
                "reason": "never_freed",
                "why": f"{_WHY['never_freed']} (allocated at position {int(sim.start[holder])})",
                "allocation": int(allocations.index[module.buffers.allocation[root]]),
                "parameter_number": None,
                "live_out": False,
                "aliases_parameter": False,
                "actionable": size >= large,
            }
        )
    entries.sort(key=lambda e: (-e["bytes"], e["instruction"]))
    return entries


def _peak_buffers(module: HloModule, sim: _Simulation) -> list[dict]:
    """Everything in the heap at the peak, largest first; the sizes add up to the peak."""
    entries = [
        {
            **_describe(module, _representative(module, allocation, _reason(module, allocation))),
            "bytes": int(module.allocations.size[allocation]),
            "kind": _reason(module, allocation),
        }
        for allocation in sim.whole_rows.tolist()
    ]
    p = sim.peak_position
    if p is not None:
        live = np.flatnonzero((sim.block_start <= p) & (p < sim.block_end))
        roots = sim.block_root[live]
        for root, holder in zip(roots.tolist(), _holders(sim, roots, p).tolist(), strict=True):
            entries.append({**_describe(module, holder), "bytes": int(module.buffers.size[root]), "kind": "temporary"})
    entries.sort(key=lambda e: (-e["bytes"], e["instruction"]))
    return entries


def _group_small(entries: list[dict], label_key: str) -> list[dict]:
    """Entries below SMALL_BUFFER_BYTES folded into one, so that totals stay whole."""
    grouped = [dict(e, count=1) for e in entries if e["bytes"] >= SMALL_BUFFER_BYTES]
    small = [e for e in entries if e["bytes"] < SMALL_BUFFER_BYTES]
    if small:
        grouped.append(
            {
                **dict.fromkeys(("instruction", "opcode", "op_name", "shape", "source", "last_user"), ""),
                "logical_buffer": None,
                "label": f"small (<{SMALL_BUFFER_BYTES // 1024} KiB)",
                "bytes": sum(e["bytes"] for e in small),
                "count": len(small),
                label_key: "small",
            }
        )
    return grouped


def _long_lived(module: HloModule, sim: _Simulation) -> list[dict]:
    """Freed temporaries whose own range covers most of the program, by bytes x share of the program."""
    n = sim.num_events
    if sim.trace is None or not n:
        return []
    sizes = module.buffers.size
    span = sim.end - sim.start
    rows = np.flatnonzero((sim.start >= 0) & (sim.end < n) & (sizes >= SMALL_BUFFER_BYTES) & (span >= LONG_LIVED_FRACTION * n))
    entries = []
    for row in rows.tolist():
        s, e = int(sim.start[row]), int(sim.end[row])
        described = _describe(module, row)
        until = f"its last user {described['last_user']}" if described["last_user"] else f"position {e}"
        entries.append(
            {
                **described,
                "bytes": int(sizes[row]),
                "start": s,
                "end": e,
                "fraction": round((e - s) / n, 4),
                "why": f"live over {e - s} of {n} positions, from {described['instruction'] or 'position ' + str(s)} to {until}",
            }
        )
    entries.sort(key=lambda x: (-x["bytes"] * x["fraction"], x["instruction"]))
    return entries


def _actionable(module: HloModule, whole_program: list[dict]) -> list[dict]:
    parameter_of_shape = {e["shape"]: e["parameter_number"] for e in whole_program if e["reason"] == "parameter"}
    flags = []
    for e in whole_program:
        if not e["actionable"]:
            continue
        what = f"{e['instruction'] or 'logical buffer ' + str(e['logical_buffer'])} {e['shape']}"
        if e["op_name"]:
            what += f" ({e['op_name']}{' at ' + e['source'] if e['source'] else ''})"
        if e["reason"] == "live_out":
            message = (
                f"{what} is returned by {module.key} and is not an input's alias: XLA keeps it for the whole"
                " program; check that the caller needs it"
            )
            if e["shape"] in parameter_of_shape:
                message += (
                    f" (it has the shape of parameter {parameter_of_shape[e['shape']]}: if it replaces that input,"
                    " donate the argument so that the output reuses its buffer)"
                )
        else:
            message = f"{what} is never freed in {module.key}'s heap trace"
        flags.append({k: e[k] for k in ("instruction", "op_name", "shape", "source", "bytes", "reason")} | {"message": message})
    return flags


def _special_bytes(module: HloModule, space: int) -> dict[str, int]:
    a = module.allocations
    in_space = a.color == space
    return {
        "live_out_bytes": int(a.size[in_space & a.maybe_live_out].sum()),
        "parameter_bytes": int(a.size[in_space & a.is_parameter].sum()),
        "constant_bytes": int(a.size[in_space & a.is_constant].sum()),
        "thread_local_bytes": int(a.size[in_space & a.is_thread_local].sum()),
    }


def _header(module: HloModule, sim: _Simulation, space: int) -> dict:
    return {
        "name": module.key,
        "module": module.name,
        "program_id": module.program_id,
        "memory_space": space,
        "num_instructions": module.num_instructions,
        "num_positions": sim.num_events,
        "peak_heap_bytes": sim.peak_bytes,
        "peak_position": sim.peak_position,
        "peak_instruction": sim.instruction_at(sim.peak_position),
        "peak_temporary_bytes": sim.peak_temporary_bytes,
        "whole_program_bytes": sim.whole_bytes,
        **_special_bytes(module, space),
    }


def module_summary(module: HloModule, memory_space: int | None = None) -> dict:
    """The report's entry for one module and memory space (default 0), JSON-ready."""
    space = memory_space_of(module, memory_space)
    sim = _simulate(module, space)
    whole_program = _whole_program_buffers(module, sim)
    long_lived = _long_lived(module, sim)
    return {
        **_header(module, sim, space),
        "whole_program_buffers": _group_small(whole_program, "reason"),
        "actionable": _actionable(module, whole_program),
        "num_long_lived_temporaries": len(long_lived),
        "long_lived_temporaries": long_lived[:3],
    }


def module_summaries(modules: list[HloModule]) -> tuple[list[dict], list[str]]:
    """`module_summary` for every module and memory space, largest peak first, and one warning
    per module whose heap trace cannot be simulated (the others are still summarised)."""
    summaries: list[dict] = []
    warnings: list[str] = []
    for module in modules:
        try:
            summaries.extend([module_summary(module, space) for space in module.memory_spaces])
        except LeakfinderError as e:
            warnings.append(e.message)
    summaries.sort(key=lambda s: (-s["peak_heap_bytes"], s["name"], s["memory_space"]))
    return summaries, warnings


def _downsample(values: np.ndarray, points: int, keep: int | None) -> np.ndarray:
    """Positions that draw `values` in about `points` points: each bucket's first, last, min and max, and `keep`."""
    n = len(values)
    if n <= points:
        return np.arange(n)
    buckets = max(1, points // 4)
    starts = np.linspace(0, n, buckets + 1).astype(np.int64)[:-1]
    bucket_of = np.repeat(np.arange(buckets), np.diff(np.append(starts, n)))
    chosen = [starts, np.append(starts[1:], n) - 1]
    for reduce in (np.maximum, np.minimum):
        hits = np.flatnonzero(values == reduce.reduceat(values, starts)[bucket_of])
        _, first = np.unique(bucket_of[hits], return_index=True)
        chosen.append(hits[first])
    if keep is not None:
        chosen.append(np.array([keep]))
    return np.unique(np.concatenate(chosen))


def _ranges(module: HloModule, sim: _Simulation, space: int) -> list[dict]:
    """Every logical buffer of the memory space that has a range, in program order."""
    buffers = module.buffers
    n = sim.num_events
    whole = set(sim.whole_rows.tolist()) | set(sim.thread_local_rows.tolist())
    entries: list[dict] = []
    for row in np.flatnonzero(buffers.color == space).tolist():
        allocation = int(buffers.allocation[row])
        if sim.start[row] >= 0:
            s, e = int(sim.start[row]), int(sim.end[row])
            kind = "temporary" if e < n else "never_freed"
        elif allocation in whole:
            s, e, kind = 0, n, _reason(module, allocation)
        else:
            continue
        root = int(sim.root[row])
        entries.append(
            {
                **_describe(module, row),
                "bytes": int(buffers.size[row]),
                "allocation": int(module.allocations.index[allocation]) if allocation >= 0 else None,
                "offset": int(buffers.offset[row]),
                "start": s,
                "end": e,
                "kind": kind,
                "shares_with": int(buffers.id[root]) if root != row else None,
            }
        )
    entries.sort(key=lambda x: (x["start"], -x["bytes"], x["logical_buffer"]))
    return entries


def module_detail(module: HloModule, memory_space: int | None = None, points: int = DEFAULT_POINTS) -> dict:
    """One module in detail for the UI: heap curve, buffer ranges, peak and whole-program buffers."""
    if not 4 <= points <= MAX_POINTS:
        raise BadArgumentError(f"points must be between 4 and {MAX_POINTS}, not {points}")
    space = memory_space_of(module, memory_space)
    sim = _simulate(module, space)
    keep = _downsample(sim.heap_after, points, sim.peak_position)
    whole_program = _whole_program_buffers(module, sim)
    return {
        **_header(module, sim, space),
        "memory_spaces": module.memory_spaces,
        "curve": {
            "position": keep.tolist(),
            "heap_bytes": (sim.heap_after[keep] + sim.whole_bytes).tolist(),
            "instruction": [sim.instruction_at(i) for i in keep.tolist()],
        },
        "peak_buffers": _group_small(_peak_buffers(module, sim), "kind"),
        "whole_program_buffers": whole_program,
        "actionable": _actionable(module, whole_program),
        "long_lived_temporaries": _long_lived(module, sim),
        "buffers": _ranges(module, sim, space),
    }


def _size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def format_module_text(summary: dict) -> str:
    """A short plain-text section for `tb-leakfinder report`, from `module_summary`'s dict."""
    at = ""
    if summary["peak_position"] is not None:
        at = f" at position {summary['peak_position']} of {summary['num_positions']} ({summary['peak_instruction']})"
    lines = [
        f"{summary['name']}: memory space {summary['memory_space']}, {summary['num_instructions']} instructions",
        f"  peak heap {_size_text(summary['peak_heap_bytes'])}{at}",
        f"  whole program {_size_text(summary['whole_program_bytes'])}: parameters {_size_text(summary['parameter_bytes'])},"
        f" live-out {_size_text(summary['live_out_bytes'])}, constants {_size_text(summary['constant_bytes'])}"
        f" (+ thread-local {_size_text(summary['thread_local_bytes'])})",
    ]
    for e in summary["whole_program_buffers"][:5]:
        name = e.get("label") or e["instruction"]
        alias = " (returned in place: donated)" if e.get("aliases_parameter") else ""
        lines.append(f"    {_size_text(e['bytes']):>10}  {e['reason']:<12} {name} {e['shape']}{alias}".rstrip())
    lines.extend(f"  CHECK {_size_text(flag['bytes'])}: {flag['message']}" for flag in summary["actionable"])
    return "\n".join(lines)


def format_modules_text(summaries: list[dict], detailed: int = 3) -> str:
    """The CLI's section for all modules (as `module_summaries` sorts them): a full section for each
    module with something to check and for the `detailed` largest peaks, one line for each other."""
    shown = [s for i, s in enumerate(summaries) if s["actionable"] or i < detailed]
    rest = [s for s in summaries if not any(s is t for t in shown)]
    parts = [format_module_text(s) for s in shown]
    if rest:
        lines = [f"{len(rest)} more module(s), nothing to check:"]
        lines.extend(f"  {_size_text(s['peak_heap_bytes']):>10}  {s['name']} (memory space {s['memory_space']})" for s in rest)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
