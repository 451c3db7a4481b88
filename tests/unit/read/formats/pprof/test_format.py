"""Snapshots in a logdir: each `.prof` file one session of its folder's TensorBoard run, in the order taken."""

from __future__ import annotations

import gzip
import os
import re

import pytest

import tb_leakfinder
from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.base import Companions, StaticModules
from tb_leakfinder.read.formats.common.file_sessions import step_of
from tb_leakfinder.read.formats.pprof.format import HOST, PPROF, snapshot_stem
from tb_leakfinder.read.formats.registry import format_of
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tb_leakfinder.views import cli
from tests.support.demo import demo_xplane

MIB = 1 << 20
STACK = [("/home/me/train.py", "make_batch", 12, 14), ("/home/me/train.py", "<module>", 1, 30)]


def _snapshot(path, buffers: int = 1) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    b = PprofBuilder()
    for _ in range(buffers):
        b.sample(MIB, STACK)
    return str(b.write(path))


def test_the_format_sniffs_prof_files_by_name():
    assert format_of("/logs/memory_profiles/step_3.prof") is PPROF
    assert PPROF.host_name("step_3.prof") == HOST == "memory_profile"
    for name in ("x.prof.gz", ".prof", ".pb", "x.xplane.pb", "x.hlo_proto.pb", "prof"):
        assert not PPROF.sniff(name) and PPROF.host_name(name) is None
    assert not isinstance(PPROF, Companions) and not isinstance(PPROF, StaticModules)
    with pytest.raises(NotFoundError, match="JAX device memory profiles hold no compiled programs"):
        registry.module(PPROF, {}, "jit_f(1)", "/logs/a.prof")


