"""The disk cache: a restart answers from it without decoding; what it cannot trust, it rewrites."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tb_leakfinder import disk_cache
from tb_leakfinder.disk_cache import DiskCache
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.lifetimes import STATUS_NAMES
from tb_leakfinder.read import files
from tb_leakfinder.read.xspace import read_host
from tb_leakfinder.service import Engine, HostResult
from tb_leakfinder.views import cli
from tests.demo import DEMO_LOGS, demo_xplane
from tests.plugin_client import PREFIX, make_client
from tests.synthetic import synthesize_training, write_session
from tests.trees import assert_same


def _no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: str, host: str) -> None:
        raise AssertionError(f"{path} was decoded, not served from the disk cache")

    monkeypatch.setattr("tb_leakfinder.service.read_host", refuse)


def _write_hosts(logdir: Path, hosts: int, events: int = 4_000) -> list[str]:
    builders = {}
    for h in range(hosts):
        leak = (1 << 20) * (h % 2)
        builders[f"host{h}"], _ = synthesize_training(
            num_events=events, steps=8, allocators=("GPU_0_bfc",), leak_bytes_per_step=leak, hostname=f"host{h}", seed=h
        )
    return write_session(logdir, "train", "session", builders)


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


def test_the_report_alone_reads_only_the_report_member(tmp_path, monkeypatch):
    paths = _write_hosts(tmp_path / "logs", 3)
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
def test_an_entry_that_cannot_be_trusted_is_ignored_and_rewritten(tmp_path, corruption):
    (path,) = _write_hosts(tmp_path / "logs", 1)
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


def test_a_touched_profile_is_analysed_again_into_the_same_entry(tmp_path):
    (path,) = _write_hosts(tmp_path / "logs", 1)
    cache = DiskCache(str(tmp_path / "cache"))
    Engine.for_path(path, disk=cache).report()
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    engine = Engine.for_path(path, disk=cache)
    engine.report()
    assert engine.analyses == 1 and len(list(Path(cache.folder).glob("*.npz"))) == 1
    assert Engine.for_path(path, disk=cache).analyses == 0


def test_an_hlo_file_xprof_writes_later_makes_the_stored_analysis_stale(tmp_path):
    """XProf writes a session's `.hlo_proto.pb` files when the Profile tab first opens it; they join the analysis."""
    (path,) = _write_hosts(tmp_path / "logs", 1)
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


def test_a_corrupt_profile_keeps_its_error_entry(tmp_path, monkeypatch):
    paths = _write_hosts(tmp_path / "logs", 2)
    Path(paths[1]).write_bytes(Path(paths[1]).read_bytes()[:-9])
    cache = DiskCache(str(tmp_path / "cache"))
    expected = Engine.for_path(str(tmp_path / "logs"), disk=cache).report()
    assert "error" in expected["runs"][0]["hosts"][1]
    _no_decoding(monkeypatch)
    assert Engine.for_path(str(tmp_path / "logs"), disk=cache).report() == expected


def _folder_bytes(cache: DiskCache) -> int:
    return sum(p.stat().st_size for p in Path(cache.folder).iterdir() if p.name.endswith(disk_cache.SUFFIX))


def test_the_folder_is_bounded_least_recently_used_first(tmp_path):
    paths = _write_hosts(tmp_path / "logs", 3)
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


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_a_read_only_logdir_is_never_written(tmp_path, capsys):
    logdir = tmp_path / "logs"
    _write_hosts(logdir, 2)
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


def test_the_cli_uses_the_cache_unless_told_not_to(tmp_path, monkeypatch, capsys):
    (path,) = _write_hosts(tmp_path / "logs", 1)
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
    monkeypatch.delenv(disk_cache.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.default_dir() == str(tmp_path / "tb_leakfinder")
    monkeypatch.setenv(disk_cache.ENV_DIR, str(tmp_path / "elsewhere"))
    assert disk_cache.default_dir() == str(tmp_path / "elsewhere")
    with pytest.raises(LeakfinderError, match="inside the logdir"):
        DiskCache.for_logdir(str(tmp_path / "a" / "b"), 1 << 20, str(tmp_path / "a"))


def test_a_cache_folder_inside_the_logdir_leaves_tensorboard_in_memory_only(tmp_path, caplog):
    _write_hosts(tmp_path / "logs", 1)
    before = _tree(tmp_path / "logs")
    client, plugin = make_client(str(tmp_path / "logs"), leakfinder_cache_dir=str(tmp_path / "logs" / "cache"))
    assert plugin.engine.disk is None and "inside the logdir" in caplog.text
    assert _get(client, "report?run=train/session")["runs"][0]["hosts"][0]["host"] == "host0"
    assert _tree(tmp_path / "logs") == before
    _, plugin = make_client(str(tmp_path / "logs"), leakfinder_cache_dir=str(tmp_path / "c"), leakfinder_cache_dir_gb=0)
    assert plugin.engine.disk is None  # 0 GiB turns it off
