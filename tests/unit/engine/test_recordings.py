"""The companion file read with its host by the engine: holders on the real TF demo's families, PyTorch traces of
one folder and of several cycles, a bad file that never hides the profile, and both caches missing when the file
changes. The never-freed buffers' addresses come from the test's own pairing of the profile's events."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import tb_leakfinder
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.read.discovery import discover, runs_for_path
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.recordings_builder import companion, companion_path, holder, write_companion
from tb_leakfinder.testing.torch_snapshot_builder import dying_job
from tests.support.demo import demo_capture, demo_run_dir
from tests.support.never_freed import never_freed
from tests.unit.read.formats.torch_trace.trace_files import training, write

SOURCE = "/home/me/capture_tf.py"


@pytest.fixture
def tf_leak(tmp_path) -> Path:
    """A copy of the TF demo's leaking run: its one profile file."""
    shutil.copytree(demo_run_dir("tf_leak"), tmp_path / "tf_leak")
    (profile,) = (tmp_path / "tf_leak").glob("plugins/profile/*/*.xplane.pb")
    return profile


def only_allocator(report: dict) -> tuple[dict, dict]:
    (run,) = report["runs"]
    (host,) = run["hosts"]
    (allocator,) = host["allocators"]
    return host, allocator


def test_a_holder_of_the_demos_leak_is_on_its_family_with_its_count_and_bytes(tf_leak):
    truth = demo_capture("tf_leak")
    live = never_freed(tf_leak)
    leaked = sorted(a for a, (op, _) in live.items() if op == truth["leaked_op"])
    assert len(leaked) == truth["steps"]
    named = leaked[:20]
    document = companion(
        holders=[
            holder("history", named, kind="frame_local", created=f"{SOURCE}:40 in main", count=truth["steps"]),
            holder("model.cache", [leaked[-1]], kind="attribute", type_name="dict"),
        ],
        sources={f"{SOURCE}:40": "history = []"},
    )
    path = write_companion(tf_leak, document)
    host, allocator = only_allocator(tb_leakfinder.analyze(str(tf_leak.parents[3])))
    assert host["recordings_file"] == str(path)
    assert host["holder_search"] == {
        "status": "complete",
        "warning": "",
        "objects_visited": document["holders"]["objects_visited"],
        "elapsed_s": document["holders"]["elapsed_s"],
        "num_holders": 2,
        "unmatched_count": 0,
        "unmatched_bytes": 0,
        "not_in_profile": 0,
        "ambiguous_count": 0,
        "ambiguous_bytes": 0,
    }
    family = allocator["families"][0]
    assert (family["op"], family["kind"], family["count"]) == (truth["leaked_op"], "growing", truth["steps"])
    history, cache = family["holders"]
    assert (history["path"], history["kind"], history["count"], history["all_listed"]) == ("history", "frame_local", 20, False)
    assert history["chunk_bytes"] == sum(live[a][1] for a in named)
    assert (history["created"], history["created_text"]) == (f"{SOURCE}:40 in main", "history = []")
    assert (cache["path"], cache["count"], cache["chunk_bytes"]) == ("model.cache", 1, live[leaked[-1]][1])
    assert all(f["holders"] == [] for f in allocator["families"][1:])
    assert "Held by `history`: list, at least 20 of 25 never-freed buffers" in allocator["reason"]


def _report_without(body: dict, *keys: str) -> dict:
    return {k: v for k, v in body.items() if k not in keys}