def test_pb_and_pb_gz_files_are_profiles_by_their_bytes(tmp_path):
    profile = PprofBuilder()
    profile.sample(MIB, STACK)
    gzipped_xspace = gzip.compress(demo_xplane("tf_leak").read_bytes())
    files = {
        "step_2.pb": profile.to_gzip(),
        "step_3.pb.gz": profile.to_gzip(),
        "model.pb": b"\x08\x01\x12\x04main",  # a saved model's graph: a protobuf, not gzip
        "graph.pb.gz": gzipped_xspace,  # gzip of another protobuf, whose first field is a large message
        "notes.pb.gz": gzip.compress(b"some text"),
        "cut.pb.gz": gzip.compress(b"\n\x04\x08\x01"),  # a sample type cut short
        "empty.pb": b"",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    found = {name for name in files if PPROF.sniff(str(tmp_path / name))}
    assert found == {"step_2.pb", "step_3.pb.gz"}
    assert not PPROF.sniff(str(tmp_path / "missing.pb"))
    xplane = tmp_path / "plugins_like" / "h.xplane.pb"
    xplane.parent.mkdir()
    xplane.write_bytes(profile.to_gzip())  # even a profile's bytes under XProf's name
    assert not PPROF.sniff(str(xplane))
    runs = discovery.discover(str(tmp_path))
    assert [(r.name, r.hosts) for r in runs] == [
        ("step_2", {HOST: str(tmp_path / "step_2.pb")}),
        ("step_3", {HOST: str(tmp_path / "step_3.pb.gz")}),
    ]
    (run,) = discovery.runs_for_path(str(tmp_path / "step_3.pb.gz"))
    assert run.name == "step_3"
    with pytest.raises(LeakfinderError, match="no such logdir"):
        discovery.runs_for_path(str(tmp_path / "model.pb"))
    (host,) = tb_leakfinder.analyze(str(tmp_path / "step_2.pb"), cache=False)["runs"][0]["hosts"]
    assert host["format"] == "pprof" and host["allocators"][0]["heap_end_bytes"] == MIB


@pytest.mark.parametrize(
    ("name", "step"),
    [("step_120.prof", 120), ("mem_120.prof", 120), ("120.prof", 120), ("/a/b/run7_step_0042.prof", 42), ("memory.prof", None)],
)
def test_the_step_a_name_ends_in(name, step):
    assert step_of(name, snapshot_stem) == step


def test_snapshots_are_ordered_by_step_else_by_mtime(tmp_path):
    paths = [_snapshot(tmp_path / n) for n in ("step_100.prof", "step_20.prof", "step_3.prof", "mem_20.prof")]
    ordered = PPROF.session_order(paths)
    assert [os.path.basename(p) for p in ordered] == ["step_3.prof", "mem_20.prof", "step_20.prof", "step_100.prof"]
    unnumbered = [_snapshot(tmp_path / n) for n in ("b.prof", "a.prof", "step_1.prof")]
    for k, path in enumerate(reversed(unnumbered)):  # step_1 oldest, then a, then b
        os.utime(path, ns=(10**18 + k, 10**18 + k))
    assert [os.path.basename(p) for p in PPROF.session_order(unnumbered)] == ["step_1.prof", "a.prof", "b.prof"]
    assert PPROF.session_order([*unnumbered[:1], str(tmp_path / "gone.prof")])[0].endswith("gone.prof")  # vanished: first
    assert PPROF.session_order([]) == []


def test_discovery_lists_each_snapshot_as_a_session_of_its_folder(tmp_path):
    for step in (100, 20, 3):
        _snapshot(tmp_path / "memory_profiles" / f"step_{step}.prof")
    _snapshot(tmp_path / "top.prof")
    _snapshot(tmp_path / "job" / "mem_5.prof")
    (tmp_path / "job" / "plugins" / "profile" / "2026_12_01").mkdir(parents=True)
    (tmp_path / "job" / "plugins" / "profile" / "2026_12_01" / "h.xplane.pb").write_bytes(demo_xplane("tf_leak").read_bytes())
    _snapshot(tmp_path / "job" / "plugins" / "profile" / "2026_12_01" / "stray.prof")  # not a session: inside XProf's
    _snapshot(tmp_path / "job" / "plugins" / "other" / "x.prof")
    (tmp_path / "folder.prof").mkdir()  # a folder, not a snapshot
    runs = discovery.discover(str(tmp_path))
    assert [r.name for r in runs] == [
        "top",
        "job/mem_5",
        "job/2026_12_01",
        "memory_profiles/step_3",
        "memory_profiles/step_20",
        "memory_profiles/step_100",
    ]
    by_name = {r.name: r for r in runs}
    snapshot = by_name["memory_profiles/step_20"]
    assert snapshot.session_dir == str(tmp_path / "memory_profiles")
    assert snapshot.hosts == {"memory_profile": str(tmp_path / "memory_profiles" / "step_20.prof")}
    assert snapshot.companions == ()
    assert by_name["job/2026_12_01"].hosts == {"h": str(tmp_path / "job/plugins/profile/2026_12_01/h.xplane.pb")}
    assert discovery.find_run(runs, "job/mem_5") is by_name["job/mem_5"]


def test_paths_the_cli_takes(tmp_path):
    path = _snapshot(tmp_path / "memory_profiles" / "step_7.prof", buffers=3)
    (run,) = discovery.runs_for_path(path)
    assert (run.name, run.session_dir, run.hosts) == ("step_7", str(tmp_path / "memory_profiles"), {HOST: path})
    (folder,) = discovery.runs_for_path(str(tmp_path / "memory_profiles"))
    assert folder.name == "step_7" and folder.hosts == run.hosts
    with pytest.raises(LeakfinderError, match="no such profile file"):
        discovery.runs_for_path(str(tmp_path / "missing.prof"))
    report = tb_leakfinder.analyze(path, cache=False)
    (host,) = report["runs"][0]["hosts"]
    assert host["host"] == HOST
    (allocator,) = host["allocators"]
    assert (allocator["memory_id"], allocator["never_freed_bytes"]) == ("cpu:0", 3 * MIB)
    assert allocator["families"][0]["where"] == "train.py:14 in make_batch"


def test_an_older_jax_profile_with_executables_reads_as_a_moment(tmp_path, capsys):
    # Older JAX: no device label; a compiled executable's code and constants among the buffers.
    b = PprofBuilder()
    b.sample(2 * MIB, STACK, device="")
    b.sample(MIB, STACK[1:], device="")
    b.sample(3 * MIB, STACK, device="", kind="executable")
    b.sample(5 * MIB, STACK, device="gpu:0", kind="executable")
    path = str(b.write(tmp_path / "step_4.prof"))
    (host,) = tb_leakfinder.analyze(path, cache=False)["runs"][0]["hosts"]
    assert host["one_moment"] and host["warnings"] == []
    (allocator,) = host["allocators"]  # the executables are no allocator of their own
    assert (allocator["memory_id"], allocator["allocator"], allocator["warnings"]) == ("device unknown", "device unknown", [])
    assert allocator["heap_end_bytes"] == 3 * MIB
    assert host["compiled_programs"] == [
        {"device": "device unknown", "count": 1, "bytes": 3 * MIB},
        {"device": "gpu:0", "count": 1, "bytes": 5 * MIB},
    ]
    assert cli.main(["report", path, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "allocator device unknown: inconclusive\n" in out
    assert "live at this moment: 3 MiB in 2 buffer groups" in out
    assert "families (count and bytes: their live buffers, in tensor bytes)" in out
    programs = "3 MiB in 1 program on device unknown; 5 MiB in 1 program on gpu:0"
    assert f"compiled programs (their code and constants, not buffers): {programs}" in out
    assert not re.search("never freed|never-freed|deallocations|memory id|no memory id", out)
    page = tmp_path / "report.md"
    assert cli.main(["report", path, "--no-cache", "--markdown", str(page)]) == 0
    assert "compiled programs (their code and constants, not buffers): 3 MiB in 1 program on device unknown" in page.read_text()


@pytest.mark.parametrize("data", [b"", b"not gzip", PprofBuilder().to_gzip()[:-4]], ids=["empty", "not_gzip", "truncated"])
def test_the_cli_says_which_file_is_unreadable(tmp_path, capsys, data):
    path = tmp_path / "step_1.prof"
    path.write_bytes(data)
    assert cli.main(["report", str(path), "--no-cache"]) == cli.EXIT_BAD_INPUT
    assert f"{path}: not a readable device memory profile (" in capsys.readouterr().err


def test_remote_snapshots_through_gfile_fsspec():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    b = PprofBuilder()
    b.sample(2 * MIB, STACK)
    for step in (10, 2):
        with fs.open(f"/remote_snaps/train/memory_profiles/step_{step}.prof", "wb") as f:
            f.write(b.to_gzip())
    try:
        runs = discovery.discover("memory://remote_snaps")
        assert [r.name for r in runs] == ["train/memory_profiles/step_2", "train/memory_profiles/step_10"]
        (run,) = tb_leakfinder.analyze("memory://remote_snaps/train/memory_profiles/step_10.prof", cache=False)["runs"]
        assert run["hosts"][0]["allocators"][0]["never_freed_bytes"] == 2 * MIB
    finally:
        fs.rm("/remote_snaps", recursive=True)
