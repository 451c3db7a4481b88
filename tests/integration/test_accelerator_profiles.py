"""Accelerator profiles (TPU, GPU): one allocator per XProf memory id, and the peak counted as XProf counts it.

Every figure is checked against XProf's own `memory_profile` converter on the
same file: memory ids, peak in use, stack, heap, peak time, capacity, and the
bytes of its "unused preallocated device memory" row against ours allocated
before the window.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tb_leakfinder
from tb_leakfinder.analyses.breakdown import live_at
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.xplane.reader import read_host
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, synthesize_devices, write_session
from tb_leakfinder.views.text import render_report
from tests.support.fuzzing import decoder_path, decoder_paths
from tests.support.xprof_oracle import XPROF_BEFORE_WINDOW_ROW, XPROF_STACK_ROW, memory_profile_allocators

GIB, MIB = 1 << 30, 1 << 20
STEPS = 8


STEP_PS = 10_000_000_000
PREALLOCATED = 64 * MIB


def tpu_profile(leaking: tuple[int, ...] = (2,)) -> ProfileBuilder:
    """4 TPU chips keyed by index_on_host, as PJRT records them: no allocator_name, the same addresses on every chip.

    Each chip reserves 20 GiB of stack and holds 64 MiB allocated before the
    window. Chip 1 frees 16 MiB of that after its peak (still counted at the
    peak), chip 3 before its peak (not counted). The chips in `leaking` keep
    one 1 MiB buffer per step.
    """
    builder = ProfileBuilder("host0")
    for step in range(STEPS):
        builder.step(step, step * STEP_PS, (step + 1) * STEP_PS - 1)
    before_window_free = {1: 5, 3: 0}  # chip -> step whose end frees 16 MiB allocated before the window
    for chip in range(4):
        builder.device_plane(f"/device:TPU:{chip}")
        builder.allocator(str(chip), limit_bytes=32 * GIB, bytes_in_use=PREALLOCATED, bytes_reserved=20 * GIB)
        rows: list[tuple[int, int, int, int, str]] = []  # time, kind, addr, bytes, op
        rows += [(1000 + k, ALLOC, 0x10_0000_0000 + k * (4 << 20), 4 << 20, "params") for k in range(4)]
        for step in range(STEPS):
            t0 = step * STEP_PS + 1_000_000
            for j in range(3):
                rows.append((t0 + 100 * j, ALLOC, 0x20_0000_0000 + j * (8 << 20), 8 << 20, "dummy"))
                rows.append((t0 + 1000 + 100 * j, FREE, 0x20_0000_0000 + j * (8 << 20), 8 << 20, ""))
            if chip in leaking:
                rows.append((t0 + 2000, ALLOC, 0x30_0000_0000 + step * MIB, MIB, "cache"))
            if before_window_free.get(chip) == step:
                rows.append((t0 + 3000 if chip == 1 else t0 - 1, FREE, 0x7000_0000, 16 * MIB, ""))
        rows.sort()
        time, kind, addr, size, op = zip(*rows, strict=True)
        builder.add_memory_events(
            np.array(time, np.int64),
            np.array(kind, np.int8),
            np.array(addr, np.uint64),
            np.array(size, np.int64),
            allocator=str(chip),
            id_stat="index_on_host",
            op=list(op),
            shape=["f32[1024,2048]{1,0:T(8,128)}" if o else "" for o in op],
            region="output",
            dtype=0,
            line="tpu_runtime",
        )
    return builder


def two_leaking_tpus() -> ProfileBuilder:
    return tpu_profile(leaking=(0, 2))


def gpu_ordinal_profile() -> ProfileBuilder:
    builder, _ = synthesize_devices(2, STEPS, platform="GPU", id_stat="device_ordinal", stack_bytes=0, step_markers=True)
    return builder


def gpu_bfc_and_host_profile() -> ProfileBuilder:
    """A TF multi-GPU worker: GPU_0_bfc, GPU_1_bfc and pinned host memory (gpu_host_bfc) in one file, on several threads.

    GPU_1_bfc holds 4 GiB allocated before the window, 1 GiB of which is freed
    in it; gpu_host_bfc has the highest peak of the three, yet is host memory.
    """
    builder = ProfileBuilder("worker0")
    for d in range(2):
        builder.device_plane(f"/device:GPU:{d}")
    builder.allocator("GPU_0_bfc", limit_bytes=15 * GIB)
    builder.allocator("GPU_1_bfc", limit_bytes=15 * GIB, bytes_in_use=4 * GIB)
    builder.allocator("gpu_host_bfc", limit_bytes=64 * GIB)
    step_ps = 1_000_000_000
    builder.free(10, 0x7F00_0000_0000, GIB, allocator="GPU_1_bfc", line="tf_Compute")  # before the window: no allocation
    for step in range(STEPS):
        t0 = step * step_ps + 1000
        builder.step(step, t0, t0 + step_ps - 1)
        for d, line in ((0, "tf_Compute"), (1, "tf_Compute_1")):
            name = f"GPU_{d}_bfc"
            size = (256 + 64 * d) * MIB
            for j in range(3):
                builder.alloc(t0 + 100 + 10 * j, 0x1000_0000 + j * GIB, size, allocator=name, op="MatMul", line=line)
            for j in range(3):
                builder.free(t0 + 500 + 10 * j, 0x1000_0000 + j * GIB, size, allocator=name, line=line)
        builder.alloc(t0 + 200, 0x9000_0000, 6 * GIB, allocator="gpu_host_bfc", op="IteratorGetNext", line="python")
        builder.free(t0 + 700, 0x9000_0000, 6 * GIB, allocator="gpu_host_bfc", line="python")
    return builder


def no_memory_id_profile() -> ProfileBuilder:
    """Events with no index_on_host, device_ordinal or allocator_name stat at all."""
    builder = ProfileBuilder("host0")
    for step in range(STEPS):
        builder.step(step, step * 1000, step * 1000 + 999)
    n = 2 * STEPS
    times = np.repeat(np.arange(STEPS) * 1000, 2) + np.tile([100, 600], STEPS)
    builder.add_memory_events(
        times, np.tile([ALLOC, FREE], STEPS), np.full(n, 0x5000, np.uint64), 4096, omit=("allocator_name",), op="Add"
    )
    return builder


PROFILES = {
    "tpu_index_on_host": tpu_profile,
    "tpu_two_leaking": two_leaking_tpus,
    "gpu_device_ordinal": gpu_ordinal_profile,
    "gpu_bfc_and_host": gpu_bfc_and_host_profile,
    "no_memory_id": no_memory_id_profile,
}


@pytest.fixture(scope="module")
def decoded(tmp_path_factory) -> dict[str, tuple[dict[str, dict], dict]]:
    """Per profile: our host report from each decoder, and XProf's memory profile of the same file."""
    out = {}
    for name, make in PROFILES.items():
        folder = tmp_path_factory.mktemp(name)
        path = str(folder / "host0.xplane.pb")
        make().write(path)
        hosts = {}
        for decoder in decoder_paths():
            with decoder_path(decoder):
                (run,) = tb_leakfinder.analyze(path, cache=False)["runs"]
            (hosts[decoder],) = run["hosts"]
        out[name] = (hosts, memory_profile_allocators(path))
    return out


