"""The synthetic profile builder writes XSpace bytes that protobuf and XProf read as intended."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.proto import XSpace, message_class
from tb_leakfinder.testing import xspace_builder
from tests.support.demo import ROOT

TF_LEAK = ROOT / "demo_logs" / "tf_leak"
MEMORY = ("MemoryAllocation", "MemoryDeallocation")


def _stat_value(stat: Any, stat_names: dict[int, str]) -> tuple[str, Any]:
    kind = stat.WhichOneof("value")
    value = getattr(stat, kind)
    return kind, stat_names[value] if kind == "ref_value" else value


def _decode(raw: bytes) -> dict[str, Any]:
    """Every event of the /host:CPU plane, with its stats by name, plus the plane layout."""
    space = XSpace().FromString(raw)
    plane = next(p for p in space.planes if p.name == "/host:CPU")
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    event_names = {k: v.name for k, v in plane.event_metadata.items()}
    events = []
    for line in plane.lines:
        for e in line.events:
            events.append(
                {
                    "name": event_names[e.metadata_id],
                    "line": line.name,
                    "time_ps": line.timestamp_ns * 1000 + e.offset_ps,
                    "offset_ps": e.offset_ps,
                    "duration_ps": e.duration_ps,
                    "stat_order": [stat_names[s.metadata_id] for s in e.stats],
                    "stats": {stat_names[s.metadata_id]: _stat_value(s, stat_names) for s in e.stats},
                }
            )
    return {"space": space, "plane": plane, "events": events}


def _values(event: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, (_, value) in event["stats"].items()}


def test_single_events_round_trip_with_tracking() -> None:
    b = xspace_builder.ProfileBuilder("host7", timestamp_ns=6723)
    b.allocator("GPU_0_bfc", limit_bytes=1 << 30, bytes_reserved=4096)
    b.step(3, 100, 900)
    b.alloc(200, 0x7F0000001000, 524288, op="Mul", shape="[128,1024]", step_id=-77)
    b.alloc(300, 0x7F0000201000, 1024, op="Relu", shape="[256]", dtype=3, region="temp", requested=1000)
    b.free(400, 0x7F0000001000, 524288, op="AssignVariableOp")
    b.alloc(500, 0x7F0000001000, 4096, allocator="GPU_1_bfc", op=None, shape=None, region=None, line="python")
    decoded = _decode(b.to_bytes())

    assert list(decoded["space"].hostnames) == ["host7"]
    assert [line.name for line in decoded["plane"].lines] == ["python", "tf_Compute"]
    assert {line.timestamp_ns for line in decoded["plane"].lines} == {6723}
    memory = sorted((e for e in decoded["events"] if e["name"] in MEMORY), key=lambda e: e["time_ps"])
    assert [e["offset_ps"] for e in memory] == [200, 300, 400, 500]
    assert [e["time_ps"] for e in memory] == [6723 * 1000 + t for t in (200, 300, 400, 500)]
    assert [e["name"] for e in memory] == ["MemoryAllocation"] * 2 + ["MemoryDeallocation", "MemoryAllocation"]
    assert all(e["duration_ps"] == 0 for e in memory)

    first, second, freed, other = (_values(e) for e in memory)
    assert first == {
        "allocator_name": "GPU_0_bfc",
        "bytes_reserved": 4096,
        "bytes_allocated": 524288,
        "bytes_available": (1 << 30) - 4096 - 524288,
        "fragmentation": 0.0,
        "peak_bytes_in_use": 524288,
        "requested_bytes": 524288,
        "allocation_bytes": 524288,
        "addr": 0x7F0000001000,
        "tf_op": "Mul",
        "id": -77,
        "region_type": "output",
        "data_type": 1,
        "shape": "[128,1024]",
    }
    assert (second["bytes_allocated"], second["peak_bytes_in_use"]) == (525312, 525312)
    assert (second["requested_bytes"], second["data_type"], second["region_type"]) == (1000, 3, "temp")
    # A free lowers the heap, keeps the peak, and carries no shape or region; data_type is 0 as in TF.
    assert (freed["bytes_allocated"], freed["peak_bytes_in_use"]) == (1024, 525312)
    assert freed["fragmentation"] == pytest.approx((525312 - 1024) / 525312)
    assert freed["tf_op"] == "AssignVariableOp" and freed["data_type"] == 0
    assert "shape" not in freed and "region_type" not in freed
    # Another allocator is tracked on its own; an unattributed allocation has no op, region or shape.
    assert other["allocator_name"] == "GPU_1_bfc" and other["bytes_allocated"] == 4096
    assert {"tf_op", "region_type", "shape"}.isdisjoint(other)
    assert b.peak_bytes_in_use() == {"GPU_0_bfc": 525312, "GPU_1_bfc": 4096}
    assert b.bytes_in_use() == {"GPU_0_bfc": 1024, "GPU_1_bfc": 4096}

    (marker,) = (e for e in decoded["events"] if e["name"] == "train")
    assert (marker["line"], marker["offset_ps"], marker["duration_ps"]) == ("python", 100, 800)
    assert marker["stats"] == {"step_num": ("int64_value", 3), "_r": ("int64_value", 1)}


def test_stat_order_and_kinds_match_real_tensorflow_capture() -> None:
    (path,) = TF_LEAK.glob("plugins/profile/*/*.xplane.pb")
    real = _decode(path.read_bytes())["events"]
    b = xspace_builder.ProfileBuilder()
    b.alloc(1, 4096, 256)
    b.free(2, 4096, 256)
    made = _decode(b.to_bytes())["events"]
    for name in MEMORY:
        real_orders = {tuple(e["stat_order"]) for e in real if e["name"] == name}
        real_kinds = {(s, kind) for e in real if e["name"] == name for s, (kind, _) in e["stats"].items()}
        (ours,) = (e for e in made if e["name"] == name)
        # TF sometimes leaves out op/region/shape; the full-stat order must be one TF wrote.
        assert tuple(ours["stat_order"]) in real_orders
        assert {(s, kind) for s, (kind, _) in ours["stats"].items()} <= real_kinds


def test_uint64_omit_kinds_and_overrides() -> None:
    b = xspace_builder.ProfileBuilder(int_kind="uint64")
    b.add_memory_events(
        [10, 20],
        [ALLOC, FREE],
        [2**63 + 5, 2**63 + 5],
        [512, 512],
        op=["MatMul", ""],
        omit=("fragmentation", "bytes_reserved"),
        kinds={"addr": "int64", "bytes_allocated": "double"},
        overrides={"peak_bytes_in_use": 99, "tf_op": ["Custom", "Freed"]},
    )
    b.step(0, 0, 30)
    alloc, free = sorted((e for e in _decode(b.to_bytes())["events"] if e["name"] in MEMORY), key=lambda e: e["time_ps"])
    assert "fragmentation" not in alloc["stats"] and "bytes_reserved" not in alloc["stats"]
    assert alloc["stats"]["requested_bytes"] == ("uint64_value", 512)
    assert alloc["stats"]["addr"] == ("int64_value", 5 - 2**63)  # the same 64 bits, read as signed
    assert alloc["stats"]["bytes_allocated"] == ("double_value", 512.0)
    assert free["stats"]["bytes_allocated"] == ("double_value", 0.0)
    assert alloc["stats"]["peak_bytes_in_use"] == ("uint64_value", 99)
    assert (alloc["stats"]["tf_op"], free["stats"]["tf_op"]) == (("ref_value", "Custom"), ("ref_value", "Freed"))
    marker = next(e for e in _decode(b.to_bytes())["events"] if e["name"] == "train")
    assert marker["stats"]["step_num"] == ("uint64_value", 0)


int64s = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(int64s, st.integers(0, 2**64 - 1), int64s, int64s, st.sampled_from(["a", "", "[1,2]"])),
        min_size=1,
        max_size=40,
    )
)
def test_vectorized_encoding_decodes_to_the_values_given(rows: list[tuple[int, int, int, int, str]]) -> None:
    """Any int64 time/id/size and uint64 address survives the numpy wire encoder."""
    time_ps, addr, nbytes, step_id, op = (list(c) for c in zip(*rows, strict=True))
    b = xspace_builder.ProfileBuilder()
    b.add_memory_events(
        np.array(time_ps, np.int64), ALLOC, np.array(addr, np.uint64), np.array(nbytes, np.int64), op=op, step_id=step_id
    )
    events = _decode(b.to_bytes())["events"]
    assert [e["offset_ps"] for e in events] == time_ps
    assert [_values(e)["addr"] % 2**64 for e in events] == addr
    assert [_values(e)["allocation_bytes"] for e in events] == nbytes
    assert [_values(e)["id"] for e in events] == step_id
    assert [_values(e).get("tf_op", "") for e in events] == op


def test_bulk_and_single_events_give_identical_bytes() -> None:
    rng = np.random.default_rng(1)
    n = 300
    time_ps = np.sort(rng.integers(0, 10**9, n))
    kind = rng.integers(0, 2, n).astype(np.int8)
    addr = rng.integers(1, 2**47, n).astype(np.uint64)
    size = rng.integers(1, 2**24, n)
    alloc_name = np.array(["GPU_0_bfc", "GPU_1_bfc"], dtype=object)[rng.integers(0, 2, n)]
    line = np.array(["tf_Compute", "python"], dtype=object)[rng.integers(0, 2, n)]
    op = np.where(kind == ALLOC, "MatMul", "")
    shape = np.where(kind == ALLOC, "[8,8]", "")
    region = np.where(kind == ALLOC, "output", "")
    dtype = np.where(kind == ALLOC, 1, 0)

    bulk = xspace_builder.ProfileBuilder()
    bulk.add_memory_events(
        time_ps, kind, addr, size, allocator=alloc_name, op=op, shape=shape, region=region, dtype=dtype, line=line
    )
    single = xspace_builder.ProfileBuilder()
    for i in range(n):
        common = {"allocator": str(alloc_name[i]), "line": str(line[i])}
        if kind[i] == ALLOC:
            single.alloc(int(time_ps[i]), int(addr[i]), int(size[i]), op="MatMul", shape="[8,8]", **common)
        else:
            single.free(int(time_ps[i]), int(addr[i]), int(size[i]), **common)
    assert bulk.to_bytes() == single.to_bytes()
    assert bulk.num_memory_events == single.num_memory_events == n


def _replay(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Pair the decoded memory events by (allocator, addr) in time order, as a reader would."""
    memory = sorted((e for e in events if e["name"] in MEMORY), key=lambda e: e["time_ps"])
    live: dict[tuple[str, int], dict[str, Any]] = {}
    in_use: dict[str, int] = defaultdict(int)
    tracked_ok = True
    freed_ops: Counter[tuple[str, str]] = Counter()
    allocations_per_address: Counter[tuple[str, int]] = Counter()
    for e in memory:
        v = _values(e)
        key = (v["allocator_name"], v["addr"])
        if e["name"] == "MemoryAllocation":
            assert key not in live, f"address {key} allocated twice without a free"
            live[key] = v
            allocations_per_address[key] += 1
            in_use[key[0]] += v["allocation_bytes"]
        else:
            made = live.pop(key)
            freed_ops[(made.get("tf_op", ""), made.get("shape", ""))] += 1
            in_use[key[0]] -= v["allocation_bytes"]
        tracked_ok &= v["bytes_allocated"] == in_use[key[0]]
    return {
        "memory": memory,
        "live": live,
        "in_use": dict(in_use),
        "tracked_ok": tracked_ok,
        "freed_ops": freed_ops,
        "allocations_per_address": allocations_per_address,
    }


