"""The forecast to out-of-memory and the fragmentation note, on profiles built here."""

from __future__ import annotations

import numpy as np
import pytest

from tb_leakfinder.analyses.capacity import about, forecast, fragmentation_note, known_capacity, limits
from tb_leakfinder.model.memory import (
    ALLOC,
    LIMIT_DEVICE,
    LIMIT_MACHINE,
    MACHINE_PROFILED,
    MACHINE_READER,
    AllocatorInfo,
    MemoryEvents,
)
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tests.support.columns import memory_events
from tests.support.training_loops import KIB, Loop, analyze

MIB = 1024 * KIB
FREE_AT_END = int(15.2 * (1 << 30))


def _leaking_loop(source: str, steps: int = 20, free_at_end: int = FREE_AT_END) -> Loop:
    """512 KiB kept per 100 ms step; the allocator's limit leaves `free_at_end` free once the last temporary is freed."""
    loop = Loop(source, steps=steps, limit_bytes=steps * 512 * KIB + free_at_end)
    loop.run(lambda step, t: loop.alloc(t, 512 * KIB, "Mul", "[128,1024]"))
    return loop


@pytest.mark.parametrize("source", ["step_num", "group_id", "PjitFunction", "XLA Modules"])
def test_forecast_from_free_memory_growth_and_step_duration(source):
    (a,) = analyze(_leaking_loop(source).b).allocators
    f = a.forecast
    assert f is not None and a.verdict.verdict == "leak"
    assert (f.limit, f.limit_bytes) == ("allocator", FREE_AT_END + 20 * 512 * KIB)
    assert (f.bytes_available, f.growth_bytes_per_step) == (FREE_AT_END, 512 * KIB)
    assert f.steps_to_oom == FREE_AT_END // (512 * KIB) == 31129
    assert f.step_duration_ps == 100_000_000_000
    assert f.seconds_to_oom == pytest.approx(3112.9)
    assert f.description == (
        "At +512 KiB/step the 15.2 GiB still free of its allocator's limit (15.2 GiB) runs out in about 31,000 steps"
        " (about 52 min at 100 ms/step)."
    )