@pytest.fixture(scope="module")
def profiles(decoded) -> dict[str, tuple[dict, dict]]:
    """Per profile: our host report (the reference decoder's) and XProf's memory profile."""
    return {name: (hosts["pure"], oracle) for name, (hosts, oracle) in decoded.items()}


@pytest.mark.parametrize("name", PROFILES)
def test_both_decoders_give_the_same_report(decoded, name):
    hosts, _ = decoded[name]
    assert all(host == hosts["pure"] for host in hosts.values())


def _by_id(host: dict) -> dict[str, dict]:
    return {a["memory_id"]: a for a in host["allocators"]}


@pytest.mark.parametrize("name", PROFILES)
def test_every_allocator_equals_xprof(profiles, name):
    host, oracle = profiles[name]
    ours = _by_id(host)
    assert set(ours) == set(oracle)
    for memory_id, xprof in oracle.items():
        a = ours[memory_id]
        assert a["peak_bytes_in_use"] == xprof["peakBytesInUse"], memory_id
        assert a["peak_stack_reserved_bytes"] == xprof["stackReservedBytes"], memory_id
        assert a["peak_heap_bytes"] == xprof["heapAllocatedBytes"], memory_id
        assert a["peak_time_ps"] == xprof["time_ps"], memory_id
        assert a["memory_capacity_bytes"] == xprof["memoryCapacity"], memory_id
        assert a["peak_before_window_bytes"] == xprof["special"].get(XPROF_BEFORE_WINDOW_ROW, 0), memory_id
        stack = [r["bytes"] for r in a["peak_breakdown"] if r["category"] == "stack"]
        assert stack == ([xprof["special"][XPROF_STACK_ROW]] if XPROF_STACK_ROW in xprof["special"] else []), memory_id


