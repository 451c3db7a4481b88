"""Naming each allocation by where it was made: the program execution and program buffer, and the user's line.

PJRT's memory events carry only sizes and addresses. What names them is time:
an allocation made while the host runs a jitted call (`PjitFunction(f)`, or a
program execution on a device's `XLA Modules` line) belongs to that execution,
and its size is one of the compiled module's buffer allocations. Allocations
inside a runtime call that copies host data to the device are transfers; the
rest, in a profile that shows programs, are outside any program. The Python
tracer's frames enclosing an allocation on its thread (or enclosing the host
call that launched the work on another thread) give the user's line.

One execution's allocations are matched against each candidate module (same
name, any program id) by size, in order: the module that explains most of them
is the program. A size that several of the program's buffers share is said to
be ambiguous, with the candidates; a temporaries block a few KiB off is `near`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tb_leakfinder.analyses.frames import model_frame, user_frames
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.model.memory import (
    ALLOC,
    PYTHON_CALL_PREFIX,
    SPAN_DEVICE_PROGRAM,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    MemoryEvents,
    Spans,
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
    NO_SITE,
    Site,
)

# A temporaries block this far from an allocation's size may still be it: runtimes pad the block they ask for.
NEAR_BYTES = 4096
TRANSFER_LABEL = "transfer to device, outside any program"
# Executions that allocate more buffers than this are matched one by one, not as rows of one table.
MAX_TABLE_WIDTH = 256
# Calls nested deeper than this (Python's own recursion limit is 1000) are taken as this deep: a corrupt file
# of a million nested calls costs a million searches otherwise.
MAX_DEPTH = 2000
OUTSIDE_LABEL = "outside any program"
_JITTED_CALL = re.compile(r"^PjitFunction\((?P<function>.*)\)$")
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
        self.name = np.zeros(0, np.int64)
        self.parent = np.zeros(0, np.int64)

    def extend(self, names: np.ndarray, parents: np.ndarray) -> np.ndarray:
        """The chains of calls named `names` inside chains `parents` (-1: none), new ones added: one per distinct
        pair, so that a loop's millions of calls are as many chains as the loop has distinct stacks."""
        if not len(names):
            return np.zeros(0, np.int64)
        width = int(names.max()) + 1
        pairs, inverse = small_unique((parents + 1) * width + names)
        first = len(self.name)
        self.name = np.concatenate([self.name, pairs % width])
        self.parent = np.concatenate([self.parent, pairs // width - 1])
        ids: np.ndarray = first + inverse.reshape(-1)
        return ids

    def names(self, chain: int) -> list[int]:
        """The name indices of a chain, innermost first."""
        out = []
        while chain >= 0:
            out.append(int(self.name[chain]))
            chain = int(self.parent[chain])
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

    def innermost(self, times: np.ndarray) -> np.ndarray:
        """The position of the innermost interval enclosing each time (start <= t <= end), -1 when none."""
        at = np.searchsorted(self.start, times, side="right") - 1
        for _ in range(len(self.start) + 1):
            outside = (at >= 0) & (self.end[np.maximum(at, 0)] < times)
            if not outside.any():
                break
            at = np.where(outside, self.parent[np.maximum(at, 0)], at)
        return at


@dataclass
class CallIndex:
    """A host's calls by thread, to look up what encloses an allocation. Built once per host, used per allocator."""

    spans: Spans
    calls: dict[int, _Forest]  # line -> its host calls (Python frames, transfers)
    chains: _Chains  # the calls' chains of names
    programs: dict[int, _Forest]  # line -> its jitted calls
    roots: _Forest | None  # every host root span, on any line: the launcher of work on other threads
    device_programs: _Forest | None  # program executions on devices, in host time
    user_files: set[str]
    has_programs: bool
    _frames: dict[int, tuple[tuple[str, ...], bool, str]] = field(default_factory=dict)

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


def call_index(spans: Spans, modules: Sequence[HloModule]) -> CallIndex:
    chains = _Chains()
    calls: dict[int, _Forest] = {}
    programs: dict[int, _Forest] = {}
    is_call = spans.source == SPAN_HOST_CALL
    jitted = np.asarray([_JITTED_CALL.match(n) is not None for n in spans.names], bool)
    is_program = (spans.source == SPAN_HOST_ROOT) & (jitted[spans.name] if len(spans.names) else False)
    for mask, into in ((is_call, calls), (is_program, programs)):
        rows = np.flatnonzero(mask)
        for line in np.unique(spans.line[rows]).tolist():
            mine = rows[spans.line[rows] == line]
            into[line] = _Forest(
                spans.start_ps[mine], spans.end_ps[mine], mine, spans.name[mine], chains if into is calls else None
            )
    roots = np.flatnonzero(spans.source == SPAN_HOST_ROOT)
    device = np.flatnonzero(spans.source == SPAN_DEVICE_PROGRAM)
    user_files = {m.instructions.source[i].split(":")[0].rsplit("/", 1)[-1] for m in modules for i in range(len(m.instructions))}
    user_files.discard("")
    return CallIndex(
        spans,
        calls,
        chains,
        programs,
        _Forest(spans.start_ps[roots], spans.end_ps[roots], roots, spans.name[roots], None) if len(roots) else None,
        _Forest(spans.start_ps[device], spans.end_ps[device], device, spans.name[device], None) if len(device) else None,
        user_files,
        bool(is_program.any() or len(device)),
    )


@dataclass
class Attribution:
    site: np.ndarray  # int32 per event: index into `sites` (0 for frees and what the profile does not tell)
    sites: list[Site]


@dataclass
class _ProgramBuffer:
    label: str  # "output 0"
    allocation: int
    size: int
    temporary: bool
    rank: int  # lower is preferred among equal sizes: outputs and temporaries before parameters and constants


def attribute(events: MemoryEvents, index: CallIndex, modules: Sequence[HloModule]) -> Attribution:
    """Each allocation's site; allocations whose framework named no op get the site's name as their op, shape and
    dtype (events.strings grows by those names), so that groups and families name them.

    Work is per distinct (program buffer, chain of calls, named or not), not per allocation: a million
    allocations of a training loop are a few dozen of those.
    """
    sites: list[Site] = [NO_SITE]
    site = np.zeros(len(events), np.int32)
    allocs = np.flatnonzero(events.kind == ALLOC)
    if not len(allocs) or not (index.calls or index.has_programs):
        return Attribution(site, sites)
    times = events.time_ps[allocs]
    lines = events.line[allocs]
    chain = _anchored_chains(index, times, lines)
    chains, chain_of = small_unique(chain)
    transfer = np.asarray([index.chain_frames(int(c))[1] for c in chains.tolist()], bool)[chain_of]
    unnamed = events.op[allocs] == 0
    by_name: dict[str, list[HloModule]] = {}
    for module in modules:
        by_name.setdefault(module.name, []).append(module)
    results: list[tuple[Site, str, str, str]] = []
    # An allocation its framework named (TensorFlow's tf_op) keeps that name: only its frames are added.
    matched = _program_sites(events, allocs, _executions(index, times, lines), unnamed & ~transfer, index, by_name, results)
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

    site_ids: dict[Site, int] = {NO_SITE: 0}
    row_site, row_names = [], []
    for program_result, chain_id, is_transfer, is_unnamed in distinct:
        frames, _, model = index.chain_frames(chain_id)
        if is_transfer:
            found = (Site(context=CONTEXT_TRANSFER, stack=frames, model_frame=model), TRANSFER_LABEL, "", "")
        elif program_result >= 0:
            found = (_with_frames(results[program_result][0], frames, model), *results[program_result][1:])
        else:
            context = CONTEXT_OUTSIDE if index.has_programs and is_unnamed else ""
            # Without programs, an unnamed buffer's line is its name (a device memory profile's buffers).
            label = OUTSIDE_LABEL if context else (f"made at {frames[0]}" if frames else "")
            found = (Site(context=context, stack=frames, model_frame=model), label, "", "")
        this, label, shape, dtype = found
        if this not in site_ids:
            site_ids[this] = len(sites)
            sites.append(this)
        row_site.append(site_ids[this])
        named = bool(is_unnamed) and bool(label)
        row_names.append(
            [intern(label) if named else -1, intern(shape) if named and shape else -1, intern(dtype) if named and dtype else -1]
        )
    site[allocs] = np.asarray(row_site, np.int32)[inverse]
    given = np.asarray(row_names, np.int64).reshape(-1, 3)[inverse]
    for k, name in enumerate(("op", "shape", "dtype")):
        column = getattr(events, name).copy()
        column[allocs] = np.where(given[:, k] >= 0, given[:, k], column[allocs])
        setattr(events, name, column)
    return Attribution(site, sites)


def _with_frames(site: Site, frames: tuple[str, ...], model: str) -> Site:
    return site if not frames and not model else Site(**{**vars(site), "stack": frames, "model_frame": model})


def _anchored_chains(index: CallIndex, times: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """For each allocation, the chain of host calls around it on its thread; on a thread without one, the calls
    around the start of the innermost host root (on any thread) that encloses it: the launcher's. -1: none."""
    chain = np.full(len(times), -1, np.int64)
    for thread, forest in index.calls.items():
        mine = np.flatnonzero(lines == thread)
        at = forest.innermost(times[mine])
        chain[mine] = np.where(at >= 0, forest.chain[np.maximum(at, 0)], -1)
    missing = np.flatnonzero(chain < 0)
    if len(missing) and index.roots is not None:
        root = index.roots.innermost(times[missing])
        found = root >= 0
        rows = index.roots.rows[root[found]]
        starts = index.spans.start_ps[rows]
        root_lines = index.spans.line[rows]
        for thread, forest in index.calls.items():
            on = root_lines == thread
            at = forest.innermost(starts[on])
            chain[missing[found][on]] = np.where(at >= 0, forest.chain[np.maximum(at, 0)], -1)
    return chain


def _executions(index: CallIndex, times: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The span row of the program execution each allocation happened in: the innermost jitted call on its
    thread, else a device program running then; -1 when none."""
    row = np.full(len(times), -1, np.int64)
    for thread, forest in index.programs.items():
        mine = np.flatnonzero(lines == thread)
        at = forest.innermost(times[mine])
        row[mine] = np.where(at >= 0, forest.rows[np.maximum(at, 0)], -1)
    if index.device_programs is not None:
        rest = np.flatnonzero(row < 0)
        at = index.device_programs.innermost(times[rest])
        row[rest] = np.where(at >= 0, index.device_programs.rows[np.maximum(at, 0)], -1)
    return row


def _program_sites(
    events: MemoryEvents,
    allocs: np.ndarray,
    execution: np.ndarray,
    eligible: np.ndarray,
    index: CallIndex,
    by_name: dict[str, list[HloModule]],
    results: list[tuple[Site, str, str, str]],
) -> np.ndarray:
    """For each allocation, its row in `results` (site, op label, shape, dtype) when it was made inside a program
    execution and is `eligible`, else -1. One execution's allocations are matched together, and executions of
    one program that allocate the same sizes in the same order are matched once."""
    out = np.full(len(allocs), -1, np.int64)
    inside = np.flatnonzero((execution >= 0) & eligible)
    if not len(inside):
        return out
    order = inside[np.argsort(execution[inside], kind="stable")]  # allocations stay in time order within each
    requested = events.tensor_bytes[allocs[order]]
    sizes = np.where(requested > 0, requested, events.chunk_bytes[allocs[order]])
    bounds = np.flatnonzero(np.r_[True, execution[order][1:] != execution[order][:-1], True])
    starts, lengths = bounds[:-1], np.diff(bounds)
    spans = index.spans
    names = spans.name[execution[order[starts]]].astype(np.int64)
    width = int(lengths.max())
    if width > MAX_TABLE_WIDTH:  # a program of very many outputs: one execution at a time
        kinds = np.arange(len(starts))
    else:  # executions as rows (name, then sizes padded with -1): equal rows are matched once
        table = np.full((len(starts), width + 1), -1, np.int64)
        table[:, 0] = names
        execution_of = np.repeat(np.arange(len(starts)), lengths)
        table[execution_of, 1 + np.arange(len(order)) - np.repeat(starts, lengths)] = sizes
        _, first, kinds = np.unique(table, axis=0, return_index=True, return_inverse=True)
        kinds = first[kinds.reshape(-1)]  # each execution's kind: the first execution like it
    first_row = np.zeros(len(starts), np.int64)  # of a kind's results: one per allocation of its execution, in order
    for k in np.unique(kinds).tolist():
        lo, hi = int(starts[k]), int(starts[k] + lengths[k])
        first_row[k] = len(results)
        results.extend(_match(sizes[lo:hi].tolist(), *_candidates(spans.names[int(names[k])], by_name)))
    out[order] = np.repeat(first_row[kinds], lengths) + np.arange(len(order)) - np.repeat(starts, lengths)
    return out


def _candidates(name: str, by_name: dict[str, list[HloModule]]) -> tuple[list[HloModule], str]:
    """The modules an execution named `name` may be, and the program's name: `PjitFunction(f)` is any
    `jit_f(<id>)`, a device's `<module>(<id>)` is that module."""
    jitted = _JITTED_CALL.match(name)
    if jitted is not None:
        program = f"jit_{jitted['function']}"
        return by_name.get(program, []), program
    return [m for modules in by_name.values() for m in modules if m.key == name], name


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


def _assign(sizes: list[int], buffers: list[_ProgramBuffer]) -> list[tuple[_ProgramBuffer | None, str, list[_ProgramBuffer]]]:
    """Each size's program buffer taken in order (the preferred unused one of its size, else a temporaries block
    within NEAR_BYTES), how it matched, and all the buffers of that size."""
    used: set[int] = set()
    out: list[tuple[_ProgramBuffer | None, str, list[_ProgramBuffer]]] = []
    for size in sizes:
        same = sorted((b for b in buffers if b.size == size), key=lambda b: (b.rank, b.allocation))
        # A parameter or a constant is named only when no output or temporaries block of the size is left.
        same = [b for b in same if b.rank == same[0].rank] if same else same
        free = [b for b in same if b.allocation not in used]
        if free:
            used.add(free[0].allocation)
            out.append((free[0], MATCH_AMBIGUOUS if len(same) > 1 else MATCH_EXACT, same))
            continue
        near = [b for b in buffers if b.temporary and b.allocation not in used and abs(b.size - size) <= NEAR_BYTES]
        if near:
            used.add(near[0].allocation)
            out.append((near[0], MATCH_NEAR, near))
        else:
            out.append((None, MATCH_NONE, []))
    return out


def _match(sizes: list[int], modules: list[HloModule], program_name: str) -> list[tuple[Site, str, str, str]]:
    if not modules:
        label = f"in {program_name} (its HLO is not in the profile)"
        return [(Site(context=CONTEXT_PROGRAM, program=program_name, match=MATCH_NO_HLO), label, "", "")] * len(sizes)
    scored = []
    for module in sorted(modules, key=lambda m: m.key):
        assigned = _assign(sizes, _program_buffers(module))
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
            out.append((Site(context=CONTEXT_PROGRAM, program=module.key, match=MATCH_NONE), label, "", ""))
            continue
        candidates = [f"{b.label} of {module.key}" for b in same] if len(same) > 1 else []
        others = [f"{taken.label} of {m.key}" for m, a in tied[1:] if (taken := a[k][0]) is not None]
        if others:
            how = MATCH_AMBIGUOUS
            candidates = [f"{buffer.label} of {module.key}", *others] if not candidates else [*candidates, *others]
        out.append(_program_site(module, buffer, how, tuple(candidates)))
    return out


def _program_site(module: HloModule, buffer: _ProgramBuffer, how: str, candidates: tuple[str, ...]) -> tuple[Site, str, str, str]:
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
    site = Site(
        context=CONTEXT_PROGRAM,
        program=module.key,
        buffer=buffer.label,
        allocation=int(module.allocations.index[buffer.allocation]),
        hlo_op=hlo_op,
        op_name=op_name,
        hlo_shape=hlo_shape,
        source=source,
        match=how,
        candidates=candidates,
    )
    shape = _SHAPE.match(hlo_shape)
    dims, dtype = (shape["dims"], shape["dtype"]) if shape and not buffer.temporary else ("", "")
    return site, f"{buffer.label} of {module.key}", dims, dtype
