"""Logdirs of two good runs and one run whose file is cut short, in each format, as a job killed mid-write
leaves them; and a PyTorch run whose folder holds a dangling and a looping trace link beside its good trace.

    python -m tests.support.unreadable LOGDIR FORMAT   # writes one (the browser tests call this)
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session
from tests.unit.read.formats.torch_trace.trace_files import training, write

FORMATS = ("xplane", "torch_trace", "torch_snapshot", "pprof")
SESSION = "2026_12_02_00_00_00"
STEP_PS = 1_000_000
LINE = ("/src/train.py", "step", 10, 12)


@dataclass
class Logdir:
    path: Path
    good: list[str]  # the good runs, as discovery names them
    bad: str  # the run whose file is cut short
    bad_file: Path
    bad_host: str


def _xplane(root: Path, run: str, kept: int) -> Path:
    b = ProfileBuilder("host0")
    b.allocator("GPU_0_bfc", limit_bytes=1 << 30)
    for i in range(8):
        t0 = i * STEP_PS
        b.step(i, t0, t0 + STEP_PS - 10)
        b.alloc(t0 + 10, 0x7000_0000 + i * 0x10_0000, 1 << 20, allocator="GPU_0_bfc", op="MatMul", shape="[512,512]")
        b.free(t0 + 1000, 0x7000_0000 + i * 0x10_0000, 1 << 20, allocator="GPU_0_bfc")
        if kept:
            b.alloc(t0 + 2000, 0x9000_0000 + i * kept, kept, allocator="GPU_0_bfc", op="Mul", shape="[256]")
    return Path(write_session(root, run, SESSION, {"host0": b})[0])


def _snapshot(path: Path, kept: int) -> None:
    b = SnapshotBuilder()
    for i in range(8):
        b.alloc(0x1000_0000 + i * 0x10_0000, 1 << 20, [("/src/train.py", 12, "step")], time_us=100 * i)
        b.free(0x1000_0000 + i * 0x10_0000, 1 << 20, time_us=100 * i + 50)
        if kept:
            b.alloc(0x2000_0000 + i * kept, kept, [("/src/train.py", 14, "step")], time_us=100 * i + 60)
    b.write(path)


def _pprof(path: Path, kept: int) -> None:
    b = PprofBuilder()
    b.sample(1 << 20, [LINE])
    if kept:
        b.sample(kept, [("/src/train.py", "keep", 20, 21)], count=8)
    b.write(path)


def _file(root: Path, profile_format: str, run: str, kept: int) -> Path:
    """Writes one good run `run` of the format under `root`; its file."""
    if profile_format == "xplane":
        return _xplane(root, run, kept)
    (root / run).mkdir()
    if profile_format == "torch_trace":
        return write(root / run / "worker0_7.1700000000000.pt.trace.json.gz", training(kept_bytes=kept))
    if profile_format == "torch_snapshot":
        path = root / run / "memory_snapshot.pickle"
        _snapshot(path, kept)
        return path
    path = root / run / "memory.prof"
    _pprof(path, kept)
    return path


def _run_name(profile_format: str, run: str) -> str:
    return {"xplane": f"{run}/{SESSION}", "torch_trace": run, "torch_snapshot": f"{run}/memory_snapshot"}.get(
        profile_format, f"{run}/memory"
    )


def one_cut_short(root: Path, profile_format: str) -> Logdir:
    """Runs `leak` and `clean` of the format, and `broken`, a copy of `leak` cut to half its bytes."""
    root.mkdir(parents=True, exist_ok=True)
    _file(root, profile_format, "clean", 0)
    good = _file(root, profile_format, "leak", 64 << 10)
    bad = _file(root, profile_format, "broken", 64 << 10)
    data = good.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    host = {"xplane": "host0", "torch_trace": "worker0_7", "torch_snapshot": "memory_snapshot", "pprof": "memory_profile"}
    return Logdir(
        root,
        [_run_name(profile_format, "clean"), _run_name(profile_format, "leak")],
        _run_name(profile_format, "broken"),
        bad,
        host[profile_format],
    )


def with_bad_links(root: Path) -> tuple[Path, Path, Path]:
    """A PyTorch run `job` of one leaking trace, with `gone.pt.trace.json` (a link to nothing) and
    `loop.pt.trace.json` (a link to itself) beside it: (the good trace, the dangling link, the looping link)."""
    folder = root / "job"
    folder.mkdir(parents=True)
    good = write(folder / "worker0_7.1700000000000.pt.trace.json", training())
    gone, loop = folder / "gone.pt.trace.json", folder / "loop.pt.trace.json"
    os.symlink(root / "no_such_file", gone)
    os.symlink(loop.name, loop)
    return good, gone, loop


if __name__ == "__main__":
    one_cut_short(Path(sys.argv[1]), sys.argv[2])
