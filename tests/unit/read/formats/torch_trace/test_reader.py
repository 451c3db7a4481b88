"""Traces the tests build, read into the model: both memory forms, devices, steps, ops and Python frames."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder.analyses.step_sources import NUM_TIME_WINDOWS, STEP_NUM, TIME_WINDOWS
from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, EVENT_COLUMNS, FREE, SPAN_HOST_CALL, SPAN_HOST_ROOT
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.torch_trace import chunks, reader, stream
from tests.support.fuzzing import ROOT
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, write

MIB = 1 << 20


@pytest.fixture(autouse=True, params=["compiled", "msgspec", "one at a time"])
def _all_paths(request, monkeypatch):
    """Every test here reads through the three paths: runs of events scanned by the compiled scanner (msgspec's
    path when it is not built), runs decoded by msgspec, and one event at a time (the reader without msgspec)."""
    monkeypatch.setattr(chunks, "COMPILED", request.param == "compiled")
    monkeypatch.setattr(reader, "CHUNKED", request.param != "one at a time")


def _new_form(tmp_path):
    events = [
        complete("ProfilerStep#3", 1000.0, 100.0, cat="user_annotation"),
        complete("ProfilerStep#3", 1001.0, 99.0, cat="gpu_user_annotation", tid=7),  # the GPU's copy: no step
        complete("aten::empty", 1010.0, 20.0, **{"Input Dims": [[4, 8]], "Input type": ["float"]}),
        complete("aten::add", 1012.0, 5.0),  # nested in aten::empty: the innermost
        memory(1013.5, MIB, Addr=0x1000, **{"Total Allocated": 5 * MIB, "Total Reserved": 8 * MIB}),
        memory(1020.0, 2 * MIB, device_id=1, Addr=0x1000, **{"Total Allocated": 2 * MIB}),
        memory(1025.0, 64, device_type=0, device_id=-1, Addr=0x50),
        memory(1090.0, -MIB, Addr=0x1000, **{"Total Allocated": 4 * MIB}),
        complete("train.py(42): train_step", 1005.0, 90.0, cat="python_function"),
        # As real traces nest them: the module's event around Module's plumbing.
        complete("nn.Module: Linear_0", 1011.0, 10.0, cat="python_function"),
        complete("/venv/lib/site-packages/torch/nn/modules/module.py(1501): _call_impl", 1011.5, 9.0, cat="python_function"),
        complete("ProfilerStep#4", 1100.0, 50.0, cat="user_annotation"),
    ]
    properties = [{"id": 0, "totalGlobalMem": 80 * MIB}]
    return write(tmp_path / "myhost_77.1700000000000000000.pt.trace.json.gz", events, deviceProperties=properties)


def test_new_form_devices_addresses_and_totals(tmp_path):
    profile = reader.read_host(str(_new_form(tmp_path)), "myhost_77")
    events = profile.events
    assert profile.warnings == []
    assert events.allocator_names == ["cpu", "cuda:0", "cuda:1"]
    assert {k: (v.label, v.host_memory) for k, v in profile.allocators.items()} == {
        "cpu": ("CPU", True),
        "cuda:0": ("cuda:0", False),
        "cuda:1": ("cuda:1", False),
    }
    # Times in ps from the earliest event (ts 1000.0 µs), the duration to the latest end (1150 µs).
    assert events.time_ps.tolist() == [13_500_000, 20_000_000, 25_000_000, 90_000_000]
    assert profile.duration_ps == 150_000_000
    assert events.kind.tolist() == [ALLOC, ALLOC, ALLOC, FREE]
    assert events.addr.tolist() == [0x1000, 0x1000, 0x50, 0x1000]
    assert [events.allocator_names[a] for a in events.allocator] == ["cuda:0", "cuda:1", "cpu", "cuda:0"]
    assert events.requested_bytes.tolist() == events.chunk_bytes.tolist() == [MIB, 2 * MIB, 64, MIB]
    # Total Allocated where given; the CPU's (none given) its running sum.
    assert events.heap_bytes.tolist() == [5 * MIB, 2 * MIB, 64, 4 * MIB]
    # cuda:0's capacity is known (deviceProperties): free is it less what is allocated; cuda:1's is not.
    assert events.free_bytes.tolist() == [75 * MIB, 0, 0, 76 * MIB]
    assert [events.strings[i] for i in events.op] == ["aten::add", "aten::empty", "aten::empty", ""]
    assert [events.strings[i] for i in events.shape] == ["", "float[4,8]", "float[4,8]", ""]
    assert len(set(events.line.tolist())) == 1


def test_steps_roots_and_python_calls(tmp_path):
    profile = reader.read_host(str(_new_form(tmp_path)), "myhost_77")
    assert profile.steps.step_num.tolist() == [3, 4]
    assert profile.steps.start_ps.tolist() == [0, 100_000_000]
    assert profile.steps.end_ps.tolist() == [100_000_000, 150_000_000]
    spans = profile.spans
    roots = spans.source == SPAN_HOST_ROOT
    assert [spans.names[i] for i in spans.name[roots]] == ["ProfilerStep", "ProfilerStep"]
    assert spans.root[roots].all()
    calls = spans.source == SPAN_HOST_CALL
    assert [spans.names[i] for i in spans.name[calls]] == [
        "$train.py:42 train_step",
        "$class Linear",  # nn.Module: Linear_0, the module whose forward runs inside
        "$/venv/lib/site-packages/torch/nn/modules/module.py:1501 _call_impl",
    ]
    memory_line = int(profile.events.line[0])
    assert spans.line[calls].tolist() == [memory_line] * 3


def test_old_form_pairs_frees_lifo_by_size_and_warns(tmp_path):
    events = [
        memory(0.0, 100),
        memory(1.0, 100),
        memory(2.0, 200),
        memory(3.0, -100),  # the most recent unfreed 100 B: the second
        memory(4.0, -200),
        memory(5.0, -100),
        memory(6.0, -300),  # allocated before the window: an address of its own
        memory(7.0, 100, device_id=1),
        memory(8.0, -100, device_id=1),
    ]
    profile = reader.read_host(str(write(tmp_path / "w.pt.trace.json", events)), "w")
    addr = profile.events.addr.tolist()
    assert addr[3] == addr[1] and addr[4] == addr[2] and addr[5] == addr[0] and addr[8] == addr[7]
    assert len(set(addr)) == 5
    # cuda:0's running sum would end at -300 B: the 300 B freed were live when the trace began, so its heap starts
    # there; cuda:1's never goes below zero and starts at zero.
    assert profile.events.heap_bytes.tolist() == [400, 500, 700, 600, 400, 300, 0, 100, 0]
    assert profile.events.allocator_peak_bytes.tolist()[:7] == [400, 500, 700, 700, 700, 700, 700]
    (warning,) = profile.warnings
    assert "9 [memory] events carry no address" in warning and "may be swapped" in warning


def test_a_trace_without_memory_events_says_so(tmp_path):
    profile = reader.read_host(str(write(tmp_path / "t.json", [complete("aten::add", 1.0, 2.0)])), "t")
    assert len(profile.events) == 0
    assert "profile_memory=True" in profile.warnings[0]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"[1, 2]",
        b'{"traceEvents": 3}',
        b'{"traceEvents": [7]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": -1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1e300}]}',
        b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": "many"}}]}',
        b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 1e80}}]}',
        b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 8, "Addr": -4}}]}',
        b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 8, "Device Type": true}}]}',
        b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1e16}, {"ph": "i", "name": "x", "ts": -1e16}]}',
        b'{"traceEvents": [{"ph": "M", "name": "process_name"}]}',
    ],
)
def test_bad_traces_name_the_file(tmp_path, content):
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(content)
    with pytest.raises(LeakfinderError, match=re.escape("bad.pt.trace.json: not a readable PyTorch profiler trace")):
        reader.read_host(str(path), "bad")


def test_corrupt_and_truncated_gzip_name_the_file(tmp_path):
    whole = gzip.compress(b'{"traceEvents": []}' * 1000)
    for name, data in (("cut.pt.trace.json.gz", whole[: len(whole) // 2]), ("bad.pt.trace.json.gz", whole[:10] + b"x" * 50)):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(LeakfinderError, match=re.escape(f"{name}: not a readable PyTorch profiler trace")):
            reader.read_host(str(path), "h")


def test_heap_peak_follows_each_device(tmp_path):
    events = [memory(float(t), MIB) for t in range(4)] + [memory(10.0 + t, -MIB) for t in range(4)]
    profile = reader.read_host(str(write(tmp_path / "p.pt.trace.json", events)), "p")
    assert int(np.max(profile.events.heap_bytes)) == 4 * MIB
    assert profile.events.allocator_peak_bytes.tolist() == [MIB, 2 * MIB, 3 * MIB, 4 * MIB, 4 * MIB, 4 * MIB, 4 * MIB, 4 * MIB]


def _decoded(profile):
    """A profile's columns and figures, to compare two reads of one trace."""
    events = profile.events
    columns = {name: getattr(events, name).tolist() for name in EVENT_COLUMNS}
    spans = (profile.spans.source.tolist(), profile.spans.start_ps.tolist(), [profile.spans.names[i] for i in profile.spans.name])
    return columns, events.strings, profile.steps.step_num.tolist(), spans, profile.duration_ps, profile.start_time_ns