def test_forecast_adds_up_every_leaking_family():
    loop = Loop("step_num", steps=20, limit_bytes=1 << 33)

    def keep(step: int, t: int) -> None:
        loop.alloc(t, 512 * KIB, "Mul", "[128,1024]")
        if step % 4 == 0:
            loop.alloc(t + 1, 256 * KIB, "Pack", "[64,1024]")

    (a,) = analyze(loop.run(keep)).allocators
    f = a.forecast
    assert f is not None
    assert f.growth_bytes_per_step == pytest.approx(512 * KIB + 64 * KIB)
    assert f.steps_to_oom == int(f.bytes_available // f.growth_bytes_per_step)


def test_no_forecast_without_growth_or_capacity():
    loop = Loop("step_num", steps=20)
    (a,) = analyze(loop.run()).allocators
    assert a.verdict.verdict == "no_leak" and a.forecast is None

    leaking = _leaking_loop("step_num")
    events = analyze(leaking.b).allocators[0].events
    gpu = AllocatorInfo("GPU:0", False)
    assert forecast(limits(events, gpu, 0, ""), 0.0, 1e11) is None
    no_capacity = MemoryEvents(**{**vars(events), "free_bytes": np.zeros(len(events), np.int64)})
    assert limits(no_capacity, gpu, 24 << 30, MACHINE_READER) == []  # a device's memory is not the machine's
    assert forecast(limits(no_capacity, gpu, 24 << 30, MACHINE_READER), 512 * KIB, 1e11) is None


def test_forecast_without_a_step_duration_leaves_the_time_out():
    events = analyze(_leaking_loop("step_num").b).allocators[0].events
    f = forecast(limits(events, AllocatorInfo("GPU:0", False), 0, ""), 512 * KIB, 0.0)
    assert f is not None and f.seconds_to_oom is None
    assert (
        f.description
        == "At +512 KiB/step the 15.2 GiB still free of its allocator's limit (15.2 GiB) runs out in about 31,000 steps."
    )


def _host_memory_events(held: int, free: int) -> MemoryEvents:
    """One allocation of host memory leaving `held` in use and, by its allocator's word, `free` free."""
    return memory_events([0], ALLOC, [0x10], [held], allocator="cpu", heap_bytes=[held], free_bytes=[free])


def test_a_cpu_forecast_never_runs_past_the_machines_memory():
    # TensorFlow's CPU BFC allocator reports a 64 GiB limit; the machine has 24 GiB.
    events = _host_memory_events(held=1 << 30, free=63 << 30)
    cpu = AllocatorInfo("cpu", True)
    found = limits(events, cpu, 24 << 30, MACHINE_READER)
    assert [(m.source, m.bytes_available, m.limit_bytes) for m in found] == [
        ("allocator", 63 << 30, 64 << 30),
        ("machine", 23 << 30, 24 << 30),
    ]
    f = forecast(found, 1 << 20, 1e11)
    assert f is not None and (f.limit, f.limit_bytes, f.bytes_available) == ("machine", 24 << 30, 23 << 30)
    assert f.steps_to_oom == 23 * 1024
    assert f.description.startswith(
        "At +1 MiB/step the 23 GiB still free of this machine's memory (24 GiB; the profile does not record its"
        " host's) runs out in about 24,000 steps"
    )
    # Recorded by the profile, it is its host's; a machine with more memory than the allocator's limit leaves it be.
    (host,) = [m for m in limits(events, cpu, 24 << 30, MACHINE_PROFILED) if m.source == LIMIT_MACHINE]
    assert host.words == "its host's memory (24 GiB)"
    roomy = forecast(limits(events, cpu, 256 << 30, MACHINE_READER), 1 << 20, 1e11)
    assert roomy is not None and (roomy.limit, roomy.bytes_available) == ("allocator", 63 << 30)


def test_host_memory_whose_allocator_reports_nothing_free_runs_against_the_machine():
    # PyTorch's CPU allocator records no free memory at all.
    events = _host_memory_events(held=4 << 20, free=0)
    f = forecast(limits(events, AllocatorInfo("CPU", True), 24 << 30, MACHINE_READER), 128 * KIB, 0.0)
    assert f is not None and (f.limit, f.bytes_available) == ("machine", (24 << 30) - (4 << 20))


def test_a_devices_memory_is_named_as_the_devices():
    # A PyTorch trace's CUDA device: its free bytes are totalGlobalMem less Total Allocated.
    events = _host_memory_events(held=2 << 30, free=14 << 30)
    f = forecast(
        limits(events, AllocatorInfo("cuda:0", False, free_bytes_of=LIMIT_DEVICE), 24 << 30, MACHINE_READER), 1 << 20, 0.0
    )
    assert f is not None and (f.limit, f.limit_bytes) == ("device", 16 << 30)
    assert "still free of its device's memory (16 GiB)" in f.description


@pytest.mark.parametrize(("n", "text"), [(7, "7"), (99, "99"), (31129, "31,000"), (131043, "130,000"), (1_250_000, "1,300,000")])
def test_step_counts_are_rounded_to_two_figures(n, text):
    assert about(n) == text


def _one_allocation(fragmentation: float, available: int, nbytes: int) -> MemoryEvents:
    """A 16 MiB allocation, then one of `nbytes`: the peak, at that fragmentation and with `available` bytes free."""
    return memory_events(
        [10, 20], ALLOC, [0x1000, 0x9000_0000], [16 * MIB, nbytes], fragmentation=fragmentation, free_bytes=available
    )


def test_a_capacity_no_larger_than_the_peak_is_unknown():
    """XProf's capacity is stack + heap + free at the peak: at the peak itself no free memory was reported."""
    assert known_capacity(16 << 30, 3 << 30) == 16 << 30
    assert known_capacity(3 << 30, 3 << 30) == 0  # a CPU allocator, PyTorch 1.9: capacity reported as the peak
    assert known_capacity(0, 3 << 30) == 0


def test_fragmentation_note_when_the_largest_buffer_no_longer_fits_a_free_block():
    events = _one_allocation(0.7, 600 * MIB, 256 * MIB)
    note = fragmentation_note(events, 1)
    assert note == (
        "Fragmentation at the peak is 70%: of the 600 MiB still free, the largest free block is at most about 180 MiB, "
        "less than the 256 MiB of this allocator's largest buffer, so such an allocation can fail with memory left."
    )


@pytest.mark.parametrize(
    ("fragmentation", "available", "nbytes"),
    [
        (0.7, 64 << 30, 256 * MIB),  # plenty free: the pool grows, whatever its fragmentation
        (0.1, 600 * MIB, 580 * MIB),  # low fragmentation
        (0.7, 100 * MIB, 256 * MIB),  # the buffer does not fit even unfragmented: out of memory, not fragmentation
        (0.7, 0, 256 * MIB),  # the profile does not say what is free
    ],
)
def test_no_fragmentation_note(fragmentation, available, nbytes):
    assert fragmentation_note(_one_allocation(fragmentation, available, nbytes), 1) is None


def test_demo_fixed_run_fragmentation_is_not_noted():
    """tf_fixed's CPU allocator is 65% fragmented at the peak, but 64 GiB are free: nothing can fail."""
    import tb_leakfinder
    from tests.support.demo import demo_xplane

    (run,) = tb_leakfinder.analyze(str(demo_xplane("tf_fixed")))["runs"]
    (a,) = run["hosts"][0]["allocators"]
    assert a["peak_fragmentation"] > 0.6 and a["fragmentation_note"] is None


def test_report_json_carries_the_fragmentation_note(tmp_path):
    import tb_leakfinder
    from tb_leakfinder.testing.xspace_builder import write_session

    b = ProfileBuilder("host0")
    b.add_memory_events(
        [10, 20, 30],
        [0, 0, 1],
        [0x1000, 0x9000_0000, 0x1000],
        [16 * MIB, 256 * MIB, 16 * MIB],
        overrides={"fragmentation": [0.1, 0.7, 0.1], "bytes_available": [900 * MIB, 600 * MIB, 616 * MIB]},
    )
    write_session(tmp_path, "run", "s1", {"host0": b})
    (run,) = tb_leakfinder.analyze(str(tmp_path))["runs"]
    (a,) = run["hosts"][0]["allocators"]
    assert a["fragmentation_note"].startswith("Fragmentation at the peak is 70%: of the 600 MiB still free")
    assert a["forecast"] is None
