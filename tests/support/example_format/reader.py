"""An allocation log into the model: `time_us,event,bytes,address,op` rows, `event` being `alloc`, `free` or
`step` (then `bytes` is the step's number; a step lasts until the next one starts, the last until the log's end)."""

from __future__ import annotations

import csv
import io

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE, HostProfile
from tb_leakfinder.read import files
from tests.support.columns import memory_events, steps

MAX_FILE_BYTES = 64 << 20
COLUMNS = ["time_us", "event", "bytes", "address", "op"]
ALLOCATOR = "cpu"  # the one allocator a log has
PS_PER_US = 1_000_000


def read_host(path: str, host: str) -> HostProfile:
    text = files.read_bytes(path, limit=MAX_FILE_BYTES).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or list(rows[0]) != COLUMNS:
        raise LeakfinderError(f"{path}: not an allocation log (its header must be {','.join(COLUMNS)})", source=path)
    times = [int(row["time_us"]) * PS_PER_US for row in rows]
    memory = [(t, row) for t, row in zip(times, rows, strict=True) if row["event"] in ("alloc", "free")]
    events = memory_events(
        [t for t, _ in memory],
        [ALLOC if row["event"] == "alloc" else FREE for _, row in memory],
        [int(row["address"], 16) for _, row in memory],
        [int(row["bytes"]) for _, row in memory],
        allocator=ALLOCATOR,
        op=[row["op"] for _, row in memory],
    )
    end = max(times) + 1
    starts = [(int(row["bytes"]), t) for t, row in zip(times, rows, strict=True) if row["event"] == "step"]
    ends = [start for _, start in starts[1:]] + [end]
    marks = steps(*((step, start, stop) for (step, start), stop in zip(starts, ends, strict=True)))
    return HostProfile(host, path, events, marks, end, step_marker="step")
