"""Real PyTorch CPU jobs that keep a known number of bytes a step, captured periodically and in one long capture.

    python tests/support/torch_periodic.py LOGDIR

records, for each size of KEPT (64 KiB, 128 KiB, 1 MiB a step), the same job three ways, each a TensorBoard run
of LOGDIR: `long_<size>` with `capture(start=2, count=LONG_STEPS)`, `every_<size>` with
`capture(start=2, count=WINDOW, every=PERIOD)`, and `schedule_<size>` with torch.profiler's own
`schedule(wait, warmup, active=WINDOW, repeat)` and `tensorboard_trace_handler`, one trace per window. It prints one
JSON object: per run, its traces and the truth (the bytes it keeps a step). tests/integration/test_torch_periodic.py
runs it in a process of its own.

The job is a small training-like step whose temporaries (an input, a matmul's output, its ReLU) are freed a step
later, with one clone of the ReLU's `[rows, 1024]` float output appended to a list every step. The temporaries of
each window's last step are still live when the profiler stops and are freed while none records: PyTorch's CPU
heap (`Total Allocated`) then never takes them off, so each capture begins where the last one ended.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

COLUMNS = 1024
FLOAT_BYTES = 4
KEPT = {"64k": 64 << 10, "128k": 128 << 10, "1m": 1 << 20}  # bytes kept a step
STEPS = 62
START, WINDOW, PERIOD = 2, 4, 12  # capture(start=2, count=4, every=12): steps 2-5, 14-17, 26-29, 38-41, 50-53
LONG_STEPS = 24
CULPRIT = "aten::clone"


def step(torch: Any, weight: Any, kept: list[Any], rows: int) -> None:
    x = torch.randn(rows, COLUMNS)
    h = torch.relu(x @ weight)
    kept.append(h.clone())


def with_capture(torch: Any, logdir: pathlib.Path, name: str, rows: int, **windows: Any) -> list[str]:
    import tb_leakfinder

    weight = torch.randn(COLUMNS, COLUMNS)
    kept: list[Any] = []
    with tb_leakfinder.capture(logdir / name, framework="torch", **windows) as cap:
        for n in range(STEPS):
            with cap.step(n):
                step(torch, weight, kept, rows)
    return [str(s.path) for s in cap.sessions]


def with_schedule(torch: Any, logdir: pathlib.Path, name: str, rows: int) -> list[str]:
    """torch.profiler's own periodic capture: windows of WINDOW steps every PERIOD, as a user writes it."""
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    weight = torch.randn(COLUMNS, COLUMNS)
    kept: list[Any] = []
    every = schedule(skip_first=START - 1, wait=PERIOD - WINDOW - 1, warmup=1, active=WINDOW, repeat=(STEPS - START) // PERIOD)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=every,
        on_trace_ready=tensorboard_trace_handler(str(logdir / name)),
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
    ) as prof:
        for _ in range(STEPS):
            step(torch, weight, kept, rows)
            prof.step()
    return sorted(str(p) for p in (logdir / name).iterdir())


def main() -> None:
    import torch

    torch.manual_seed(0)
    logdir = pathlib.Path(sys.argv[1])
    out: dict[str, Any] = {}
    for size, kept in KEPT.items():
        rows = kept // (COLUMNS * FLOAT_BYTES)
        runs = {
            f"long_{size}": with_capture(torch, logdir, f"long_{size}", rows, start=START, count=LONG_STEPS),
            f"every_{size}": with_capture(torch, logdir, f"every_{size}", rows, start=START, count=WINDOW, every=PERIOD),
            f"schedule_{size}": with_schedule(torch, logdir, f"schedule_{size}", rows),
        }
        for name, traces in runs.items():
            out[name] = {"traces": traces, "bytes_per_step": kept}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
