"""Run discovery: names as the Profile plugin gives them, through gfile."""

from __future__ import annotations

import pytest

import tb_leakfinder
from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import discovery
from tests.support.demo import demo_xplane


def _touch(path, data: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_names_hosts_and_cache_files(tmp_path):
    _touch(tmp_path / "plugins/profile/s_root/h.xplane.pb")
    _touch(tmp_path / "a/b/plugins/profile/s1/host0.xplane.pb")
    _touch(tmp_path / "a/b/plugins/profile/s1/host1.xplane.pb")
    _touch(tmp_path / "a/b/plugins/profile/s1/host1.trace.json.gz")
    _touch(tmp_path / "a/b/plugins/profile/s1/.cached_tools.json")
    _touch(tmp_path / "a/b/plugins/profile/s1/cache_version.txt")
    _touch(tmp_path / "a/b/plugins/profile/s1/jit_f(1).hlo_proto.pb")
    _touch(tmp_path / "a/b/plugins/profile/s2/host0.xplane.pb")
    _touch(tmp_path / "a/b/plugins/profile/empty_session/notes.txt")
    _touch(tmp_path / "c/events.out.tfevents.1")
    runs = {r.name: sorted(r.hosts) for r in discovery.discover(str(tmp_path))}
    assert runs == {"s_root": ["h"], "a/b/s1": ["host0", "host1"], "a/b/s2": ["host0"]}


def test_find_run_matches_names_only(tmp_path):
    _touch(tmp_path / "job/plugins/profile/s1/h.xplane.pb")
    runs = discovery.discover(str(tmp_path))
    assert discovery.find_run(runs, "job/s1").session_dir.endswith("s1")
    for name in ("job/s1/../s1", "../job/s1", str(tmp_path / "job/plugins/profile/s1"), "job/s1\x00"):
        with pytest.raises(NotFoundError):
            discovery.find_run(runs, name)


def test_paths_the_cli_takes(tmp_path):
    path = demo_xplane("tf_leak")
    (by_file,) = discovery.runs_for_path(str(path))
    (by_session,) = discovery.runs_for_path(str(path.parent))
    assert by_file.hosts == by_session.hosts == {path.name.removesuffix(".xplane.pb"): str(path)}
    with pytest.raises(LeakfinderError, match="no profiles found"):
        discovery.runs_for_path(str(tmp_path))
    with pytest.raises(LeakfinderError, match="no such"):
        discovery.runs_for_path(str(tmp_path / "missing"))


def test_remote_logdir_through_gfile_fsspec():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    data = demo_xplane("tf_leak").read_bytes()
    with fs.open("/remote_logdir/train/plugins/profile/2026_11_29/worker0.xplane.pb", "wb") as f:
        f.write(data)
    try:
        (run,) = tb_leakfinder.analyze("memory://remote_logdir")["runs"]
        assert run["run"] == "train/2026_11_29"
        assert run["hosts"][0]["host"] == "worker0"
        assert run["verdict"] == "leak"
    finally:
        fs.rm("/remote_logdir", recursive=True)