@pytest.mark.parametrize("gzipped", [False, True])
def test_blocks_of_any_size_read_alike(tmp_path, monkeypatch, gzipped):
    """Events, numbers, strings and escapes cut across the window's blocks: tiny blocks read as one block does."""
    path = _new_form(tmp_path)
    if not gzipped:
        path = tmp_path / "plain.pt.trace.json"
        path.write_bytes(gzip.decompress(_new_form(tmp_path).read_bytes()).replace(b'"train.py', b'"tr\\u0061in.py'))
    whole = _decoded(reader.decode([path.read_bytes()], "h", str(path)))
    monkeypatch.setattr(files, "STREAM_BLOCK_BYTES", 3)  # what gunzip gives at a time
    for size in (1, 2, 7, 64):
        assert _decoded(reader.decode(files.read_blocks(str(path), size, limit=stream.MAX_TRACE_BYTES), "h", str(path))) == whole
    assert "$train.py:42 train_step" in whole[3][2]


def test_top_level_keys_in_any_order_and_the_start_time(tmp_path):
    events = [memory(2.5, 64, Addr=1, **{"Total Allocated": 64}), memory(4.0, -64, Addr=1, **{"Total Allocated": 0})]
    properties = [{"id": 0, "totalGlobalMem": 1024}]
    base = 1_751_410_836_000_000_000
    after = tmp_path / "after.json"
    after.write_text(json.dumps({"traceEvents": events, "deviceProperties": properties, "baseTimeNanoseconds": base}))
    before = write(tmp_path / "before.json", events, deviceProperties=properties, baseTimeNanoseconds=base, metadata={"x": [1]})
    first, second = (reader.read_host(str(p), "h") for p in (after, before))
    assert _decoded(first) == _decoded(second)
    assert first.events.free_bytes.tolist() == [960, 1024]
    # ts count µs from baseTimeNanoseconds: the capture starts at the earliest one, 2.5 µs after it.
    assert first.start_time_ns == base + 2_500
    assert reader.read_host(str(write(tmp_path / "none.json", events)), "h").start_time_ns is None
    odd = reader.read_host(str(write(tmp_path / "odd.json", events, baseTimeNanoseconds="soon")), "h")
    assert odd.start_time_ns is None and "baseTimeNanoseconds is 'soon'" in odd.warnings[-1]