BAD = {
    "not JSON": b"not json at all",
    "another format": json.dumps({**companion(), "format": "x"}).encode(),
    "a newer version": json.dumps({**companion(), "version": 99}).encode(),
    "over 1 MB": b" " * ((1 << 20) + 1),
    "a huge number": json.dumps({**companion(), "pid": 10**30}).encode(),
    "deeply nested": b"[" * 100_000,
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_companion_never_hides_the_profile_and_names_itself_in_a_warning(tf_leak, name):
    plain = tb_leakfinder.analyze(str(tf_leak))
    path = write_companion(tf_leak, BAD[name])
    spoiled = tb_leakfinder.analyze(str(tf_leak))
    (host,) = spoiled["runs"][0]["hosts"]
    (warning,) = host["warnings"]
    assert warning.startswith(f"{path}: ") and warning.endswith("; the profile is reported without it")
    (before,) = plain["runs"][0]["hosts"]
    assert _report_without(host, "warnings") == _report_without(before, "warnings")
    assert (host["recordings_file"], host["holder_search"]) == ("", None)


def test_a_companion_that_cannot_even_be_stated_is_a_warning_too(tf_leak):
    path = companion_path(tf_leak)
    path.symlink_to(path.name)  # a link to itself: ELOOP
    (host,) = tb_leakfinder.analyze(str(tf_leak))["runs"][0]["hosts"]
    (warning,) = host["warnings"]
    assert warning.startswith(f"{path}: cannot read the file") and host["verdict"] == "leak"


def _rewrite(path: Path, document: dict) -> None:
    """The file rewritten with new content and a later mtime (as a capture's next window would)."""
    stat = path.stat()
    path.write_text(json.dumps(document))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _holder_paths(engine: Engine) -> list[str]:
    _, allocator = only_allocator(queries.report(engine, None, None))
    return [h["path"] for h in allocator["families"][0]["holders"]]


def test_both_caches_miss_when_the_companion_changes_appears_or_goes(tf_leak, tmp_path):
    leaked = sorted(a for a, (op, _) in never_freed(tf_leak).items() if op == "Mul")
    path = write_companion(tf_leak, companion(holders=[holder("first", leaked)]))
    cache = str(tmp_path / "cache")
    engine = Engine.for_path(str(tf_leak.parents[3]), disk=DiskCache(cache))
    assert _holder_paths(engine) == ["first"]
    assert _holder_paths(engine) == ["first"] and engine.analyses == 1  # from memory
    restarted = Engine.for_path(str(tf_leak.parents[3]), disk=DiskCache(cache))
    assert _holder_paths(restarted) == ["first"] and restarted.analyses == 0  # from disk

    _rewrite(path, companion(holders=[holder("second", leaked)]))
    assert _holder_paths(engine) == ["second"] and engine.analyses == 2  # the memory cache missed
    again = Engine.for_path(str(tf_leak.parents[3]), disk=DiskCache(cache))
    assert _holder_paths(again) == ["second"] and again.analyses == 0  # stored by the first engine's miss

    path.unlink()  # gone after discovery: the host is analysed without it
    assert _holder_paths(engine) == [] and engine.analyses == 3
    path.write_text(json.dumps(companion(holders=[holder("third", leaked)])))
    assert _holder_paths(Engine.for_path(str(tf_leak.parents[3]), disk=DiskCache(cache))) == ["third"]


KEPT_BASE, KEPT_STRIDE = 0x10_0000_0000, 1 << 24  # where trace_files.training keeps each step's output


def test_pytorch_traces_of_one_folder_and_of_a_profilers_cycles_each_read_their_own(tmp_path):
    steps = 12
    kept = [KEPT_BASE + n * KEPT_STRIDE for n in range(steps)]
    one = tmp_path / "one"
    one.mkdir()
    trace = write(one / "w_1.1700000000000.pt.trace.json.gz", training(steps))
    write_companion(trace, companion(holders=[holder("outputs", kept, kind="list")], framework="torch"))
    host, allocator = only_allocator(tb_leakfinder.analyze(str(one)))
    assert host["recordings_file"] == str(companion_path(trace))
    (held,) = allocator["families"][0]["holders"]
    assert (held["path"], held["count"], allocator["families"][0]["count"]) == ("outputs", steps, steps)

    cycles = tmp_path / "cycles"
    cycles.mkdir()
    first = write(cycles / "w_1.1700000000000.pt.trace.json.gz", training(steps))
    second = write(cycles / "w_1.1800000000000.pt.trace.json.gz", training(steps))
    write_companion(second, companion(holders=[holder("outputs", kept[:3], kind="list")], framework="torch"))
    runs = discover(str(cycles))
    assert [r.recordings for r in runs] == [{}, {"w_1": str(companion_path(second))}]
    report = tb_leakfinder.analyze(str(cycles))
    holders = {r["run"]: r["hosts"][0]["allocators"][0]["families"][0]["holders"] for r in report["runs"]}
    assert [[h["count"] for h in found] for found in holders.values()] == [[], [3]]
    # One trace named on its own is read with its own companion too.
    (alone,) = runs_for_path(str(second))
    assert alone.recordings == {"w_1": str(companion_path(second))}
    assert runs_for_path(str(first))[0].recordings == {}


def test_discovery_finds_the_companion_of_a_session_host_and_of_a_snapshot(tf_leak, tmp_path):
    path = write_companion(tf_leak, companion())
    (run,) = discover(str(tf_leak.parents[3]))
    assert run.recordings == {"vm": str(path)}
    assert run.identity("vm").recordings == (str(path), path.stat().st_size, path.stat().st_mtime_ns)
    folder = tmp_path / "snapshots"
    folder.mkdir()
    snapshot = dying_job().write(folder / "step_3.pickle")
    beside = write_companion(snapshot, companion(framework="torch"))
    (found,) = discover(str(folder))
    assert found.recordings == {"memory_snapshot": str(beside)}
    assert runs_for_path(str(snapshot))[0].recordings == {"memory_snapshot": str(beside)}
