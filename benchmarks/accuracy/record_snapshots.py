"""Write the accuracy benchmark's PyTorch memory snapshot cases, as snapshot_<case>.

    python benchmarks/accuracy/record_snapshots.py            # every case (~1 s)
    python benchmarks/accuracy/record_snapshots.py oom_2_0    # some cases

No GPU records a snapshot here, so these are built, not recorded: each is what `_dump_snapshot` of its PyTorch
version pickles (tb_leakfinder.testing.torch_snapshot_builder follows each version's `_snapshot()`), for a
program whose memory the case's constants say. Each case writes

    captures/snapshot_<case>/<file>.pickle
    captures/snapshot_<case>/truth.json

`truth.json` holds the truth from those constants, never from the analysis: besides the keys of the other cases,
`verdict` (a snapshot of one moment or one step is inconclusive), `num_steps`, `growing` (false: no family may
grow), `reason_contains` and `out_of_memory` (the held bytes and where the largest parts of it were made). Its `capture`
object holds facts read back from the pickle as a sanity check.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
CAPTURES = HERE / "captures"
PREFIX = "snapshot_"

sys.path.insert(0, str(CHECKOUT))
from tb_leakfinder.read.formats.torch_snapshot import unpickle  # noqa: E402 - the checkout's own package, on the path above
from tb_leakfinder.testing.torch_snapshot_builder import (  # noqa: E402
    GIB,
    MIB,
    Block,
    Frame,
    SnapshotBuilder,
    dying_job,
    op_frames,
)

KIB = 1 << 10
BASE = 0x7F00_0000_0000
USER = "/home/me/train.py"
TORCH = "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py"
WINDOWS_USER = r"C:\research\owl\client.py"
WINDOWS_TORCH = r"C:\Users\me\owl\.venv\Lib\site-packages\torch\nn\modules\module.py"
STEPS = 12


def _at(line: int, function: str = "train_step", file: str = USER) -> list[Frame]:
    return [(file, line, function), (file, 90, "<module>")]


@dataclass
class Case:
    description: str
    file: str
    build: Callable[[], SnapshotBuilder]
    truth: dict[str, Any]


class _Loop:
    """A training loop's trace: each step makes two 4 MiB temporaries (train.py:33) and frees them, and `keep`
    decides what it keeps; the kept buffers' blocks are live at the dump, in full segments when `oom`."""

    def __init__(self, version: str, steps: int = STEPS) -> None:
        self.b = SnapshotBuilder(version=version)
        self.steps = steps
        self.live: list[Block] = []
        self.at = BASE

    def _new(self, size: int) -> int:
        addr = self.at
        self.at += max(size, 512)
        return addr

    def run(self, keep: Callable[[int, float], None], annotate: str = "") -> SnapshotBuilder:
        for step in range(self.steps):
            t = 1000.0 * step
            for k in range(2):
                addr = self._new(4 * MIB)
                self.b.alloc(addr, 4 * MIB, _at(33), time_us=t + 10 + 10 * k)
                self.b.free(addr, 4 * MIB, time_us=t + 15 + 10 * k)
            keep(step, t + 50)
            if annotate == "ProfilerStep":
                self.b.annotate(f"ProfilerStep#{step}", t, t + 900)
        return self.b

    def kept(self, size: int, stack: Sequence[Frame], t: float, cpp: Sequence[str] = ()) -> None:
        addr = self._new(size)
        self.b.alloc(addr, size, stack, time_us=t, cpp=cpp)
        self.live.append((addr, size, size, "active_allocated", stack, cpp))

    def dump(self, oom_after: bool) -> SnapshotBuilder:
        """The segments at the dump: after an out-of-memory error only the kept blocks' own, full (the allocator
        released its free cached blocks before giving up); else one segment of the whole loop's memory, the
        freed temporaries' blocks inactive between the kept ones."""
        if oom_after:
            self.b.oom(GIB, device_free=2 * MIB, time_us=1000.0 * self.steps)
            for block in self.live:
                self.b.segment(block[0], [block])
            return self.b
        blocks: list[Block] = []
        at = BASE
        for block in self.live:
            if block[0] > at:
                blocks.append((at, block[0] - at, 0, "inactive", ()))
            blocks.append(block)
            at = block[0] + block[1]
        if self.at > at:
            blocks.append((at, self.at - at, 0, "inactive", ()))
        self.b.segment(BASE, blocks)
        return self.b


