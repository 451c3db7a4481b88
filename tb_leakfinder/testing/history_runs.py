"""Runs of several captures of one job, for tests, the demo and benchmarks of the run history.

`slow_leak_run` writes a TensorBoard run of `captures` sessions taken
`every_s` seconds apart, as a job whose memory creeps up between them: each
session is a short profile of `steps_per_capture` steps (temporaries made and
freed in each step, and one kept `Mul [256]` buffer a step, the leak itself
when `leak_bytes_per_step` is not 0), and the heap in use when each capture
begins holds what the job kept since the first one. Step numbers continue
across captures (`steps_between` steps run between two captures), and each
file's mtime is the capture's end, as a profiler writes it. With
`kept_in_window` False the windows keep nothing: the job's growth happens
between them (each capture alone is clean; only the history shows the leak).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session

STEP_PS = 100_000_000  # 100 µs
TEMP_BYTES = 1 << 20
START_S = 1_780_000_000  # 2026-05-28, the first capture's end


@dataclass
class SlowLeak:
    run_dir: Path
    sessions: list[str]  # session folder names, in time order
    leak_bytes_per_step: int
    leak_bytes_per_hour: float
    steps_between: int


def slow_leak_run(
    logdir: str | os.PathLike[str],
    run: str = "job",
    *,
    captures: int = 5,
    every_s: float = 600.0,
    steps_per_capture: int = 10,
    steps_between: int = 1000,
    leak_bytes_per_step: int = 4096,
    base_bytes: int = 100 << 20,
    host: str = "host0",
    allocator: str = "GPU_0_bfc",
    kept_in_window: bool = True,
) -> SlowLeak:
    sessions = []
    for k in range(captures):
        first_step = k * steps_between
        b = ProfileBuilder(host)
        b.allocator(allocator, bytes_in_use=base_bytes + first_step * leak_bytes_per_step, limit_bytes=16 << 30)
        kept = 0x7F0000000000 + (k << 32)
        for i in range(steps_per_capture):
            t0 = i * STEP_PS
            b.step(first_step + i, t0, t0 + STEP_PS - 10)
            temp = 0x7E0000000000 + i * TEMP_BYTES
            b.alloc(t0 + 10, temp, TEMP_BYTES, allocator=allocator, op="MatMul", shape="[512,512]")
            b.free(t0 + 1000, temp, TEMP_BYTES, allocator=allocator)
            if leak_bytes_per_step and kept_in_window:
                b.alloc(t0 + 2000, kept + i * 0x10000, leak_bytes_per_step, allocator=allocator, op="Mul", shape="[256]")
        end = START_S + k * every_s
        session = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(end))  # as XProf names a session by its time
        (path,) = write_session(logdir, run, session, {host: b})
        os.utime(path, (end, end))
        sessions.append(session)
    per_hour = leak_bytes_per_step * steps_between * 3600.0 / every_s
    return SlowLeak(Path(logdir) / run, sessions, leak_bytes_per_step, per_hour, steps_between)


def strip_times(leak: SlowLeak, mtime_s: float = START_S) -> list[str]:
    """The run's captures as a copy without their times reads: its session folders renamed c<N>..c1 (so that their
    names sort against their order, and name no time) and every file's mtime `mtime_s`. The new names, in time order."""
    profile = leak.run_dir / "plugins" / "profile"
    names = [f"c{len(leak.sessions) - k}" for k in range(len(leak.sessions))]
    for session, name in zip(leak.sessions, names, strict=True):
        (profile / session).rename(profile / name)
    for path in leak.run_dir.rglob("*"):
        os.utime(path, (mtime_s, mtime_s))
    return names
