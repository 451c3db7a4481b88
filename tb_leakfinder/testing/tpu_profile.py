"""A JAX inference profile on a TPU host as libtpu writes it through PJRT, for tests and screenshots.

It follows the format notes ("Which program made an allocation", TPU): memory
events keyed by `index_on_host` with no `allocator_name`, a large stack
reservation, outputs named `dummy` with a layout shape, transfers naming
nothing. Per call of `f` the `main` line runs `PjitFunction(f)` >
`TfrtTpuLoadedExecutable::Execute`, whose flow each chip's `py_xla_execute`
line consumes; there `ExecutePrepare` > `AllocateOutputBufferWithInputReuse` >
`DeferredTpuAllocator::Allocate` allocates the output, and flows lead on to the
chip's `XLA Modules` event, which starts later. The input is a `DevicePut` on
`main`, once per chip. TPU program ids are 64-bit fingerprints.

Dispatch runs ahead: call k+1's output is allocated while call k's is still
held by the caller. With `deferred`, the allocator's heap count does not rise
for it: the device takes its memory only when it runs, once call k's output is
freed (whose free then does not lower the count either).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.testing.pjrt_profile import (
    F32,
    FLOW_DEVICE_RUN,
    FLOW_EXECUTE,
    FLOW_ISSUE,
    ProgramBuffer,
    flow_span,
    program_proto,
)
from tb_leakfinder.testing.xspace_builder import ProfileBuilder

MODULE = "jit_f"
PROGRAM_ID = 8_213_770_315_642_958_113
STACK_BYTES = 21_490_000_000
LIMIT_BYTES = 32 << 30
OUTPUT = ProgramBuffer("broadcast.3", "broadcast", F32, (5, 1024, 1024, 256), "jit(f)/broadcast_in_dim", ("/src/serve.py", 31))
INPUT = ProgramBuffer("p0", "parameter", F32, (1024, 256), kind="parameter")
LAYOUT_SHAPE = f"{OUTPUT.shape}{{3,2,1,0:T(8,128)}}"
_CALL_PS = 1_000_000_000
_MAIN = "main"


def tpu_inference(
    chips: int = 4, calls: int = 4, *, deferred: bool = True, hostname: str = "tpu-host"
) -> tuple[ProfileBuilder, dict[str, Any]]:
    """The profile and what is in it: `calls` calls of `f`, each on every chip."""
    b = ProfileBuilder(hostname)
    module = f"{MODULE}({PROGRAM_ID})"
    b.add_hlo_module(module, program_proto(MODULE, (INPUT, OUTPUT)), program_id=PROGRAM_ID)
    flow = 100
    events: list[list[tuple[int, int, int, int, str, bool]]] = [
        [] for _ in range(chips)
    ]  # time, kind, addr, bytes, line, counted
    for call in range(calls):
        t = call * _CALL_PS + 1000
        b.span("DevicePut", t, t + 10_000, line=_MAIN)
        b.span("PjitFunction(f)", t + 20_000, t + 2_000_000, line=_MAIN)
        flow_span(b, "TfrtTpuLoadedExecutable::Execute", t + 21_000, t + 1_900_000, _MAIN, produces=(FLOW_EXECUTE, flow))
        for c in range(chips):
            line = f"py_xla_execute/{7000 + c}"
            s = t + 30_000 + 100 * c
            b.span("BufferFromHostBuffer::TfrtTpuBuffer", t + 100 + 2000 * c, t + 1900 + 2000 * c, line=_MAIN)
            flow_span(b, "Scheduled TfrtTpuLoadedExecutable::Execute", s, s + 1_000_000, line, consumes=(FLOW_EXECUTE, flow))
            b.span("TfrtTpuLoadedExecutable::ExecutePrepare", s + 10, s + 5000, line=line)
            b.span("AllocateOutputBufferWithInputReuse", s + 20, s + 4000, line=line)
            b.span("DeferredTpuAllocator::Allocate", s + 30, s + 60, line=line)
            flow_span(b, "tpu::System::Execute", s + 6000, s + 9000, line, produces=(FLOW_ISSUE, flow * 10 + c))
            tasks = "pjrt-tpu-tasks"
            flow_span(
                b,
                "tpu::System::Execute=>IssueSequencedEvent",
                s + 10_000,
                s + 30_000,
                tasks,
                consumes=(FLOW_ISSUE, flow * 10 + c),
            )
            run = flow * 100 + c
            flow_span(
                b,
                "DoEnqueueProgram",
                s + 11_000,
                s + 20_000,
                tasks,
                produces=(FLOW_DEVICE_RUN, run),
                run_id=flow,
                device_ordinal=c,
            )
            device_start = s + 300_000_000  # long after the allocation: outputs are allocated before the run
            b.device_event(
                f"/device:TPU:{c}",
                "XLA Modules",
                module,
                device_start,
                100_000_000,
                stats={"run_id": flow, "_ct": FLOW_DEVICE_RUN, "_c": run},
            )
            x_addr, y_addr = 0x1_0000_0000 + call * 0x10_0000, 0x2_0000_0000 + (call % 2) * 0x2_0000_0000
            events[c] += [
                (t + 500 + 2000 * c, ALLOC, x_addr, INPUT.size, _MAIN, True),
                (s + 40, ALLOC, y_addr, OUTPUT.size, line, not deferred or call == 0),
                (t + 1_950_000 + c, FREE, x_addr, INPUT.size, _MAIN, True),
            ]
            if call:  # the caller drops the last call's output once this call returned
                previous = 0x2_0000_0000 + ((call - 1) % 2) * 0x2_0000_0000
                events[c].append((t + 2_100_000 + c, FREE, previous, OUTPUT.size, _MAIN, not deferred))
        flow += 1
    heap_peaks = []
    for c, rows in enumerate(events):
        rows.sort()
        time, kind, addr, size, threads, counted = (np.array(col) for col in zip(*rows, strict=True))
        delta = np.where(counted, np.where(kind == ALLOC, size, -size), 0)
        heap = np.cumsum(delta)
        heap_peaks.append(int(heap.max()))
        b.allocator(str(c), limit_bytes=LIMIT_BYTES, bytes_reserved=STACK_BYTES)
        b.add_memory_events(
            time,
            kind,
            addr.astype(np.uint64),
            size,
            allocator=str(c),
            id_stat="index_on_host",
            op=np.where((kind == ALLOC) & (size == OUTPUT.size), "dummy", ""),
            shape=np.where((kind == ALLOC) & (size == OUTPUT.size), LAYOUT_SHAPE, ""),
            dtype=0,
            line=threads.astype(object),
            overrides={
                "bytes_allocated": heap,
                "peak_bytes_in_use": np.maximum.accumulate(heap),
                "bytes_available": LIMIT_BYTES - STACK_BYTES - heap,
            },
        )
    planted = {
        "chips": chips,
        "calls": calls,
        "module": module,
        "output_bytes": OUTPUT.size,
        "output_shape": OUTPUT.shape,
        "peak_heap_bytes": heap_peaks,
        "stack_bytes": STACK_BYTES,
    }
    return b, planted