def _torch113_leak() -> SnapshotBuilder:
    loop = _Loop("1.13")
    loop.run(lambda step, t: loop.kept(MIB, _at(40), t))
    return loop.dump(oom_after=False)


def _backward_leak_oom() -> SnapshotBuilder:
    loop = _Loop("2.1")
    loop.run(lambda step, t: loop.kept(2 * MIB, (), t, cpp=op_frames("bmm", "BmmBackward0")), annotate="ProfilerStep")
    return loop.dump(oom_after=True)


def _cpp_clone_leak() -> SnapshotBuilder:
    loop = _Loop("2.1")
    loop.run(lambda step, t: loop.kept(512 * KIB, (), t, cpp=op_frames("clone")), annotate="ProfilerStep")
    return loop.dump(oom_after=False)


def _windows_clone_leak() -> SnapshotBuilder:
    stack = [(WINDOWS_TORCH, 1747, "_call_impl"), (WINDOWS_USER, 57, "step"), (WINDOWS_USER, 120, "main")]
    loop = _Loop("2.1")
    loop.run(lambda step, t: loop.kept(256 * KIB, stack, t, cpp=op_frames("clone")), annotate="ProfilerStep")
    return loop.dump(oom_after=False)


def _one_step(keep_state: bool) -> SnapshotBuilder:
    """One training step: 30 activations (model.py:20) made in the forward pass, freed by the backward pass,
    then AdamW's step inside its annotation: its two state tensors per parameter (optimizer.py:75), 10 parameters
    of 8 MiB, kept when `keep_state`, else one 8 MiB update temporary per parameter, freed."""
    b = SnapshotBuilder()
    at = BASE
    for k in range(30):
        b.alloc(at + k * 16 * MIB, 16 * MIB, _at(20, "forward", "/home/me/model.py"), time_us=10 + k)
    for k in range(30):
        b.free(at + k * 16 * MIB, 16 * MIB, time_us=100 + k)
    at += 30 * 16 * MIB
    live: list[Block] = []
    for k in range(10):
        for s in range(2 if keep_state else 1):
            addr = at + (2 * k + s) * 8 * MIB
            b.alloc(addr, 8 * MIB, _at(75, "step", "/home/me/optimizer.py"), time_us=200 + 2 * k + s)
            if keep_state:
                live.append((addr, 8 * MIB, 8 * MIB, "active_allocated", _at(75, "step", "/home/me/optimizer.py")))
            else:
                b.free(addr, 8 * MIB, time_us=201 + 2 * k)
    b.annotate("Optimizer.step#AdamW.step", 195, 240)
    live.append((at + 20 * 8 * MIB, 64 * MIB, 0, "inactive", ()))
    b.segment(at, live)
    return b


