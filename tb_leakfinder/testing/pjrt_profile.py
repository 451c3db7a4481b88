"""Profiles as JAX on a GPU writes them through PJRT, for tests and the demo.

PJRT's memory events name nothing (no tf_op, shape or dtype); what names them
is the host's calls around them and the compiled modules on `/host:metadata`
(see the format notes, "Real JAX GPU profiles"). `jax_training` writes such
a profile: one Python frame for the loop and one for the step function
(`$train.py:88 main`, `$train.py:40 train_step`, as the Python tracer names
them), a `PjitFunction(train_step)` call per step with its outputs and
temporaries allocated inside `PJRT_LoadedExecutable_Execute`, a `DevicePut`
of each step's batch, and an evaluation program every few steps. The
planted leak keeps one output of every train step (a Python list of
metrics, say); two outputs of one size make an ambiguous match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tb_leakfinder import proto
from tb_leakfinder.testing.xspace_builder import ProfileBuilder

# xla.PrimitiveType
F32 = 11
BF16 = 16
_BYTES = {F32: 4, BF16: 2}
_NAMES = {F32: "f32", BF16: "bf16"}
ALLOCATOR = "GPU_0_bfc"
HOST_ALLOCATOR = "xla_gpu_host_bfc"
PYTHON_LINE = "python"


@dataclass(frozen=True)
class ProgramBuffer:
    """One of a program's buffers: what defines it, and how it is allocated."""

    name: str
    opcode: str
    element_type: int
    dims: tuple[int, ...]
    op_name: str = ""
    source: tuple[str, int] | None = None
    kind: str = "output"  # "output", "parameter", "temp", "constant"

    @property
    def size(self) -> int:
        n = _BYTES[self.element_type]
        for d in self.dims:
            n *= d
        return n

    @property
    def shape(self) -> str:
        return f"{_NAMES[self.element_type]}[{','.join(map(str, self.dims))}]"


def program_proto(module: str, buffers: Sequence[ProgramBuffer]) -> bytes:
    """A serialized HloProto: one instruction and one allocation per buffer (temporaries share one block)."""
    p = proto.HloProto()()
    m = p.hlo_module
    m.name, m.entry_computation_name = module, "main"
    computation = m.computations.add(name="main", id=1)
    assignment = p.buffer_assignment
    temp_block = None
    parameters = 0
    for k, b in enumerate(buffers, start=1):
        ins = computation.instructions.add(name=b.name, opcode=b.opcode, id=k)
        ins.shape.element_type = b.element_type
        ins.shape.dimensions.extend(b.dims)
        if b.op_name:
            ins.metadata.op_name = b.op_name
        if b.source is not None:
            ins.metadata.source_file, ins.metadata.source_line = b.source
        logical = assignment.logical_buffers.add(id=k, size=b.size)
        logical.defined_at.instruction_id = k
        if b.kind == "temp":
            if temp_block is None:
                temp_block = assignment.buffer_allocations.add(index=len(assignment.buffer_allocations), size=0)
            temp_block.assigned.add(logical_buffer_id=k, offset=temp_block.size, size=b.size)
            temp_block.size += b.size
            continue
        flags: dict[str, Any] = {}
        if b.kind == "output":
            flags["maybe_live_out"] = True
        elif b.kind == "parameter":
            flags.update(is_entry_computation_parameter=True, parameter_number=parameters)
            parameters += 1
        elif b.kind == "constant":
            flags["is_constant"] = True
        a = assignment.buffer_allocations.add(index=len(assignment.buffer_allocations), size=b.size, **flags)
        a.assigned.add(logical_buffer_id=k, size=b.size)
    if temp_block is not None:
        trace = assignment.heap_simulator_traces.add(whole_module_simulation=True, buffer_allocation_index=temp_block.index)
        temps = [k for k, b in enumerate(buffers, start=1) if b.kind == "temp"]
        for k in temps:
            trace.events.add(kind=0, buffer_id=k, instruction_name=buffers[k - 1].name)
        for k in temps:
            trace.events.add(kind=1, buffer_id=k, instruction_name=buffers[k - 1].name)
    data: bytes = p.SerializeToString()
    return data


