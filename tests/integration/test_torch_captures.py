"""tb_leakfinder.capture(framework="torch") with real PyTorch on CPU: four leak shapes, their verdict, rate, op and line.

The captures are recorded by tests/support/torch_captures.py in a process of its own; its CASES hold the truth,
from the program's constants. Without torch installed these tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import shutil
import socket

import pytest

from tb_leakfinder import analyze
from tb_leakfinder.read.discovery import discover
from tb_leakfinder.testing.recordings_builder import companion, holder, write_companion
from tests.support import capture_programs, torch_captures
from tests.support.cli_process import run_cli
from tests.support.demo import ROOT

LEAKS = [name for name, case in torch_captures.CASES.items() if case.leak]


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> tuple[pathlib.Path, dict]:
    capture_programs.need("torch")
    logdir = tmp_path_factory.mktemp("torch_logs")
    out = capture_programs.run_script(ROOT / "tests" / "support" / "torch_captures.py", [str(logdir)])
    return logdir, out


def only_allocator(out: dict) -> tuple[dict, dict]:
    (run,) = out["report"]["runs"]
    (host,) = run["hosts"]
    (allocator,) = host["allocators"]
    return host, allocator


@pytest.mark.parametrize("name", LEAKS)
def test_each_leak_gets_its_verdict_rate_op_and_line(captured, name):
    _, out = captured
    truth = torch_captures.CASES[name]
    host, allocator = only_allocator(out[name])
    assert host["verdict"] == allocator["verdict"] == "leak"
    assert host["step_source"]["kind"] == "step_num"
    assert host["step_source"]["description"] == f"{torch_captures.STEPS} steps from ProfilerStep markers"
    top = allocator["families"][0]
    assert top["kind"] == "growing"
    assert top["op"] == truth.op
    if truth.shape is not None:
        assert top["shape"] == truth.shape
    assert top["bytes_per_step"] == pytest.approx(truth.bytes_per_step, rel=0.05)
    assert top["onset_step"] == truth.onset_step
    assert top["where"] == out[name]["where"]
    assert out[name]["where"] in host["reason"]
    growing = {g["op"]: g for g in allocator["families"] if g["kind"] == "growing"}
    assert len(growing) == 1 + len(truth.others)
    for family in truth.others:
        found = growing[family.op]
        assert found["shape"] == family.shape
        assert found["bytes_per_step"] == pytest.approx(family.bytes_per_step, rel=0.05)
        assert found["where"] == torch_captures.where(family.function)


def test_ops_that_allocate_through_a_primitive_are_named_by_themselves(captured):
    _, out = captured
    host, allocator = only_allocator(out["copies"])
    named = {g["op"] for g in allocator["families"]} | {row["op"] for row in allocator["peak_breakdown"]}
    assert {"aten::clone", "aten::_to_copy", "aten::zeros_like"} <= named
    assert not named & {"aten::empty", "aten::empty_strided", "aten::empty_like"}
    assert "aten::_to_copy float[128,256]" in host["reason"]


def test_the_clean_run_is_clean(captured):
    _, out = captured
    host, allocator = only_allocator(out["clean"])
    assert host["verdict"] == allocator["verdict"] == "no_leak"
    assert not [g for g in allocator["families"] if g["kind"] == "growing"]


def test_each_step_is_a_profiler_step_of_the_programs_number(captured):
    _, out = captured
    for name in torch_captures.CASES:
        assert out[name]["steps"] == list(range(1, torch_captures.STEPS + 1))
        host, _ = only_allocator(out[name])
        assert [s["step"] for s in host["steps"]] == out[name]["steps"]


def test_the_trace_is_named_and_recorded_as_tensorboard_trace_handler_would(captured):
    logdir, out = captured
    trace = pathlib.Path(out["kept_every_step"]["trace"])
    assert trace.parent == logdir / "kept_every_step"
    assert re.fullmatch(rf"{re.escape(socket.gethostname())}_\d+\.\d+\.pt\.trace\.json\.gz", trace.name)
    # No staging left behind: the trace and its companion file (the holder finder's, docs/recordings.md).
    companion = trace.name.replace(".pt.trace.json.gz", ".leakfinder.json")
    assert sorted(p.name for p in trace.parent.iterdir()) == [companion, trace.name]
    content = json.loads(gzip.decompress(trace.read_bytes()))
    assert (content["profile_memory"], content["record_shapes"], content["with_stack"]) == (1, 1, 1)
    assert any(e.get("cat") == "python_function" for e in content["traceEvents"])


def test_every_writes_one_trace_per_window(captured):
    logdir, out = captured
    sessions = out[torch_captures.PERIODIC]["sessions"]
    assert [s["steps"] for s in sessions] == [[1, 2, 3], [6, 7, 8], [11, 12, 13]]
    traces = sorted(p.name for p in (logdir / torch_captures.PERIODIC).iterdir() if p.name.endswith(".pt.trace.json.gz"))
    assert traces == sorted(pathlib.Path(s["trace"]).name for s in sessions)
    assert len(list((logdir / torch_captures.PERIODIC).glob("*.leakfinder.json"))) == len(sessions)
    for session in sessions:
        (run,) = analyze(session["trace"])["runs"]
        (host,) = run["hosts"]
        assert [s["step"] for s in host["steps"]] == session["steps"]
        assert host["verdict"] == "leak"


def test_the_windows_are_captures_of_one_run_whose_history_leaks(captured):
    logdir, out = captured
    runs = [run.name for run in discover(str(logdir)) if run.name.startswith(f"{torch_captures.PERIODIC}/")]
    assert len(runs) == len(out[torch_captures.PERIODIC]["sessions"]) == 3
    done = run_cli("history", str(logdir), "--tb-run", torch_captures.PERIODIC, "--json")
    assert done.returncode == 1, done.stderr  # a leak
    history = json.loads(done.stdout)
    assert (history["num_captures"], history["verdict"]) == (3, "leak")
    # The allocator's series; the capture helper's process-memory series stand beside it (process:main).
    (series,) = [s for s in history["series"] if not s["memory_id"].startswith("process:")]
    assert [c["capture"] for c in series["captures"]] == runs
    assert series["hours_to_oom"] is None  # within captures of a profiled heap, its level is not known: no forecast


def test_discovery_finds_each_case_as_a_run(captured):
    logdir, _ = captured
    names = {run.name for run in discover(str(logdir))}
    assert set(torch_captures.CASES) <= names


def test_check_exits_1_on_the_leaks_and_0_on_the_clean_run(captured):
    logdir, _ = captured
    leaking = run_cli("check", str(logdir))
    assert leaking.returncode == 1, leaking.stderr
    for name in LEAKS:
        assert name in leaking.stdout
    clean = run_cli("check", str(logdir / "clean"))
    assert clean.returncode == 0, clean.stdout + clean.stderr


def first_step_start_s(trace: pathlib.Path) -> float:
    """When the trace's first ProfilerStep began: its baseTimeNanoseconds plus the step's ts (µs), read here."""
    content = json.loads(gzip.decompress(trace.read_bytes()))
    starts = [e["ts"] for e in content["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
    return (content["baseTimeNanoseconds"] + min(starts) * 1000) / 1e9


def test_one_workers_traces_copied_without_their_times_keep_their_own_times_rate_and_order(captured, tmp_path):
    """Issue #30: the windows' traces copied as `cp` does (every mtime the copy's): the history's rate per hour is
    the one the traces' own clocks give, its order theirs."""
    _, out = captured
    sessions = out[torch_captures.PERIODIC]["sessions"]
    copies = tmp_path / "copies" / torch_captures.PERIODIC
    copies.mkdir(parents=True)
    for session in sessions:
        shutil.copy(session["trace"], copies)
    for path in copies.iterdir():
        os.utime(path, (1_800_000_000, 1_800_000_000))
    done = run_cli("history", str(tmp_path / "copies"), "--tb-run", torch_captures.PERIODIC, "--json")
    assert done.returncode == 1, done.stderr
    (series,) = json.loads(done.stdout)["series"]
    captures = series["captures"]
    # A session is named by its trace's time (`<host>_<pid>.<ns>.pt.trace.json.gz`).
    assert [c["capture"].rpartition("/")[2] for c in captures] == [pathlib.Path(s["trace"]).name.split(".")[1] for s in sessions]
    assert [c["first_step"] for c in captures] == [s["steps"][0] for s in sessions]
    assert {c["time_source"] for c in captures} == {"profile"} and series["time_note"] is None
    starts = [first_step_start_s(pathlib.Path(s["trace"])) for s in sessions]
    steps_per_hour = (sessions[-1]["steps"][0] - sessions[0]["steps"][0]) / (starts[-1] - starts[0]) * 3600
    # The truth: the kept bytes a step (each window's own, the steps between them unseen), at the job's pace by the
    # traces' own clocks.
    assert series["bytes_per_step"] == pytest.approx(torch_captures.KEPT_BYTES, rel=0.05)
    assert series["bytes_per_hour"] == pytest.approx(torch_captures.KEPT_BYTES * steps_per_hour, rel=0.10)