@pytest.mark.parametrize("name", PROFILES)
def test_peak_breakdown_adds_up_to_the_peak(profiles, name):
    host, _ = profiles[name]
    for a in host["allocators"]:
        rows = a["peak_breakdown"]
        assert sum(r["bytes"] for r in rows) == a["peak_bytes_in_use"], a["allocator"]
        assert [r["bytes"] for r in rows] == sorted((r["bytes"] for r in rows), reverse=True)
        special = [r for r in rows if r["category"] != "buffers"]
        assert all(r["count"] is None and r["op"] == "" for r in special)
        assert sum(r["bytes"] for r in rows if r["category"] == "before_window") == a["peak_before_window_bytes"]


def test_tpu_chips_are_four_allocators_labelled_by_their_planes(profiles):
    host, _ = profiles["tpu_index_on_host"]
    assert sorted((a["memory_id"], a["allocator"]) for a in host["allocators"]) == [(str(d), f"TPU:{d}") for d in range(4)]
    # Every chip has its own address space: the same addresses on four chips are not reuses.
    assert not any("already in use" in w for a in host["allocators"] for w in a["warnings"])
    before_window = {a["allocator"]: a["peak_before_window_bytes"] for a in host["allocators"]}
    # Chip 1 frees 16 MiB of it after its peak, chip 3 before.
    assert before_window == {"TPU:0": 64 * MIB, "TPU:1": 64 * MIB, "TPU:2": 64 * MIB, "TPU:3": 48 * MIB}
    for a in host["allocators"]:
        assert a["peak_stack_reserved_bytes"] == 20 * GIB
        assert a["memory_capacity_bytes"] == 32 * GIB


def test_a_leak_on_one_chip_is_a_leak_there_only(profiles):
    host, _ = profiles["tpu_index_on_host"]
    verdicts = {a["allocator"]: a["verdict"] for a in host["allocators"]}
    assert verdicts == {"TPU:0": "no_leak", "TPU:1": "no_leak", "TPU:2": "leak", "TPU:3": "no_leak"}
    assert host["verdict"] == "leak" and host["reason"].startswith("TPU:2: Leak in TensorFlow's TPU:2 allocator: +1 MiB per step")
    leaking = _by_id(host)["2"]
    assert leaking["families"][0]["kind"] == "growing" and leaking["families"][0]["count"] == STEPS
    # Chips in natural order, whichever peaks highest.
    assert [a["allocator"] for a in host["allocators"]] == ["TPU:0", "TPU:1", "TPU:2", "TPU:3"]


def test_the_host_reason_names_every_leaking_chip(profiles):
    host, _ = profiles["tpu_two_leaking"]
    assert sorted(a["allocator"] for a in host["allocators"] if a["verdict"] == "leak") == ["TPU:0", "TPU:2"]
    assert host["reason"].startswith("Leak on 2 allocators (")
    for chip in (0, 2):
        assert f"TPU:{chip}: Leak in TensorFlow's TPU:{chip} allocator:" in host["reason"]