def test_synthesized_training_holds_what_it_plants() -> None:
    builder, planted = xspace_builder.synthesize_training(num_events=20_000, steps=12, cache_entries=4, seed=3)
    decoded = _decode(builder.to_bytes())
    replay = _replay(decoded["events"])
    leak = planted["leak"]

    assert len(replay["memory"]) == planted["num_events"] == builder.num_memory_events
    assert abs(planted["num_events"] - 20_000) <= 1
    assert replay["tracked_ok"], "bytes_allocated is not the running heap per allocator"
    assert replay["in_use"] == planted["bytes_in_use_at_end"]
    peaks = defaultdict(int)
    for e in replay["memory"]:
        v = _values(e)
        peaks[v["allocator_name"]] = max(peaks[v["allocator_name"]], v["bytes_allocated"])
    assert dict(peaks) == planted["peak_bytes_in_use"]

    by_group = Counter((v["allocator_name"], v.get("tf_op"), v.get("shape")) for v in replay["live"].values())
    assert by_group[(leak["allocator"], leak["op"], leak["shape"])] == leak["count"] == 12
    assert replay["freed_ops"][(leak["op"], leak["shape"])] == 0
    cache = planted["cache"]
    assert by_group[(cache["allocator"], cache["op"], "[512,1024]")] == cache["entries"] == 4
    weights = {
        a: sum(
            v["allocation_bytes"]
            for v in replay["live"].values()
            if v.get("region_type") == "persist" and v["allocator_name"] == a
        )
        for a in planted["allocators"]
    }
    assert weights == planted["persistent_bytes"]
    # Nothing else is live at the end: every temporary was freed.
    assert sum(by_group.values()) == leak["count"] + cache["entries"] + 16 * len(planted["allocators"])
    assert sum(v["allocation_bytes"] for v in replay["live"].values()) == sum(planted["bytes_in_use_at_end"].values())
    # Temporaries reuse their addresses: some address is allocated again in every step, and more.
    assert max(replay["allocations_per_address"].values()) > 12

    markers = sorted((e for e in decoded["events"] if e["name"] == "train"), key=lambda e: e["time_ps"])
    assert [_values(m)["step_num"] for m in markers] == list(range(12))
    spans = [(m["time_ps"], m["time_ps"] + m["duration_ps"]) for m in markers]
    leaked = sorted(
        e["time_ps"]
        for e in replay["memory"]
        if (_values(e).get("tf_op"), _values(e).get("shape")) == (leak["op"], leak["shape"])
    )
    assert [sum(a <= t <= b for a, b in spans) for t in leaked] == [1] * 12
    assert [next(i for i, (a, b) in enumerate(spans) if a <= t <= b) for t in leaked] == list(range(12))
    for line in decoded["plane"].lines:
        offsets = [e.offset_ps for e in line.events]
        assert offsets == sorted(offsets), f"line {line.name} is not in time order"