TRAIN_STEP = "jit_train_step"
EVAL_STEP = "jit_eval_step"
TRAIN_ID, EVAL_ID = 7, 9
TRAIN_BUFFERS = (
    ProgramBuffer("params", "parameter", F32, (1024, 1024), kind="parameter"),
    ProgramBuffer("batch", "parameter", F32, (64, 1024), kind="parameter"),
    ProgramBuffer("loss", "reduce", F32, (), "jit(train_step)/reduce_sum", ("/src/model.py", 61)),
    ProgramBuffer("dot.3", "dot", F32, (1024, 256), "jit(train_step)/dot_general", ("/src/model.py", 57)),
    ProgramBuffer("add.5", "add", F32, (256, 256), "jit(train_step)/add", ("/src/model.py", 58)),
    ProgramBuffer("mul.6", "multiply", F32, (256, 256), "jit(train_step)/mul", ("/src/model.py", 59)),
    ProgramBuffer("fusion.1", "fusion", F32, (64, 4096), "jit(train_step)/tanh", ("/src/model.py", 55), kind="temp"),
    ProgramBuffer("fusion.2", "fusion", F32, (64, 1024), "jit(train_step)/exp", ("/src/model.py", 56), kind="temp"),
)
EVAL_BUFFERS = (
    ProgramBuffer("params", "parameter", F32, (1024, 1024), kind="parameter"),
    ProgramBuffer("logits", "dot", BF16, (64, 512), "jit(eval_step)/dot_general", ("/src/evaluate.py", 12)),
)
# The train step's output kept every step: output 1, `dot.3`.
LEAKED_OUTPUT = 1


def jax_training(
    steps: int = 30,
    *,
    leak: bool = True,
    eval_every: int = 5,
    step_ps: int = 1_000_000_000,
    python_tracer: bool = True,
    hostname: str = "gpu-host",
    program_ids: tuple[int, int] = (TRAIN_ID, EVAL_ID),
) -> tuple[ProfileBuilder, dict[str, Any]]:
    """A JAX GPU training profile under PJRT's conventions, and what was planted in it. `program_ids` are the
    train and eval programs' ids (compilation order: another run of the same job may number them otherwise)."""
    b = ProfileBuilder(hostname)
    b.allocator(ALLOCATOR)
    b.allocator(HOST_ALLOCATOR)
    train_id, eval_id = program_ids
    b.add_hlo_module(f"{TRAIN_STEP}({train_id})", program_proto(TRAIN_STEP, TRAIN_BUFFERS), program_id=train_id)
    b.add_hlo_module(f"{EVAL_STEP}({eval_id})", program_proto(EVAL_STEP, EVAL_BUFFERS), program_id=eval_id)
    outputs = [x for x in TRAIN_BUFFERS if x.kind == "output"]
    temp_bytes = sum(x.size for x in TRAIN_BUFFERS if x.kind == "temp")
    batch_bytes = 64 * 1024 * 4
    next_addr = [0x7F0000000000]

    def address() -> int:
        next_addr[0] += 1 << 24
        return next_addr[0]

    def alloc(t: int, nbytes: int, allocator: str = ALLOCATOR) -> int:
        addr = address()
        b.alloc(t, addr, nbytes, allocator=allocator, op=None, shape=None, region=None, dtype=0, line=PYTHON_LINE)
        return addr

    def free(t: int, addr: int, nbytes: int, allocator: str = ALLOCATOR) -> None:
        b.free(t, addr, nbytes, allocator=allocator, line=PYTHON_LINE)

    end = steps * step_ps + step_ps // 2
    if python_tracer:
        b.span("$train.py:88 main", 0, end, line=PYTHON_LINE)
    previous: list[tuple[int, int]] = []
    kept = 0
    for i in range(steps):
        t0 = i * step_ps + 1000
        b.step(i, t0, t0 + step_ps - 2000, line=PYTHON_LINE)
        # The batch: staged in pinned host memory, then copied to the device.
        b.span("DevicePut", t0 + 10, t0 + 100, line=PYTHON_LINE)
        b.span("PjRtStreamExecutorClient::LinearizeHostBufferInto", t0 + 20, t0 + 40, line=PYTHON_LINE)
        staging = alloc(t0 + 30, batch_bytes, HOST_ALLOCATOR)
        free(t0 + 35, staging, batch_bytes, HOST_ALLOCATOR)
        batch = alloc(t0 + 50, batch_bytes)
        if python_tracer:
            b.span("$train.py:40 train_step", t0 + 200, t0 + 900_000, line=PYTHON_LINE)
        b.span("PjitFunction(train_step)", t0 + 300, t0 + 800_000, line=PYTHON_LINE)
        b.span("PJRT_LoadedExecutable_Execute", t0 + 400, t0 + 700_000, line=PYTHON_LINE)
        made = [(alloc(t0 + 500 + 10 * k, x.size), x.size) for k, x in enumerate(outputs)]
        temps = alloc(t0 + 600, temp_bytes)
        free(t0 + 650_000, temps, temp_bytes)
        free(t0 + 900_100, batch, batch_bytes)
        for addr, nbytes in previous:  # last step's outputs go once this step's replace them
            free(t0 + 900_200, addr, nbytes)
        previous = [m for k, m in enumerate(made) if not (leak and k == LEAKED_OUTPUT)]
        kept += int(leak)
        if eval_every and i % eval_every == eval_every - 1:
            e0 = t0 + 950_000
            b.span("PjitFunction(eval_step)", e0, e0 + 20_000, line=PYTHON_LINE)
            logits = alloc(e0 + 100, EVAL_BUFFERS[1].size)
            free(e0 + 30_000, logits, EVAL_BUFFERS[1].size)
    planted = {
        "steps": steps,
        "program": f"{TRAIN_STEP}({train_id})",
        "leak_bytes_per_step": outputs[LEAKED_OUTPUT].size if leak else 0,
        "leaked_buffer": f"output {LEAKED_OUTPUT}",
        "leaked_shape": outputs[LEAKED_OUTPUT].shape,
        "leaked_where": "model.py:57",
        "stack": ("train.py:40 in train_step", "train.py:88 in main") if python_tracer else (),
        "kept_buffers": kept,
    }
    return b, planted


