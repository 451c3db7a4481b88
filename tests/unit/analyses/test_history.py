"""A run's captures as one history: trend, verdict, culprit, and what is not merged."""

from __future__ import annotations

import dataclasses

import pytest

from tb_leakfinder.analyses.history import (
    INCONCLUSIVE,
    LEAK,
    NO_LEAK,
    RECOMPILE_FIX,
    RECOMPILE_PER_STEP,
    WITHIN_CAPTURES,
    count_unreadable,
    measure,
    run_history,
)
from tb_leakfinder.analyses.suspects import CauseResult
from tb_leakfinder.model.history import FILE_MTIME, ONE_MOMENT, PROFILE, CapturePoint, FamilyPoint, ProgramPoint

MIB = 1 << 20
HOUR = 3600.0


def point(k: int, floor: int, *, host: str = "h", kind: str = PROFILE, program: str = "", families=()) -> CapturePoint:
    return CapturePoint(
        capture=f"job/s{k}",
        host=host,
        memory_id="GPU_0_bfc",
        label="GPU:0",
        kind=kind,
        time_s=1_800_000_000 + k * HOUR,
        duration_s=2.0,
        heap_start_bytes=floor + MIB,
        peak_heap_bytes=floor + 64 * MIB,
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
    assert "at train.py:42 in step, in 6 captures (s0, s1, s2, s3 and 2 more); out of memory in about" in h.reason
    # One rate in one sentence: the family's own is in the families table.
    assert h.reason.count(" per step") == 1


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
        p = point(k, 0, kind=ONE_MOMENT, families=[family])
        return dataclasses.replace(p, heap_end_bytes=50 * MIB + held, first_step=k * 10, last_step=k * 10)

    h = run_history("jax", [snap(k) for k in range(4)])
    (s,) = h.series
    assert s.verdict == LEAK and s.bytes_per_step == pytest.approx(4 * MIB / 10)
    f = s.families[0]
    assert (f.growing_captures, f.growth_bytes) == (3, 12 * MIB) and f.bytes_per_step == pytest.approx(4 * MIB / 10)
    assert f.bytes_per_hour == pytest.approx(4 * MIB)


def test_a_history_says_how_many_of_its_captures_could_not_be_read():
    read = run_history("job", [point(k, 100 * MIB) for k in range(5)], num_captures=10)
    assert read.verdict == NO_LEAK
    told = count_unreadable(read, 5)
    assert (told.verdict, told.num_captures) == (NO_LEAK, 10)
    assert told.reason == f"{read.reason} (5 of 10 captures could not be read)"
    assert count_unreadable(read, 0) is read
    none = count_unreadable(run_history("job", [], num_captures=4), 4)
    assert (none.verdict, none.reason) == (INCONCLUSIVE, "job: none of its 4 captures could be read")


def copied(p: CapturePoint, at: float = 1_800_000_000.0) -> CapturePoint:
    """As a capture that carries no time of its own reads once copied: every file's mtime the same second."""
    return dataclasses.replace(p, time_s=at, time_source=FILE_MTIME)


def test_captures_copied_within_seconds_give_no_rate_per_hour_but_one_per_step_in_step_order():
    points = [
        copied(point(k, 100 * MIB + k * 1000 * 4096, families=[kept(k)]), 1_800_000_000.0 + (5 - k) * 0.001) for k in range(5)
    ]
    h = run_history("job", points)
    (s,) = h.series
    assert s.verdict == LEAK
    assert [c.capture for c in s.captures] == [f"job/s{k}" for k in range(5)]  # by step, though the mtimes run backwards
    assert s.bytes_per_hour is None and s.hours_to_oom is None
    assert s.bytes_per_step == pytest.approx(4096) and s.bytes_per_capture == pytest.approx(1000 * 4096)
    assert s.families[0].bytes_per_hour is None and s.families[0].agrees
    assert "no rate per hour and no forecast: the captures carry no time of their own" in s.time_note
    assert "within 4.0 ms of each other" in s.time_note and s.time_note in h.reason
    assert "+4.0 KiB per step, from" in h.reason and "out of memory" not in h.reason
    assert "per capture," not in h.reason  # one rate: per step, the steps being known


def test_mtimes_hours_apart_still_time_the_history_and_it_says_where_they_came_from():
    points = [dataclasses.replace(point(k, 100 * MIB + k * 1000 * 4096), time_source=FILE_MTIME) for k in range(4)]
    (s,) = run_history("job", points).series
    assert s.bytes_per_hour == pytest.approx(1000 * 4096)
    assert s.time_note is not None
    assert s.time_note.startswith("4 of 4 captures carry no time of their own: their times are their files' modification")


def test_a_family_kept_once_in_every_window_at_the_rate_the_captures_grow_is_the_slow_leaks_culprit():
    # One [1024] float kept every 50th step; windows of 60 steps keep one or two (persistent, bounded), 1000 steps apart.
    size = 4096
    counts = [1, 2, 1, 1]
    points = []
    for k, n in enumerate(counts):
        family = FamilyPoint(
            "Fill [1024] float output",
            "Fill [1024] output",
            "job.py:12 in step",
            ["job.py:12 in step", "job.py:30 in main"],
            "persistent" if n == 1 else "bounded",
            n * size,
            0.0,
            n,
        )
        weights = FamilyPoint("VarHandleOp [] resource persist", "VarHandleOp persist", "", [], "persistent", 256, 0.0, 1)
        p = point(k, 10 * MIB + k * 1000 * size // 50, families=[weights, family])
        points.append(dataclasses.replace(p, last_step=k * 1000 + 59, peak_heap_bytes=p.heap_floor_bytes + MIB))
    h = run_history("job", points)
    (s,) = h.series
    assert s.verdict == LEAK and s.unexplained is None
    culprit = s.families[0]
    assert (culprit.label, culprit.growing_captures, culprit.agrees) == ("Fill [1024] output", 4, True)
    assert culprit.bytes_per_step == pytest.approx(5 * size / 240)
    assert culprit.captures == [f"job/s{k}" for k in range(4)]
    assert "from Fill [1024] output at job.py:12 in step, in 4 captures (s0, s1, s2, s3)" in h.reason
    assert h.reason.count(" per step") == 1
    assert not any(f.label == "VarHandleOp persist" for f in s.families)  # one 256 B buffer a window is not that growth


def test_growth_no_family_accounts_for_is_unexplained_with_what_each_window_began_with():
    points = [point(k, 100 * MIB + k * 4 * MIB, families=[kept(k, rate=64.0, held=640)]) for k in range(4)]
    h = run_history("job", points)
    (s,) = h.series
    assert s.verdict == LEAK and not s.families[0].agrees
    assert s.unexplained is not None and s.unexplained in h.reason
    assert "no family made within the windows keeps bytes at the rate the captures grew;" in s.unexplained
    assert h.reason.count("+4.1 KiB per step") == 1  # one rate, said once
    assert s.unexplained.endswith("(held when each began: 101 MiB, 105 MiB, 109 MiB, 113 MiB)")


def profiled(k: int, kept_per_step: int, stuck: int, families=()) -> CapturePoint:
    """A PyTorch CPU capture of steps 12k+2..12k+5 keeping `kept_per_step` a step, whose heap began with what
    every earlier capture kept and the `stuck` temporaries each left live at its end (freed unseen after it)."""
    start = k * (4 * kept_per_step + stuck)
    p = point(k, start, families=families)
    return dataclasses.replace(
        p,
        first_step=12 * k + 2,
        last_step=12 * k + 5,
        heap_start_bytes=start,
        heap_floor_bytes=start,
        heap_end_bytes=start + 4 * kept_per_step + stuck,
        peak_heap_bytes=start + 4 * kept_per_step + stuck + MIB,
        heap_growth_bytes_per_step=float(kept_per_step),
        profiled_heap=True,
        capacity_bytes=0,
    )


def clone_family(kept_per_step: int) -> FamilyPoint:
    return FamilyPoint(
        "aten::clone float[32,1024]",
        "aten::clone float[32,1024]",
        "job.py:9 in step",
        [],
        "growing",
        4 * kept_per_step,
        float(kept_per_step),
        4,
    )


def randn_family(stuck: int) -> FamilyPoint:
    return FamilyPoint("aten::randn", "aten::randn", "job.py:7 in step", [], "window_end", stuck, 0.0, 1)


def test_a_profiled_heap_is_never_chained_its_rate_is_what_each_window_kept():
    # capture(start=2, count=4, every=12) of a job keeping 128 KiB a step, whose last step's 3 MiB of temporaries
    # outlive each window: chained, the heap's floor would rise by 3.5 MiB a capture (+299 KiB a step).
    kept, stuck = 128 << 10, 3 * MIB
    points = [profiled(k, kept, stuck, [clone_family(kept), randn_family(stuck)]) for k in range(5)]
    assert [measure(p) for p in points] == [4 * kept] * 5
    h = run_history("job", points)
    (s,) = h.series
    assert (s.verdict, s.rate_basis, s.unexplained) == (LEAK, WITHIN_CAPTURES, None)
    assert s.bytes_per_step == pytest.approx(kept) and s.bytes_per_capture == pytest.approx(12 * kept)
    assert s.rise_bytes == kept * (53 - 2 + 1)  # steps 2..53 at that rate
    assert s.bytes_per_hour == pytest.approx(kept * 12)  # 12 steps an hour between the captures' starts
    assert s.hours_to_oom is None  # the heap's level is not known
    assert [f.label for f in s.families] == ["aten::clone float[32,1024]"] and s.families[0].agrees
    assert s.families[0].bytes_per_step == pytest.approx(kept)
    assert h.reason.startswith(
        "Leak: +128 KiB per step kept within the windows of 5 captures over 4 h (about +6.5 MiB over steps 2..53; its heap"
        " counts only what each capture saw allocated, so the steps between captures are not measured), from aten::clone"
    )
    assert h.reason.count("per step") == 1  # one rate: the family's is the families table's


def test_a_profiled_heap_that_keeps_nothing_within_its_windows_is_no_leak_whatever_its_start():
    points = [profiled(k, 0, 3 * MIB, [randn_family(3 * MIB)]) for k in range(5)]
    h = run_history("job", points)
    assert h.verdict == NO_LEAK and h.series[0].bytes_per_step == 0
    assert h.reason.startswith("No leak: its captures kept +0 B within their windows over 4 h, growing in 0 of 5")


def test_a_profiled_heap_whose_growth_no_family_keeps_is_unexplained_without_blaming_before_the_windows():
    points = [profiled(k, 128 << 10, 0, [randn_family(4096)]) for k in range(4)]
    h = run_history("job", points)
    (s,) = h.series
    assert s.verdict == LEAK and s.unexplained is not None
    assert s.unexplained == "the growth is unexplained: no family made within the windows keeps bytes at the rate they kept"
    assert h.reason.count("+128 KiB per step") == 1  # one rate, said once


def test_a_profiled_heap_without_step_numbers_says_one_rate_per_capture():
    # Captures that carry times but no step numbers: the pace is per capture, and the family that grew most is named
    # without its own per-step rate beside it.
    kept = 128 << 10
    points = [dataclasses.replace(profiled(k, kept, 0, [clone_family(kept)]), first_step=None, last_step=None) for k in range(5)]
    h = run_history("job", points)
    (s,) = h.series
    assert (s.verdict, s.rate_basis, s.bytes_per_step) == (LEAK, WITHIN_CAPTURES, None)
    assert h.reason.startswith("Leak: +512 KiB per capture kept within the windows of 5 captures over 4 h")
    assert ", from aten::clone float[32,1024] at job.py:9 in step, in 5 captures" in h.reason
    assert "per step" not in h.reason and h.reason.count("per capture") == 1


def programs_at(k: int, counts: dict[str, int], floor: int = 8 * MIB) -> CapturePoint:
    """A device memory profile at step k whose device's compiled programs were made at `counts`' lines."""
    p = point(k, 0, kind=ONE_MOMENT)
    listed = [ProgramPoint(where, n) for where, n in counts.items()]
    return dataclasses.replace(p, heap_end_bytes=floor, first_step=k, last_step=k, programs=listed)


def test_compiled_programs_that_multiply_capture_after_capture_are_a_recompile_per_step():
    # Two programs compiled once (the data's), and one more each step from line 12: 4, 5, ... 9.
    points = [programs_at(k, {"data.py:3 in load": 2, "train.py:12 in main": 2 + k}) for k in range(1, 7)]
    s = run_history("job", points).series[0]
    assert s.verdict == "no_leak"  # its bytes are flat: on CPU a program holds none of the profile's
    assert s.cause == CauseResult(
        RECOMPILE_PER_STEP,
        "compiled programs grew from 5 to 10 over 6 device memory profiles of steps 1..6, one per step: 5 more"
        " compiled from train.py:12 in main",
        RECOMPILE_FIX,
    )
    # A step in three: one program every 3 steps.
    sparse = [dataclasses.replace(p, first_step=3 * k, last_step=3 * k) for k, p in enumerate(points)]
    assert (
        run_history("job", sparse)
        .series[0]
        .cause.evidence.startswith(
            "compiled programs grew from 5 to 10 over 6 device memory profiles of steps 0..15, one every 3 steps:"
        )
    )


@pytest.mark.parametrize(
    "counts",
    [
        [4, 4, 4, 4, 4],  # compiled once, before the captures
        [2, 6, 6, 6, 6],  # compiled in the first steps (warm-up, an evaluation's program), then no more
        [4, 5, 4, 5, 4],  # up and down: a cache that evicts
        [4, 5],  # too few captures to tell
    ],
)
def test_compiled_programs_that_do_not_keep_multiplying_give_no_cause(counts):
    points = [programs_at(k, {"train.py:12 in main": n}) for k, n in enumerate(counts)]
    assert run_history("job", points).series[0].cause is None


def test_a_series_of_growing_bytes_without_programs_gives_no_recompile():
    points = [point(k, k * MIB) for k in range(5)]
    s = run_history("job", points).series[0]
    assert s.verdict == "leak" and s.cause is None
