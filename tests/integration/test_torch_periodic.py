"""Periodic PyTorch CPU captures give the rate one long capture gives: `capture(every=N)` and torch.profiler's
`schedule(repeat=...)`, on real jobs keeping 64 KiB, 128 KiB and 1 MiB a step (tests/support/torch_periodic.py,
whose constants hold the truth). Without torch installed these tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from tb_leakfinder import analyze
from tests.support import capture_programs, torch_periodic
from tests.support.cli_process import run_cli
from tests.support.demo import ROOT

PERIODIC = [f"{way}_{size}" for size in torch_periodic.KEPT for way in ("every", "schedule")]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[pathlib.Path, dict]:
    capture_programs.need("torch")
    logdir = tmp_path_factory.mktemp("torch_periodic")
    return logdir, capture_programs.run_script(ROOT / "tests" / "support" / "torch_periodic.py", [str(logdir)])


def history(logdir: pathlib.Path, tb_run: str) -> dict:
    done = run_cli("history", str(logdir), "--tb-run", tb_run, "--json")
    assert done.returncode == 1, done.stdout + done.stderr  # a leak
    return json.loads(done.stdout)


def long_rate(out: dict, size: str) -> float:
    (trace,) = out[f"long_{size}"]["traces"]
    (run,) = analyze(trace)["runs"]
    (host,) = run["hosts"]
    (allocator,) = host["allocators"]
    top = allocator["families"][0]
    assert (allocator["verdict"], top["op"]) == ("leak", torch_periodic.CULPRIT)
    return float(top["bytes_per_step"])


@pytest.mark.parametrize("name", PERIODIC)
def test_a_periodic_capture_gives_the_rate_of_one_long_capture_and_names_its_culprit(recorded, name):
    logdir, out = recorded
    truth = out[name]["bytes_per_step"]
    size = name.partition("_")[2]
    h = history(logdir, name)
    # The allocator's series; the capture helper's process-memory series stand beside it (process:main).
    (series,) = [s for s in h["series"] if not s["memory_id"].startswith("process:")]
    assert h["num_captures"] == len(out[name]["traces"]) == 5
    assert series["rate_basis"] == "within_captures" and series["verdict"] == "leak"
    assert series["bytes_per_step"] == pytest.approx(truth, rel=0.05)
    assert series["bytes_per_step"] == pytest.approx(long_rate(out, size), rel=0.05)
    culprit = series["families"][0]
    assert culprit["agrees"] and culprit["label"].startswith(torch_periodic.CULPRIT)
    assert culprit["bytes_per_step"] == pytest.approx(truth, rel=0.05)  # the headline and the family table agree
    assert series["unexplained"] is None and "unexplained" not in h["reason"]
    assert culprit["label"] in h["reason"]
    # Never chained: each capture's heap begins with whatever the process's earlier profiling left uncounted (the
    # long capture before it, in the same process), but what each kept within its window is its own.
    captures = series["captures"]
    for c in captures:
        assert c["measure_bytes"] == pytest.approx(truth * torch_periodic.WINDOW, rel=0.05)
    assert series["hours_to_oom"] is None  # within captures of a profiled heap, its level is not known: no forecast
