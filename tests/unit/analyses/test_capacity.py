"""The forecast to out-of-memory and the fragmentation note, on profiles built here."""

from __future__ import annotations

import numpy as np
import pytest

from tb_leakfinder.analyses.capacity import about, forecast, fragmentation_note, known_capacity
from tb_leakfinder.model.memory import ALLOC, MemoryEvents
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
    assert (f.bytes_available, f.growth_bytes_per_step) == (FREE_AT_END, 512 * KIB)
    assert f.steps_to_oom == FREE_AT_END // (512 * KIB) == 31129
    assert f.step_duration_ps == 100_000_000_000
    assert f.seconds_to_oom == pytest.approx(3112.9)
    assert f.description == (
        "At +512 KiB/step the 15.2 GiB still free runs out in about 31,000 steps (about 52 min at 100 ms/step)."
    )


def test_forecast_adds_up_every_leaking_group():
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
    assert forecast(events, 0.0, 1e11) is None
    no_capacity = MemoryEvents(**{**vars(events), "free_bytes": np.zeros(len(events), np.int64)})
    assert forecast(no_capacity, 512 * KIB, 1e11) is None


def test_forecast_without_a_step_duration_leaves_the_time_out():
    events = analyze(_leaking_loop("step_num").b).allocators[0].events
    f = forecast(events, 512 * KIB, 0.0)
    assert f is not None and f.seconds_to_oom is None
    assert f.description == "At +512 KiB/step the 15.2 GiB still free runs out in about 31,000 steps."


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
