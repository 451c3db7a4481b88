"""Build PyTorch memory snapshots (what `torch.cuda.memory._dump_snapshot` pickles), for tests and fuzz seeds.

The layout follows `_snapshot()` of the PyTorch version asked for (`torch/csrc/cuda/Module.cpp`'s
`THCPModule_memorySnapshot` before 2.1, `torch/csrc/cuda/memory_snapshot.cpp` from 2.1 on):
- "2.1" (and later): `segments` (device, address, total_size, segment_type, and `blocks` of address, size,
  requested_size, state, frames) and `device_traces` (one list per device of entries with action, addr, size,
  stream, time_us, frames), frames innermost first with C++ frames among the Python ones, as `stacks="all"`
  records them, and `external_annotations`;
- "2.0": blocks of size and state only (`active_pending_free` for a block awaiting its stream), a live block's
  requested size and frames in its `history` (`addr`, `real_size`, `frames`, and `cpp_frames`, the C++
  backtrace as one text), entries without time_us, their C++ frames in `cpp_frames` too, frames Python only;
- "1.13": as 2.0, without `cpp_frames`.
An `oom` entry names the device's free memory `device_free` in place of `addr`. Everything is a plain builtin.

    b = SnapshotBuilder()
    b.alloc(0x1000, 4096, [("/src/train.py", 12, "step")], time_us=10)
    b.free(0x1000, 4096, time_us=20)
    b.write(path)
"""

from __future__ import annotations

import pathlib
import pickle
from collections.abc import Sequence
from typing import Any

# One Python frame, innermost first in a stack: (file path, line, function).
Frame = tuple[str, int, str]
# A segment's block: address, size, requested size, state, Python stack, and (optionally) C++ frames.
Block = tuple[int, int, int, str, Sequence[Frame]] | tuple[int, int, int, str, Sequence[Frame], Sequence[str]]
# What the C++ unwinder adds around the Python frames of a CUDA allocation.
CPP_FRAMES = (
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "CUDACachingAllocator.cpp"),
    ("at::native::empty_strided_cuda", "??"),
)
EPOCH_US = 1_773_270_000_000_000  # time_us is wall-clock µs
VERSIONS = ("1.13", "2.0", "2.1")
OLD_LIVE_STATE = {"active_awaiting_free": "active_pending_free"}


