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
class Buffer:
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


def program_proto(module: str, buffers: Sequence[Buffer]) -> bytes:
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
    Buffer("params", "parameter", F32, (1024, 1024), kind="parameter"),
    Buffer("batch", "parameter", F32, (64, 1024), kind="parameter"),
    Buffer("loss", "reduce", F32, (), "jit(train_step)/reduce_sum", ("/src/model.py", 61)),
    Buffer("dot.3", "dot", F32, (1024, 256), "jit(train_step)/dot_general", ("/src/model.py", 57)),
    Buffer("add.5", "add", F32, (256, 256), "jit(train_step)/add", ("/src/model.py", 58)),
    Buffer("mul.6", "multiply", F32, (256, 256), "jit(train_step)/mul", ("/src/model.py", 59)),
    Buffer("fusion.1", "fusion", F32, (64, 4096), "jit(train_step)/tanh", ("/src/model.py", 55), kind="temp"),
    Buffer("fusion.2", "fusion", F32, (64, 1024), "jit(train_step)/exp", ("/src/model.py", 56), kind="temp"),
)
EVAL_BUFFERS = (
    Buffer("params", "parameter", F32, (1024, 1024), kind="parameter"),
    Buffer("logits", "dot", BF16, (64, 512), "jit(eval_step)/dot_general", ("/src/evaluate.py", 12)),
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
