"""The disk cache: a restart answers from it without decoding; what it cannot trust, it rewrites."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder import wire
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import Engine, HostResult
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.lifetimes import STATUS_NAMES
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.xplane.reader import read_host
from tb_leakfinder.store import disk_cache, folder_index, location
from tb_leakfinder.store.codec import CodecError
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tb_leakfinder.views import cli
from tb_leakfinder.wire.shape import conforms
from tests.support.demo import DEMO_LOGS, demo_xplane
from tests.support.trees import assert_same


def _no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: str, host: str) -> None:
        raise AssertionError(f"{path} was decoded, not served from the disk cache")

    monkeypatch.setattr("tb_leakfinder.read.formats.xplane.reader.read_host", refuse)


def _get(client, route: str) -> dict:
    response = client.get(f"{PREFIX}/{route}")
    body = json.loads(response.get_data())
    assert response.status_code == 200, body
    return body


def test_a_restarted_tensorboard_answers_from_the_cache_without_decoding(tmp_path, monkeypatch):
    logdir = tmp_path / "logs"
    shutil.copytree(DEMO_LOGS / "tf_leak", logdir / "tf_leak")
    cache = tmp_path / "cache"
    (run_name,) = [r.name for r in Engine.for_logdir(str(logdir)).runs()]
    routes = [
        f"report?run={run_name}",
        f"timeline?run={run_name}&points=200",
        f"buffers?run={run_name}&limit=50&sort=bytes",
        f"buffers?run={run_name}&status={STATUS_NAMES[1]}&offset=3",
    ]
    client, plugin = make_client(str(logdir), leakfinder_cache_dir=str(cache))
    first = [_get(client, route) for route in routes]
    modules = first[0]["runs"][0]["hosts"][0]["modules"]
    if modules:
        routes.append(f"module?run={run_name}&module={modules[0]['name']}")
        first.append(_get(client, routes[-1]))
    assert plugin.engine.analyses == 1 and len(list(cache.glob("*.npz"))) == 1

    _no_decoding(monkeypatch)
    client, plugin = make_client(str(logdir), leakfinder_cache_dir=str(cache))  # TensorBoard restarted
    assert [_get(client, route) for route in routes] == first
    assert plugin.engine.analyses == 0 and plugin.engine.disk.hits == 1


def test_the_report_alone_reads_only_the_report_member(write_pod, tmp_path, monkeypatch):
    paths = write_pod(tmp_path / "logs", 3)
    cache = DiskCache(str(tmp_path / "cache"))
    expected = Engine.for_path(str(tmp_path / "logs"), disk=cache).report()
    _no_decoding(monkeypatch)
    monkeypatch.setattr(DiskCache, "load", lambda *a: pytest.fail("the whole entry was loaded for a report"))
    engine = Engine.for_path(str(tmp_path / "logs"), disk=cache)
    assert engine.report() == expected and engine.analyses == 0
    assert [h["verdict"] == "leak" for h in expected["runs"][0]["hosts"]] == [False, True, False]
    assert len(paths) == 3


def _entry_path(cache: DiskCache, path: str) -> Path:
    return Path(cache.path_for(files.identity(path)))


def _other_version(entry: Path, cache: DiskCache, path: str) -> None:
    """An entry of another analysis version, found at this version's name."""
    other = DiskCache(cache.folder)
    other.version = "0" * 16
    data = entry.read_bytes().replace(cache.version.encode(), other.version.encode())
    entry.write_bytes(data)


CORRUPTIONS = {
    "truncated": lambda entry, cache, path: entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2]),
    "bit flipped in the arrays": lambda entry, cache, path: _flip(entry, entry.stat().st_size // 2),
    "bit flipped in the report": lambda entry, cache, path: _flip(entry, entry.read_bytes().index(b'"verdict"') + 3),
    "not a zip": lambda entry, cache, path: entry.write_bytes(b"not an npz"),
    "empty": lambda entry, cache, path: entry.write_bytes(b""),
    "other version": _other_version,
}


def _flip(entry: Path, offset: int) -> None:
    data = bytearray(entry.read_bytes())
    data[offset] ^= 0x10
    entry.write_bytes(bytes(data))


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_an_entry_that_cannot_be_trusted_is_ignored_and_rewritten(write_pod, tmp_path, corruption):
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = DiskCache(str(tmp_path / "cache"))
    engine = Engine.for_path(path, disk=cache)
    expected = engine.report()
    original = engine.host(engine.runs()[0], None)
    entry = _entry_path(cache, path)
    CORRUPTIONS[corruption](entry, cache, path)

    again = Engine.for_path(path, disk=cache)
    assert_same(original.unwrap(), again.host(again.runs()[0], None).unwrap())  # the timeline and buffers' view
    assert again.report() == expected
    assert again.analyses == 1  # recomputed, not trusted
    reread = DiskCache(cache.folder).load(files.identity(path), HostResult)  # rewritten: whole again
    assert reread is not None
    assert_same(original.unwrap(), reread.unwrap())