def test_device_ordinal_ids_are_labelled_as_gpus(profiles):
    host, _ = profiles["gpu_device_ordinal"]
    assert sorted((a["memory_id"], a["allocator"]) for a in host["allocators"]) == [("0", "GPU:0"), ("1", "GPU:1")]
    assert all(a["verdict"] == "no_leak" for a in host["allocators"])
    # No leak anywhere: every allocator named, the first one's reason standing for all.
    first, names = host["allocators"][0], ", ".join(a["allocator"] for a in host["allocators"])
    assert host["reason"] == f"No leak on 2 allocators ({names}). {first['allocator']}: {first['reason']}"


def test_device_memory_comes_before_host_pinned_memory(profiles):
    host, oracle = profiles["gpu_bfc_and_host"]
    order = [(a["memory_id"], a["allocator"]) for a in host["allocators"]]
    assert order == [("GPU_0_bfc", "GPU:0"), ("GPU_1_bfc", "GPU:1"), ("gpu_host_bfc", "gpu_host_bfc")]
    by_id = _by_id(host)
    assert by_id["gpu_host_bfc"]["peak_bytes_in_use"] > by_id["GPU_1_bfc"]["peak_bytes_in_use"]
    # 4 GiB were in use before the window; 1 GiB of them is freed in it.
    assert by_id["GPU_1_bfc"]["peak_before_window_bytes"] == 3 * GIB == oracle["GPU_1_bfc"]["special"][XPROF_BEFORE_WINDOW_ROW]
    assert by_id["GPU_1_bfc"]["freed_before_window_count"] == 1


def test_events_without_a_memory_id_are_one_allocator_with_a_warning(profiles):
    host, _ = profiles["no_memory_id"]
    (a,) = host["allocators"]
    assert (a["memory_id"], a["allocator"]) == ("", "(no memory id)")
    assert any("no index_on_host, device_ordinal or allocator_name" in w for w in a["warnings"])


def test_text_report_gives_the_peak_against_capacity(tmp_path):
    path = tmp_path / "host0.xplane.pb"
    tpu_profile().write(path)
    out = _cli("report", str(path), "--allocator", "TPU:2")
    assert out.returncode == 0, out.stderr
    assert "allocator TPU:2 (memory id 2): LEAK" in out.stdout
    assert "TPU:0" not in out.stdout
    assert "of 32 GiB (" in out.stdout and "stack 20 GiB" in out.stdout
    assert "stack (reserved)" in out.stdout and "allocated before the window" in out.stdout


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tb_leakfinder.views.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("allocator", ["2", "TPU:2"])
def test_cli_allocator_takes_the_memory_id_or_the_label(tmp_path, allocator):
    path = tmp_path / "host0.xplane.pb"
    tpu_profile().write(path)
    out = _cli("report", str(path), "--json", "--allocator", allocator)
    (a,) = json.loads(out.stdout)["runs"][0]["hosts"][0]["allocators"]
    assert (a["memory_id"], a["allocator"]) == ("2", "TPU:2")
    assert _cli("check", str(path), "--allocator", "TPU:0").returncode == 0
    assert _cli("check", str(path), "--allocator", allocator).returncode == 1


def test_python_api_allocator_takes_the_memory_id_or_the_label(tmp_path):
    path = str(tmp_path / "host0.xplane.pb")
    tpu_profile(leaking=(0, 2)).write(path)
    by_label = tb_leakfinder.analyze(path, cache=False, allocator="TPU:0")
    assert by_label == tb_leakfinder.analyze(path, cache=False, allocator="0")
    (host,) = by_label["runs"][0]["hosts"]
    assert [a["allocator"] for a in host["allocators"]] == ["TPU:0"]
    # The host's verdict is then that allocator's alone, without the prefix naming it among several.
    assert host["verdict"] == "leak" and host["reason"].startswith("Leak in TensorFlow's TPU:0 allocator: +1 MiB per step")
    with pytest.raises(LeakfinderError, match=r"no allocator 'GPU:0'; the allocators are TPU:"):
        tb_leakfinder.analyze(path, cache=False, allocator="GPU:0")


