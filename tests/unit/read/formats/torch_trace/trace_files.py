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