def test_spooled_write_equals_in_memory_bytes(tmp_path: pathlib.Path) -> None:
    in_memory, planted = xspace_builder.synthesize_training(num_events=5_000, steps=5, seed=9)
    path = tmp_path / "spooled.xplane.pb"
    written = xspace_builder.write_training(path, num_events=5_000, steps=5, seed=9)
    assert path.read_bytes() == in_memory.to_bytes()
    assert written["file_bytes"] == path.stat().st_size
    assert written["peak_bytes_in_use"] == planted["peak_bytes_in_use"]


def test_hlo_module_and_task_environment_planes() -> None:
    hlo_class = message_class("tb_leakfinder.hlo.HloProto")
    hlo = hlo_class()
    hlo.hlo_module.name = "jit_train_step"
    hlo.hlo_module.id = 10
    b = xspace_builder.ProfileBuilder(start_time_ns=1_795_946_635_387_916_431)
    b.step(0, 0, 5_000_000)
    b.add_hlo_module("jit_train_step(10)", hlo.SerializeToString())
    b.add_hlo_module("other", b"", program_id=7)
    space = XSpace().FromString(b.to_bytes())
    planes = {p.name: p for p in space.planes}
    assert set(planes) == {"/host:CPU", "/host:metadata", "Task Environment"}

    meta = planes["/host:metadata"]
    stat_names = {k: v.name for k, v in meta.stat_metadata.items()}
    modules = {}
    for key, m in meta.event_metadata.items():
        assert key == m.id
        modules[m.name] = {stat_names[s.metadata_id]: s for s in m.stats}
    assert set(modules) == {"jit_train_step(10)", "other"}
    assert hlo_class.FromString(modules["jit_train_step(10)"]["Hlo Proto"].bytes_value).hlo_module.name == "jit_train_step"
    assert modules["jit_train_step(10)"]["program_id"].int64_value == 10
    assert modules["other"]["program_id"].int64_value == 7

    env = planes["Task Environment"]
    env_names = {k: v.name for k, v in env.stat_metadata.items()}
    env_stats = {env_names[s.metadata_id]: s.uint64_value for s in env.stats}
    assert env_stats == {"profile_start_time": 1_795_946_635_387_916_431, "profile_stop_time": 1_795_946_635_387_921_431}


