"""Runs of events scanned by the compiled scanner or decoded by msgspec (chunks.py) read as the event-at-a-time
reader reads them: the same profile from real and built traces, and where a run holds an event a path does not take,
the same profile or the same refusal from the next path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder import compiled
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.torch_trace import chunks, reader, stream
from tests.support.fuzzing import REQUIRE_SCANNER_ENV, ROOT
from tests.unit.read.formats.torch_trace.test_real_traces import QWEN, RESNET
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, training, write

if chunks._scanner is None and os.environ.get(REQUIRE_SCANNER_ENV) == "1":  # CI builds it: not skipping there
    raise RuntimeError(f"{REQUIRE_SCANNER_ENV}=1 but the trace scanner is not built (python setup.py build_ext --inplace)")
# The reader's paths: (chunks.COMPILED, reader.CHUNKED). Without the scanner built the compiled one is msgspec's.
PATHS = {"compiled": (True, True), "msgspec": (False, True), "one at a time": (False, False)}


def _set_path(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled, chunked = PATHS[how]
    monkeypatch.setattr(chunks, "COMPILED", compiled)
    monkeypatch.setattr(reader, "CHUNKED", chunked)


def _profile(path: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, object], list[int]]:
    """The profile's parts as plain values, and how many events each run the chunk paths took held (-1: refused)."""
    _set_path(how, monkeypatch)
    taken: list[int] = []
    take = chunks.Chunks.take

    def counting(self: chunks.Chunks, text: str, start: int, end: int) -> int:
        taken.append(take(self, text, start, end))
        return taken[-1]

    monkeypatch.setattr(chunks.Chunks, "take", counting)
    profile = reader.decode(files.read_blocks(str(path), 1 << 12, limit=stream.MAX_TRACE_BYTES), "h", str(path))
    parts: dict[str, object] = {"warnings": profile.warnings, "duration": profile.duration_ps, "start": profile.start_time_ns}
    for part in ("events", "spans", "steps"):
        for name, value in vars(getattr(profile, part)).items():
            parts[f"{part}.{name}"] = value.tolist() if isinstance(value, np.ndarray) else value
    return parts, taken


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, object], list[int]]:
    """The profile, the same from all three paths, and the compiled path's runs."""
    compiled, taken = _profile(path, "compiled", monkeypatch)
    for how in ("msgspec", "one at a time"):
        other, _ = _profile(path, how, monkeypatch)
        assert compiled.keys() == other.keys()
        assert [name for name in compiled if compiled[name] != other[name]] == [], how
    return compiled, taken


