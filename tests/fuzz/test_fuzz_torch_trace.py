"""Fuzzing the PyTorch profiler trace reader: every hostile trace ends in a report or a LeakfinderError.

Seeds are traces built as Kineto writes them (tests/unit/read/formats/torch_trace/trace_files.py): both
memory forms, two devices, steps, ops with shapes, Python frames, deviceProperties and baseTimeNanoseconds.
A JSON-aware mutator puts wrong values in every field (strings for numbers, lists for objects, null, huge and
negative numbers, deep nesting, huge strings) and reorders the top level; a byte-level one truncates, flips
and inserts, in the JSON text or in its gzip bytes. Each input goes through what the plugin runs for a host:
the registry's read, the analysis, the report, timeline and buffer JSON.
"""

from __future__ import annotations

import copy
import json
import random
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.torch_trace import reader, stream
from tests.fuzz.test_fuzz_pprof import analyse_snapshot
from tests.support.fuzzing import MAX_RSS_GROWTH_BYTES, MAX_SECONDS_PER_INPUT, Tally, peak_rss_bytes, run_guarded
from tests.unit.read.formats.torch_trace.trace_files import complete, memory

CI_SEED = 20261202
CI_INPUTS = 3000
GZIP_SHARE = 0.3
BYTES_SHARE = 0.25
DEEP = "\u0000deep\u0000"  # stands for a deeply nested value, spliced into the text (json.dumps would recurse)
LONG = "\u0000long\u0000"  # stands for a number of 5,000 digits, past what int() converts
HOSTILE: tuple[Any, ...] = (
    "12",
    "",
    [],
    [1, 2],
    {},
    {"Bytes": 1},
    None,
    True,
    0,
    -1,
    1e308,
    -1e308,
    2**70,
    -(2**70),
    2**63,
    0.5,
    "x" * 200_000,
    "ProfilerStep#" + "9" * 5000,
    "train.py(" + "9" * 5000 + "): step",
    DEEP,
    LONG,
    "aten::\ud800",  # a lone surrogate: JSON escapes it, the reader keeps it, every view must write it
    "\udcff.py(3): f",
)
KEYS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args", "s")
ARGS = ("Bytes", "Addr", "Total Allocated", "Total Reserved", "Device Type", "Device Id", "Input Dims", "Input type")


def _seeds() -> list[dict[str, Any]]:
    new_form = [
        complete("ProfilerStep#1", 0.0, 50.0, cat="user_annotation"),
        complete("ProfilerStep#2", 50.0, 50.0, cat="user_annotation"),
        complete("ProfilerStep#3", 100.0, 50.0, cat="user_annotation"),
        complete("train.py(12): step", 1.0, 140.0, cat="python_function"),
        complete("aten::empty", 2.0, 10.0, **{"Input Dims": [[4, 8], []], "Input type": ["float", "int"]}),
    ]
    for k in range(6):
        total = {"Total Allocated": 4096 * (k + 1), "Total Reserved": 1 << 20}
        new_form.append(memory(3.0 + 20 * k, 4096, device_id=k % 2, Addr=0x1000 + k, **total))
    new_form += [memory(130.0, -4096, Addr=0x1000, **{"Total Allocated": 0}), memory(131.0, 64, device_type=0, Addr=8)]
    old_form = [complete(f"ProfilerStep#{s}", 30.0 * s, 30.0, cat="user_annotation") for s in range(4)]
    old_form += [memory(30.0 * s + 5, 512 * (s % 2 + 1)) for s in range(4)] + [memory(110.0, -512), memory(111.0, -999)]
    gpu = {"id": 0, "name": "H100", "totalGlobalMem": 80 << 30}
    base = 1_751_410_836_000_000_000
    return [
        {"schemaVersion": 1, "deviceProperties": [gpu], "baseTimeNanoseconds": base, "traceEvents": new_form},
        {"traceEvents": old_form, "deviceProperties": []},
        {"traceEvents": [complete("aten::add", 1.0, 2.0), {"ph": "M", "name": "process_name", "args": {"name": "x"}}]},
    ]


def _text(trace: Any) -> bytes:
    deep = "[" * 60_000 + "]" * 60_000
    return json.dumps(trace).replace(json.dumps(DEEP), deep).replace(json.dumps(LONG), "9" * 5000).encode()


# Issue 31's small files that cost minutes: one event copied with a device, thread or function name of its own each.
SPREADS = ("Device Id", "tid", "name")


def _spread(events: list[Any], rng: random.Random) -> tuple[str, list[Any]]:
    what = rng.choice(SPREADS)
    copies = rng.choice((300, 1100))
    spread = []
    for k in range(copies):
        if what == "name":
            spread.append(complete(f"train.py({k}): f{k}", 1.0 + k, 1.0, cat="python_function"))
        elif what == "tid":
            spread.append({**memory(1.0 + k, 256, Addr=k + 1), "tid": k})
        else:
            spread.append(memory(1.0 + k, 256, device_id=k, Addr=k + 1))
    return f"spread.{what}x{copies}", events + spread


