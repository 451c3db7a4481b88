"""Small hostile inputs that once cost minutes, gigabytes or a hang (issue 31), for tests, fuzz seeds and benchmarks.

Each builder writes one file at a scale the caller picks: the issue's scale reproduces what a probe found, a
smaller one keeps a test quick while still far past where a quadratic or unbounded reader shows.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path
from typing import Any

from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, StatValue

# Names a FIFO may hide behind in a logdir: each format's, and the JSON and pickle that discovery sniffs.
FIFO_NAMES = ("h.xplane.pb", "w.pt.trace.json", "w.pt.trace.json.gz", "other.json", "s.pickle", "s.pkl", "m.prof")


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _trace(path: Path, events: list[dict[str, Any]] | str) -> Path:
    body = events if isinstance(events, str) else json.dumps(events)
    text = ('{"schemaVersion": 1, "traceEvents": ' + body + "}").encode()
    path.write_bytes(gzip.compress(text, mtime=0) if path.name.endswith(".gz") else text)
    return path


def _memory(ts: float, nbytes: int, **args: Any) -> dict[str, Any]:
    return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": {"Bytes": nbytes, **args}}


def empty_events(path: Path, count: int) -> Path:
    """`count` events `{}`, gzipped: nothing to read, and a 1,000-fold gzip (written a block at a time)."""
    block = 1 << 20
    with open(path, "wb") as file, gzip.GzipFile(fileobj=file, mode="wb", mtime=0) as out:
        out.write(b'{"schemaVersion": 1, "traceEvents": [{}')
        for start in range(1, count, block):
            out.write(b",{}" * min(block, count - start))
        out.write(b"]}")
    return path


def devices(path: Path, count: int) -> Path:
    """`count` [memory] events, each on a device of its own."""
    return _trace(path, [_memory(k, 256, **{"Device Type": 1, "Device Id": k % 65_000, "Addr": k}) for k in range(count)])


def function_names(path: Path, count: int) -> Path:
    """`count` python_function events of distinct names, and one [memory] event."""
    calls = [
        {"ph": "X", "cat": "python_function", "name": f"a.py({k}): f{k}", "pid": 1, "tid": 1, "ts": k, "dur": 1}
        for k in range(count)
    ]
    return _trace(path, [*calls, _memory(0, 256, Addr=1)])


def threads(path: Path, count: int) -> Path:
    """`count` [memory] events and ops, each on a thread of its own."""
    events: list[dict[str, Any]] = []
    for k in range(count):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": k, "ts": k, "dur": 1})
        events.append({**_memory(k + 0.5, 256, Addr=k + 1), "tid": k})
    return _trace(path, events)


def long_integer(path: Path, digits: int = 5000) -> Path:
    """A [memory] event whose Bytes has `digits` digits: past Python's int() digit limit."""
    return _trace(path, '[{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": ' + "9" * digits + "}}]")


