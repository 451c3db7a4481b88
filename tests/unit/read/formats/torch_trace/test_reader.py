"""Traces the tests build, read into the model: both memory forms, devices, steps, ops and Python frames."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE, SPAN_HOST_CALL, SPAN_HOST_ROOT
from tb_leakfinder.read.formats.torch_trace import reader
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, write

MIB = 1 << 20


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
        complete("/venv/lib/site-packages/torch/nn/modules/module.py(1501): _call_impl", 1011.0, 10.0, cat="python_function"),
        complete("nn.Module: Linear_0", 1011.0, 9.0, cat="python_function"),
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
    assert events.tensor_bytes.tolist() == events.chunk_bytes.tolist() == [MIB, 2 * MIB, 64, MIB]
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
        "$/venv/lib/site-packages/torch/nn/modules/module.py:1501 _call_impl",
    ]  # nn.Module annotations are no frames
    memory_line = int(profile.events.line[0])
    assert spans.line[calls].tolist() == [memory_line, memory_line]


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
    assert profile.events.heap_bytes.tolist() == [100, 200, 400, 300, 100, 0, -300, 100, 0]
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