def test_the_real_start_time_of_a_modern_trace():
    qwen = Path(__file__).resolve().parents[5].parent / "shared" / "profiles" / "torch" / "tracelens_qwen_h100"
    path = next(qwen.glob("*.json.gz"), None)
    if path is None:
        pytest.skip("the shared real traces are absent")
    trace = json.loads(gzip.decompress(path.read_bytes()))
    earliest = min(e["ts"] for e in trace["traceEvents"] if "ts" in e and e.get("ph") != "M")
    assert reader.read_host(str(path), "q").start_time_ns == trace["baseTimeNanoseconds"] + round(earliest * 1000)


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b'{"traceEvents": [{"ph": "i", "ts": 1}', "truncated (the JSON ends"),
        (b'{"traceEvents": [{"ph": "i", "ts": 1}]', "truncated (the JSON ends"),
        (b'{"traceEvents": [{"ph": "i", "ts": 1', "truncated (the JSON ends"),
        (b'{"traceEvents": [{"ph": "i", "name": "abc', "truncated (the JSON ends"),
        (b'{"traceEvents": [{"ph": "i", "ts": 1}] "x": 1}', "expected ',' or '}'"),
        (b'{"traceEvents": [{"ph": "i", "ts": 1},]}', "bad JSON at character 38, in traceEvents[1]"),
        (b'{"traceEvents": [{"ph": "i", "ts": 1}]} {}', "more after the top-level object"),
        (b'{"traceEvents": [], "traceEvents": []}', "or more than one"),
        (b'{"deviceProperties": []}', 'no "traceEvents" list'),
        (b"{}", 'no "traceEvents" list'),
        (b"  \n ", "the file is empty"),
        (b'"traceEvents"', "not an object"),
        (b"{traceEvents: []}", "expected '\"'"),
        (b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "nested too deeply"),
        (b'{"traceEvents": [{"ph": "\xff"}]}', "not UTF-8"),
    ],
)
def test_bad_json_is_refused_saying_what(tmp_path, content, detail):
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(content)
    for data in (content, gzip.compress(content)):
        path.write_bytes(data)
        with pytest.raises(LeakfinderError, match=re.escape("bad.pt.trace.json: not a readable PyTorch profiler trace")) as e:
            reader.read_host(str(path), "bad")
        assert detail in e.value.message