def _never_freed(trace: pathlib.Path) -> dict[int, int]:
    """address -> bytes of the buffers a trace's [memory] events allocate and never free, paired here in time order."""
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    live: dict[int, int] = {}
    for e in sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"]):
        address, size = int(e["args"]["Addr"]), int(e["args"]["Bytes"])
        if size > 0:
            live[address] = size
        else:
            live.pop(address, None)
    return live


def test_a_companion_file_beside_a_real_trace_names_the_list_that_keeps_the_leak(captured, tmp_path):
    logdir, out = captured
    shutil.copytree(logdir / "kept_every_step", tmp_path / "kept_every_step")
    (trace,) = (tmp_path / "kept_every_step").glob("*.pt.trace.json.gz")
    kept = sorted(a for a, size in _never_freed(trace).items() if size == torch_captures.KEPT_BYTES)
    assert len(kept) == torch_captures.STEPS
    source = pathlib.Path(torch_captures.__file__)
    line = int(out["kept_every_step"]["where"].split(":")[1].split(" ")[0])
    text = source.read_text().splitlines()[line - 1].strip()
    document = companion(
        holders=[holder("kept", kept, kind="frame_local", created=f"{source}:{line - 1} in record")],
        sources={f"{source}:{line}": text},
        framework="torch",
    )
    write_companion(trace, document)
    host, allocator = only_allocator({"report": analyze(str(trace.parent))})
    top = allocator["families"][0]
    (held,) = top["holders"]
    assert (held["path"], held["kind"], held["count"], top["count"]) == ("kept", "frame_local", len(kept), len(kept))
    assert held["requested_bytes"] == len(kept) * torch_captures.KEPT_BYTES
    assert top["where_text"] == text
    assert f"Held by `kept`: list, {len(kept)} of {len(kept)} never-freed buffers" in host["reason"]


