"""Snapshots in a logdir: each PyTorch memory snapshot a capture of its folder's run, found by its first bytes."""

from __future__ import annotations

import os
import pickle

import pytest

import tb_leakfinder
from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.base import Companions
from tb_leakfinder.read.formats.registry import format_of
from tb_leakfinder.read.formats.torch_snapshot.format import HOST, TORCH_SNAPSHOT, snapshot_stem
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder
from tb_leakfinder.views import cli

MIB = 1 << 20
STACK = [("/home/me/train.py", 14, "train_step"), ("/home/me/train.py", 30, "<module>")]


def _snapshot(path, buffers: int = 1) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    b = SnapshotBuilder()
    for k in range(buffers):
        b.alloc(0x1000 * (k + 1), MIB, STACK, time_us=k)
    return str(b.write(path))


def test_the_format_sniffs_snapshot_pickles_by_their_first_bytes(tmp_path):
    path = _snapshot(tmp_path / "memory_snapshot.pickle")
    assert format_of(path) is TORCH_SNAPSHOT
    assert TORCH_SNAPSHOT.sniff(_snapshot(tmp_path / "rank0.pkl"))
    assert TORCH_SNAPSHOT.host_name("rank0_memory_snapshot.pickle") == HOST == "memory_snapshot"
    (tmp_path / "weights.pickle").write_bytes(pickle.dumps({"layer": [1.0, 2.0]}, protocol=4))
    (tmp_path / "old.pickle").write_bytes(pickle.dumps({"segments": []}, protocol=0))
    (tmp_path / "text.pickle").write_bytes(b"segments device_traces")
    for name in ("weights.pickle", "old.pickle", "text.pickle", "absent.pickle"):
        assert not TORCH_SNAPSHOT.sniff(str(tmp_path / name)), name
    assert not TORCH_SNAPSHOT.sniff(str(tmp_path / "memory_snapshot.json"))
    assert snapshot_stem("iter_10.pickle") == "iter_10" and snapshot_stem("a.pkl") == "a"
    assert not isinstance(TORCH_SNAPSHOT, Companions)
    with pytest.raises(NotFoundError, match="PyTorch memory snapshots hold no compiled programs"):
        registry.module(TORCH_SNAPSHOT, {}, "jit_f(1)", path)


def test_a_folder_of_snapshots_is_a_run_of_captures_in_the_order_taken(tmp_path):
    for step in (300, 20, 100):
        _snapshot(tmp_path / "job" / "memory" / f"snapshot_step_{step}.pickle")
    (tmp_path / "job" / "memory" / "config.pickle").write_bytes(pickle.dumps({"lr": 0.1}, protocol=4))
    _snapshot(tmp_path / "unnumbered" / "b.pickle")
    _snapshot(tmp_path / "unnumbered" / "a.pickle")
    os.utime(tmp_path / "unnumbered" / "b.pickle", ns=(10**18, 10**18))  # b taken first
    os.utime(tmp_path / "unnumbered" / "a.pickle", ns=(10**18 + 1, 10**18 + 1))
    runs = discovery.discover(str(tmp_path))
    assert [r.name for r in runs] == [
        "job/memory/snapshot_step_20",
        "job/memory/snapshot_step_100",
        "job/memory/snapshot_step_300",
        "unnumbered/b",
        "unnumbered/a",
    ]
    run = runs[0]
    assert run.session_dir == str(tmp_path / "job" / "memory")
    assert run.hosts == {HOST: str(tmp_path / "job" / "memory" / "snapshot_step_20.pickle")}
    assert discovery.find_run(runs, "unnumbered/a") is runs[-1]


def test_paths_the_cli_takes(tmp_path, capsys):
    path = _snapshot(tmp_path / "snaps" / "memory_snapshot.pickle", buffers=3)
    (run,) = discovery.runs_for_path(path)
    assert (run.name, run.session_dir, run.hosts) == ("memory_snapshot", str(tmp_path / "snaps"), {HOST: path})
    (folder,) = discovery.runs_for_path(str(tmp_path / "snaps"))
    assert folder.hosts == run.hosts
    with pytest.raises(LeakfinderError, match=r"no such logdir, .* or \.pickle file"):
        discovery.runs_for_path(str(tmp_path / "missing.pickle"))
    report = tb_leakfinder.analyze(path, cache=False)
    (host,) = report["runs"][0]["hosts"]
    (allocator,) = host["allocators"]
    assert (allocator["memory_id"], allocator["never_freed_bytes"]) == ("cuda:0", 3 * MIB)
    assert allocator["families"][0]["where"] == "train.py:14 in train_step"
    assert cli.main(["report", path, "--no-cache"]) == 0
    assert "train.py:14 in train_step" in capsys.readouterr().out


def test_the_cli_says_which_snapshot_would_run_code(tmp_path, capsys):
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(b"\x80\x02}X\x08\x00\x00\x00segmentscos\nsystem\n.")  # a dict, then GLOBAL os.system
    assert cli.main(["report", str(path), "--no-cache"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{path}: not a readable PyTorch memory snapshot (it needs the class or function 'os.system'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("live", [1, 3])
def test_a_snapshot_of_one_moment_counts_its_live_blocks_as_buffers_everywhere(tmp_path, capsys, live):
    # Each block of a snapshot is one buffer (a device memory profile's sample groups several: "buffer group").
    b = SnapshotBuilder()
    b.snapshot["device_traces"] = [[]]
    blocks = [(0x1000 + k * MIB, MIB, MIB, "active_allocated", STACK) for k in range(live)]
    b.segment(0x1000, blocks)
    path = str(b.write(tmp_path / "memory_snapshot.pickle"))
    (host,) = tb_leakfinder.analyze(path, cache=False)["runs"][0]["hosts"]
    assert host["one_moment"] and host["format_hints"]["live_entry"] == "buffer"
    (allocator,) = host["allocators"]
    counted = "1 live buffer" if live == 1 else f"{live} live buffers"
    assert allocator["reason"].startswith(f"A snapshot: {counted} holding {live} MiB at one moment")
    assert cli.main(["report", path, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"live at this moment: {live} MiB in {counted.replace('live ', '')}\n" in out
    assert "group" not in out