def test_write_session_layout(tmp_path: pathlib.Path) -> None:
    hosts = {name: xspace_builder.ProfileBuilder(name) for name in ("h0", "h1")}
    for i, b in enumerate(hosts.values()):
        b.alloc(1, 4096, 256 << i)
    paths = xspace_builder.write_session(tmp_path, "leak", "2026_11_29_10_00_00", hosts)
    session = tmp_path / "leak" / "plugins" / "profile" / "2026_11_29_10_00_00"
    assert paths == [str(session / "h0.xplane.pb"), str(session / "h1.xplane.pb")]
    for path, b in zip(paths, hosts.values(), strict=True):
        assert pathlib.Path(path).read_bytes() == b.to_bytes()
    (root,) = xspace_builder.write_session(tmp_path, "", "s", {"h0": hosts["h0"]})
    assert root == str(tmp_path / "plugins" / "profile" / "s" / "h0.xplane.pb")


_ORACLE = """
import json, sys
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], "memory_profile", {})
profile = json.loads(data)["memoryProfilePerAllocator"]
print(json.dumps({name: a["profileSummary"] for name, a in profile.items()}))
"""


@pytest.mark.skipif(importlib.util.find_spec("xprof") is None, reason="xprof is not installed")
def test_xprof_memory_profile_sees_the_tracked_peaks(tmp_path: pathlib.Path) -> None:
    builder, planted = xspace_builder.synthesize_training(num_events=6_000, steps=8, seed=5)
    path = tmp_path / "host0.xplane.pb"
    builder.write(path)
    # XProf's native code runs in its own process (see docs: it can clash with other native libraries).
    result = subprocess.run([sys.executable, "-c", _ORACLE, str(path)], capture_output=True, text=True, timeout=300, check=True)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(summary) == set(planted["allocators"])
    for name, peak in planted["peak_bytes_in_use"].items():
        stats = summary[name]["peakStats"]
        assert int(stats["peakBytesInUse"]) == peak
        assert int(stats["heapAllocatedBytes"]) == peak
        assert int(stats["stackReservedBytes"]) == 0
        assert int(summary[name]["peakBytesUsageLifetime"]) == peak


