"""Static buffer lifetimes of a compiled XLA program, from its buffer assignment.

This is what XProf's Memory Viewer shows for one module, for every module:
the heap in program order, each logical buffer's live range, the buffers that
live for the whole program and why, and what is live at the peak.

The heap itself is replayed by `heap_simulation`; this module says which buffers
matter and why, in the sentences and tables the views show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_leakfinder.analyses.downsample import DEFAULT_POINTS, MAX_POINTS, MIN_POINTS, downsample
from tb_leakfinder.analyses.heap_simulation import Simulation, holders, simulate
from tb_leakfinder.errors import BadArgumentError, LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import SMALL_BUFFER_BYTES, HloModule

# The module route sends at most this many buffer ranges (the largest), enough to draw a program's blocks.
MAX_BUFFER_RANGES = 5000
# A returned buffer worth checking is at least this share of the peak (and not small).
LARGE_FRACTION = 0.05
# A temporary is long-lived when its range covers at least this share of the program.
LONG_LIVED_FRACTION = 0.5

_WHY = {
    "parameter": "entry computation parameter: the caller's input, held for the whole call",
    "live_out": "maybe-live-out: returned by the program, so it is kept until the end",
    "constant": "constant of the program",
    "thread_local": "thread-local scratch, reserved for the whole program outside the heap",
    "never_freed": "no FREE in the heap trace: kept from its allocation to the end",
}


@dataclass
class BufferOrigin:
    """Where a logical buffer comes from."""

    logical_buffer: int
    instruction: str  # "" when the buffer names no known instruction
    opcode: str
    op_name: str
    shape: str
    source: str
    last_user: str


@dataclass
class WholeProgramBufferResult(BufferOrigin):
    """An allocation (or never-freed heap block) live for the whole program, and why."""

    bytes: int
    reason: str  # parameter, live_out, constant, thread_local or never_freed
    why: str
    allocation: int
    parameter_number: int | None
    live_out: bool
    aliases_parameter: bool
    actionable: bool


@dataclass
class PeakBufferResult(BufferOrigin):
    """A buffer in the heap at the peak."""

    bytes: int
    kind: str  # temporary, or the whole-program reason


@dataclass
class LongLivedTemporaryResult(BufferOrigin):
    """A freed temporary whose range covers most of the program."""

    bytes: int
    start: int
    end: int
    fraction: float
    why: str


@dataclass
class BufferRange(BufferOrigin):
    """A logical buffer's live range in program order."""

    bytes: int
    allocation: int | None
    offset: int
    start: int
    end: int
    kind: str
    shares_with: int | None  # the logical buffer whose memory it uses


@dataclass
class Flag:
    """A whole-program buffer worth checking, with the sentence that says why."""

    instruction: str
    op_name: str
    shape: str
    source: str
    bytes: int
    reason: str
    message: str


@dataclass
class HeapCurveResult:
    position: list[int]
    heap_bytes: list[int]
    instruction: list[str | None]


@dataclass
class ModuleFiguresResult:
    """One compiled program and memory space in figures: the wire's `ModuleFigures` (wire/schema.py), whose keys
    tests/unit/wire/test_schema.py holds to these fields; its `actionable` flags are each subclass's own field."""

    name: str  # "<module>(<program_id>)"
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
    aliased_bytes: int  # counted in both: parameters the program returns in place (an output aliasing its input)
    constant_bytes: int
    thread_local_bytes: int


@dataclass
class ModuleSummaryResult(ModuleFiguresResult):
    """What the report says of one module and memory space."""

    whole_program_buffers: list[WholeProgramBufferResult]  # largest first
    actionable: list[Flag]
    long_lived_temporaries: list[LongLivedTemporaryResult]  # by bytes x share of the program


@dataclass
class ModuleDetail(ModuleFiguresResult):
    """One module in detail for the UI."""

    memory_spaces: list[int]
    curve: HeapCurveResult
    peak_buffers: list[PeakBufferResult]  # largest first; the sizes add up to the peak
    whole_program_buffers: list[WholeProgramBufferResult]
    actionable: list[Flag]
    long_lived_temporaries: list[LongLivedTemporaryResult]
    buffers: list[BufferRange]  # in program order; the largest MAX_BUFFER_RANGES of num_buffers
    num_buffers: int