def _step(n: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": 1000.0 * n, "dur": 900}


def _complete(category: str, name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": category, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def reused_address(path: Path, steps: int = 12) -> Path:
    """A trace that keeps 1 MiB a step, every [memory] event at one Addr: a leak only the sizes reveal."""
    events: list[dict[str, Any]] = []
    for n in range(steps):
        start = 1000.0 * n
        events.append(_step(n))
        events.append(_memory(start + 100, 1 << 20, **{"Device Type": 1, "Device Id": 0, "Addr": 4096}))
    return _trace(path, events)


def surrogate_names(path: Path) -> Path:
    """A leaking trace whose op is a lone surrogate (escaped in the JSON) and whose Python frame holds raw ED A0 80."""
    events: list[dict[str, Any]] = []
    for n in range(12):
        start = 1000.0 * n
        events.append(_step(n))
        events.append(_complete("python_function", "train\ufffe.py(7): step", start + 50, 400))
        events.append(_complete("cpu_op", "aten::\ud800", start + 100, 300))
        events.append(_memory(start + 150, 1 << 20, **{"Device Type": 1, "Device Id": 0, "Addr": 0x1000 * (n + 1)}))
    text = json.dumps({"schemaVersion": 1, "traceEvents": events}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    path.write_bytes(text.replace("\ufffe".encode(), b"\xed\xa0\x80"))
    return path


def deep_location(path: Path, lines: int = 5001, references: int = 200_000) -> Path:
    """A device memory profile whose one sample names one location of `lines` lines `references` times."""
    builder = PprofBuilder()
    builder.sample(4096, [("/src/a.py", "f", 1, 1)])
    location = builder.message.location[0]
    for k in range(1, lines):
        added = location.line.add()
        added.function_id, added.line = location.line[0].function_id, k + 1
    sample = builder.message.sample[0]
    sample.location_id.extend([location.id] * (references - 1))
    return builder.write(path)


def device_labels(path: Path, count: int) -> Path:
    """A device memory profile of `count` samples, each on a device label of its own."""
    builder = PprofBuilder()
    for k in range(count):
        builder.sample(4096, device=f"cpu:{k}")
    return builder.write(path)


def memo_entries(path: Path, count: int) -> Path:
    """A memory snapshot whose trace lists one entry `count` times: 2 bytes each, through the pickle's memo."""
    builder = SnapshotBuilder()
    builder.alloc(0x1000, 4096, [("/src/a.py", 3, "f")], time_us=1)
    entry = builder.snapshot["device_traces"][0][0]
    builder.snapshot["device_traces"][0] = [entry] * count
    path.write_bytes(pickle.dumps(builder.snapshot, protocol=4))
    return path


def _xspace_alloc(builder: ProfileBuilder, k: int, line: str, **stats: StatValue) -> None:
    """The `k`-th MemoryAllocation of 256 bytes, at k ns, with `stats` (its memory id among them)."""
    given: dict[str, StatValue] = {"bytes_allocated": 256 * (k + 1), "allocation_bytes": 256, "addr": k + 1, "tf_op": "Mul"}
    builder.event("MemoryAllocation", k * 1000 + 1, line=line, stats={**given, **stats})


def xspace_allocators(path: Path, count: int, *, integer_ids: bool = False) -> Path:
    """An XSpace of `count` memory events, each on an allocator of its own: named, or numbered by `index_on_host`."""
    builder = ProfileBuilder()
    for k in range(count):
        _xspace_alloc(builder, k, "tf_Compute", **({"index_on_host": k} if integer_ids else {"allocator_name": f"a{k}"}))
    builder.write(path)
    return path


def xspace_threads(path: Path, count: int) -> Path:
    """An XSpace of `count` /host:CPU lines, each a thread with a Python call around one memory event."""
    builder = ProfileBuilder()
    for k in range(count):
        builder.event("$a.py:1 f", k * 1000, 500, line=f"t{k}")
        _xspace_alloc(builder, k, f"t{k}", allocator_name="GPU_0_bfc")
    builder.write(path)
    return path


def xspace_names(path: Path, count: int) -> Path:
    """An XSpace of `count` Python calls of distinct names, each around a memory event of an op of its own name."""
    builder = ProfileBuilder()
    for k in range(count):
        builder.event(f"$a.py:{k} f{k}", k * 1000, 500, line="python")
        _xspace_alloc(builder, k, "tf_Compute", allocator_name="GPU_0_bfc", tf_op=f"op{k}")
    builder.write(path)
    return path


def xspace_devices(path: Path, count: int) -> Path:
    """An XSpace of one memory event and `count` device planes, each with one program execution."""
    builder = ProfileBuilder()
    _xspace_alloc(builder, 0, "tf_Compute", allocator_name="GPU_0_bfc")
    for k in range(count):
        builder.xla_module(f"/device:GPU:{k}", f"jit_f({k})", 1000, 2000, run_id=k)
    builder.write(path)
    return path


def xspace_empty_planes(path: Path, count: int) -> Path:
    """An XSpace of one memory event followed by `count` empty planes: two bytes each."""
    builder = ProfileBuilder()
    _xspace_alloc(builder, 0, "tf_Compute", allocator_name="GPU_0_bfc")
    path.write_bytes(builder.to_bytes() + b"\x0a\x00" * count)
    return path