def test_accelerator_conventions_are_written_as_given() -> None:
    b = xspace_builder.ProfileBuilder(timestamp_ns=500)
    b.alloc(10, 0x100, 64, allocator="2", id_stat="index_on_host", group_id=7)
    b.free(20, 0x100, 64, allocator="2", id_stat="device_ordinal")
    b.alloc(30, 0x100, 64, allocator="GPU_0_bfc", group_id=-3)
    b.span("PjitFunction(step)", 5, 40, root=True, group_id=7)
    b.xla_module("/device:TPU:1", "jit_step(3)", 12, 18, run_id=4)
    b.device_step("/device:TPU:1", 0, 11, 19)
    b.device_plane("/device:GPU:0", timestamp_ns=501)
    b.device_event("/device:GPU:0", "Stream #2", "kernel", 1, 2)
    decoded = _decode(b.to_bytes())
    memory = [e for e in decoded["events"] if e["name"] in MEMORY]
    ids = [{k: v for k, v in e["stats"].items() if k in xspace_builder.ID_STATS} for e in memory]
    assert ids == [
        {"index_on_host": ("int64_value", 2)},
        {"device_ordinal": ("int64_value", 2)},
        {"allocator_name": ("ref_value", "GPU_0_bfc")},
    ]
    assert [e["stats"].get("group_id") for e in memory] == [("int64_value", 7), None, ("int64_value", -3)]
    assert [_values(e)["bytes_allocated"] for e in memory] == [64, 0, 64]  # "2" and GPU_0_bfc tracked apart
    span = next(e for e in decoded["events"] if e["name"] == "PjitFunction(step)")
    assert (span["offset_ps"], span["duration_ps"], _values(span)) == (5, 35, {"_r": 1, "group_id": 7})
    planes = {p.name: p for p in decoded["space"].planes}
    assert [name for name in planes if name.startswith("/device:")] == ["/device:TPU:1", "/device:GPU:0"]
    tpu = planes["/device:TPU:1"]
    names = {k: v.name for k, v in tpu.event_metadata.items()}
    stat_names = {k: v.name for k, v in tpu.stat_metadata.items()}
    lines = {
        line.name: [
            (names[e.metadata_id], e.offset_ps, e.duration_ps, {stat_names[s.metadata_id]: s.int64_value for s in e.stats})
            for e in line.events
        ]
        for line in tpu.lines
    }
    assert lines == {"XLA Modules": [("jit_step(3)", 12, 6, {"run_id": 4})], "Steps": [("0", 11, 8, {"step_num": 0})]}
    assert {line.timestamp_ns for line in tpu.lines} == {500}
    assert [line.timestamp_ns for line in planes["/device:GPU:0"].lines] == [501]


