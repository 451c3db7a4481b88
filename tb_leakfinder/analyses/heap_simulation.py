"""XLA's heap simulation of one module's buffer assignment, replayed: the heap after each event, each buffer's
live range and the memory it shares, the blocks a root's bytes are held in, and the whole-program allocations.

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

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.hlo import ALLOC, FREE, SHARE_WITH, HeapTrace, HloModule

_INT64_MAX = (1 << 63) - 1


@dataclass(eq=False)
class Simulation:
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


def simulate(module: HloModule, space: int) -> Simulation:
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
    return Simulation(
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


def holders(sim: Simulation, roots: np.ndarray, position: int) -> np.ndarray:
    """For each root, the buffer using its memory at `position`: the latest one live there."""
    live = np.flatnonzero((sim.start >= 0) & (sim.start <= position) & (position < sim.end))
    order = live[np.lexsort((sim.start[live], sim.root[live]))]
    last_of_root = {int(sim.root[row]): int(row) for row in order}  # later starts overwrite
    return np.array([last_of_root.get(int(r), int(r)) for r in roots], np.int64)