# Flow types as PJRT writes them (`_pt`/`_ct`): a host call to each device's execution, a TPU execution to its
# enqueue task, the enqueue to the device's run.
FLOW_EXECUTE, FLOW_ISSUE, FLOW_DEVICE_RUN = 5, 7, 12


def flow_span(
    b: ProfileBuilder,
    name: str,
    start_ps: int,
    end_ps: int,
    line: str,
    *,
    produces: tuple[int, int] | None = None,
    consumes: tuple[int, int] | None = None,
    **stats: int,
) -> None:
    """A host call that produces and/or consumes a flow, each given as (flow type, flow id): `_pt`/`_p`, `_ct`/`_c`."""
    given: dict[str, int] = dict(stats)
    if produces is not None:
        given["_pt"], given["_p"] = produces
    if consumes is not None:
        given["_ct"], given["_c"] = consumes
    b.span(name, start_ps, end_ps, line=line, stats=given)


# The multi-GPU program: two modules named jit_conv that only their program ids tell apart (same sizes, other lines).
CONV = "jit_conv"
CONV_IDS = (3, 8)
CONV_BUFFERS = (
    ProgramBuffer("x", "parameter", BF16, (8, 1024, 1024), kind="parameter"),
    ProgramBuffer("conv.1", "convolution", F32, (8, 1024, 512), "jit(conv)/conv_general_dilated", ("/src/conv.py", 21)),
    ProgramBuffer("conv.2", "convolution", F32, (8, 1024, 512), "jit(conv)/conv_general_dilated", ("/src/conv.py", 22)),
    ProgramBuffer("im2col", "fusion", F32, (8, 1024, 1024), "jit(conv)/im2col", ("/src/conv.py", 20), kind="temp"),
)


def _conv_buffers(program_id: int) -> list[ProgramBuffer]:
    """jit_conv's buffers as compiled under `program_id`: same sizes, its own source lines (100 further each)."""
    shift = 100 * CONV_IDS.index(program_id)
    return [
        x if x.source is None else ProgramBuffer(**{**vars(x), "source": (x.source[0], x.source[1] + shift)})
        for x in CONV_BUFFERS
    ]