def test_an_event_longer_than_the_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "MAX_EVENT_CHARS", 1000)
    path = write(tmp_path / "long.json", [complete("x" * 5000, 1.0, 1.0)])
    with pytest.raises(LeakfinderError, match=re.escape("traceEvents[0] is longer than 1000 characters")):
        reader.decode(files.read_blocks(str(path), 100, limit=stream.MAX_TRACE_BYTES), "long", str(path))


@pytest.mark.parametrize("with_steps", [True, False])
def test_the_step_cascade_without_profiler_steps_falls_to_time_windows(tmp_path, with_steps):
    """No ProfilerStep#N: nothing else in a trace is a step marker or a root (Python calls are not), so the
    analysis cuts the capture into equal time windows, and a buffer held every 100 µs still shows as growth."""
    events = []
    for s in range(12):
        t = 100.0 * s
        events += [complete("train.py(10): step", t, 90.0, cat="python_function"), complete("aten::mm", t + 1, 50.0)]
        events += [memory(t + 5, MIB, Addr=s + 1), memory(t + 6, 4096, Addr=999), memory(t + 40, -4096, Addr=999)]
        if with_steps:
            events.append(complete(f"ProfilerStep#{s}", t, 99.0, cat="user_annotation"))
    path = write(tmp_path / "n.pt.trace.json", events)
    body = analyze_file(str(path), "n", str(tmp_path)).json()
    source = body["step_source"]
    if with_steps:
        assert (source["kind"], source["num_steps"]) == (STEP_NUM, 12)
        return
    assert (source["kind"], source["num_steps"]) == (TIME_WINDOWS, NUM_TIME_WINDOWS)
    # The windows tile the memory events' span: the first at 5 µs, the last at 1140 µs.
    assert (body["steps"][0]["start_ps"], body["steps"][-1]["end_ps"]) == (5_000_000, 1_140_000_000)
    (cuda,) = body["allocators"]
    assert cuda["verdict"] == "leak" and cuda["never_freed_bytes"] == 12 * MIB


