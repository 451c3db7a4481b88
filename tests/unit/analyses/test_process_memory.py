"""The process-memory verdict on recordings built here: what grows outside the allocators, and what does not."""

from __future__ import annotations

import numpy as np
import pytest

from tb_leakfinder.analyses.process_memory import THRESHOLD_BYTES_PER_STEP, analyze_process_memory
from tb_leakfinder.model.memory import Steps
from tb_leakfinder.model.recordings import COMPLETE, PARTIAL, ProcessMemoryRecord, ProcessReading, ProcessSample

MiB = 1 << 20
BASE = 300 * MiB
STEPS = list(range(5, 17))


def record(
    main: list[int], workers: list[list[int | None]] = (), in_use: list[int] | None = None, free: list[int] | None = None
) -> ProcessMemoryRecord:
    samples = []
    for i, step in enumerate(STEPS[: len(main)]):
        children = [ProcessReading(100 + k, 200 * MiB, w[i], w[i]) for k, w in enumerate(workers)]
        sample = ProcessSample(step, 10**18 + i, ProcessReading(42, main[i], None, None), children)
        sample.malloc_in_use = None if in_use is None else in_use[i]
        sample.malloc_free = None if free is None else free[i]
        samples.append(sample)
    return ProcessMemoryRecord(COMPLETE, "", "psutil", samples)


def steps() -> Steps:
    n = np.array(STEPS, np.int64)
    return Steps(n, n * 1000, n * 1000 + 900)


def linear(rate: float, n: int = len(STEPS), start: int = BASE) -> list[int]:
    return [start + round(rate * i) for i in range(n)]


def test_a_steady_rise_in_the_training_process_is_memory_outside_the_allocator():
    got = analyze_process_memory(record(linear(4 * MiB)), "torch", steps(), [])
    assert got.verdict == "leak"
    assert got.outside_bytes_per_step == pytest.approx(4 * MiB)
    assert got.reason == "Memory grows outside PyTorch's allocator: +4.0 MiB/step in the training process."
    assert [c.id for c in got.causes] == ["kept_objects", "native"]
    assert got.time_ps == [s * 1000 + 900 for s in STEPS]


def test_the_allocators_heap_growth_is_taken_off():
    got = analyze_process_memory(record(linear(4 * MiB)), "torch", steps(), [("CPU", 4.0 * MiB), ("GPU:0", 0.0)])
    assert got.verdict == "no_leak"
    assert got.allocator_bytes_per_step == 4 * MiB and got.allocators == ["CPU"]
    assert got.outside_bytes_per_step == pytest.approx(0, abs=1)
    assert "less the CPU allocator's heap growth +4 MiB/step" in got.reason
    # What the allocator explains only in part is still said.
    partly = analyze_process_memory(record(linear(7 * MiB)), "tensorflow", steps(), [("cpu", 4.0 * MiB)])
    assert partly.verdict == "leak"
    assert partly.reason.startswith("Memory grows outside TensorFlow's allocator: +3.0 MiB/step in the training process")


def test_freed_memory_malloc_keeps_is_not_a_leak_but_kept_malloc_memory_is():
    rss = linear(4 * MiB)
    fragmented = analyze_process_memory(
        record(rss, in_use=[50 * MiB] * 12, free=linear(4 * MiB, start=MiB)), "torch", steps(), []
    )
    assert fragmented.verdict == "no_leak"
    assert fragmented.malloc_free_bytes_per_step == pytest.approx(4 * MiB)
    kept = analyze_process_memory(record(rss, in_use=linear(4 * MiB, start=50 * MiB), free=[MiB] * 12), "torch", steps(), [])
    assert kept.verdict == "leak" and kept.malloc_free_bytes_per_step == 0
    # Free memory malloc holds in a thread's arena without RSS counting it is not taken off.
    untouched = record(rss, in_use=linear(4 * MiB, start=50 * MiB), free=linear(MiB, start=MiB))
    assert analyze_process_memory(untouched, "torch", steps(), []).outside_bytes_per_step == pytest.approx(4 * MiB)


def test_a_one_time_rise_is_no_leak():
    once = [BASE] * 3 + [BASE + 40 * MiB] * 9
    got = analyze_process_memory(record(once), "torch", steps(), [])
    assert got.outside_bytes_per_step > THRESHOLD_BYTES_PER_STEP
    assert got.verdict == "no_leak"


def test_noise_under_the_threshold_is_no_leak():
    rng = np.random.default_rng(0)
    noisy = [BASE + int(v) for v in rng.integers(-3 * MiB, 3 * MiB, len(STEPS))]
    got = analyze_process_memory(record(noisy, [linear(0.3 * MiB)] * 2), "torch", steps(), [])
    assert got.verdict == "no_leak"
    assert "2 DataLoader workers" in got.reason


def test_workers_are_judged_each_by_their_own_readings_even_sparse_ones():
    # Each worker grows 4 MiB every other step, read now and then (None: not read at that step).
    stairs = [200 * MiB + 4 * MiB * ((i + 1) // 2) for i in range(12)]
    sparse = [v if i % 3 == 0 else None for i, v in enumerate(stairs)]
    got = analyze_process_memory(record(linear(0), [stairs, sparse]), "torch", steps(), [])
    assert got.verdict == "leak"
    assert [w.grows for w in got.workers] == [True, True]
    assert got.workers_bytes_per_step == pytest.approx(4 * MiB, rel=0.1)
    assert "in each of 2 DataLoader workers" in got.reason
    assert got.workers_bytes[0] is not None and got.workers_bytes[1] is None
    assert [c.id for c in got.causes] == ["worker_cache", "native"]


def test_workers_that_differ_are_named_each():
    got = analyze_process_memory(record(linear(0), [linear(6 * MiB), linear(0)]), "torch", steps(), [])
    assert "+6.0 MiB/step in 1 of 2 DataLoader workers (pid 100 +6.0 MiB/step)" in got.reason


def test_too_few_steps_are_inconclusive_and_a_partial_recording_says_so():
    short = analyze_process_memory(record(linear(4 * MiB, n=3)), "jax", steps(), [])
    assert short.verdict == "inconclusive" and "capture at least 4 steps" in short.reason
    cut = record(linear(4 * MiB))
    cut.status, cut.warning = PARTIAL, "reading /proc/42/statm failed"
    got = analyze_process_memory(cut, "jax", steps(), [])
    assert got.verdict == "leak" and "Recorded only in part: reading /proc/42/statm failed." in got.reason