def jax_multi_gpu(devices: int = 2, steps: int = 3, *, program_id: int = CONV_IDS[1]) -> tuple[ProfileBuilder, dict[str, Any]]:
    """A JAX profile of one jitted call per step over several GPUs, under PJRT's conventions (the format notes,
    "Which program made an allocation"): the `python` line's `PjitFunction(conv)` >
    `PjRtStreamExecutorLoadedExecutable::Execute` produces a flow that each device's
    `py_xla_execute/<d>` line consumes in `EnqueueExecution`, where `Build buffer allocations` allocates the
    outputs and the temporaries block on `GPU_<d>_bfc` (freed before the execution ends); the module is named by
    `jit_conv:XLA GPU module` and, among the two modules of that name, by the `program_id` of the kernels
    launched on `Host Threads/<tid>` lines. The device planes have no `XLA Modules` line (ROCm)."""
    b = ProfileBuilder("gpu-host")
    for d in range(devices):
        b.allocator(f"GPU_{d}_bfc")
        b.device_plane(f"/device:GPU:{d}")
    for pid in CONV_IDS:
        b.add_hlo_module(f"{CONV}({pid})", program_proto(CONV, _conv_buffers(pid)), program_id=pid)
    outputs = [x for x in CONV_BUFFERS if x.kind == "output"]
    temp_bytes = sum(x.size for x in CONV_BUFFERS if x.kind == "temp")
    step_ps = 1_000_000_000
    b.span("$train.py:88 main", 0, steps * step_ps, line=PYTHON_LINE)
    kept = []
    for i in range(steps):
        t0 = i * step_ps + 1000
        flow = 1000 + i
        b.span("$train.py:40 train_step", t0, t0 + 900_000_000, line=PYTHON_LINE)
        b.span("PjitFunction(conv)", t0 + 100, t0 + 800_000_000, line=PYTHON_LINE)
        flow_span(
            b,
            "PjRtStreamExecutorLoadedExecutable::Execute",
            t0 + 200,
            t0 + 700_000_000,
            PYTHON_LINE,
            produces=(FLOW_EXECUTE, flow),
        )
        for d in range(devices):
            line, allocator = f"py_xla_execute/{d}", f"GPU_{d}_bfc"
            start = t0 + 1_000_000 + d * 10_000  # the devices' threads start in turn
            b.span("PjRtStreamExecutorLoadedExecutable::ExecuteHelper", start, start + 600_000_000, line=line)
            flow_span(
                b,
                "PjRtStreamExecutorLoadedExecutable::EnqueueExecution",
                start + 10,
                start + 500_000_000,
                line,
                consumes=(FLOW_EXECUTE, flow),
            )
            b.span("Build buffer allocations", start + 100, start + 1_000, line=line)
            for k, x in enumerate(outputs):
                addr = (d + 1) << 40 | (i * 16 + k) << 24
                b.alloc(start + 200 + k, addr, x.size, allocator=allocator, op=None, shape=None, region=None, dtype=0, line=line)
                kept.append((allocator, addr))
            temps = (d + 1) << 40 | (i * 16 + 15) << 24
            b.alloc(start + 300, temps, temp_bytes, allocator=allocator, op=None, shape=None, region=None, dtype=0, line=line)
            b.span(f"{CONV}:XLA GPU module", start + 2_000, start + 400_000_000, line=line)
            b.span(
                "hipModuleLaunchKernel",
                start + 3_000,
                start + 3_100,
                line=f"Host Threads/{100 + d}",
                stats={"program_id": program_id, "hlo_module": CONV},
            )
            b.free(start + 450_000_000, temps, temp_bytes, allocator=allocator, line=line)
    planted = {
        "program": f"{CONV}({program_id})",
        "outputs": ["output 0", "output 1"],
        "where": [f"conv.py:{x.source[1]}" for x in _conv_buffers(program_id) if x.kind == "output" and x.source],
        "stack": ("train.py:40 in train_step", "train.py:88 in main"),
        "devices": devices,
    }
    return b, planted


PSUM = "jit__psum"
PSUM_ID, DECOY_ID = 5, 6
PSUM_BUFFERS = (
    ProgramBuffer("x", "parameter", F32, (4, 1024, 1024), kind="parameter"),
    ProgramBuffer("all-reduce", "all-reduce", F32, (1024, 1024), "jit(_psum)/psum", ("/src/reduce.py", 14)),
)
DECOY_BUFFERS = (ProgramBuffer("y", "add", F32, (1024, 1024), "jit(other)/add", ("/src/other.py", 3)),)


