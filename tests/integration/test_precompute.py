"""precompute fills the disk cache: on local processes and on a real local Ray cluster, with the same entries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_leakfinder.engine.engine import Engine, HostResult
from tb_leakfinder.engine.precompute import analyze_task, precompute, ray_task, tasks_for
from tb_leakfinder.errors import WorkerDiedError
from tb_leakfinder.read import discovery, files
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tb_leakfinder.views import cli
from tests.support.demo import ROOT
from tests.support.trees import assert_same
from tests.support.unreadable import with_bad_links

HOSTS = 5


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pod")
    builders = {}
    for h in range(HOSTS):
        leak = 1 << 20 if h in (1, 3) else 0
        builders[f"host{h}"], _ = synthesize_training(
            num_events=6_000,
            steps=10,
            allocators=("GPU_0_bfc", "GPU_1_bfc"),
            leak_bytes_per_step=leak,
            hostname=f"host{h}",
            seed=h,
        )
    paths = write_session(root, "train", "session", builders)
    Path(paths[4]).write_bytes(Path(paths[4]).read_bytes()[:-11])  # a host killed mid-write
    return root


def _tasks(logdir: Path) -> list:
    return tasks_for(discovery.runs_for_path(str(logdir)))


def dying_task(folder: str, max_bytes: int, task) -> str | None:
    """A worker that dies on host2, as one killed by the kernel for its memory would."""
    if task.host == "host2":
        os._exit(9)
    return analyze_task(folder, max_bytes, task)


def dying_ray_task(task, version: str):
    if task.host == "host2":
        os._exit(9)
    return ray_task(task, version)


def _reference(logdir: Path) -> dict:
    return Engine.for_path(str(logdir)).report()


def _same_entries(a: DiskCache, b: DiskCache, logdir: Path) -> None:
    for task in _tasks(logdir):
        x, y = a.load(task.identity, HostResult), b.load(task.identity, HostResult)
        assert x is not None and y is not None, task.host
        assert_same(x.analysis, y.analysis, task.host)
        assert x.json() == y.json() if x.error is None else x.error.message == y.error.message


def test_local_precompute_then_every_report_comes_from_the_cache(logdir, tmp_path, monkeypatch):
    disk = DiskCache(str(tmp_path / "cache"))
    outcomes = precompute(_tasks(logdir), disk, "local", workers=2)
    assert sorted(o.task.host for o in outcomes) == [f"host{h}" for h in range(HOSTS)]
    assert all(o.status == "analysed" for o in outcomes)
    assert [o.task.host for o in outcomes if o.error] == ["host4"]
    expected = _reference(logdir)
    monkeypatch.setattr("tb_leakfinder.read.formats.xplane.reader.read_host", lambda *a: pytest.fail("decoded after precompute"))
    engine = Engine.for_path(str(logdir), disk=disk)
    assert engine.report() == expected and engine.analyses == 0
    assert [o.status for o in precompute(_tasks(logdir), disk, "local", workers=2)] == ["cached"] * HOSTS


def test_a_dead_worker_costs_only_its_host_and_a_rerun_resumes(logdir, tmp_path):
    disk = DiskCache(str(tmp_path / "cache"))
    outcomes = {o.task.host: o for o in precompute(_tasks(logdir), disk, "local", workers=2, task_fn=dying_task)}
    assert "worker analysing host 'host2' died" in (outcomes["host2"].error or "")
    assert all(outcomes[h].error is None for h in ("host0", "host1", "host3"))
    (task2,) = [t for t in _tasks(logdir) if t.host == "host2"]
    assert isinstance(disk.load_report(task2.identity).error, WorkerDiedError)
    # TensorBoard, on a copy of that folder, analyses the dead worker's host instead of showing its death.
    shutil.copytree(disk.folder, tmp_path / "copy")
    engine = Engine.for_path(str(logdir), disk=DiskCache(str(tmp_path / "copy")))
    assert engine.report() == _reference(logdir) and engine.analyses == 1

    again = {o.task.host: o for o in precompute(_tasks(logdir), disk, "local", workers=2)}
    assert again["host2"].status == "analysed" and again["host2"].error is None
    assert {h: o.status for h, o in again.items() if h != "host2"} == {f"host{h}": "cached" for h in (0, 1, 3, 4)}
    assert Engine.for_path(str(logdir), disk=disk).report() == _reference(logdir)


def test_two_processes_fill_one_folder_at_once(logdir, tmp_path):
    cache = tmp_path / "shared"
    env = {k: v for k, v in os.environ.items() if k != "TB_LEAKFINDER_NO_CACHE"}
    command = [
        sys.executable,
        "-m",
        "tb_leakfinder.views.cli",
        "precompute",
        str(logdir),
        "--cache-dir",
        str(cache),
        "--workers",
        "1",
    ]
    procs = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err  # host4 cannot be read: both say so
        assert "host host4" in err and f"{HOSTS} hosts in {cache}" in out
    assert sorted(p.name for p in cache.iterdir() if p.name.startswith(".tmp-")) == []
    assert len(list(cache.glob("*.npz"))) == HOSTS
    engine = Engine.for_path(str(logdir), disk=DiskCache(str(cache)))
    assert engine.report() == _reference(logdir) and engine.analyses == 0


def test_ray_engine_without_ray_is_a_clear_error(logdir, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    assert cli.main(["precompute", str(logdir), "--engine", "ray", "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "needs Ray" in err and "pip install 'tb_leakfinder[ray]'" in err and "Traceback" not in err


def _ray_importable() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _ray_importable(), reason="ray is not installed (pip install '.[ray]'); the Ray engine is not tested")
def test_a_local_ray_cluster_gives_the_entries_local_gives(logdir, tmp_path):
    import ray

    local = DiskCache(str(tmp_path / "local"))
    precompute(_tasks(logdir), local, "local", workers=2)
    on_ray = DiskCache(str(tmp_path / "ray"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        outcomes = {o.task.host: o for o in precompute(_tasks(logdir), on_ray, "ray", workers=2, task_fn=dying_ray_task)}
        assert "died" in (outcomes["host2"].error or "") and outcomes["host4"].error
        assert all(outcomes[f"host{h}"].error is None for h in (0, 1, 3))
        again = {o.task.host: o.status for o in precompute(_tasks(logdir), on_ray, "ray", workers=2)}
        assert again == {"host0": "cached", "host1": "cached", "host2": "analysed", "host3": "cached", "host4": "cached"}
    finally:
        ray.shutdown()
    _same_entries(local, on_ray, logdir)
    assert Engine.for_path(str(logdir), disk=on_ray).report() == _reference(logdir)
    assert files.exists(str(logdir))


def test_a_dangling_and_a_looping_link_are_their_hosts_errors_and_the_good_trace_is_cached(tmp_path, capsys):
    good, gone, loop = with_bad_links(tmp_path / "logs")
    cache = tmp_path / "cache"
    assert cli.main(["precompute", str(tmp_path / "logs"), "--workers", "1", "--cache-dir", str(cache)]) == cli.EXIT_BAD_INPUT
    out = capsys.readouterr()
    assert "3 hosts in" in out.out and "1 analysed, 0 already cached, 2 not readable" in out.out
    assert str(gone) in out.err and str(loop) in out.err and "Traceback" not in out.err
    entry = DiskCache(str(cache), 1 << 30).load_report(files.identity(str(good)))
    assert entry is not None and entry.error is None and entry.value["verdict"] == "leak"
