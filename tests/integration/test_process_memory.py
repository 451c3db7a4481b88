"""Memory that grows outside the framework's allocator, on real runs: tests/support/process_memory_captures.py's
programs, each captured with tb_leakfinder.capture in a process of its own, their truth from the programs' constants.

Tolerances: the training process's rate is fitted on its RSS at each of 12 step ends; a kept 4 MiB numpy array is
4 MiB and one page of malloc's header, and the profiler's own event buffers add about 0.1 MiB a step (measured on the
clean run), so 5% holds it. A worker's rate is fitted on its USS, read now and then by the recorder's thread (at most
one step late): each worker grows by a whole batch (4 MiB) every other step, so a fit over 12 steps of that staircase
is off by up to half a batch over the window (2 MiB / 11 steps, about 9%), and the lateness adds as much: 20% each,
10% for their sum, whose staircase is one step tall.
"""

from __future__ import annotations

import pathlib

import pytest

from tests.support import capture_programs
from tests.support import process_memory_captures as programs
from tests.support.demo import ROOT

MiB = 1 << 20
SCRIPT = ROOT / "tests" / "support" / "process_memory_captures.py"
CLEAN_RUNS = 5


def capture(case: str, logdir: pathlib.Path) -> dict:
    capture_programs.need(programs.CASES[case][0])
    return capture_programs.run_script(SCRIPT, [case, str(logdir)])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    made: dict[str, dict] = {}

    def run(case: str) -> dict:
        if case not in made:
            made[case] = capture(case, tmp_path_factory.mktemp(case))
        return made[case]

    return run  # type: ignore[return-value]


def test_a_caching_dataset_grows_in_each_dataloader_worker(runs):
    out = runs("worker_cache")
    host, memory = out["host"], out["host"]["process_memory"]
    per_worker = programs.CASES["worker_cache"][2]
    assert memory["verdict"] == "leak" and host["verdict"] == "leak"
    assert sorted(w["pid"] for w in memory["workers"]) == out["worker_pids"]
    for worker in memory["workers"]:
        assert worker["measure"] == "uss"
        assert worker["grows"]
        assert worker["bytes_per_step"] == pytest.approx(per_worker, rel=0.2)
    assert memory["workers_bytes_per_step"] == pytest.approx(programs.WORKERS * per_worker, rel=0.1)
    assert not memory["main_grows"]
    assert memory["bytes_per_step"] < memory["threshold_bytes_per_step"]
    assert f"in each of {programs.WORKERS} DataLoader workers" in memory["reason"]
    assert memory["causes"][0]["id"] == "worker_cache"
    # The allocator's own verdict stands beside it, and says whose memory it judged.
    (allocator,) = host["allocators"]
    assert allocator["verdict"] == "no_leak"
    assert memory["reason"] in host["reason"]


@pytest.mark.parametrize("case", ["numpy_copies", "numpy_copies_tf"])
def test_numpy_copies_kept_by_the_loop_grow_the_training_process(runs, case):
    out = runs(case)
    host, memory = out["host"], out["host"]["process_memory"]
    kept = programs.CASES[case][1]
    assert memory["verdict"] == "leak" and host["verdict"] == "leak"
    assert memory["main_grows"]
    assert memory["bytes_per_step"] == pytest.approx(kept, rel=0.05)
    assert "in the training process" in memory["reason"]
    assert memory["causes"][0]["id"] == "kept_objects"
    assert all(a["verdict"] != "leak" for a in host["allocators"])
    assert len(memory["steps"]) == programs.STEPS
    assert len(out["companions"]) == 1


def test_an_allocator_leak_is_not_counted_again_outside_it(runs):
    out = runs("allocator_leak")
    host, memory = out["host"], out["host"]["process_memory"]
    (allocator,) = host["allocators"]
    leaked = programs.CASES["allocator_leak"][3]
    assert allocator["verdict"] == "leak"
    assert allocator["leak_bytes_per_step"] == pytest.approx(leaked, rel=0.01)
    # The process grows by the allocator's leak (and what malloc keeps of its freed memory), nothing more.
    assert memory["rss_bytes_per_step"] >= 0.95 * leaked
    assert memory["allocator_bytes_per_step"] == pytest.approx(leaked, rel=0.05)
    assert memory["verdict"] == "no_leak"
    assert abs(memory["bytes_per_step"]) < memory["threshold_bytes_per_step"]
    assert "Nothing grows outside PyTorch's allocator" in memory["reason"]
    assert host["verdict"] == "leak"


def test_a_clean_two_worker_loader_raises_no_alarm_in_repeated_runs(tmp_path):
    noise = []
    for k in range(CLEAN_RUNS):
        memory = capture("clean", tmp_path / f"clean{k}")["host"]["process_memory"]
        assert memory["verdict"] == "no_leak", memory["reason"]
        assert len(memory["workers"]) == programs.WORKERS
        noise.append(max([abs(memory["bytes_per_step"]), *(abs(w["bytes_per_step"]) for w in memory["workers"])]))
    # The noise stays well under the threshold: a third of it at most.
    assert max(noise) < memory["threshold_bytes_per_step"] / 3, [n / MiB for n in noise]


def test_the_run_history_follows_the_training_process_across_captures(runs):
    out = runs("numpy_copies_periodic")
    assert len(out["companions"]) == 3
    (history,) = out["histories"]
    (series,) = [s for s in history["series"] if s["memory_id"] == "process:main"]
    assert series["allocator"] == "training process, outside the allocators (RSS)"
    assert series["verdict"] == "leak" and history["verdict"] == "leak"
    assert [c["verdict"] for c in series["captures"]] == ["leak"] * 3
    # What each window saw grow outside the allocators, over all the windows' steps: the kept copies.
    kept = programs.CASES["numpy_copies_periodic"][1]
    assert series["rate_basis"] == "within_captures"
    assert series["bytes_per_step"] == pytest.approx(kept, rel=0.1)
    assert "unexplained" not in series["reason"]