def test_a_touched_profile_is_analysed_again_into_the_same_entry(write_pod, tmp_path):
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = DiskCache(str(tmp_path / "cache"))
    Engine.for_path(path, disk=cache).report()
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    engine = Engine.for_path(path, disk=cache)
    engine.report()
    assert engine.analyses == 1 and len(list(Path(cache.folder).glob("*.npz"))) == 1
    assert Engine.for_path(path, disk=cache).analyses == 0


def test_an_hlo_file_xprof_writes_later_makes_the_stored_analysis_stale(write_pod, tmp_path):
    """XProf writes a session's `.hlo_proto.pb` files when the Profile tab first opens it; they join the analysis."""
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = DiskCache(str(tmp_path / "cache"))
    before = Engine.for_path(path, disk=cache).report()
    assert before["runs"][0]["hosts"][0]["modules"] == []
    name, data = sorted(read_host(str(demo_xplane("jax_clean")), "host").hlo_protos.items())[0]
    Path(path).with_name(f"{name}.hlo_proto.pb").write_bytes(data)
    engine = Engine.for_path(path, disk=cache)
    after = engine.report()
    assert engine.analyses == 1
    assert [m["name"] for m in after["runs"][0]["hosts"][0]["modules"]] == [name]
    again = Engine.for_path(path, disk=cache)
    assert again.report() == after and again.analyses == 0


def test_a_corrupt_profile_keeps_its_error_entry(write_pod, tmp_path, monkeypatch):
    paths = write_pod(tmp_path / "logs", 2)
    Path(paths[1]).write_bytes(Path(paths[1]).read_bytes()[:-9])
    cache = DiskCache(str(tmp_path / "cache"))
    expected = Engine.for_path(str(tmp_path / "logs"), disk=cache).report()
    assert "error" in expected["runs"][0]["hosts"][1]
    _no_decoding(monkeypatch)
    assert Engine.for_path(str(tmp_path / "logs"), disk=cache).report() == expected


def test_each_member_is_loaded_alone_as_what_it_holds(write_pod, tmp_path):
    """A host's report, its overview rows and its history's points, each read from its own member, are what the
    analysis made of them; an unreadable host's members each give its error and no value."""
    paths = write_pod(tmp_path / "logs", 2)
    Path(paths[1]).write_bytes(Path(paths[1]).read_bytes()[:-9])
    cache = DiskCache(str(tmp_path / "cache"))
    Engine.for_path(str(tmp_path / "logs"), disk=cache).report()
    made = Engine.for_path(str(tmp_path / "logs"))  # in memory: what the entry's members must give back
    (run,) = made.runs()
    good, bad = (next(h for h in run.hosts if run.host_path(h)[1] == path) for path in paths)
    result = made.host(run, good)
    report, rows, points = (load(run.identity(good)) for load in (cache.load_report, cache.load_overview_rows, cache.load_points))
    assert report is not None and report.error is None and report.value == result.json()
    assert rows is not None and rows.error is None and rows.value == made.host_rows(run, good)
    assert points is not None and points.value is not None and points.value == result.points()
    for load in (cache.load_report, cache.load_overview_rows, cache.load_points):
        entry = load(run.identity(bad))
        assert entry is not None and entry.value is None and entry.error is not None and entry.error.status == 422


def _folder_bytes(cache: DiskCache) -> int:
    total = 0
    for item in os.scandir(cache.folder):
        with contextlib.suppress(FileNotFoundError):  # evicted by another process meanwhile
            total += item.stat().st_size if item.name.endswith(disk_cache.ENTRY_SUFFIX) else 0
    return total


def test_the_folder_is_bounded_least_recently_used_first(write_pod, tmp_path):
    paths = write_pod(tmp_path / "logs", 3)
    probe = DiskCache(str(tmp_path / "probe"))
    Engine.for_path(paths[0], disk=probe).report()
    size = _folder_bytes(probe)
    cache = DiskCache(str(tmp_path / "cache"), max_bytes=int(size * 2.5))  # room for two entries
    for p in paths[:2]:
        Engine.for_path(p, disk=cache).report()
    first = _entry_path(cache, paths[0])
    os.utime(first, (1, 1))
    os.utime(_entry_path(cache, paths[1]), (0, 0))
    assert cache.load_report(files.identity(paths[0])) is not None  # paths[0] is now the most recent
    Engine.for_path(paths[2], disk=cache).report()
    assert first.exists() and _entry_path(cache, paths[2]).exists()
    assert not _entry_path(cache, paths[1]).exists()
    assert _folder_bytes(cache) <= cache.max_bytes