def test_cli_unknown_allocator_exits_2_naming_the_choices(tmp_path):
    path = tmp_path / "host0.xplane.pb"
    tpu_profile().write(path)
    out = _cli("report", str(path), "--allocator", "TPU:7")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no allocator 'TPU:7'" in out.stderr and "TPU:2 (memory id '2')" in out.stderr


def test_http_allocator_takes_the_memory_id_or_the_label(tmp_path):
    write_session(tmp_path, "tpu", "s1", {"host0": tpu_profile()})
    client, _ = make_client(str(tmp_path))

    def get(route: str, **args: str) -> tuple[int, dict]:
        response = client.get(f"{PREFIX}/{route}", query_string={"run": "tpu/s1", **args})
        return response.status_code, json.loads(response.get_data())

    by_id, by_label = get("timeline", allocator="2"), get("timeline", allocator="TPU:2")
    assert by_id == by_label and by_id[0] == 200
    body = by_id[1]
    assert (body["allocator"], body["memory_id"]) == ("TPU:2", "2")
    # Stack and heap are sampled per chip, and the peak is among the samples.
    assert set(body["stack_bytes"]) == {20 * GIB}
    totals = [s + h for s, h in zip(body["stack_bytes"], body["heap_bytes"], strict=True)]
    assert max(totals) == body["peak"]["bytes"]
    status, buffers = get("buffers", allocator="TPU:2", status="never_freed")
    assert status == 200 and buffers["memory_id"] == "2" and buffers["total"] == STEPS + 4  # the leak and the params
    status, error = get("timeline", allocator="HBM")
    assert status == 404 and "TPU:0 (memory id '0')" in error["error"]
    # Without the argument, the first allocator: device memory with the highest peak.
    assert get("timeline")[1]["memory_id"] == "2"


def test_with_group_ids_xprof_counts_only_the_peak_step_as_attributed(tmp_path):
    """XProf's "unused preallocated" row counts, with a group_id on the events, every buffer not made in the peak's step.

    Ours stays what was allocated before the window; the difference is exactly
    the buffers of earlier steps still live at the peak (the leak, the params).
    """
    builder, _ = synthesize_devices(
        2, STEPS, platform="GPU", id_stat="allocator_name", preallocated_bytes=64 * MIB, leak_device=1, group_ids=True
    )
    path = str(tmp_path / "host0.xplane.pb")
    builder.write(path)
    oracle = memory_profile_allocators(path)
    analysis = analyze_host(read_host(path, "host0"))
    assert {a.memory_id for a in analysis.allocators} == set(oracle)
    for a in analysis.allocators:
        peak = a.summary.peak_event
        live = np.flatnonzero(live_at(a.buffers, peak, int(a.events.time_ps[peak])))
        earlier = live[a.events.group_id[a.buffers.alloc_event[live]] != a.events.group_id[peak]]
        earlier_bytes = int(a.buffers.chunk_bytes[earlier].sum())
        assert earlier_bytes > 0
        assert a.peak_before_window_bytes == 64 * MIB
        assert a.peak_before_window_bytes + earlier_bytes == oracle[a.memory_id]["special"][XPROF_BEFORE_WINDOW_ROW]
        assert a.summary.peak_bytes_in_use == oracle[a.memory_id]["peakBytesInUse"]


def test_without_bytes_available_the_capacity_is_the_peak_and_the_text_says_so(tmp_path):
    builder = ProfileBuilder("host0")
    builder.device_plane("/device:GPU:0")
    builder.add_memory_events([10, 20], [ALLOC, FREE], np.array([0x5000, 0x5000], np.uint64), MIB, omit=("bytes_available",))
    path = str(tmp_path / "host0.xplane.pb")
    builder.write(path)
    report = tb_leakfinder.analyze(path, cache=False)
    (a,) = report["runs"][0]["hosts"][0]["allocators"]
    assert (
        a["memory_capacity_bytes"]
        == a["peak_bytes_in_use"]
        == MIB
        == memory_profile_allocators(path)["GPU_0_bfc"]["memoryCapacity"]
    )
    assert "peak 1 MiB (no free memory reported)" in render_report(report)