def op_frames(op: str, node: str = "") -> tuple[str, ...]:
    """The C++ frames (innermost first) of an allocation by `op` (`at::_ops` struct name: "bmm", "clone"), through
    the primitive that allocates, inside the autograd node `node` ("BmmBackward0") when given."""
    inner = ("at::_ops::empty_strided::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>)",)
    own = (f"at::_ops::{op}::redispatch(c10::DispatchKeySet, at::Tensor const&)", f"at::_ops::{op}::call(at::Tensor const&)")
    outer = (
        (f"torch::autograd::generated::{node}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",) if node else ()
    )
    return (*inner, *own, *outer, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")


def frames(stack: Sequence[Frame], cpp: Sequence[str] = (), version: str = "2.1") -> list[dict[str, Any]]:
    """A stack as a snapshot lists it: from 2.1 the allocator's C++ frames, then `cpp`, then the Python ones,
    innermost first; before 2.1 the Python ones only."""
    python = [{"name": name, "filename": file, "line": line} for file, line, name in stack]
    if version != "2.1":
        return python
    native = [{"name": name, "filename": file, "line": 0} for name, file in CPP_FRAMES]
    native += [{"name": name, "filename": "??", "line": 0} for name in cpp]
    return [*native, *python, {"name": "_start", "filename": "??", "line": 0}]


def backtrace(cpp: Sequence[str]) -> str:
    """C++ frames as PyTorch 2.0's `cpp_frames` holds them: `c10::get_backtrace()`'s text."""
    names = ["c10::get_backtrace[abi:cxx11](unsigned long, unsigned long, bool)", *(n for n, _ in CPP_FRAMES), *cpp]
    return "".join(
        f"frame #{k}: {name} + 0x{16 * k + 8:x} (0x7f00{k:08x} in /opt/torch/lib/libtorch_cuda.so)\n"
        for k, name in enumerate(names)
    )


class SnapshotBuilder:
    def __init__(self, devices: int = 1, version: str = "2.1") -> None:
        if version not in VERSIONS:
            raise ValueError(f"version {version!r} is not one of {VERSIONS}")
        self.version = version
        self.snapshot: dict[str, Any] = {"segments": [], "device_traces": [[] for _ in range(devices)]}

    def entry(self, action: str, addr: int, size: int, time_us: float | None = None, device: int = 0, **more: Any) -> None:
        entry: dict[str, Any] = {"action": action, "addr": addr, "size": size, "stream": 0, **more}
        if time_us is not None and self.version == "2.1":
            entry["time_us"] = EPOCH_US + time_us
        self.snapshot["device_traces"][device].append(entry)

    def alloc(
        self,
        addr: int,
        size: int,
        stack: Sequence[Frame] = (),
        time_us: float | None = None,
        device: int = 0,
        cpp: Sequence[str] = (),
    ) -> None:
        """An allocation made at `stack` (Python, innermost first) through the C++ frames `cpp` (innermost first)."""
        more: dict[str, Any] = {"frames": frames(stack, cpp, self.version)}
        if cpp and self.version == "2.0":
            more["cpp_frames"] = backtrace(cpp)
        self.entry("alloc", addr, size, time_us, device, **more)

    def oom(self, size: int, device_free: int, time_us: float | None = None, device: int = 0) -> None:
        """The allocator's out-of-memory entry: the request it could not meet, and what the device had free."""
        entry: dict[str, Any] = {"action": "oom", "device_free": device_free, "size": size, "stream": 0, "frames": []}
        if time_us is not None and self.version == "2.1":
            entry["time_us"] = EPOCH_US + time_us
        self.snapshot["device_traces"][device].append(entry)

    def free(self, addr: int, size: int, time_us: float | None = None, device: int = 0, completed: bool = True) -> None:
        """A free as PyTorch records it: requested, then (with `completed`) completed at the same time."""
        self.entry("free_requested", addr, size, time_us, device, frames=[])
        if completed:
            self.entry("free_completed", addr, size, time_us, device, frames=[])

    def segment(self, address: int, blocks: Sequence[Block], device: int = 0) -> None:
        """A segment of blocks (address, size, requested_size, state, stack, and the C++ frames of a live block when
        given), its total their sizes. Before 2.1 the blocks' addresses are left out: they follow from their order."""
        listed = [self._block(block) for block in blocks]
        total = sum(block[1] for block in blocks)
        active = sum(block[1] for block in blocks if block[3] != "inactive")
        segment: dict[str, Any] = {
            "device": device,
            "address": address,
            "total_size": total,
            "allocated_size": active,
            "active_size": active,
            "stream": 0,
            "segment_type": "large" if total > 1 << 20 else "small",
            "blocks": listed,
        }
        if self.version == "2.1":
            segment.update(
                requested_size=sum(block[2] for block in blocks if block[3] != "inactive"),
                segment_pool_id=(0, 0),
                is_expandable=False,
                frames=[],
            )
        self.snapshot["segments"].append(segment)

    def _block(self, block: Block) -> dict[str, Any]:
        address, size, requested, state, stack = block[:5]
        cpp: Sequence[str] = block[5] if len(block) > 5 else ()
        if self.version == "2.1":
            listed = frames(stack, cpp) if stack or cpp else []
            return {"address": address, "size": size, "requested_size": requested, "state": state, "frames": listed}
        legacy: dict[str, Any] = {"size": size, "state": OLD_LIVE_STATE.get(state, state)}
        if state != "inactive":
            record: dict[str, Any] = {"addr": address, "real_size": requested, "frames": frames(stack, version=self.version)}
            if cpp and self.version == "2.0":
                record["cpp_frames"] = backtrace(cpp)
            legacy["history"] = [record]
        return legacy

    def annotate(self, name: str, start_us: float, end_us: float, device: int = 0) -> None:
        for stage, at in (("START", start_us), ("END", end_us)):
            item = {"stage": stage, "name": name, "device": device, "time_us": EPOCH_US + at}
            self.snapshot.setdefault("external_annotations", []).append(item)

    def to_bytes(self, protocol: int = 4) -> bytes:
        return pickle.dumps(self.snapshot, protocol=protocol)

    def write(self, path: pathlib.Path | str, protocol: int = 4) -> pathlib.Path:
        path = pathlib.Path(path)
        path.write_bytes(self.to_bytes(protocol))
        return path


MIB = 1 << 20
GIB = 1 << 30
JOB_BASE = 0x7F00_0000_0000
JOB_FILE = "/home/me/train.py"


def dying_job(version: str = "2.1", steps: int = 4) -> SnapshotBuilder:
    """The snapshot of a job that died out of memory: each step keeps its 1 GiB activations (train.py:40 in
    train_step) and a 256 MiB gradient the backward pass made (C++ frames only: BmmBackward0's bmm), and frees a
    64 MiB temporary (train.py:41); then it asks for 2 GiB more than the device has. 512 MiB of weights were
    allocated before the trace. Every segment is full, as the allocator leaves them at the error."""
    b = SnapshotBuilder(version=version)
    live: list[Block] = [(JOB_BASE, 512 * MIB, 512 * MIB, "active_allocated", ())]
    at = JOB_BASE + 512 * MIB
    for step in range(steps):
        t = 1000 * step
        kept = [(JOB_FILE, 40, "train_step"), (JOB_FILE, 90, "<module>")]
        b.alloc(at, GIB, kept, time_us=t + 1)
        live.append((at, GIB, GIB, "active_allocated", kept))
        at += GIB
        backward = op_frames("bmm", "BmmBackward0")
        b.alloc(at, 256 * MIB, (), time_us=t + 2, cpp=backward)
        live.append((at, 256 * MIB, 256 * MIB, "active_allocated", (), backward))
        at += 256 * MIB
        b.alloc(at, 64 * MIB, [(JOB_FILE, 41, "train_step"), (JOB_FILE, 90, "<module>")], time_us=t + 3)
        b.free(at, 64 * MIB, time_us=t + 4)
    b.oom(2 * GIB, device_free=64 * MIB, time_us=1000 * steps)
    b.segment(JOB_BASE, live)
    return b


FLEX_FILE = "/home/me/flexgen/flex_opt.py"
BACKEND_FILE = "/home/me/flexgen/pytorch_backend.py"
# The three weight initialisers of the model, each a line of its own in flex_opt.py, and how many weights each makes.
INIT_WEIGHTS = ((171, "init_weight", 4), (319, "init_weight", 2), (507, "init_weight", 2))


def helper_job(version: str = "2.0", out_of_memory: bool = True, layers: int = 6) -> SnapshotBuilder:
    """A model that makes every weight through one allocation helper (pytorch_backend.py:190 in allocate), called
    from the model's three weight initialisers (flex_opt.py:171, :319 and :507, each called per layer from
    flex_opt.py:640 in init_all_weights); per layer 4 + 2 + 2 weights of 64 MiB. With `out_of_memory` it then asks
    for 1 GiB more than the device has: the snapshot an out-of-memory observer dumps, its trace the oom entry alone;
    else the snapshot dumped after the run, its trace one free (PyTorch 2.0 keeps one entry unless told more)."""
    b = SnapshotBuilder(version=version)
    live: list[Block] = []
    at = JOB_BASE
    for _ in range(layers):
        for line, name, count in INIT_WEIGHTS:
            stack = [(BACKEND_FILE, 190, "allocate"), (FLEX_FILE, line, name), (FLEX_FILE, 640, "init_all_weights")]
            for _ in range(count):
                live.append((at, 64 * MIB, 64 * MIB, "active_allocated", stack))
                at += 64 * MIB
    # A 16 MiB activation buffer at the model's own line, and 48 MiB cached but free in the segment.
    live.append((at, 16 * MIB, 16 * MIB, "active_allocated", [(FLEX_FILE, 702, "forward")]))
    live.append((at + 16 * MIB, 48 * MIB, 0, "inactive", ()))
    if out_of_memory:
        b.oom(GIB, device_free=32 * MIB)
    else:
        b.entry("free_completed", at + 64 * MIB, 2 * MIB, frames=[])
    b.segment(JOB_BASE, live)
    return b