def _identity(k: int) -> files.FileIdentity:
    return files.FileIdentity(f"/profiles/{k}.xplane.pb", f"/profiles/{k}.xplane.pb", 1, 1)


def test_filling_the_folder_stats_each_entry_a_bounded_number_of_times(tmp_path, monkeypatch):
    """A scan when the process first writes, then only as many more as doublings of the folder: the stats per write
    stay bounded however many entries there are (a scan per write made filling the folder quadratic)."""
    scanned = []
    scandir = os.scandir
    monkeypatch.setattr(folder_index.os, "scandir", lambda folder: scanned.append(len(items := list(scandir(folder)))) or items)
    cache = DiskCache(str(tmp_path / "cache"), max_bytes=1 << 30)
    writes = 3000
    for k in range(writes):
        cache.store_bytes(_identity(k), b"x" * 1000)
    assert len(scanned) <= 2 + math.log2(writes / folder_index.RESCAN_WRITES)
    assert sum(scanned) < 2 * writes
    assert cache.estimate == _folder_bytes(cache) == writes * 1000
    cache.store_bytes(_identity(0), b"x" * 10)  # a rewrite replaces its entry's bytes
    assert cache.estimate == _folder_bytes(cache) == (writes - 1) * 1000 + 10


def _entries(folder: str) -> list[Path]:
    return sorted(p for p in Path(folder).iterdir() if p.name.endswith(disk_cache.ENTRY_SUFFIX))


def _another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DiskCaches made from now on know the folders only as another process would: from the folder and its index."""
    monkeypatch.setattr(disk_cache, "_INDEXES", {})


def test_writers_sharing_a_folder_keep_it_bounded(tmp_path, monkeypatch):
    folder = str(tmp_path / "cache")
    other = DiskCache(folder, max_bytes=10_000)
    _another_process(monkeypatch)
    one = DiskCache(folder, max_bytes=10_000)
    for k in range(8):
        other.store_bytes(_identity(k), b"x" * 1000)
    for k in range(8, 12):  # its first write scans and counts the other's entries; its third crosses the bound
        one.store_bytes(_identity(k), b"x" * 1000)
    assert _folder_bytes(one) <= one.max_bytes
    other.store_bytes(_identity(12), b"x" * 1000)  # the other learns of the first's writes and evictions
    assert other.estimate == _folder_bytes(other) <= other.max_bytes
    one.store_bytes(_identity(13), b"x" * 20_000)  # past the bound on its own: kept, and everything else evicted
    assert _entries(folder) == [Path(one.path_for(_identity(13)))]
    assert one.estimate == _folder_bytes(one) == 20_000


_CONCURRENT_WRITER = """
import sys
from tb_leakfinder.read import files
from tb_leakfinder.store.codec import CodecError
from tb_leakfinder.store.disk_cache import DiskCache
cache = DiskCache(sys.argv[1], max_bytes=int(sys.argv[2]))
for k in range(int(sys.argv[3]), int(sys.argv[4])):
    cache.store_bytes(files.FileIdentity(f"/p/{k}", f"/p/{k}", 1, 1), b"x" * (1000 + k % 7))