def memory_space_of(module: HloModule, memory_space: int | None) -> int:
    """The memory space to analyse: the given one (NotFoundError if absent), else 0 or the first."""
    spaces = module.memory_spaces
    if memory_space is None:
        return 0 if 0 in spaces or not spaces else spaces[0]
    if memory_space not in spaces:
        raise NotFoundError(f"{module.source}: HLO module {module.key} has no memory space {memory_space} (it has {spaces})")
    return memory_space


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

    return int(max(np.flatnonzero(buffers.allocation == allocation).tolist(), key=preference))


def _describe(module: HloModule, row: int) -> dict[str, Any]:
    """The `BufferOrigin` fields of a logical buffer."""
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


def _whole_program_buffers(module: HloModule, sim: Simulation) -> list[WholeProgramBufferResult]:
    """One entry per whole-program allocation and per never-freed heap block, largest first."""
    allocations = module.allocations
    large = max(SMALL_BUFFER_BYTES, int(sim.peak_bytes * LARGE_FRACTION))
    # A program with a single result returns it on purpose: only one of several results is suspect.
    results = allocations.maybe_live_out & ~allocations.is_tuple & (allocations.color == sim.space)
    single_result = int(np.count_nonzero(results)) <= 1
    entries: list[WholeProgramBufferResult] = []
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
            WholeProgramBufferResult(
                **_describe(module, _representative(module, allocation, reason)),
                bytes=size,
                reason=reason,
                why=why,
                allocation=int(allocations.index[allocation]),
                parameter_number=int(allocations.parameter_number[allocation]) if reason == "parameter" else None,
                live_out=live_out,
                aliases_parameter=aliased,
                # What the program returns is its author's choice; its inputs are not.
                actionable=reason == "live_out" and size >= large and not single_result,
            )
        )
    never_released = np.flatnonzero(sim.block_end == sim.num_events)
    roots = sim.block_root[never_released]
    for root, holder in zip(roots.tolist(), holders(sim, roots, sim.num_events - 1).tolist(), strict=True):
        size = int(module.buffers.size[root])
        entries.append(
            WholeProgramBufferResult(
                **_describe(module, holder),
                bytes=size,
                reason="never_freed",
                why=f"{_WHY['never_freed']} (allocated at position {int(sim.start[holder])})",
                allocation=int(allocations.index[module.buffers.allocation[root]]),
                parameter_number=None,
                live_out=False,
                aliases_parameter=False,
                actionable=size >= large,
            )
        )
    entries.sort(key=lambda e: (-e.bytes, e.instruction))
    return entries


def _peak_buffers(module: HloModule, sim: Simulation) -> list[PeakBufferResult]:
    """Everything in the heap at the peak, largest first; the sizes add up to the peak."""
    entries = [
        PeakBufferResult(
            **_describe(module, _representative(module, allocation, _reason(module, allocation))),
            bytes=int(module.allocations.size[allocation]),
            kind=_reason(module, allocation),
        )
        for allocation in sim.whole_rows.tolist()
    ]
    p = sim.peak_position
    if p is not None:
        live = np.flatnonzero((sim.block_start <= p) & (p < sim.block_end))
        roots = sim.block_root[live]
        for root, holder in zip(roots.tolist(), holders(sim, roots, p).tolist(), strict=True):
            entries.append(PeakBufferResult(**_describe(module, holder), bytes=int(module.buffers.size[root]), kind="temporary"))
    entries.sort(key=lambda e: (-e.bytes, e.instruction))
    return entries


def _long_lived(module: HloModule, sim: Simulation) -> list[LongLivedTemporaryResult]:
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
            LongLivedTemporaryResult(
                **described,
                bytes=int(sizes[row]),
                start=s,
                end=e,
                fraction=round((e - s) / n, 4),
                why=f"live over {e - s} of {n} positions, from {described['instruction'] or 'position ' + str(s)} to {until}",
            )
        )
    entries.sort(key=lambda x: (-x.bytes * x.fraction, x.instruction))
    return entries


def _actionable(module: HloModule, whole_program: list[WholeProgramBufferResult]) -> list[Flag]:
    parameter_of_shape = {e.shape: e.parameter_number for e in whole_program if e.reason == "parameter"}
    flags = []
    for e in whole_program:
        if not e.actionable:
            continue
        what = f"{e.instruction or 'logical buffer ' + str(e.logical_buffer)} {e.shape}"
        if e.op_name:
            what += f" ({e.op_name}{' at ' + e.source if e.source else ''})"
        if e.reason == "live_out":
            message = (
                f"{what} is returned by {module.key} and is not an input's alias: XLA keeps it for the whole"
                " program; check that the caller needs it"
            )
            if e.shape in parameter_of_shape:
                message += (
                    f" (it has the shape of parameter {parameter_of_shape[e.shape]}: if it replaces that input,"
                    " donate the argument so that the output reuses its buffer)"
                )
        else:
            message = f"{what} is never freed in {module.key}'s heap trace"
        flags.append(Flag(e.instruction, e.op_name, e.shape, e.source, e.bytes, e.reason, message))
    return flags