def _refusal(path: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> str:
    _set_path(how, monkeypatch)
    with pytest.raises(LeakfinderError) as error:
        reader.read_host(str(path), "h")
    return error.value.message


def _refusals(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The message all three paths refuse the file with."""
    messages = {_refusal(path, how, monkeypatch) for how in PATHS}
    assert len(messages) == 1, messages
    return messages.pop()


@pytest.mark.skipif(not RESNET.exists() or not QWEN.exists(), reason="the shared real traces are absent")
@pytest.mark.parametrize("path", [RESNET, QWEN])
def test_real_traces_read_alike_and_in_runs(path, monkeypatch):
    monkeypatch.setattr(stream, "CHUNK_CHARS", 64 << 10)  # many runs, each cut at a brace inside an event or not
    profile, taken = _both(path, monkeypatch)
    assert len(taken) > 10 and sum(n for n in taken if n > 0) > 0.9 * sum(abs(n) for n in taken)
    assert len(profile["events.time_ps"]) in (10_980, 2_450)


def test_a_built_training_loop_reads_alike_in_runs_of_any_length(tmp_path, monkeypatch):
    path = write(tmp_path / "t.pt.trace.json", training(steps=30))
    for size in (300, 2000, 1 << 20):
        monkeypatch.setattr(stream, "CHUNK_CHARS", size)
        profile, taken = _both(path, monkeypatch)
        assert profile["steps.step_num"] == list(range(30)) and max(taken) > 0


def _with(events: list[dict[str, object]], tmp_path: Path, name: str = "odd.pt.trace.json") -> Path:
    """A training loop with `events` in its middle."""
    loop = training(steps=6)
    return write(tmp_path / name, loop[:10] + events + loop[10:])


@pytest.mark.parametrize(
    "odd",
    [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},  # metadata, no time
        {"ph": "i", "name": "flow", "pid": 1, "tid": 1},  # no time: skipped
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 2000.5},  # no duration: 0
        complete("aten::mm", 2001.0, 3.0, tid=7.0),  # 7.0's text is not 7's
        complete("aten::mm", 2001.0, 3.0, tid=True),
        complete("aten::mm", 2001.0, 3.0, tid=[1, {"a": 2}]),
        {**complete("aten::mm", 2001.0, 3.0), "args": [1]},  # args not an object: taken as none
        {**memory(2002.0, 4096, Addr=5), "args": {"Bytes": 4096, "Addr": None}},  # a null Addr is none
        memory(2003.0, 0),  # 0 bytes: counted and left out
        memory(2004.0, 64, device_type=6, device_id=2, Addr=9),  # a HIP device
        complete("ProfilerStep#99", 2005.0, 1.0, cat="gpu_user_annotation"),  # the GPU's copy
        complete("aten::mm", 2006.0, 3.0, **{"Input Dims": [[2, 3]], "Input type": ["c10::Half"]}),
        complete("aten::cat", 2006.0, 3.0, **{"Input Dims": [[[2, 3], [4]]], "Input type": ["TensorList"]}),
    ],
)
def test_events_the_chunk_path_leaves_read_alike(odd, tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "CHUNK_CHARS", 1 << 20)
    _both(_with([odd], tmp_path), monkeypatch)


@pytest.mark.parametrize("shift, taken", [(1_623_212_388_426_902, True), (5 * 10**15, False)])
def test_integer_epoch_times_read_alike(shift, taken, tmp_path, monkeypatch):
    """Times in µs since the epoch as integers (PyTorch 1.9): kept as the ints they are, whether the chunk path
    takes them (below 2^52, exact as float64) or leaves them (above)."""
    events = [{**e, "ts": shift + int(e["ts"]), **({"dur": int(e["dur"])} if "dur" in e else {})} for e in training(steps=6)]
    path = write(tmp_path / "old.pt.trace.json", events, baseTimeNanoseconds=0)
    profile, runs = _both(path, monkeypatch)
    assert (max(runs) > 0) == taken and profile["start"] == shift * 1000


@pytest.mark.parametrize(
    "odd, detail",
    [
        ({**complete("aten::mm", 2001.0, 3.0), "ts": None}, "event 10's ts is None"),
        ({**complete("aten::mm", 2001.0, 3.0), "dur": -1}, "event 10's dur is negative"),
        ({**complete("aten::mm", 2001.0, 3.0), "dur": "3"}, "event 10's dur is '3'"),
        (memory(2002.0, 1.5), "[memory] event 10's Bytes is 1.5"),
        ({**memory(2002.0, 64), "args": None}, "[memory] event 10's Bytes is None"),
        ({k: v for k, v in memory(2002.0, 64).items() if k != "args"}, "[memory] event 10's Bytes is None"),
        (memory(2002.0, 64, Addr=-1), "[memory] event 10's Addr is negative"),
        (memory(2002.0, 64, Addr=1 << 64), "[memory] event 10's Addr is 18446744073709551616"),
        (memory(2002.0, 64, device_id=1 << 20), "[memory] event 10's Device Id is 1048576"),
        (memory(2002.0, 1 << 60), "[memory] event 10's Bytes is 1152921504606846976"),
        (complete("ProfilerStep#" + "9" * 30, 2001.0, 3.0, cat="user_annotation"), "step number 9999"),
    ],
)
def test_events_refused_are_refused_alike(odd, detail, tmp_path, monkeypatch):
    path = _with([odd], tmp_path)
    assert detail in _refusals(path, monkeypatch)


def test_json_msgspec_refuses_reads_as_the_json_module_reads_it(tmp_path, monkeypatch):
    """NaN is JSON to Python's json module, not to msgspec: that run goes event by event, which refuses the time."""
    path = _with([complete("aten::mm", 2001.0, 3.0)], tmp_path)
    path.write_text(path.read_text().replace('"ts": 2001.0', '"ts": NaN'))
    assert "event 10's ts is nan" in _refusals(path, monkeypatch)


def test_a_brace_inside_an_event_is_no_place_to_cut(tmp_path, monkeypatch):
    """Objects inside an event's args end in '},' too: a run cut there is no list of events, and is read again."""
    nested = complete("aten::mm", 2001.0, 3.0, extra=[{"a": 1}, {"b": 2}], more={"c": {"d": 1}, "e": 2})
    path = write(tmp_path / "n.pt.trace.json", [nested] * 200 + training(steps=3))
    monkeypatch.setattr(stream, "CHUNK_CHARS", 500)
    _, taken = _both(path, monkeypatch)
    assert -1 in taken and max(taken) > 0


@pytest.mark.parametrize(
    "missing, chunked",
    [("msgspec", False), ("tb_leakfinder.read.formats.torch_trace._kineto_scan", True)],
    ids=["without msgspec: one event at a time", "without the scanner built: msgspec"],
)
def test_without_msgspec_or_the_scanner_the_reader_reads_on(missing, chunked, tmp_path):
    path = write(tmp_path / "t.pt.trace.json", training(steps=12))
    program = f"""
import json, sys
sys.modules[{missing!r}] = None  # as if it were not installed, or not built
from tb_leakfinder.read.formats.torch_trace import reader
profile = reader.read_host({str(path)!r}, "h")
chunks = sys.modules.get("tb_leakfinder.read.formats.torch_trace.chunks")
print(json.dumps([len(profile.events), profile.steps.step_num.tolist(), chunks is not None, getattr(chunks, "_scanner", 0)]))
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert json.loads(out) == [36, list(range(12)), chunked, None if chunked else 0]


@pytest.mark.slow
def test_the_identity_tool_finds_the_paths_alike():
    """tools/torch_trace_identity.py against this tree's own reader: every trace of its corpus the same."""
    out = subprocess.run(
        [sys.executable, "tools/torch_trace_identity.py", "--against", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(re.findall(r"^same: ", out.stdout, re.M)) >= 6


def test_kinds_and_shapes_forgotten_when_too_many_read_alike(tmp_path, monkeypatch):
    """A trace of more distinct kinds, shapes or bytes of their texts than the runs keep starts their tables afresh
    (each path's): the profile is the same."""
    events = [complete("aten::mm", 10.0 * k, 5.0, tid=k % 50, **{"Input Dims": [[k % 30, 2]]}) for k in range(400)]
    events += [memory(10.0 * k + 1, 64, Addr=k + 1, device_id=k % 3) for k in range(400)]
    path = write(tmp_path / "many.pt.trace.json", training(steps=4) + events)
    monkeypatch.setattr(stream, "CHUNK_CHARS", 2000)
    for most, held in ((8, 1 << 20), (1 << 16, 64)):
        monkeypatch.setattr(chunks, "MAX_CACHED", most)
        monkeypatch.setattr(chunks, "MAX_HELD_BYTES", held)
        profile, taken = _both(path, monkeypatch)
        assert len(profile["events.time_ps"]) == 412 and min(taken) > 0


def test_the_compiled_path_is_off_with_pure_python_or_compiled_off(monkeypatch):
    assert chunks.compiled_scanner() is chunks._scanner
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, "1")
    assert chunks.compiled_scanner() is None
    monkeypatch.delenv(compiled.PURE_PYTHON_ENV)
    monkeypatch.setattr(chunks, "COMPILED", False)
    assert chunks.compiled_scanner() is None


def test_runs_holding_characters_past_ascii_read_alike(tmp_path, monkeypatch):
    """The scanner reads a run holding other characters from its UTF-8, its names and shapes included; a run holding
    a lone surrogate (which the file's decoder lets through) is left to msgspec."""
    events = training(steps=30)
    events[40]["args"]["note"] = "naïve ✓"
    events[41]["name"] = "aten::mm_é"
    events[41]["args"]["Input type"] = ["float", "ünïcode"]
    events[91]["cat"] = "cpu_op 🔥"
    events[120]["name"] = "SURROGATE"
    path = write(tmp_path / "u.pt.trace.json", events)
    text = path.read_text().replace("\\u00ef", "ï").replace("\\u2713", "✓").replace("\\u00e9", "é").replace("\\u00fc", "ü")
    text = text.replace("\\ud83d\\udd25", "🔥")
    path.write_bytes(text.encode().replace(b"SURROGATE", b"\xed\xa0\x80"))
    monkeypatch.setattr(stream, "CHUNK_CHARS", 1000)
    scanned: list[tuple[bool, bool]] = []  # per run the compiled path met: (ASCII, taken)
    scan = chunks._scan

    def recording(scanner: object, text: str, start: int, end: int) -> object:
        found = scan(scanner, text, start, end)
        scanned.append((text[start:end].isascii(), found is not None))
        return found

    monkeypatch.setattr(chunks, "_scan", recording)
    parts, _ = _both(path, monkeypatch)
    assert {"aten::mm_é", "float[64,64], ünïcode[64,64]"} <= set(parts["events.strings"])
    if chunks._scanner is not None:
        assert scanned.count((False, True)) >= 2 and scanned.count((False, False)) == 1  # the surrogate's run
        assert all(taken for ascii_only, taken in scanned if ascii_only)