"""


def test_the_index_survives_concurrent_writers(tmp_path):
    """Two processes fill a folder at once, past its bound: it stays bounded, and each knows what the folder holds."""
    folder, bound = str(tmp_path / "cache"), 150_000
    writer = subprocess.Popen([sys.executable, "-c", _CONCURRENT_WRITER, folder, str(bound), "0", "600"])
    cache = DiskCache(folder, max_bytes=bound)
    for k in range(600, 1200):
        cache.store_bytes(_identity(k), b"x" * (1000 + k % 5))
        assert _folder_bytes(cache) <= bound + 2 * 1010  # at most each writer's entry in flight over the bound
    assert writer.wait(timeout=120) == 0
    cache.store_bytes(_identity(1200), b"x" * 1000)  # reads what the other announced meanwhile
    assert cache.estimate == _folder_bytes(cache) <= bound
    survivors = {p.name for p in _entries(folder)}
    assert any(cache.path_for(_identity(k)).endswith(n) for k in (1199, 1200) for n in survivors)


def test_the_index_is_rebuilt_from_the_folder_on_start(tmp_path, monkeypatch):
    folder = str(tmp_path / "cache")
    first = DiskCache(folder)
    for k in range(5):
        first.store_bytes(_identity(k), b"x" * 1000)
    os.unlink(first.path_for(_identity(0)))  # changed behind the index's back: a writer killed before its line
    Path(first.path_for(_identity(9))).write_bytes(b"y" * 300)
    (Path(folder) / folder_index.INDEX).write_bytes(b"")
    _another_process(monkeypatch)
    restarted = DiskCache(folder)
    restarted.store_bytes(_identity(5), b"x" * 1000)
    assert restarted.estimate == _folder_bytes(restarted) == 5 * 1000 + 300
    assert folder_index.HEADER_PREFIX in (Path(folder) / folder_index.INDEX).read_bytes()  # a fresh index in place


def _hex_lines(*names: str) -> bytes:
    return b"".join(n.encode() + b"\n" for n in names)


# Index files another process, a bug or an attacker could leave: each is rebuilt (or set aside) with no error, and
# deletes nothing but least recently used entries of the folder.
HOSTILE_INDEXES = {
    "garbage": lambda folder, names: (folder / ".index").write_bytes(b"\x00\xff" * 999),
    "lines of another length": lambda folder, names: (folder / ".index").write_bytes(
        folder_index.HEADER_PREFIX + b"0" * 32 + b"\n" + b"../../victim\n" * 50
    ),
    "names of files that are not entries": lambda folder, names: _append(folder, _hex_lines("f" * 40, "e" * 40) * 100),
    "too long to read": lambda folder, names: _append(folder, _hex_lines(names[0]) * 300_000),
    "a folder": lambda folder, names: ((folder / ".index").unlink(), (folder / ".index").mkdir()),
    "a link to /dev/zero": lambda folder, names: ((folder / ".index").unlink(), (folder / ".index").symlink_to("/dev/zero")),
    "a FIFO": lambda folder, names: ((folder / ".index").unlink(), os.mkfifo(folder / ".index")),
    "a link to a file outside": lambda folder, names: (
        (folder / ".index").unlink(),
        (folder / ".index").symlink_to(folder.parent / "victim"),
    ),
}


def _append(folder: Path, data: bytes) -> None:
    with open(folder / ".index", "ab") as f:
        f.write(data)


@pytest.mark.parametrize("hostile", sorted(HOSTILE_INDEXES))
def test_a_hostile_index_is_never_trusted(tmp_path, monkeypatch, hostile):
    folder = tmp_path / "cache"
    victim = tmp_path / "victim"
    victim.write_bytes(b"v" * 100_000)
    cache = DiskCache(str(folder), max_bytes=10_000)
    for k in range(6):
        cache.store_bytes(_identity(k), b"x" * 1000)
        os.utime(cache.path_for(_identity(k)), ns=(k * 10**9, k * 10**9))
    (folder / ("f" * 40 + disk_cache.ENTRY_SUFFIX)).symlink_to(victim)  # named like an entry: not one, never deleted
    (folder / ("e" * 40 + ".keep")).write_bytes(b"k" * 100_000)
    names = [Path(cache.path_for(_identity(k))).name[:40] for k in range(6)]
    HOSTILE_INDEXES[hostile](folder, names)
    for restarted in (False, True):
        if restarted:
            _another_process(monkeypatch)
            cache = DiskCache(str(folder), max_bytes=10_000)
        for k in range(6, 12):
            cache.store_bytes(_identity(k + 6 * restarted), b"x" * 1000)
        regular = sum(p.stat().st_size for p in _entries(str(folder)) if not p.is_symlink())
        assert cache.estimate == regular <= cache.max_bytes
    assert victim.read_bytes() == b"v" * 100_000 and (folder / ("e" * 40 + ".keep")).exists()
    assert (folder / ("f" * 40 + disk_cache.ENTRY_SUFFIX)).is_symlink()
    assert [p.name for p in _entries(str(folder)) if not p.is_symlink()] == sorted(
        Path(cache.path_for(_identity(k))).name for k in range(8, 18)
    )


def test_eviction_takes_the_least_recently_used_whoever_used_it(tmp_path, monkeypatch):
    """An entry another process read since this one last looked is kept: the index's times are checked before a
    deletion."""
    folder = str(tmp_path / "cache")
    cache = DiskCache(folder, max_bytes=5_000)
    for k in range(5):
        cache.store_bytes(_identity(k), b"x" * 1000)
        os.utime(cache.path_for(_identity(k)), ns=(10**9 * (k + 1),) * 2)
    _another_process(monkeypatch)
    reader = DiskCache(folder, max_bytes=5_000)
    assert reader.load_report(_identity(0)) is None  # not an entry of this profile's: a miss, not a use
    os.utime(cache.path_for(_identity(1)))  # another process read it: now the most recent
    order = []
    for k in range(5, 9):
        cache.store_bytes(_identity(k), b"x" * 1000)
        order += [j for j in range(5) if j not in order and not os.path.exists(cache.path_for(_identity(j)))]
    assert order == [0, 2, 3, 4]
    assert os.path.exists(cache.path_for(_identity(1)))


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_a_read_only_logdir_is_never_written(write_pod, tmp_path, capsys):
    logdir = tmp_path / "logs"
    write_pod(logdir, 2)
    for p in [logdir, *logdir.rglob("*")]:
        p.chmod(stat.S_IREAD | stat.S_IEXEC if p.is_dir() else stat.S_IREAD)
    before = _tree(logdir)
    try:
        cache = tmp_path / "cache"
        assert cli.main(["report", str(logdir), "--cache-dir", str(cache)]) == 0
        assert cli.main(["report", str(logdir), "--cache-dir", str(cache)]) == 0
        assert _tree(logdir) == before and len(list(cache.glob("*.npz"))) == 2
        # Inside the logdir is refused, before anything is written.
        assert cli.main(["report", str(logdir), "--cache-dir", str(logdir / "cache")]) == 2
        assert "inside the logdir" in capsys.readouterr().err
        assert _tree(logdir) == before
    finally:
        for p in [logdir, *logdir.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_the_cli_uses_the_cache_unless_told_not_to(write_pod, tmp_path, monkeypatch, capsys):
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = str(tmp_path / "cache")
    assert cli.main(["report", path, "--json", "--cache-dir", cache]) == 0
    expected = json.loads(capsys.readouterr().out)
    _no_decoding(monkeypatch)
    assert cli.main(["report", path, "--json", "--cache-dir", cache]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert cli.main(["check", path, "--cache-dir", cache]) != 1  # host0 does not leak; the verdict comes from the entry
    with pytest.raises(AssertionError, match="was decoded"):
        cli.main(["report", path, "--cache-dir", cache, "--no-cache"])


def test_the_default_folder_is_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(location.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert location.default_dir() == str(tmp_path / "tb_leakfinder")
    monkeypatch.setenv(location.ENV_DIR, str(tmp_path / "elsewhere"))
    assert location.default_dir() == str(tmp_path / "elsewhere")
    with pytest.raises(LeakfinderError, match="inside the logdir"):
        DiskCache.for_logdir(str(tmp_path / "a" / "b"), 1 << 20, str(tmp_path / "a"))


def test_a_cache_folder_inside_the_logdir_leaves_tensorboard_in_memory_only(write_pod, tmp_path, caplog):
    write_pod(tmp_path / "logs", 1)
    before = _tree(tmp_path / "logs")
    client, plugin = make_client(str(tmp_path / "logs"), leakfinder_cache_dir=str(tmp_path / "logs" / "cache"))
    assert plugin.engine.disk is None and "inside the logdir" in caplog.text
    assert _get(client, "report?run=train/session")["runs"][0]["hosts"][0]["host"] == "host0"
    assert _tree(tmp_path / "logs") == before
    _, plugin = make_client(str(tmp_path / "logs"), leakfinder_cache_dir=str(tmp_path / "c"), leakfinder_cache_dir_gb=0)
    assert plugin.engine.disk is None  # 0 GiB turns it off


# Hostile entries: what someone else who can write a shared cache folder may leave at an entry's path.


def _members(entry: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(entry) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _rewrite(entry: Path, replace: dict[str, bytes], deflate: tuple[str, ...] = ()) -> None:
    """The entry with some members replaced: its identity stays right, so only the checks past it refuse it."""
    members = {**_members(entry), **replace}
    with zipfile.ZipFile(entry, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data, zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)


def _meta(entry: Path, member: str) -> dict:
    return json.loads(_members(entry)[member])


def _without_verdict(entry: Path) -> None:
    meta = _meta(entry, "report.json")
    del meta["report"]["verdict"]
    _rewrite(entry, {"report.json": json.dumps(meta).encode()})


def _summary_without_host(entry: Path) -> None:
    meta = _meta(entry, "summary.json")
    del meta["report"][0]["host"]
    _rewrite(entry, {"summary.json": json.dumps(meta).encode()})


def _previous_layout(entry: Path) -> None:
    """An entry as ENTRY_FORMAT 4 wrote it, at this version's name: no points member, its identity of format 4."""
    members = _members(entry)
    del members[disk_cache.POINTS]
    identity = json.loads(members[disk_cache.IDENTITY])
    members[disk_cache.IDENTITY] = json.dumps({**identity, "format": 4}).encode()
    with zipfile.ZipFile(entry, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npy_header(shape: tuple[int, ...]) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "|u1", "fortran_order": False, "shape": shape})
    return out.getvalue()


