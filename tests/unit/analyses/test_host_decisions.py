"""What a host's report decides once (analyses/host_decisions.py): the allocator it opens on and why, its verdict
with the process's memory beside its allocators'."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.analyses.allocator_lookup import find_allocator
from tb_leakfinder.analyses.host_decisions import (
    HIGHEST_PEAK,
    LEAKS,
    LEAKS_FASTEST,
    ONLY,
    decide_host,
    default_allocator,
    with_process,
)
from tb_leakfinder.analyses.verdict import INCONCLUSIVE, LEAK, NO_LEAK, Verdict
from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.model.memory import ALLOC
from tb_leakfinder.testing.xspace_builder import synthesize_devices
from tests.support.demo import demo_capture, demo_xplane
from tests.support.training_loops import analyze

GIB = 1 << 30
MIB = 1 << 20
HOST = "xla_gpu_host_bfc"


def test_a_leaking_device_is_opened_on_before_host_memory_that_peaks_higher():
    builder, _ = synthesize_devices(12, 3, platform="GPU", id_stat="allocator_name", leak_device=10, leak_bytes_per_step=GIB)
    # Pinned host memory peaking above every device: last, and never the one opened on.
    builder.alloc(10, 0x9000, 8 * GIB, allocator=HOST, line="python")
    h = analyze(builder)
    assert [a.label for a in h.allocators] == [*(f"GPU:{d}" for d in range(12)), HOST]
    assert h.allocators[-1].summary.peak_bytes_in_use > max(a.summary.peak_bytes_in_use for a in h.allocators[:-1])
    choice = default_allocator(h)
    assert choice is not None and (choice.allocator.label, choice.rule, choice.reason) == ("GPU:10", LEAKS, "the one that leaks")
    assert find_allocator(h, None) is choice.allocator


def test_with_none_leaking_the_device_memory_with_the_highest_peak_not_host_memory():
    builder, _ = synthesize_devices(3, 3, platform="GPU", id_stat="allocator_name")
    builder.alloc(10, 0x9000, 8 * GIB, allocator=HOST, line="python")
    builder.alloc(20, 0xA000, 64 * MIB, allocator="GPU_2_bfc", line="python")  # GPU:2 peaks above its peers
    h = analyze(builder)
    assert all(a.verdict.verdict != LEAK for a in h.allocators)
    choice = default_allocator(h)
    assert choice is not None
    assert (choice.allocator.label, choice.rule, choice.reason) == (
        "GPU:2",
        HIGHEST_PEAK,
        "the device memory with the highest peak",
    )


def test_a_tie_opens_on_the_first_device():
    builder, _ = synthesize_devices(3, 2, platform="TPU")
    h = analyze(builder)
    assert [a.label for a in h.allocators] == ["TPU:0", "TPU:1", "TPU:2"]
    assert len({a.summary.peak_bytes_in_use for a in h.allocators}) == 1
    choice = default_allocator(h)
    assert choice is not None and choice.allocator.label == "TPU:0" and choice.rule == HIGHEST_PEAK


def test_of_several_leaking_device_memory_first_then_the_fastest():
    steps, step_ps = 6, 10_000_000_000
    builder, planted = synthesize_devices(
        3, steps, platform="GPU", id_stat="allocator_name", leak_device=1, leak_bytes_per_step=MIB
    )
    # Host memory leaking four times faster than GPU:1: still not the one opened on.
    times = planted["first_step_ps"] + np.arange(steps) * step_ps + step_ps // 3
    addrs = np.array([0x40_0000_0000 + s * 4 * MIB for s in range(steps)], np.uint64)
    builder.add_memory_events(
        times, ALLOC, addrs, [4 * MIB] * steps, allocator=HOST, op="Mul", shape="[1024,1024]", line="python"
    )
    h = analyze(builder)
    leaking = {a.label: a.leak_bytes_per_step for a in h.allocators if a.verdict.verdict == LEAK}
    assert set(leaking) == {"GPU:1", HOST} and leaking[HOST] > leaking["GPU:1"]
    choice = default_allocator(h)
    assert choice is not None
    assert (choice.allocator.label, choice.rule, choice.reason) == (
        "GPU:1",
        LEAKS_FASTEST,
        "the device memory that leaks fastest",
    )


def test_the_demo_captures_one_allocator_each_is_the_only_choice_and_their_verdicts():
    for tb_run in ("tf_leak", "tf_fixed"):
        path = demo_xplane(tb_run)
        result = analyze_file(str(path), "host", str(path.parent))
        decisions = decide_host(result.unwrap(), result.modules)
        assert decisions.default_allocator is not None and decisions.default_allocator.rule == ONLY
        # The capture script's own word on whether it leaked decides what the verdict must be.
        assert decisions.verdict.verdict == (LEAK if demo_capture(tb_run)["leaks"] else NO_LEAK)


def test_a_leaking_process_makes_the_host_leak_and_keeps_whether_a_warning_undermined_it():
    doubted = Verdict(INCONCLUSIVE, "Cannot tell: frees paired by size. Taken at face value: No leak", cannot_tell=True)
    process = Verdict(LEAK, "The process's memory outside the allocators grows +1 MiB per step.")
    assert with_process(doubted, None) is doubted
    assert with_process(doubted, Verdict(NO_LEAK, "flat")) is doubted
    joined = with_process(doubted, process)
    assert joined.verdict == LEAK and joined.cannot_tell
    assert joined.reason == f"{doubted.reason}. {process.reason}"