def test_a_companion_file_beside_one_of_a_profilers_cycles_is_that_captures_only(captured, tmp_path):
    logdir, _ = captured
    folder = tmp_path / torch_captures.PERIODIC
    shutil.copytree(logdir / torch_captures.PERIODIC, folder)
    traces = sorted(folder.glob("*.pt.trace.json.gz"))
    for beside in folder.glob("*.leakfinder.json"):  # the capture's own: this test writes one for one cycle only
        beside.unlink()
    assert len(traces) == 3
    kept = [a for a, size in _never_freed(traces[1]).items() if size == torch_captures.KEPT_BYTES]
    write_companion(traces[1], companion(holders=[holder("kept", kept, kind="list")], framework="torch"))
    report = analyze(str(folder))
    found = [[h["count"] for h in run["hosts"][0]["allocators"][0]["families"][0]["holders"]] for run in report["runs"]]
    assert found == [[], [len(kept)], []]


def test_the_capture_helper_names_the_list_that_keeps_the_leak_end_to_end(captured):
    """Real capture, real holder finder, real reader: `record` keeps each step's product in its local `kept`."""
    _, out = captured
    host, allocator = only_allocator(out["kept_every_step"])
    search = host["holder_search"]
    assert search is not None and search["status"] == "complete"
    top = allocator["families"][0]
    held = top["holders"][0]
    assert (held["path"], held["kind"], held["type"]) == ("kept", "frame_local", "list")
    assert held["count"] == top["count"] == torch_captures.STEPS
    assert held["created"].endswith(" in record")
    assert "Held by `kept`: list" in host["reason"]


def test_a_leak_is_named_by_the_line_that_made_it_not_its_functions_first_line(tmp_path):
    """PyTorch's with_stack frames name a function by its first line, and a frame running when the profiler started
    by the line it was at then; the capture helper's line marks name the line that allocated, as the program's own
    text places it."""
    capture_programs.need("torch")
    out = capture_programs.run_script(ROOT / "tests" / "support" / "torch_lines.py", [str(tmp_path)])
    (run,) = out["report"]["runs"]
    (host,) = run["hosts"]
    (allocator,) = host["allocators"]
    growing = {g["op"]: g for g in allocator["families"] if g["kind"] == "growing"}
    scaled, clone = out["where"]["scaled"], out["where"]["clone"]
    assert (growing["aten::mul"]["where"], growing["aten::clone"]["where"]) == (scaled, clone)
    # The frames that led there stay: the loop that called keep_scaled.
    assert growing["aten::mul"]["site"]["stack"][1].endswith(" in record")
    # The marks are lines, not ops: no family or breakdown row is named by one.
    named = {g["op"] for g in allocator["families"]} | {r["op"] for r in allocator["peak_breakdown"]}
    assert not any("tb_leakfinder line" in op for op in named)