def _deflated_2_gib(entry: Path) -> None:
    members = _members(entry)
    with zipfile.ZipFile(entry, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            if name != "data.npy":
                zf.writestr(name, data)
        info = zipfile.ZipInfo("data.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = 1  # zeros deflate 230:1 either way; level 1 writes them fastest
        with zf.open(info, "w", force_zip64=True) as f:
            f.write(_npy_header((2 << 30,)))
            block = bytes(64 << 20)
            for _ in range(32):
                f.write(block)


def _array_key(entry: Path, *path: str) -> str:
    """The data key of an array of the stored tree: `path` walks dataclass fields ('0' for a list's first item)."""
    node = _meta(entry, "tree.json")["fields"]
    for step in path:
        node = node["$l"][int(step)] if "$l" in node else node.get("$d", node)[step]
    return node["$a"]


def _layout(entry: Path, change) -> None:
    tree = _meta(entry, "tree.json")
    change(tree["layout"], entry)
    _rewrite(entry, {"tree.json": json.dumps(tree).encode()})


def _shorter_column(layout: dict, entry: Path) -> None:
    item = layout[_array_key(entry, "analysis", "allocators", "0", "buffers", "op")]
    item[2] = [item[2][0] - 1]


def _string_out_of_range(entry: Path) -> None:
    offset, stored, *_ = _meta(entry, "tree.json")["layout"][_array_key(entry, "analysis", "allocators", "0", "buffers", "op")]
    data = bytearray(_members(entry)["data.npy"])
    header = len(_npy_header((len(data),)))  # the same header length for any size of this order
    largest = np.array([np.iinfo(stored).max], stored)  # stored narrower, or not: past the few strings either way
    data[header + offset : header + offset + largest.itemsize] = largest.tobytes()
    _rewrite(entry, {"data.npy": bytes(data)})


def _sparse(size: int, tail: bytes = b""):
    def make(entry: Path) -> None:
        with open(entry, "wb") as f:
            f.truncate(size - len(tail))
            f.seek(size - len(tail))
            f.write(tail)

    return make


def _replace_with(make):
    def replace(entry: Path) -> None:
        entry.unlink()
        make(entry)

    return replace


HOSTILE = {
    "a symlink to /dev/zero": _replace_with(lambda e: e.symlink_to("/dev/zero")),
    "a FIFO": _replace_with(lambda e: os.mkfifo(e)),
    "a folder": _replace_with(lambda e: e.mkdir()),
    "24 GiB (sparse)": _sparse(24 << 30),
    "2 GiB of junk": _sparse(2 << 30, np.random.default_rng(19).bytes(1 << 16) + b"PK\x05\x06" + bytes(18)),
    "JSON nested 200,000 deep (report)": lambda e: _rewrite(e, {"report.json": b"[" * 200_000 + b"]" * 200_000}),
    "JSON nested 200,000 deep (tree)": lambda e: _rewrite(e, {"tree.json": b'{"fields":' * 200_000 + b"}" * 200_000}),
    "an .npy declaring 1 TiB": lambda e: _rewrite(e, {"data.npy": _npy_header((1 << 40,)) + bytes(4096)}),
    "a report missing verdict": _without_verdict,
    "overview rows missing host": _summary_without_host,
    "a deflated 2 GiB member": _deflated_2_gib,
    "a column shorter than the others": lambda e: _layout(e, _shorter_column),
    "a string index out of range": _string_out_of_range,
    "a compressed report": lambda e: _rewrite(e, {}, deflate=("report.json",)),
    "a member too many": lambda e: _rewrite(e, {"extra": b"{}"}),
    "the previous layout (format 4: no points member)": _previous_layout,
}


def _slow_ones(names: list[str]) -> list[str | pytest.ParameterSet]:
    """Inflating 2 GiB costs seconds of CPU: the fast loop leaves that case to tests/run.sh."""
    return [pytest.param(name, marks=pytest.mark.slow) if name == "a deflated 2 GiB member" else name for name in names]


@pytest.mark.parametrize("hostile", _slow_ones(list(HOSTILE)))
def test_a_hostile_entry_is_a_miss_logged_once_and_rewritten(write_pod, tmp_path, hostile, caplog):
    paths = write_pod(tmp_path / "logs", 2)
    cache = DiskCache(str(tmp_path / "cache"))
    expected = Engine.for_path(str(tmp_path / "logs"), disk=cache).report()
    original = Engine.for_path(paths[0]).host(Engine.for_path(paths[0]).runs()[0], None)
    entry = _entry_path(cache, paths[0])
    HOSTILE[hostile](entry)

    engine = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache.folder))
    started = time.monotonic()
    assert engine.report() == expected
    run = engine.runs()[0]
    assert queries.overview(engine, run) == queries.overview(Engine.for_path(str(tmp_path / "logs")), run)
    assert_same(original.unwrap(), engine.host(run, "host0").unwrap())
    elapsed = time.monotonic() - started
    assert engine.analyses == 1 and elapsed < 30
    warnings = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1 and str(entry) in warnings[0] and paths[0] in warnings[0], warnings
    if hostile != "a folder":  # a folder cannot be renamed over: that entry stays a miss
        assert stat.S_ISREG(os.lstat(entry).st_mode) and entry.stat().st_size < 1 << 20
        again = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache.folder))
        assert again.report() == expected and again.analyses == 0