def _mutate_json(trace: dict[str, Any], rng: random.Random) -> tuple[str, Any]:
    out: Any = copy.deepcopy(trace)
    events = out["traceEvents"]
    choice = rng.random()
    if choice < 0.6 and events:
        event = rng.choice(events)
        if rng.random() < 0.5 and isinstance(event.get("args"), dict):
            key = rng.choice(ARGS)
            event["args"][key] = rng.choice(HOSTILE)
            return f"args.{key}", out
        key = rng.choice(KEYS)
        event[key] = rng.choice(HOSTILE)
        return f"event.{key}", out
    if choice < 0.7 and events:
        events[rng.randrange(len(events))] = rng.choice(HOSTILE)
        return "event", out
    if choice < 0.75 and isinstance(events, list):
        name, out["traceEvents"] = _spread(events, rng)
        return name, out
    if choice < 0.85:
        key = rng.choice(("traceEvents", "deviceProperties", "baseTimeNanoseconds", "schemaVersion"))
        out[key] = rng.choice(HOSTILE) if key != "deviceProperties" else [rng.choice(HOSTILE), {"id": rng.choice(HOSTILE)}]
        return f"top.{key}", out
    if choice < 0.95:
        keys = list(out)
        rng.shuffle(keys)
        return "reordered", {key: out[key] for key in keys}
    return "top_not_object", rng.choice(([out], events, "trace", None))


def _mutate_bytes(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    choice = rng.random()
    if choice < 0.5 or not data:
        return "truncated", data[: rng.randrange(len(data) + 1)]
    out = bytearray(data)
    if choice < 0.8:
        for _ in range(rng.randint(1, 6)):
            out[rng.randrange(len(out))] = rng.choice(b'{}[],:"\\ 0e-\xff\x00\xed')
        return "bad_bytes", bytes(out)
    at = rng.randrange(len(out) + 1)
    inserted = rng.choice((b",", b"]", b"}", b'"', b"\xc3", b"1e999", b"NaN", b"\xed\xa0\x80"))
    return "inserted", bytes(out[:at]) + inserted + bytes(out[at:])


def fuzz_inputs(seed: int, count: int) -> Iterator[tuple[str, str, bytes]]:
    """(description, file name, bytes) of `count` hostile traces, reproducible from `seed`."""
    rng = random.Random(seed)
    seeds = _seeds()
    for i in range(count):
        k = rng.randrange(len(seeds))
        name, trace = _mutate_json(seeds[k], rng) if rng.random() > BYTES_SHARE else ("seed", seeds[k])
        data = _text(trace)
        if name == "seed" or rng.random() < 0.3:
            how, data = _mutate_bytes(data, rng)
            name = f"{name}+{how}"
        if rng.random() < GZIP_SHARE:
            data = zlib.compress(data, 1, 16 + zlib.MAX_WBITS)
            if rng.random() < 0.5:
                how, data = _mutate_bytes(data, rng)
                name = f"{name}+gzip_{how}"
            yield f"#{i} seed{k}:{name}", "f.pt.trace.json.gz", data
        else:
            yield f"#{i} seed{k}:{name}", "f.pt.trace.json", data


def run_trace(tally: Tally, name: str, data: bytes, path: Path) -> str:
    path.write_bytes(data)
    return run_guarded(tally, name, lambda: analyse_snapshot(str(path)), lambda message: str(path) in message)


def test_seeds_analyse_cleanly(tmp_path):
    tally = Tally()
    for k, seed in enumerate(_seeds()):
        run_trace(tally, f"seed{k}", _text(seed), tmp_path / "seed.pt.trace.json")
    assert tally.crashes == []
    assert tally.outcomes == {"report": len(_seeds())}


def test_fuzzed_traces_end_in_report_or_project_error(tmp_path):
    rss_before = peak_rss_bytes()
    tally = Tally()
    for name, file_name, data in fuzz_inputs(CI_SEED, CI_INPUTS):
        run_trace(tally, name, data, tmp_path / file_name)
    assert (tally.inputs, tally.crashes[:10]) == (CI_INPUTS, [])
    assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
    # Neither so gentle that nothing fails nor so rough that nothing parses.
    assert min(tally.outcomes["report"], tally.outcomes["error"]) >= CI_INPUTS // 10, tally.outcomes
    assert peak_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES


def test_a_gzip_bomb_stops_at_the_text_limit_unheld(tmp_path, monkeypatch):
    """64 MiB of whitespace inside traceEvents from 64 KB of gzip: refused at the limit, never held whole."""
    monkeypatch.setattr(stream, "MAX_TRACE_BYTES", 16 << 20)
    inflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    spaces = b" " * (1 << 20)
    bomb = inflater.compress(b'{"traceEvents": [') + b"".join(inflater.compress(spaces) for _ in range(64)) + inflater.flush()
    path = tmp_path / "bomb.pt.trace.json.gz"
    path.write_bytes(bomb)
    rss_before = peak_rss_bytes()
    tally = Tally()
    run_trace(tally, "bomb", bomb, path)
    assert (tally.outcomes, tally.crashes) == ({"error": 1}, [])
    with pytest.raises(
        LeakfinderError, match=re.escape(f"{path}: not a readable PyTorch profiler trace (it decompresses to more")
    ):
        reader.read_host(str(path), "bomb")
    assert peak_rss_bytes() - rss_before < 16 << 20
