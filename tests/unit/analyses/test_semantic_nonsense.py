"""Profiles that parse but make no sense: a report with warnings, never a crash or a confident wrong verdict.

Each case runs through both decoder paths (the reference decoder and the C
scanner) and through everything the plugin answers: report, timeline and
buffers (tests/support/fuzzing.py `analyse_file`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, encode_varint
from tests.support.fuzzing import analyse_file

STEPS = 8
STEP_PS = 1_000_000
LEAK_BYTES = 1 << 20


def leaking(builder: ProfileBuilder | None = None, **event_args) -> ProfileBuilder:
    """STEPS steps, each with a temporary made and freed and a 1 MiB buffer kept: a clear leak."""
    builder = builder or ProfileBuilder("host0")
    times, kinds, addrs, sizes = [], [], [], []
    for step in range(STEPS):
        start = step * STEP_PS
        builder.step(step, start, start + STEP_PS - 1)
        times += [start + 10, start + 20, start + 30]
        kinds += [ALLOC, ALLOC, FREE]
        addrs += [0x7000_0000, 0x9000_0000 + step * LEAK_BYTES, 0x7000_0000]
        sizes += [4096, LEAK_BYTES, 4096]
    builder.add_memory_events(times, kinds, np.array(addrs, np.uint64), sizes, op="Mul", shape="[512,512]", **event_args)
    return builder


def report_of(builder: ProfileBuilder, tmp_path) -> dict:
    path = tmp_path / "host0.xplane.pb"
    builder.write(path)
    return json.loads(analyse_file(str(path)))


def only_allocator(host: dict) -> dict:
    assert len(host["allocators"]) == 1, host["allocators"]
    return host["allocators"][0]


def all_warnings(host: dict) -> str:
    return " | ".join(host["warnings"] + [w for a in host["allocators"] for w in a["warnings"]])


def test_the_clean_profile_is_a_leak(tmp_path, decoder):
    """The baseline the nonsense below corrupts: without it, every verdict here would be a confident leak."""
    host = report_of(leaking(), tmp_path)
    assert host["verdict"] == "leak" and all_warnings(host) == ""


def test_frees_of_unknown_addresses_are_buffers_from_before_the_window(tmp_path, decoder):
    builder = leaking()
    builder.add_memory_events([5, 6, 7], FREE, np.array([0x1000, 0x2000, 0x3000], np.uint64), 256)
    allocator = only_allocator(report_of(builder, tmp_path))
    assert allocator["freed_before_window_count"] == 3
    assert allocator["verdict"] == "leak"  # explained, not nonsense: the leak is still certain


def test_a_free_of_an_address_already_freed_is_ignored_with_a_warning(tmp_path, decoder):
    builder = leaking()
    builder.add_memory_events([STEPS * STEP_PS + 5], FREE, np.array([0x7000_0000], np.uint64), 4096)
    host = report_of(builder, tmp_path)
    assert "1 free of an address already freed was ignored" in all_warnings(host)


def test_a_double_allocation_of_one_address_is_a_warning(tmp_path, decoder):
    builder = ProfileBuilder("host0")
    for step in range(STEPS):
        builder.step(step, step * STEP_PS, step * STEP_PS + STEP_PS - 1)
    builder.add_memory_events([10, 20, 30], [ALLOC, ALLOC, FREE], np.array([0x5000] * 3, np.uint64), 4096)
    host = report_of(builder, tmp_path)
    assert "1 allocation of an address already in use" in all_warnings(host)
    assert only_allocator(host)["never_freed_count"] == 0


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"allocation_bytes": -LEAK_BYTES}, "with a negative size"),
        ({"requested_bytes": -1}, "with a negative size"),
        ({"allocation_bytes": 1 << 62}, "with an absurd size"),
        ({"bytes_allocated": -5}, "negative or absurd heap counter"),
        ({"bytes_reserved": -(1 << 63)}, "negative or absurd heap counter"),
    ],
)
def test_negative_or_absurd_sizes_make_the_verdict_inconclusive(tmp_path, decoder, overrides, expected):
    host = report_of(leaking(overrides=overrides), tmp_path)
    assert expected in all_warnings(host)
    allocator = only_allocator(host)
    assert allocator["verdict"] == host["verdict"] == "inconclusive"
    assert allocator["reason"].startswith("Inconclusive:") and "Taken at face value: Leak" in allocator["reason"]


def test_events_before_the_profile_start_are_a_warning(tmp_path, decoder):
    builder = ProfileBuilder("host0", timestamp_ns=1_000_000)
    builder.add_memory_events([-5_000, -4_000], [ALLOC, FREE], np.array([0x10, 0x10], np.uint64), 64, allocator="early")
    leaking(builder, allocator="early")
    host = report_of(builder, tmp_path)
    assert "2 memory events before the profile's start" in all_warnings(host)


def test_events_written_backwards_give_the_same_report_as_forwards(tmp_path, decoder):
    forwards = report_of(leaking(), tmp_path)
    times, kinds, addrs, sizes = [], [], [], []
    for step in range(STEPS):
        start = step * STEP_PS
        times += [start + 10, start + 20, start + 30]
        kinds += [ALLOC, ALLOC, FREE]
        addrs += [0x7000_0000, 0x9000_0000 + step * LEAK_BYTES, 0x7000_0000]
        sizes += [4096, LEAK_BYTES, 4096]
    heap = np.cumsum(np.where(np.array(kinds) == ALLOC, sizes, -np.array(sizes)))  # in time order, as the allocator saw it
    builder = ProfileBuilder("host0")
    for step in reversed(range(STEPS)):
        builder.step(step, step * STEP_PS, step * STEP_PS + STEP_PS - 1)
    builder.add_memory_events(
        times[::-1],
        kinds[::-1],
        np.array(addrs[::-1], np.uint64),
        sizes[::-1],
        op="Mul",
        shape="[512,512]",
        overrides={
            "bytes_allocated": heap[::-1],
            "bytes_available": (1 << 36) - heap[::-1],  # the builder's default limit
            "peak_bytes_in_use": np.maximum.accumulate(heap)[::-1],
        },
    )
    backwards = report_of(builder, tmp_path)
    assert backwards["verdict"] == forwards["verdict"] == "leak"
    assert backwards["steps"] == forwards["steps"]
    assert only_allocator(backwards) == only_allocator(forwards)


def test_step_markers_that_end_before_they_start(tmp_path, decoder):
    builder = leaking()
    builder.event("train", 10 * STEP_PS, -STEP_PS // 2, stats={"step_num": 99, "_r": 1})
    host = report_of(builder, tmp_path)
    assert "1 step marker ends before it starts; that step holds no events" in all_warnings(host)


@pytest.mark.parametrize(
    ("omit", "expected"),
    [
        (("addr",), "without an integer addr stat"),
        (("allocation_bytes",), "allocating 0 bytes"),
    ],
)
def test_events_without_the_stats_they_need(tmp_path, decoder, omit, expected):
    host = report_of(leaking(omit=omit), tmp_path)
    assert expected in all_warnings(host)
    assert host["verdict"] == "inconclusive"


def test_events_without_any_stats(tmp_path, decoder):
    builder = ProfileBuilder("host0")
    for step in range(STEPS):
        builder.step(step, step * STEP_PS, step * STEP_PS + STEP_PS - 1)
        builder.event("MemoryAllocation", step * STEP_PS + 10)
        builder.event("MemoryDeallocation", step * STEP_PS + 20)
    host = report_of(builder, tmp_path)
    allocator = only_allocator(host)
    assert (allocator["memory_id"], allocator["allocator"]) == ("", "(no memory id)")
    assert host["verdict"] == "inconclusive"
    assert "without an integer addr stat" in all_warnings(host)


def test_a_missing_allocator_name_is_an_allocator_without_memory_id(tmp_path, decoder):
    host = report_of(leaking(omit=("allocator_name",)), tmp_path)
    assert only_allocator(host)["allocator"] == "(no memory id)"
    assert "carry no index_on_host, device_ordinal or allocator_name stat" in all_warnings(host)


@pytest.mark.parametrize(
    "kinds",
    [{"addr": "double"}, {"allocation_bytes": "double"}, {"requested_bytes": "double", "allocation_bytes": "double"}],
)
def test_stats_of_unexpected_kinds_count_as_missing(tmp_path, decoder, kinds):
    host = report_of(leaking(kinds=kinds), tmp_path)
    assert host["verdict"] == "inconclusive"
    assert "memory events" in all_warnings(host)


def test_string_stats_where_numbers_belong(tmp_path, decoder):
    builder = ProfileBuilder("host0")
    for step in range(STEPS):
        builder.event("train", step * STEP_PS, STEP_PS - 1, stats={"step_num": ("str", str(step))})
        builder.event(
            "MemoryAllocation",
            step * STEP_PS + 10,
            stats={"allocator_name": 7, "addr": ("str", "0x10"), "allocation_bytes": ("bytes", b"\x01"), "tf_op": 3.5},
        )
    host = report_of(builder, tmp_path)
    # A step_num that is not an integer marks no step: the steps are time windows.
    assert host["step_source"]["kind"] == "time_windows"
    allocator = only_allocator(host)
    assert allocator["allocator"] == "(no memory id)"  # an allocator_name that is not a string names none, as in XProf
    assert allocator["verdict"] == "inconclusive"


def test_fragmentation_that_is_not_a_number(tmp_path, decoder):
    values = np.array([np.nan, np.inf, -1e308] * STEPS)  # round(-1e308, 6) once overflowed to -inf in the timeline
    host = report_of(leaking(overrides={"fragmentation": values}), tmp_path)
    assert f"{3 * STEPS} fragmentation values not a fraction in [0, 1]" in all_warnings(host)
    assert only_allocator(host)["peak_fragmentation"] == 0.0
    assert host["verdict"] == "leak"  # fragmentation does not enter the verdict


def test_overlapping_step_markers(tmp_path, decoder):
    builder = leaking()
    builder.event("train", STEP_PS // 2, STEP_PS, stats={"step_num": 100})
    host = report_of(builder, tmp_path)
    assert "step markers overlap" in all_warnings(host)


def test_missing_step_markers_fall_back_to_time_windows(tmp_path, decoder):
    """Without any step information, equal time windows stand in for steps; steady growth across them is a leak."""
    builder = ProfileBuilder("host0")
    builder.add_memory_events(np.arange(STEPS) * STEP_PS, ALLOC, np.arange(1, STEPS + 1, dtype=np.uint64) << 20, LEAK_BYTES)
    host = report_of(builder, tmp_path)
    assert (host["step_source"]["kind"], host["num_steps"]) == ("time_windows", 10)
    assert host["verdict"] == "leak", host["reason"]
    assert "(10 equal time windows of 700 ns, no step information)" in host["reason"]


def test_one_allocation_without_step_information_is_inconclusive(tmp_path, decoder):
    builder = ProfileBuilder("host0")
    builder.add_memory_events([STEP_PS], ALLOC, [1 << 20], LEAK_BYTES)
    host = report_of(builder, tmp_path)
    assert (host["step_source"]["kind"], host["num_steps"]) == ("none", 0)
    assert host["verdict"] == "inconclusive"
    assert "no step information and no time span to divide" in host["reason"]


def test_a_zero_byte_file_is_refused_naming_it(tmp_path, decoder):
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(b"")
    with pytest.raises(LeakfinderError) as info:
        analyse_file(str(path))
    assert str(path) in info.value.message and "empty" in info.value.message
    assert info.value.status == 422


def test_a_profile_window_of_zero_length(tmp_path, decoder):
    """A /host:CPU plane whose lines hold no events: a window that never opened."""
    plane = b"\x12\x09/host:CPU" + b"\x1a\x06\x08\x01\x12\x02ab"
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(b"\x0a" + encode_varint(len(plane)) + plane)
    host = json.loads(analyse_file(str(path)))
    assert host["duration_ps"] == 0 and host["allocators"] == []
    assert host["verdict"] == "inconclusive" and "No memory events" in host["reason"]


def test_a_host_file_with_no_planes(tmp_path, decoder):
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(b"\x22\x05host0")  # XSpace.hostnames only
    host = json.loads(analyse_file(str(path)))
    assert f"{path}: the profile has no planes" in host["warnings"]
    assert host["verdict"] == "inconclusive"


# --- accelerator conventions, made nonsensical -------------------------------------------


def test_a_memory_id_given_as_an_integer_and_as_a_string_is_one_allocator(tmp_path, decoder):
    """index_on_host 0 on half the events, allocator_name "0" on the others: XProf keys both "0", so one allocator."""
    id_stat = np.array(["index_on_host", "allocator_name"] * (3 * STEPS // 2), dtype=object)
    host = report_of(leaking(allocator="0", id_stat=id_stat), tmp_path)
    assert len(host["allocators"]) == 1
    assert host["verdict"] == "leak"


@pytest.mark.parametrize(
    ("group_id", "kinds"),
    [(-7, None), ((1 << 63) - 1, None), (-(1 << 63), None), (2.5, {"group_id": "double"})],
    ids=["negative", "int64_max", "int64_min", "double"],
)
def test_odd_group_ids_leave_the_markers_verdict(tmp_path, decoder, group_id, kinds):
    builder = leaking(overrides={"group_id": group_id}, kinds=kinds)
    builder.span("FunctionRun", 0, STEPS * STEP_PS, group_id=("str", "1"))  # a group id of the wrong kind
    host = report_of(builder, tmp_path)
    assert host["verdict"] == "leak" and host["num_steps"] == STEPS


@pytest.mark.parametrize("available", [-5, -(1 << 63), 1 << 62])
def test_negative_or_absurd_free_memory_is_no_crash(tmp_path, decoder, available):
    host = report_of(leaking(overrides={"bytes_available": available}), tmp_path)
    assert host["verdict"] == "leak"


def test_garbage_device_planes_change_nothing_the_markers_decide(tmp_path, decoder):
    clean = report_of(leaking(), tmp_path)
    builder = leaking()
    builder.device_event("/device:TPU:0", "XLA Modules", "jit_f(1)", -(1 << 40), 1 << 62, stats={"run_id": ("str", "x")})
    builder.device_event("/device:TPU:0", "Steps", "", 10, -5)
    for k in range(50):  # a program that ends before it starts, over and over
        builder.xla_module("/device:TPU:1", "jit_g(2)", k * STEP_PS + 10, k * STEP_PS, run_id=k)
    builder.device_event("/device:GPU:5", "Stream #1", "kernel", 1, 1, stats={"group_id": 3, "_r": 1})
    host = report_of(builder, tmp_path)
    assert host["verdict"] == clean["verdict"] == "leak"
    assert host["allocators"] == clean["allocators"]
