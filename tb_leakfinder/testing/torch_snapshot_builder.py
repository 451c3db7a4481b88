"""Build PyTorch memory snapshots (what `torch.cuda.memory._dump_snapshot` pickles), for tests and fuzz seeds.

The layout follows PyTorch 2.x's `_snapshot()`: `segments` (device, address, total_size, segment_type, and
`blocks` of address, size, requested_size, state, frames) and `device_traces` (one list per device of entries
with action, addr, size, stream, time_us, frames), frames innermost first with C++ frames among the Python
ones, as `stacks="all"` records them, and `external_annotations`. Everything is a plain builtin.

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
# What the C++ unwinder adds around the Python frames of a CUDA allocation.
CPP_FRAMES = (
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "CUDACachingAllocator.cpp"),
    ("at::native::empty_strided_cuda", "??"),
)
EPOCH_US = 1_773_270_000_000_000  # time_us is wall-clock µs


def frames(stack: Sequence[Frame]) -> list[dict[str, Any]]:
    """A stack as a snapshot lists it: the allocator's C++ frames, then the Python ones, innermost first."""
    python = [{"name": name, "filename": file, "line": line} for file, line, name in stack]
    cpp = [{"name": name, "filename": file, "line": 0} for name, file in CPP_FRAMES]
    return [*cpp, *python, {"name": "_start", "filename": "??", "line": 0}]


class SnapshotBuilder:
    def __init__(self, devices: int = 1) -> None:
        self.snapshot: dict[str, Any] = {"segments": [], "device_traces": [[] for _ in range(devices)]}

    def entry(self, action: str, addr: int, size: int, time_us: float | None = None, device: int = 0, **more: Any) -> None:
        entry: dict[str, Any] = {"action": action, "addr": addr, "size": size, "stream": 0, **more}
        if time_us is not None:
            entry["time_us"] = EPOCH_US + time_us
        self.snapshot["device_traces"][device].append(entry)

    def alloc(self, addr: int, size: int, stack: Sequence[Frame] = (), time_us: float | None = None, device: int = 0) -> None:
        self.entry("alloc", addr, size, time_us, device, frames=frames(stack))

    def free(self, addr: int, size: int, time_us: float | None = None, device: int = 0, completed: bool = True) -> None:
        """A free as PyTorch records it: requested, then (with `completed`) completed at the same time."""
        self.entry("free_requested", addr, size, time_us, device, frames=[])
        if completed:
            self.entry("free_completed", addr, size, time_us, device, frames=[])

    def segment(self, address: int, blocks: Sequence[tuple[int, int, int, str, Sequence[Frame]]], device: int = 0) -> None:
        """A segment of blocks (address, size, requested_size, state, stack), its total their sizes."""
        listed = [
            {"address": a, "size": size, "requested_size": requested, "state": state, "frames": frames(stack) if stack else []}
            for a, size, requested, state, stack in blocks
        ]
        total = sum(size for _, size, _, _, _ in blocks)
        active = sum(size for _, size, _, state, _ in blocks if state != "inactive")
        self.snapshot["segments"].append(
            {
                "device": device,
                "address": address,
                "total_size": total,
                "allocated_size": active,
                "active_size": active,
                "requested_size": sum(requested for _, _, requested, state, _ in blocks if state != "inactive"),
                "stream": 0,
                "segment_type": "large" if total > 1 << 20 else "small",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": [],
                "blocks": listed,
            }
        )

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