def _special_bytes(module: HloModule, space: int) -> dict[str, int]:
    a = module.allocations
    in_space = a.color == space
    return {
        "live_out_bytes": int(a.size[in_space & a.maybe_live_out].sum()),
        "parameter_bytes": int(a.size[in_space & a.is_parameter].sum()),
        "aliased_bytes": int(a.size[in_space & a.is_parameter & a.maybe_live_out].sum()),
        "constant_bytes": int(a.size[in_space & a.is_constant].sum()),
        "thread_local_bytes": int(a.size[in_space & a.is_thread_local].sum()),
    }


def _figures(module: HloModule, sim: Simulation, space: int) -> dict[str, Any]:
    """The `ModuleFiguresResult` fields."""
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


def module_summary(module: HloModule, memory_space: int | None = None) -> ModuleSummaryResult:
    """The report's entry for one module and memory space (default 0)."""
    space = memory_space_of(module, memory_space)
    sim = simulate(module, space)
    whole_program = _whole_program_buffers(module, sim)
    return ModuleSummaryResult(
        **_figures(module, sim, space),
        whole_program_buffers=whole_program,
        actionable=_actionable(module, whole_program),
        long_lived_temporaries=_long_lived(module, sim),
    )


def module_summaries(modules: list[HloModule]) -> tuple[list[ModuleSummaryResult], list[str]]:
    """`module_summary` for every module and memory space, largest peak first, and one warning
    per module whose heap trace cannot be simulated (the others are still summarised)."""
    summaries: list[ModuleSummaryResult] = []
    warnings: list[str] = []
    for module in modules:
        try:
            summaries.extend([module_summary(module, space) for space in module.memory_spaces])
        except LeakfinderError as e:
            warnings.append(e.message)
    summaries.sort(key=lambda s: (-s.peak_heap_bytes, s.name, s.memory_space))
    return summaries, warnings


def _ranges(module: HloModule, sim: Simulation, space: int) -> tuple[list[BufferRange], int]:
    """The largest MAX_BUFFER_RANGES logical buffers of the memory space that have a range, in program
    order, and how many have one."""
    buffers = module.buffers
    n = sim.num_events
    whole = set(sim.whole_rows.tolist()) | set(sim.thread_local_rows.tolist())
    entries: list[BufferRange] = []
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
            BufferRange(
                **_describe(module, row),
                bytes=int(buffers.size[row]),
                allocation=int(module.allocations.index[allocation]) if allocation >= 0 else None,
                offset=int(buffers.offset[row]),
                start=s,
                end=e,
                kind=kind,
                shares_with=int(buffers.id[root]) if root != row else None,
            )
        )
    largest = sorted(entries, key=lambda x: (-x.bytes, x.logical_buffer))[:MAX_BUFFER_RANGES]
    largest.sort(key=lambda x: (x.start, -x.bytes, x.logical_buffer))
    return largest, len(entries)


def module_detail(module: HloModule, memory_space: int | None = None, points: int = DEFAULT_POINTS) -> ModuleDetail:
    """One module in detail for the UI: heap curve, buffer ranges, peak and whole-program buffers."""
    if not MIN_POINTS <= points <= MAX_POINTS:
        raise BadArgumentError(f"points must be between {MIN_POINTS} and {MAX_POINTS}, not {points}")
    space = memory_space_of(module, memory_space)
    sim = simulate(module, space)
    # The first position of the peak is the first maximum, which the downsampler keeps.
    keep = downsample(np.arange(sim.num_events), sim.heap_after, points).tolist()
    whole_program = _whole_program_buffers(module, sim)
    ranges, num_buffers = _ranges(module, sim, space)
    return ModuleDetail(
        **_figures(module, sim, space),
        memory_spaces=module.memory_spaces,
        curve=HeapCurveResult(
            position=keep,
            heap_bytes=(sim.heap_after[keep] + sim.whole_bytes).tolist(),
            instruction=[sim.instruction_at(i) for i in keep],
        ),
        peak_buffers=_peak_buffers(module, sim),
        whole_program_buffers=whole_program,
        actionable=_actionable(module, whole_program),
        long_lived_temporaries=_long_lived(module, sim),
        buffers=ranges,
        num_buffers=num_buffers,
    )