def _peak_rss_cli(*args: str) -> tuple[subprocess.CompletedProcess, float, int]:
    """The real CLI in its own process: (its outcome, seconds, its peak RSS in KiB)."""
    code = "import resource, sys; from tb_leakfinder.views import cli; c = cli.main(sys.argv[1:]);"
    code += " print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(c)"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    return done, time.monotonic() - started, int(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "hostile", _slow_ones(["a symlink to /dev/zero", "a FIFO", "a deflated 2 GiB member", "an .npy declaring 1 TiB"])
)
def test_the_cli_misses_a_hostile_entry_in_the_time_and_memory_of_a_plain_miss(write_pod, tmp_path, hostile):
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = str(tmp_path / "cache")
    # --csv reads the whole entry (its buffers), not the report member alone.
    args = ("report", path, "--json", "--cache-dir", cache, "--csv", str(tmp_path / "csv"))
    plain, plain_s, plain_kib = _peak_rss_cli(*args)
    assert plain.returncode == 0, plain.stderr
    HOSTILE[hostile](_entry_path(DiskCache(cache), path))
    done, seconds, kib = _peak_rss_cli(*args)
    assert done.returncode == 0 and json.loads(done.stdout) == json.loads(plain.stdout), done.stderr
    assert "cannot be used" in done.stderr and "Traceback" not in done.stderr
    assert kib < plain_kib + (64 << 10), (kib, plain_kib)  # within 64 MiB of a plain miss's peak
    assert seconds < plain_s + 10, (seconds, plain_s)
    print(f"{hostile}: {seconds:.2f} s, peak RSS {kib >> 10} MiB; plain miss {plain_s:.2f} s, {plain_kib >> 10} MiB")