def test_an_ops_shape_is_its_tensor_inputs(tmp_path):
    # As Kineto records them (the real Qwen, ResNet-50 and PyTorch 2.13 traces): tensors, a tensor list, scalars,
    # sizes and flags; Kineto's C++ names of reduced-precision dtypes.
    inputs = {
        "Input Dims": [[16, 559, 64], [], [[480, 256], [16, 256]], [], [3], []],
        "Input type": ["c10::BFloat16", "Scalar", "TensorList", "GenericList", "long int", "double"],
    }
    events = [complete("aten::op", 1000.0, 20.0, **inputs), memory(1010.0, MIB, Addr=0x1000)]
    profile = reader.read_host(str(write(tmp_path / "w.pt.trace.json", events)), "w")
    (shape,) = {profile.events.strings[k] for k in profile.events.shape.tolist()}
    assert shape == "BFloat16[16,559,64], TensorList[[480,256],[16,256]], long int[3]"


def test_an_allocation_primitive_is_named_by_the_op_that_computes(tmp_path):
    # The nesting PyTorch 2.13's profiler records for .clone(), .to(float64), zeros_like, a temporary of copy_
    # and a bare torch.empty (record_shapes: the primitives' own inputs are sizes and scalars).
    sizes = {"Input Dims": [[], [], []], "Input type": ["ScalarList", "ScalarList", "Scalar"]}
    tensor = {"Input Dims": [[128, 256], []], "Input type": ["float", ""]}
    events = [
        complete("aten::clone", 1000.0, 10.0, **tensor),
        complete("aten::empty_strided", 1001.0, 2.0, **sizes),
        memory(1002.0, 131072, Addr=0x1000),
        complete("aten::to", 1020.0, 10.0, **tensor),
        complete("aten::_to_copy", 1021.0, 8.0, **tensor),
        complete("aten::empty_strided", 1022.0, 2.0, **sizes),
        memory(1023.0, 262144, Addr=0x2000),
        complete("aten::zeros_like", 1040.0, 10.0, **tensor),
        complete("aten::empty_like", 1041.0, 5.0, **tensor),
        complete("aten::empty_strided", 1042.0, 2.0, **sizes),
        memory(1043.0, 131072, Addr=0x3000),
        complete("aten::copy_", 1060.0, 10.0, **tensor),
        complete("aten::empty", 1061.0, 2.0, **sizes),
        memory(1062.0, 14400, Addr=0x4000),
        complete("aten::empty", 1080.0, 2.0, **sizes),
        memory(1081.0, 400, Addr=0x5000),
    ]
    profile = reader.read_host(str(write(tmp_path / "w.pt.trace.json", events)), "w")
    strings = profile.events.strings
    named = [(strings[op], strings[shape]) for op, shape in zip(profile.events.op, profile.events.shape, strict=True)]
    assert named == [
        ("aten::clone", "float[128,256]"),
        ("aten::_to_copy", "float[128,256]"),
        ("aten::zeros_like", "float[128,256]"),
        ("aten::copy_", "float[128,256]"),
        ("aten::empty", ""),  # called on its own: nothing else computes it
    ]


def test_a_refused_local_trace_loads_no_tensorflow(tmp_path):
    """A reader that stops early closes the file's block stream: for a local file that must not load TensorFlow
    (gfile's errors), which costs seconds and half a gigabyte."""
    path = write(tmp_path / "bad.pt.trace.json", [memory(1.0, 8, Addr=2**70)] * 3)
    script = f"""
import gc, sys
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.torch_trace import reader
try:
    reader.read_host({str(path)!r}, "bad")
except LeakfinderError as exc:
    refused = "Addr is" in exc.message
gc.collect()  # the stream is closed once the error's frames are gone
print("refused:", refused, "tensorflow" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.split() == ["refused:", "True", "False"], done.stderr[-2000:]


def test_a_python_frame_with_a_line_of_thousands_of_digits_is_no_frame(tmp_path):
    events = [complete(f"train.py({'9' * 5000}): f", 0.0, 10.0, cat="python_function"), memory(1.0, 64, Addr=1)]
    events.append(complete("train.py(12): g", 0.0, 10.0, cat="python_function"))
    path = write(tmp_path / "f.pt.trace.json", events)
    profile = reader.read_host(str(path), "f")
    assert [profile.spans.names[i] for i in profile.spans.name] == ["$train.py:12 g"]
    assert analyze_file(str(path), "f", str(tmp_path)).json()["allocators"][0]["num_allocations"] == 1


def test_windows_python_functions_name_the_users_line(tmp_path):
    """A trace recorded on Windows names its Python functions by Windows paths: the user's are frames, the
    frameworks' (in site-packages) are not."""
    events = [complete("ProfilerStep#1", 0.0, 100.0, cat="user_annotation")]
    events += [
        complete(r"C:\research\owl\client.py(12): main", 1.0, 90.0, cat="python_function"),
        complete(r"C:\venv\Lib\site-packages\torch\nn\modules\module.py(1501): _call_impl", 2.0, 50.0, cat="python_function"),
        complete("aten::mm", 3.0, 10.0),
        memory(5.0, MIB, Addr=0x1000),
    ]
    body = analyze_file(str(write(tmp_path / "w.pt.trace.json", events)), "w", str(tmp_path)).json()
    (cuda,) = body["allocators"]
    (row,) = [r for r in cuda["peak_breakdown"] if r["category"] == "buffers"]
    assert row["where"] == "client.py:12 in main"


