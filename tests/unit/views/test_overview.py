"""The pod overview: GET overview and the CLI's table, one row per host and allocator, worst first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_leakfinder.analyses.verdict import SEVERITY
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.store import disk_cache
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tb_leakfinder.views import cli
from tb_leakfinder.wire import run_overview_json

HOSTS = 8
LEAKING = {1: 3 << 20, 4: 1 << 20, 6: 2 << 20}  # host -> planted leak per step
ROW_KEYS = {
    "host",
    "memory_id",
    "allocator",
    "verdict",
    "bytes_per_step",
    "leak_bytes_per_step",
    "peak_bytes_in_use",
    "memory_capacity_bytes",
    "step_source",
    "error",
}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pod")
    builders = {}
    for h in range(HOSTS):
        builders[f"host{h}"], _ = synthesize_training(
            num_events=3_000, steps=10, allocators=("GPU_0_bfc", "cpu_bfc"), leak_bytes_per_step=LEAKING.get(h, 0), seed=h
        )
    paths = write_session(root, "train", "session", builders)
    Path(paths[7]).write_bytes(b"\x0a\x05trunc")  # unreadable host
    return root


def test_the_route_lists_every_host_and_allocator_worst_first(logdir):
    client, _ = make_client(str(logdir))
    response = client.get(f"{PREFIX}/overview?run=train/session")
    body = json.loads(response.get_data())
    assert response.status_code == 200, body
    assert body["run"] == "train/session" and body["num_hosts"] == HOSTS
    report = Engine.for_path(str(logdir)).report()["runs"][0]
    leaking = {h["host"] for h in report["hosts"] if h["verdict"] == "leak"}
    assert {f"host{h}" for h in LEAKING} <= leaking
    assert body["num_leaking_hosts"] == len(leaking)
    rows = body["rows"]
    assert all(set(r) == ROW_KEYS for r in rows)
    assert len(rows) == 2 * (HOSTS - 1) + 1  # two allocators per readable host, one row for the unreadable one
    severities = [SEVERITY[r["verdict"]] for r in rows]
    assert severities == sorted(severities, reverse=True)
    leak_rows = [r for r in rows if r["verdict"] == "leak"]
    growth = [r["leak_bytes_per_step"] for r in leak_rows]
    assert growth == sorted(growth, reverse=True) and all(rate > 0 for rate in growth)
    assert rows[0]["host"] == "host1" and rows[0]["allocator"] == "GPU_0_bfc"  # the biggest planted leak
    (broken,) = [r for r in rows if r["host"] == "host7"]
    assert broken["error"] and broken["allocator"] is None and broken["verdict"] == "inconclusive"
    assert body == run_overview_json(report)


@pytest.mark.parametrize(
    ("query", "status"),
    [("run=nope", 404), ("", 400), ("run=train/session&host=host0", 400)],
)
def test_bad_arguments_are_refused(logdir, query, status):
    client, _ = make_client(str(logdir))
    assert client.get(f"{PREFIX}/overview?{query}").status_code == status


def test_a_restarted_tensorboard_answers_the_overview_from_the_cache(logdir, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    client, _ = make_client(str(logdir), leakfinder_cache_dir=str(cache))
    first = client.get(f"{PREFIX}/overview?run=train/session").get_data()
    monkeypatch.setattr("tb_leakfinder.read.formats.xplane.reader.read_host", lambda *a: pytest.fail("decoded after a restart"))
    monkeypatch.setattr(DiskCache, "load", lambda *a: pytest.fail("the whole entry was loaded for the overview"))
    members: list[str] = []
    read_member = disk_cache._json_member
    monkeypatch.setattr(disk_cache, "_json_member", lambda zf, name: members.append(name) or read_member(zf, name))
    client, plugin = make_client(str(logdir), leakfinder_cache_dir=str(cache))
    assert client.get(f"{PREFIX}/overview?run=train/session").get_data() == first
    assert plugin.engine.analyses == 0
    # Each readable host's summary alone; the unreadable one's error from its report member.
    assert sorted(members) == sorted([disk_cache.SUMMARY] * HOSTS + [disk_cache.REPORT])


def test_the_cli_report_prints_the_table_for_a_multi_host_run(logdir, capsys):
    cli.main(["report", str(logdir), "--no-cache"])
    out = capsys.readouterr().out
    overview = run_overview_json(Engine.for_path(str(logdir)).report()["runs"][0])
    assert f" {overview['num_leaking_hosts']} of {HOSTS} hosts leak" in out
    table = out.split(" hosts leak\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0].split() == ["host", "allocator", "verdict", "leak", "heap", "trend", "peak", "steps", "from"]
    assert [line.split()[0] for line in table[1:]] == [r["host"] for r in overview["rows"]]
    cli.main(["report", str(next(logdir.rglob("host0.xplane.pb"))), "--no-cache"])
    assert "hosts leak" not in capsys.readouterr().out  # one host: no table