CASES: dict[str, Case] = {
    "torch113_leak": Case(
        "PyTorch 1.13's shape (blocks without addresses, no time_us, no annotations): 1 MiB kept at train.py:40 "
        "every step of 12, under two 4 MiB temporaries",
        "memory_snapshot.pickle",
        _torch113_leak,
        {
            "leak": True,
            "op": "made at train.py:40 in train_step",
            "bytes_per_step": MIB,
            "bytes_per_window": STEPS * MIB / 10,
            "step_source": "time_windows",
        },
    ),
    "oom_2_0": Case(
        "PyTorch 2.0's shape, dumped by an out-of-memory observer with one trace entry (the oom): a job that kept "
        "1 GiB of activations (train.py:40) and a 256 MiB BmmBackward0 gradient (C++ frames only) per step for "
        "4 steps, over 512 MiB of weights",
        "oom_snapshot.pickle",
        lambda: _only_the_oom(dying_job("2.0")),
        {
            "leak": False,
            "verdict": "inconclusive",  # one moment: growth shows across snapshots
            "step_source": "none",
            "out_of_memory": {
                "held_bytes": 4 * GIB + 4 * 256 * MIB + 512 * MIB,
                "capacity_bytes": 4 * GIB + 4 * 256 * MIB + 512 * MIB,
                "held_at_error": [
                    ["train.py:40 in train_step", 4 * GIB],
                    ["BmmBackward0 (backward of bmm)", GIB],
                    ["(no frames or op recorded)", 512 * MIB],
                ],
            },
        },
    ),
    "backward_leak_oom": Case(
        "a 2 MiB gradient kept every step by the backward pass (BmmBackward0, C++ frames only), 12 ProfilerSteps, "
        "then an out-of-memory error",
        "rank0_oom.pickle",
        _backward_leak_oom,
        {
            "leak": True,
            "op": "BmmBackward0 (backward of bmm)",
            "bytes_per_step": 2 * MIB,
            "out_of_memory": {
                "held_bytes": STEPS * 2 * MIB,
                "capacity_bytes": STEPS * 2 * MIB,
                "held_at_error": [["BmmBackward0 (backward of bmm)", STEPS * 2 * MIB]],
            },
        },
    ),
    "cpp_clone_leak": Case(
        "512 KiB kept every step by aten::clone (allocating through aten::empty_strided) with C++ frames only, 12 ProfilerSteps",
        "memory_snapshot.pickle",
        _cpp_clone_leak,
        {"leak": True, "op": "aten::clone", "bytes_per_step": 512 * KIB},
    ),
    "windows_clone_leak": Case(
        r"a detached clone of 256 KiB kept every step at C:\research\owl\client.py:57, under torch's frames in a "
        "Windows venv, 12 ProfilerSteps",
        "memory_snapshot.pickle",
        _windows_clone_leak,
        {"leak": True, "op": "made at client.py:57 in step", "bytes_per_step": 256 * KIB},
    ),
    "one_step_adamw_state": Case(
        "one training step: the forward pass's activations freed, AdamW's state (2 x 10 x 8 MiB) made in its "
        "Optimizer.step annotation and kept",
        "memory_snapshot.pickle",
        lambda: _one_step(keep_state=True),
        {"leak": False, "verdict": "inconclusive", "num_steps": 1, "growing": False},
    ),
    "one_step_freed": Case(
        "one training step that frees all 40 buffers it makes",
        "memory_snapshot.pickle",
        lambda: _one_step(keep_state=False),
        {
            "leak": False,
            "verdict": "inconclusive",
            "num_steps": 1,
            "growing": False,
            "reason_contains": "all 40 allocations of the one step were freed",
        },
    ),
}


def _only_the_oom(b: SnapshotBuilder) -> SnapshotBuilder:
    """The snapshot an out-of-memory observer dumps under PyTorch 2.0's default of one trace entry."""
    b.snapshot["device_traces"] = [
        [entry for entry in trace if entry["action"] == "oom"] for trace in b.snapshot["device_traces"]
    ]
    return b


def measure(path: pathlib.Path) -> dict[str, Any]:
    """Facts read back from a pickle: a sanity check, not truth."""
    snapshot = unpickle.load(path.read_bytes(), str(path))
    assert isinstance(snapshot, dict)
    actions: dict[str, int] = {}
    for trace in snapshot.get("device_traces", []):
        for entry in trace:
            actions[entry["action"]] = actions.get(entry["action"], 0) + 1
    blocks = [b for s in snapshot["segments"] for b in s["blocks"]]
    return {
        "file_bytes": path.stat().st_size,
        "trace_entries": actions,
        "segments": len(snapshot["segments"]),
        "live_blocks": sum(1 for b in blocks if b["state"] != "inactive"),
        "annotations": len(snapshot.get("external_annotations", [])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"cases to write (default: all): {', '.join(CASES)}")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    for name in args.cases or list(CASES):
        case = CASES[name]
        run_dir = CAPTURES / (PREFIX + name)
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        path = case.build().write(run_dir / case.file)
        truth = {
            "case": PREFIX + name,
            "description": case.description,
            "shape": None,
            "onset_step": 0 if case.truth.get("leak") else None,
            "rate_tolerance": 0.05,
            "step_source": "markers",
            **case.truth,
            "capture": measure(path),
        }
        (run_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        print(f"{PREFIX}{name}: {path.relative_to(HERE)} {truth['capture']['file_bytes']:,} B")


if __name__ == "__main__":
    main()
