"""PyTorch profiler traces the tests build: Kineto's Chrome trace JSON, as torch.profiler writes it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

PID = 4242
TID = 4242


def memory(ts: float, nbytes: int, device_type: int = 1, device_id: int = 0, **extra: Any) -> dict[str, Any]:
    args = {"Device Type": device_type, "Device Id": device_id, "Bytes": nbytes, **extra}
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": TID, "ts": ts, "args": args}


def complete(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: Any = TID, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write(path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    text = json.dumps({"schemaVersion": 1, **top, "traceEvents": events}).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


def training(steps: int = 12, kept_bytes: int = 1 << 20, op: str = "aten::mm") -> list[dict[str, Any]]:
    """A training loop of `steps` ProfilerStep#N of 1 ms on cuda:0: each runs `op`, whose 64 KiB workspace it
    frees, and keeps its `kept_bytes` output (appended to a list the loop never clears); 0 keeps nothing."""
    events: list[dict[str, Any]] = []
    total = 0
    for n in range(steps):
        start = 1000.0 * n
        kept, workspace = 0x10_0000_0000 + n * (1 << 24), 0x20_0000_0000 + n * (1 << 24)
        events += [complete(f"ProfilerStep#{n}", start, 900.0, cat="user_annotation")]
        events += [complete(op, start + 100.0, 500.0, **{"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]})]
        total += 64 << 10
        events += [memory(start + 150.0, 64 << 10, Addr=workspace, **{"Total Allocated": total})]
        if kept_bytes:
            total += kept_bytes
            events += [memory(start + 200.0, kept_bytes, Addr=kept, **{"Total Allocated": total})]
        total -= 64 << 10
        events += [memory(start + 400.0, -(64 << 10), Addr=workspace, **{"Total Allocated": total})]
    return events