def test_tensorboard_answers_a_request_over_a_fifo_entry_at_once(write_pod, tmp_path, caplog):
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = tmp_path / "cache"
    HOSTILE["a FIFO"](_touch(_entry_path(DiskCache(str(cache)), path)))
    client, plugin = make_client(str(tmp_path / "logs"), leakfinder_cache_dir=str(cache))
    started = time.monotonic()
    body = _get(client, "report?run=train/session")
    assert time.monotonic() - started < 30 and body["runs"][0]["hosts"][0]["host"] == "host0"
    assert "cannot be used (not a regular file)" in caplog.text
    assert stat.S_ISREG(os.lstat(_entry_path(plugin.engine.disk, path)).st_mode)


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def test_entries_with_zip64_end_records_are_read(write_pod, tmp_path, monkeypatch):
    """An entry past 4 GiB ends in zip64 records: made here by lowering the limit at which the writer uses them."""
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1 << 10)
    (path,) = write_pod(tmp_path / "logs", 1)
    cache = DiskCache(str(tmp_path / "cache"))
    expected = Engine.for_path(path, disk=cache).report()
    assert b"PK\x06\x07" in _entry_path(cache, path).read_bytes()[-64:]
    _no_decoding(monkeypatch)
    engine = Engine.for_path(path, disk=DiskCache(cache.folder))
    assert engine.report() == expected and engine.host(engine.runs()[0], None).error is None


def _pad_to(path: str, size: int) -> None:
    """An unknown XSpace field appended (decoders skip it) so that the file is `size` bytes."""
    data = Path(path).read_bytes()
    payload = size - len(data) - 4  # a two-byte tag and a two-byte length
    assert 128 <= payload < 1 << 14
    Path(path).write_bytes(data + bytes([0xA2, 0x06, 0x80 | payload & 0x7F, payload >> 7]) + bytes(payload))