def tpu_psum(chips: int = 2, calls: int = 2) -> tuple[ProfileBuilder, dict[str, Any]]:
    """A JAX profile of a TPU host under libtpu's PJRT/TFRT conventions: each call's input is
    sharded onto every chip first (`DevicePut` > `TfrtTpuClient::BufferFromHostBuffer::TfrtTpuBuffer` on
    `main`), then `PjitFunction(_psum)` > `TfrtTpuLoadedExecutable::Execute` flows to each chip's
    `py_xla_execute/<k>` line (one chip: its `ExecuteHelperOnSingleDevice` on `main` itself), whose
    `Scheduled TfrtTpuLoadedExecutable::Execute` > `ExecutePrepare` >
    `AllocateOutputBufferWithInputReuse` allocates the output (`index_on_host` k, `tf_op` dummy, a layout
    shape) 300 ms before the chip runs: `tpu::System::Execute` flows to `DoEnqueueProgram` on `pjrt-tpu-tasks`,
    which flows to the chip's `XLA Modules` run of jit__psum(5). Meanwhile every chip runs another program
    (jit_other(6), whose output has the same size), so the time of the allocation alone would name the wrong
    one."""
    b = ProfileBuilder("tpu-host")
    for k in range(chips):
        b.device_plane(f"/device:TPU:{k}")
    b.add_hlo_module(f"{PSUM}({PSUM_ID})", program_proto(PSUM, PSUM_BUFFERS), program_id=PSUM_ID)
    b.add_hlo_module(f"jit_other({DECOY_ID})", program_proto("jit_other", DECOY_BUFFERS), program_id=DECOY_ID)
    x, out = PSUM_BUFFERS
    main = "main"
    call_ps = 2_000_000_000
    flow = iter(range(500, 10_000))
    b.span("$serve.py:30 main", 0, calls * call_ps, line=main)
    for c in range(calls):
        t0 = c * call_ps + 1000
        b.span("DevicePut", t0, t0 + 50_000_000, line=main)
        for k in range(chips):
            s = t0 + 1_000 + k * 10_000_000
            b.span("TfrtTpuClient::BufferFromHostBuffer::TfrtTpuBuffer", s, s + 5_000_000, line=main)
            b.span("AllocateDestinationBuffer", s + 100, s + 1_000, line=main)
            addr = (k + 1) << 40 | (c * 16) << 24
            b.alloc(
                s + 200,
                addr,
                x.size,
                allocator=str(k),
                id_stat="index_on_host",
                op=None,
                shape=None,
                region=None,
                dtype=0,
                line=main,
            )
        call = t0 + 100_000_000
        launch = next(flow)
        b.span("PjitFunction(_psum)", call, call + 50_000_000, line=main)
        flow_span(b, "TfrtTpuLoadedExecutable::Execute", call + 100, call + 40_000_000, main, produces=(FLOW_EXECUTE, launch))
        for k in range(chips):
            issue, run = next(flow), next(flow)
            s = call + 1_000_000 + k * 1_000
            if chips == 1:  # one chip: the execution runs on the caller's thread, inside its Execute
                line = main
                b.span("TfrtTpuLoadedExecutable::ExecuteHelperOnSingleDevice", s, s + 30_000_000, line=line)
            else:
                line = f"py_xla_execute/{k}"
                flow_span(
                    b, "Scheduled TfrtTpuLoadedExecutable::Execute", s, s + 30_000_000, line, consumes=(FLOW_EXECUTE, launch)
                )
            b.span("TfrtTpuLoadedExecutable::ExecutePrepare", s + 100, s + 5_000, line=line)
            b.span("AllocateOutputBufferWithInputReuse", s + 200, s + 4_000, line=line)
            b.span("DeferredTpuAllocator::Allocate", s + 300, s + 1_000, line=line)
            shape = f"{out.shape}{{1,0:T(8,128)}}"
            b.alloc(
                s + 400,
                (k + 1) << 40 | (c * 16 + 1) << 24,
                out.size,
                allocator=str(k),
                id_stat="index_on_host",
                op="dummy",
                shape=shape,
                region=None,
                dtype=0,
                line=line,
            )
            flow_span(b, "tpu::System::Execute", s + 6_000, s + 20_000_000, line, produces=(FLOW_ISSUE, issue))
            task = s + 25_000_000
            flow_span(
                b,
                "tpu::System::Execute=>IssueSequencedEvent",
                task,
                task + 2_000_000,
                "pjrt-tpu-tasks",
                consumes=(FLOW_ISSUE, issue),
            )
            flow_span(
                b,
                "DoEnqueueProgram",
                task + 100,
                task + 1_000_000,
                "pjrt-tpu-tasks",
                produces=(FLOW_DEVICE_RUN, run),
                run_id=c,
                device_ordinal=k,
            )
            device = f"/device:TPU:{k}"
            b.device_event(device, "XLA Modules", f"jit_other({DECOY_ID})", s - 1_000_000, 5_000_000, stats={"run_id": 90 + c})
            b.device_event(
                device,
                "XLA Modules",
                f"{PSUM}({PSUM_ID})",
                s + 301_000_000,
                10_000_000,
                stats={"run_id": c, "_ct": FLOW_DEVICE_RUN, "_c": run},
            )
    planted = {
        "program": f"{PSUM}({PSUM_ID})",
        "output": "output 0",
        "transfer": f"transfer to device, parameter 0 of {PSUM}({PSUM_ID})",
        "chips": chips,
    }
    return b, planted