@pytest.mark.parametrize("span", [400, 40_000])
def test_op_stacks_equal_a_stack_walked_op_by_op(span: int):
    """Ops nested, overlapping and apart on a few lines, some allocation primitives: the op below each and its
    computing op are what a stack that pops ended ops gives, op by op. Spread out, most ops start after every
    earlier one of their line has ended."""
    rng = np.random.default_rng(33)
    n = 3000
    lines = np.sort(rng.integers(0, 5, n))
    starts = rng.integers(0, span, n)
    ends = starts + rng.integers(0, 60, n)
    order = np.lexsort((-ends, starts, lines))
    starts, ends, lines = starts[order], ends[order], lines[order]
    primitive = rng.random(n) < 0.4
    below, computing = reader._op_stacks(starts, ends, lines, primitive)
    stack: list[int] = []
    for op in range(n):
        if op and lines[op] != lines[op - 1]:
            stack.clear()
        while stack and ends[stack[-1]] < starts[op]:
            stack.pop()
        assert below[op] == (stack[-1] if stack else -1), op
        walked = below[op]
        while walked >= 0 and primitive[walked]:
            walked = below[walked]
        assert computing[op] == (walked if primitive[op] and walked >= 0 else op), op
        stack.append(op)


def test_device_columns_of_a_few_devices_equal_each_device_apart(monkeypatch: pytest.MonkeyPatch):
    """Events that all carry their total on a few devices (a pass per device) get the bytes in use, the most so far
    and the free bytes that each device's events taken apart get."""
    rng = np.random.default_rng(32)
    n = 5000
    device = rng.integers(0, 3, n).astype(np.int64)
    nbytes = rng.integers(1, 1 << 20, n) * rng.choice([-1, 1], n)
    allocated = rng.integers(-(1 << 30), 1 << 40, n)
    capacity = [-1, 1 << 39, 1 << 41]
    few = reader._device_columns(device, nbytes, allocated, capacity, "t.json")
    monkeypatch.setattr(reader, "FEW_DEVICES", 0)
    apart = reader._device_columns(device, nbytes, allocated, capacity, "t.json")
    for got, expected in zip(few, apart, strict=True):
        assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("category", ["cpu_op", "user_annotation"])
def test_the_capture_helpers_line_marks_are_calls_not_ops(tmp_path, category):
    """PyTorch's C record_function writes a mark as a cpu_op, the Python one as a user_annotation: either names the
    line, never the allocation's op."""
    events = [
        complete("prog.py(5): make", 0.0, 50.0, cat="python_function"),
        complete("tb_leakfinder line /src/prog.py(8): make", 10.0, 20.0, cat=category),
        complete("aten::mul", 12.0, 10.0),
        memory(15.0, 4096, Addr=0x1000),
    ]
    body = analyze_file(str(write(tmp_path / "m.pt.trace.json", events)), "m", str(tmp_path)).json()
    (row,) = [r for r in body["allocators"][0]["peak_breakdown"] if r["category"] == "buffers"]
    assert (row["op"], row["where"]) == ("aten::mul", "prog.py:8 in make")