def test_synthesized_devices_hold_what_they_plant() -> None:
    b, planted = xspace_builder.synthesize_devices(4, 5, leak_device=2, stack_bytes=1 << 34, preallocated_bytes=1 << 20)
    decoded = _decode(b.to_bytes())
    memory = [e for e in decoded["events"] if e["name"] in MEMORY]
    by_device: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in memory:
        assert "allocator_name" not in e["stats"]
        by_device[_values(e)["index_on_host"]].append(e)
    assert sorted(by_device) == [0, 1, 2, 3] and planted["memory_ids"] == ["0", "1", "2", "3"]
    addrs = {d: {_values(e)["addr"] for e in events} for d, events in by_device.items()}
    assert addrs[0] == addrs[1] == addrs[3] < addrs[2]  # one address space per device; the leak's are extra
    for d, events in by_device.items():
        signed = [(1 if e["name"] == "MemoryAllocation" else -1) * _values(e)["allocation_bytes"] for e in events]
        heap = (1 << 20) + np.cumsum(signed)
        assert [_values(e)["bytes_allocated"] for e in events] == heap.tolist()
        assert planted["peak_heap_bytes"][str(d)] == heap.max()
        assert {_values(e)["bytes_reserved"] for e in events} == {1 << 34}
    leaked = len(by_device[2]) - len(by_device[0])
    assert leaked == planted["leak"]["count"] == 5
    planes = [p for p in decoded["space"].planes if p.name.startswith("/device:TPU:")]
    assert [p.name for p in planes] == planted["devices"]
    assert all(sorted(line.name for line in p.lines) == ["Steps", "XLA Modules"] for p in planes)
    assert sum(e["name"] == "PjitFunction(train_step)" for e in decoded["events"]) == 5
