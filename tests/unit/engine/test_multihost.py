"""A run with many hosts: read and analysed in parallel, with the same report as host after host."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.xplane import reader
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session

HOSTS = 64


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logdir = tmp_path_factory.mktemp("multihost")
    builders = {}
    for h in range(HOSTS):
        # Every fourth host leaks; the others keep only weights and a bounded cache.
        leak = 1 << 20 if h % 4 == 0 else 0
        builders[f"host{h:02d}"], _ = synthesize_training(
            num_events=3_000, steps=10, allocators=("GPU_0_bfc",), leak_bytes_per_step=leak, hostname=f"host{h:02d}", seed=h
        )
    (path, *_) = write_session(logdir, "train", "session", builders)
    return Path(path).parent


def test_hosts_in_parallel_give_the_serial_report(session):
    serial = Engine.for_path(str(session), workers=1)
    parallel = Engine.for_path(str(session), workers=4)
    assert parallel.workers == 4
    report = parallel.report()
    assert report == serial.report()
    assert parallel.computations == serial.computations == HOSTS
    (run,) = report["runs"]
    assert [h["host"] for h in run["hosts"]] == [f"host{h:02d}" for h in range(HOSTS)]
    leaking = [h["host"] for h in run["hosts"] if h["verdict"] == "leak"]
    assert leaking == [f"host{h:02d}" for h in range(0, HOSTS, 4)]
    assert run["verdict"] == "leak"


def test_the_pool_reads_hosts_concurrently(session, monkeypatch):
    """With workers > 1, hosts are read at the same time: pairs of reads meet at a barrier."""
    active, most = 0, 0
    lock = threading.Lock()
    gate = threading.Barrier(2, timeout=10)
    read_host = reader.read_host

    def counting_read(path: str, host: str):
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        gate.wait()  # the first two hosts meet here, which only concurrent reads can do
        try:
            return read_host(path, host)
        finally:
            with lock:
                active -= 1

    monkeypatch.setattr("tb_leakfinder.read.formats.xplane.reader.read_host", counting_read)
    engine = Engine.for_path(str(session), workers=2)
    hosts = engine.report()["runs"][0]["hosts"]
    assert len(hosts) == HOSTS and most == 2


def test_a_broken_host_is_named_and_the_others_still_analyse(session, tmp_path):
    broken = tmp_path / "session"
    broken.mkdir()
    for name in ("host00", "host01", "host02"):
        (broken / f"{name}.xplane.pb").write_bytes((session / f"{name}.xplane.pb").read_bytes())
    (broken / "host01.xplane.pb").write_bytes((session / "host01.xplane.pb").read_bytes()[:-7])
    engine = Engine.for_path(str(broken), workers=3)
    run = engine.run("session")
    hosts = {h["host"]: h for h in engine.report()["runs"][0]["hosts"]}
    bad = hosts["host01"]
    assert bad["verdict"] == "inconclusive" and bad["allocators"] == []
    assert "incomplete or corrupt profile" in bad["error"] and str(broken / "host01.xplane.pb") in bad["error"]
    assert bad["reason"] == f"Not analysed: {bad['error']}"
    assert hosts["host00"]["allocators"] and hosts["host02"]["allocators"] and "error" not in hosts["host00"]
    # Asked for by name, the broken host is an error of its own.
    with pytest.raises(LeakfinderError, match="incomplete or corrupt profile"):
        engine.run_report(run, "host01")
    (broken / "host00.xplane.pb").write_bytes(b"")
    (broken / "host02.xplane.pb").write_bytes(b"\xff")
    with pytest.raises(LeakfinderError):  # nothing readable: the run itself is bad input
        Engine.for_path(str(broken)).report()
