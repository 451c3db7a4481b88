"""A run's captures as one history: trend, verdict, culprit, and what is not merged."""

from __future__ import annotations

import dataclasses

import pytest

from tb_leakfinder.analyses.history import INCONCLUSIVE, LEAK, NO_LEAK, run_history
from tb_leakfinder.model.history import PROFILE, SNAPSHOT, CapturePoint, FamilyPoint

MIB = 1 << 20
HOUR = 3600.0


def point(k: int, floor: int, *, host: str = "h", kind: str = PROFILE, program: str = "", families=()) -> CapturePoint:
    return CapturePoint(
        capture=f"job/s{k}",
        host=host,
        memory_id="GPU_0_bfc",
        name="GPU:0",
        kind=kind,
        time_s=1_800_000_000 + k * HOUR,
        duration_s=2.0,
        heap_start_bytes=floor + MIB,
        heap_peak_bytes=floor + 64 * MIB,
        heap_end_bytes=floor + 2 * MIB,
        heap_floor_bytes=floor,
        never_freed_bytes=0,
        capacity_bytes=16 << 30,
        first_step=k * 1000,
        last_step=k * 1000 + 9,
        program=program,
        verdict="no_leak",
        families=list(families),
    )


def kept(k: int, rate: float = 4096.0, kind: str = "growing", held: int = 40960) -> FamilyPoint:
    return FamilyPoint(
        "Mul [256] float output",
        "Mul [256] output",
        "train.py:42 in step",
        ["train.py:42 in step"],
        kind,
        held,
        rate,
        held // 4096,
    )


def test_a_slow_rise_across_captures_is_a_leak_with_its_rates_culprit_and_forecast():
    points = [point(k, 100 * MIB + k * 1000 * 4096, families=[kept(k)]) for k in range(6)]
    h = run_history("job", points)
    (s,) = h.series
    assert h.verdict == s.verdict == LEAK and h.num_captures == 6
    assert s.bytes_per_step == pytest.approx(4096) and s.bytes_per_hour == pytest.approx(1000 * 4096)
    assert s.rise_bytes == 5 * 1000 * 4096
    assert s.families[0].label == "Mul [256] output" and s.families[0].growing_captures == 6
    assert s.families[0].bytes_per_hour == pytest.approx(1000 * 4096)
    assert s.hours_to_oom == pytest.approx(((16 << 30) - (100 * MIB + 5 * 1000 * 4096)) / (1000 * 4096))
    assert h.reason.startswith("Leak: +19.5 MiB over 5 h across 6 captures, +4.0 KiB per step, from Mul [256] output")
    assert "at train.py:42 in step (+4 KiB per step in 6 captures: s0, s1, s2, s3 and 2 more); out of memory in about" in h.reason


def test_a_flat_or_noisy_history_is_no_leak():
    noise = [0, 3, 1, 4, 2, 3]  # KiB of jitter in what outlives the steps
    h = run_history("job", [point(k, 100 * MIB + noise[k] * 1024) for k in range(6)])
    assert h.verdict == NO_LEAK and h.series[0].hours_to_oom is None
    assert "rising between" in h.reason


def test_fewer_than_three_captures_are_inconclusive():
    h = run_history("job", [point(k, 100 * MIB + k * 50 * MIB) for k in range(2)])
    assert h.verdict == INCONCLUSIVE and "at least 3" in h.reason


def test_captures_of_different_programs_are_not_merged():
    points = [point(k, 100 * MIB + k * 10 * MIB, program="jit_train" if k % 2 else "jit_eval") for k in range(4)]
    h = run_history("job", points)
    assert h.verdict == INCONCLUSIVE and "different programs (jit_eval; jit_train): not merged" in h.reason


def test_captures_of_different_hosts_are_series_of_their_own_and_said_so():
    points = [point(k, 100 * MIB + k * 10 * MIB, host="a") for k in range(3)] + [point(k, 100 * MIB, host="b") for k in range(3)]
    h = run_history("job", points)
    assert [s.host for s in h.series] == ["a", "b"] and [s.verdict for s in h.series] == [LEAK, NO_LEAK]
    assert h.note is not None and "2 hosts" in h.note
    assert h.reason.startswith("GPU:0 on a: Leak:")


def test_snapshots_follow_live_bytes_and_the_family_that_grew():
    def snap(k: int) -> CapturePoint:
        held = (k + 1) * 4 * MIB
        family = FamilyPoint(
            "buffer made at loop.py:7 in step",
            "buffer made at loop.py:7 in step",
            "loop.py:7 in step",
            [],
            "persistent",
            held,
            0.0,
        )
        p = point(k, 0, kind=SNAPSHOT, families=[family])
        return dataclasses.replace(p, heap_end_bytes=50 * MIB + held, first_step=k * 10, last_step=k * 10)

    h = run_history("jax", [snap(k) for k in range(4)])
    (s,) = h.series
    assert s.verdict == LEAK and s.bytes_per_step == pytest.approx(4 * MIB / 10)
    f = s.families[0]
    assert (f.growing_captures, f.growth_bytes) == (3, 12 * MIB) and f.bytes_per_step == pytest.approx(4 * MIB / 10)
    assert f.bytes_per_hour == pytest.approx(4 * MIB)
