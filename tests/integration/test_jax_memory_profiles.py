"""JAX device memory profiles end to end: a real loop on CPU that keeps one array per step and saves a
snapshot every few steps, analysed as a logdir (tb_leakfinder.analyze) and through the CLI.

The program (tests/unit/read/formats/pprof/jax_program.py) runs in a process of its own and writes
`<logdir>/memory_profiles/step_<N>.prof`; without JAX installed the tests skip, unless
TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import tb_leakfinder
from tb_leakfinder.views import cli
from tests.unit.read.formats.pprof import jax_program

STEPS, EVERY = 13, 4  # snapshots after steps 3, 7 and 11: in name order step_11 would come first
# What JAX may hold beside the kept arrays in a snapshot. Measured with JAX 0.10.2 on CPU: nothing (its
# executables hold 0 bytes there, and make_batch's intermediate array is gone before the snapshot); the
# bound leaves room for a small constant or scalar another version keeps.
JAX_EXTRA_BYTES = 64 << 10


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("jax_memory_profiles")
    return path, jax_program.run(path, STEPS, EVERY)


@pytest.fixture(scope="module")
def report(logdir) -> dict:
    return tb_leakfinder.analyze(str(logdir[0]), cache=False)


def test_one_capture_per_file_in_step_order(logdir, report):
    _, written = logdir
    assert [s["step"] for s in written["saved"]] == [3, 7, 11]
    assert [r["run"] for r in report["runs"]] == [f"memory_profiles/step_{s['step']}" for s in written["saved"]]
    for run in report["runs"]:
        (host,) = run["hosts"]
        assert host["host"] == "memory_profile"
        assert host["warnings"] == []


def test_each_snapshot_holds_what_the_program_kept(logdir, report):
    _, written = logdir
    for run, saved in zip(report["runs"], written["saved"], strict=True):
        (allocator,) = run["hosts"][0]["allocators"]
        assert (allocator["memory_id"], allocator["allocator"]) == ("cpu:0", "cpu:0")
        assert allocator["num_deallocations"] == 0
        live = allocator["never_freed_bytes"]
        assert saved["kept_bytes"] <= live <= saved["kept_bytes"] + JAX_EXTRA_BYTES, (live, saved)
        assert saved["kept_bytes"] == (saved["step"] + 1) * jax_program.KEPT_BYTES


def test_the_kept_arrays_are_made_at_make_batch(logdir, report):
    _, written = logdir
    where = written["make_batch"]  # "jax_program.py:<the line that makes the array> in make_batch"
    for run, saved in zip(report["runs"], written["saved"], strict=True):
        (allocator,) = run["hosts"][0]["allocators"]
        kept = [g for g in allocator["families"] if g["where"] == where]
        assert sum(g["chunk_bytes"] for g in kept) == saved["kept_bytes"]
        for family in kept:
            assert family["region"] == "buffer"
            stack = family["site"]["stack"]
            # The user's frames only, innermost first: JAX's own (site-packages) are dropped.
            assert stack[0] == where and stack[1].startswith("jax_program.py:") and stack[1].endswith(" in main")
            assert all(frame.startswith("jax_program.py:") for frame in stack)
        # One snapshot alone tells no growth: it says where to look instead of a verdict over made-up windows.
        assert allocator["verdict"] == "inconclusive" and allocator["reason"].startswith("A snapshot: ")
        assert "in the run's history" in allocator["reason"] and run["hosts"][0]["step_source"]["kind"] == "none"


def test_the_cli_reports_one_snapshot_file(logdir, capsys):
    _, written = logdir
    last = written["saved"][-1]
    assert cli.main(["report", last["path"], "--json", "--no-cache"]) in (cli.EXIT_OK, cli.EXIT_LEAK)
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["run"] == "step_11"
    assert run["hosts"][0]["allocators"][0]["never_freed_bytes"] >= last["kept_bytes"]


def test_a_truncated_snapshot_is_the_project_error_naming_it(logdir, tmp_path, capsys):
    _, written = logdir
    data = Path(written["saved"][0]["path"]).read_bytes()
    for name, broken in (("truncated.prof", data[: len(data) // 2]), ("corrupt.prof", data[:12] + bytes(len(data) - 12))):
        path = tmp_path / name
        path.write_bytes(broken)
        assert cli.main(["report", str(path), "--no-cache"]) == cli.EXIT_BAD_INPUT
        assert f"{path}: not a readable device memory profile (" in capsys.readouterr().err


def test_the_run_history_follows_the_kept_arrays_across_snapshots(logdir, report):
    _, written = logdir
    (history,) = report["histories"]
    assert (history["tb_run"], history["num_captures"]) == ("memory_profiles", 3)
    (series,) = history["series"]
    assert [c["kind"] for c in series["captures"]] == ["one_moment"] * 3
    assert [c["first_step"] for c in series["captures"]] == [3, 7, 11]
    assert series["verdict"] == "leak"
    assert series["bytes_per_step"] == pytest.approx(jax_program.KEPT_BYTES, rel=0.01)
    assert series["families"][0]["where"] == written["make_batch"]


def test_profiles_copied_within_the_same_second_give_no_rate_per_hour_and_say_why(logdir, tmp_path):
    """Issue #30: JAX's device memory profiles carry no time; copied, every mtime is the same. The history gives
    the rates per step and per capture, in step order, and says why there is none per hour."""
    _, written = logdir
    copies = tmp_path / "copies" / "memory_profiles"
    copies.mkdir(parents=True)
    for saved in written["saved"]:
        shutil.copy(saved["path"], copies)
    for path in copies.iterdir():
        os.utime(path, (1_800_000_000, 1_800_000_000))
    (history,) = tb_leakfinder.analyze(str(tmp_path / "copies"), cache=False)["histories"]
    (series,) = history["series"]
    assert [c["first_step"] for c in series["captures"]] == [3, 7, 11]  # step order; by name step_11 comes first
    assert {c["time_source"] for c in series["captures"]} == {"file_mtime"}
    assert series["bytes_per_hour"] is None and series["hours_to_oom"] is None
    assert series["bytes_per_step"] == pytest.approx(jax_program.KEPT_BYTES, rel=0.01)
    assert series["bytes_per_capture"] == pytest.approx(EVERY * jax_program.KEPT_BYTES, rel=0.01)
    assert series["time_note"].startswith("no rate per hour and no forecast: the captures carry no time of their own")
    assert history["verdict"] == "leak" and series["time_note"] in history["reason"]
    assert "per hour" not in history["reason"].replace("no rate per hour", "")