def test_relative_paths_in_two_folders_never_share_an_entry(tmp_path, monkeypatch, capsys):
    """Equal relative paths, sizes and mtimes, other profiles: each working folder gets its own report."""
    leaks = {}
    for name, leak in (("a", 1 << 20), ("b", 0)):
        builder, _ = synthesize_training(num_events=4_000, steps=8, allocators=("GPU_0_bfc",), leak_bytes_per_step=leak, seed=1)
        (leaks[name],) = write_session(tmp_path / name / "logs", "train", "session", {"host0": builder})
    _pad_to(leaks["b"], os.path.getsize(leaks["a"]))
    os.utime(leaks["b"], ns=(os.stat(leaks["a"]).st_atime_ns, os.stat(leaks["a"]).st_mtime_ns))
    cache = str(tmp_path / "cache")
    verdicts = []
    for name in ("a", "b", "a"):
        monkeypatch.chdir(tmp_path / name)
        assert cli.main(["report", "logs", "--json", "--cache-dir", cache]) == 0
        assert json.loads(capsys.readouterr().out) == Engine.for_path("logs").report()
        verdicts.append(Engine.for_path("logs").report()["runs"][0]["verdict"])
    assert verdicts == ["leak", "inconclusive", "leak"]
    assert len(list(Path(cache).glob("*.npz"))) == 2


def test_every_report_the_analyses_write_has_the_shape_an_entry_is_checked_for(tmp_path):
    """The shapes follow wire/schema.py: demo runs (with programs and folded small buffers), three allocators, an error."""
    builder, _ = synthesize_training(num_events=4_000, steps=8, allocators=("GPU_0_bfc", "GPU_1_bfc", "cpu_bfc"))
    write_session(tmp_path, "pod", "session", {"host0": builder, "bad": builder})
    (tmp_path / "pod" / "plugins" / "profile" / "session" / "bad.xplane.pb").write_bytes(b"\x0a\xff")
    hosts = [h for path in (str(DEMO_LOGS), str(tmp_path)) for r in Engine.for_path(path).report()["runs"] for h in r["hosts"]]
    assert any(m["whole_program_buffers"][-1]["reason"] == "small" for h in hosts for m in h["modules"])
    assert any(len(h["allocators"]) == 3 for h in hosts) and any("error" in h for h in hosts)
    for host in hosts:
        assert conforms(host, wire.HOST_SHAPE), host["host"]
        assert conforms(wire.overview_host_rows(host), wire.OVERVIEW_ROWS_SHAPE)
        assert not conforms({k: v for k, v in host.items() if k != "steps"}, wire.HOST_SHAPE)


def test_integer_columns_are_stored_narrower_and_read_back_as_they_were():
    """Each integer array as its distance from its smallest value, in the narrowest type that holds it: a constant
    column takes no bytes, addresses near 2**64 and negative numbers come back exact, in their own type."""
    n = 1000
    arrays = {
        "constant": np.full(n, 7, np.int32),
        "allocator": np.zeros(n, np.int64),
        "small": np.arange(n, dtype=np.int64) % 200 - 100,
        "bytes": np.arange(n, dtype=np.int64) * 4096,
        "addresses": np.uint64(2**64 - 2**40) + np.arange(n, dtype=np.uint64) * np.uint64(256),
        "times": np.arange(n, dtype=np.int64) * 10**10,  # a range past 2**32: stored as it is
        "floats": np.linspace(0, 1, n),
        "flags": np.arange(n) % 2 == 0,
        "short": np.array([2**40, -(2**40)], np.int64),  # too few to be worth it
    }
    layout, data = disk_cache._pack(arrays)
    back = disk_cache._unpack(data, layout)
    for key, array in arrays.items():
        assert back[key].dtype == array.dtype and np.array_equal(back[key], array), key
    stored = {key: item[1] for key, item in layout.items()}
    assert stored["constant"] == stored["allocator"] == disk_cache.CONSTANT
    assert (stored["small"], stored["bytes"], stored["addresses"]) == ("|u1", "<u4", "<u4")
    assert stored["times"] == "<i8" and stored["short"] == "<i8"
    assert data.nbytes < sum(a.nbytes for a in arrays.values()) / 2


@pytest.mark.parametrize(
    "change",
    [
        lambda item: item.__setitem__(4, 2**70),  # a base its type cannot hold
        lambda item: item.__setitem__(4, "0"),
        lambda item: item.__setitem__(1, "<f8"),  # stored as what no narrowing makes
        lambda item: item.__setitem__(3, "<f8"),
        lambda item: item.__setitem__(2, [10**6]),  # more items than the data member holds
    ],
)
def test_a_crafted_narrowed_layout_is_refused(change):
    layout, data = disk_cache._pack({"bytes": np.arange(1000, dtype=np.int64) * 4096})
    change(layout["bytes"])
    with pytest.raises(CodecError):
        disk_cache._unpack(data, layout)
