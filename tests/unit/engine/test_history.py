"""The history of a TensorBoard run's captures, through the engine, the route, the report JSON and the disk cache."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from tb_leakfinder import wire
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.engine.history import several_captures, tensorboard_run
from tb_leakfinder.read import files
from tb_leakfinder.store import disk_cache
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.history_runs import slow_leak_run
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.wire.shape import conforms


@pytest.fixture
def logdir(tmp_path):
    root = tmp_path / "logs"
    leak = slow_leak_run(root, "job", captures=5)
    slow_leak_run(root, "clean", captures=5, leak_bytes_per_step=0)
    slow_leak_run(root, "once", captures=1)
    return root, leak


def test_a_slow_leak_across_captures_is_found_with_its_rates(logdir):
    root, leak = logdir
    h = Engine.for_path(str(root)).history("job")
    assert h["verdict"] == "leak" and h["num_captures"] == 5
    (s,) = h["series"]
    assert s["bytes_per_step"] == pytest.approx(leak.leak_bytes_per_step, rel=0.01)
    assert s["bytes_per_hour"] == pytest.approx(leak.leak_bytes_per_hour, rel=0.01)
    assert [c["capture"] for c in s["captures"]] == [f"job/{session}" for session in leak.sessions]
    assert s["families"][0]["label"] == "Mul [256] output" and s["families"][0]["growing_captures"] == 5
    assert h["reason"].startswith("Leak: +15.6 MiB over 40 min across 5 captures, +4.0 KiB per step, from Mul [256] output")


def test_a_clean_job_has_no_leak_and_one_capture_is_inconclusive(logdir):
    root, _ = logdir
    engine = Engine.for_path(str(root))
    assert engine.history("clean")["verdict"] == "no_leak"
    assert engine.history("once")["verdict"] == "inconclusive"


def test_the_report_carries_the_histories_of_runs_with_several_captures(logdir):
    root, _ = logdir
    engine = Engine.for_path(str(root))
    report = engine.report()
    assert [h["tb_run"] for h in report["histories"]] == ["clean", "job"]
    assert engine.report("job/" + engine.captures("job")[0].name.rpartition("/")[2])["histories"] == []


def test_the_route_answers_the_history_and_refuses_unknown_runs(logdir, tmp_path):
    root, _ = logdir
    client, _plugin = make_client(str(root), leakfinder_cache_dir=str(tmp_path / "cache"))
    answer = client.get(f"{PREFIX}/history", query_string={"tb_run": "job"})
    assert answer.status_code == 200 and json.loads(answer.get_data())["verdict"] == "leak"
    for query, status in (({"tb_run": "nope"}, 404), ({"tb_run": "../job"}, 404), ({"tb_run": "x\x00"}, 400)):
        answer = client.get(f"{PREFIX}/history", query_string=query)
        assert answer.status_code == status, (query, answer.get_data())
        assert "error" in json.loads(answer.get_data())


def test_after_a_restart_the_history_comes_from_the_disk_cache_without_analysing(logdir, tmp_path):
    root, _ = logdir
    cache = tmp_path / "cache"
    first = Engine.for_path(str(root), disk=DiskCache(str(cache), 1 << 30))
    before = first.history("job")
    restarted = Engine.for_path(str(root), disk=DiskCache(str(cache), 1 << 30))
    assert restarted.history("job") == before
    assert restarted.analyses == 0 and restarted.computations == 0


def test_a_history_lists_its_unreadable_captures_and_says_how_many(tmp_path):
    run = slow_leak_run(tmp_path / "logs", "job", captures=10, leak_bytes_per_step=0)
    cut = [next((run.run_dir / "plugins" / "profile" / s).glob("*.xplane.pb")) for s in run.sessions[::2]]
    for path in cut:
        path.write_bytes(path.read_bytes()[:200])
    client, _ = make_client(str(tmp_path / "logs"))
    h = json.loads(client.get(f"{PREFIX}/history", query_string={"tb_run": "job"}).get_data())
    assert (h["verdict"], h["num_captures"]) == ("no_leak", 10)
    assert h["reason"].endswith("(5 of 10 captures could not be read)")
    expected = [(f"job/{s}", str(p)) for s, p in zip(run.sessions[::2], cut, strict=True)]
    assert [(e["run"], e["file"]) for e in h["errors"]] == expected
    assert all(conforms(e, wire.ERROR_SHAPE) and "incomplete or corrupt" in e["reason"] for e in h["errors"])
    assert [c["capture"] for c in h["series"][0]["captures"]] == [f"job/{s}" for s in run.sessions[1::2]]


def test_names_at_the_logdirs_top_are_its_captures_only_when_named_by_their_time():
    assert tensorboard_run("job/2026_12_01_22_30_16") == "job"
    assert tensorboard_run("2026_12_01_22_30_16") == tensorboard_run("2026_12_01_22_30_16_2") == ""  # watch, Capture
    # A PyTorch trace's folder and a snapshot at the top are runs of their own: no history of unrelated runs.
    assert tensorboard_run("torch_leak") == "torch_leak" and tensorboard_run("memory_snapshot") == "memory_snapshot"
    assert several_captures(["torch_leak", "kineto_resnet50_w4", "2026_12_01_22_30_16", "2026_12_01_22_40_16"]) == [""]


def _members_read(monkeypatch) -> list[str]:
    """The names of the entry members read from now on."""
    members: list[str] = []
    read_member = disk_cache._json_member
    monkeypatch.setattr(disk_cache, "_json_member", lambda zf, name: members.append(name) or read_member(zf, name))
    return members


def test_after_a_restart_the_history_reads_each_captures_points_alone(tmp_path, monkeypatch):
    run = slow_leak_run(tmp_path / "logs", "job", captures=6)
    cut = next((run.run_dir / "plugins" / "profile" / run.sessions[2]).glob("*.xplane.pb"))
    cut.write_bytes(cut.read_bytes()[:200])
    cache = str(tmp_path / "cache")
    before = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache, 1 << 30)).history("job")
    monkeypatch.setattr("tb_leakfinder.read.formats.xplane.reader.read_host", lambda *a: pytest.fail("decoded"))
    monkeypatch.setattr(DiskCache, "load", lambda *a: pytest.fail("the whole entry was loaded for a history"))
    members = _members_read(monkeypatch)
    restarted = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache, 1 << 30))
    assert restarted.history("job") == before and restarted.analyses == 0
    assert (before["num_captures"], len(before["errors"])) == (6, 1)
    assert members == [disk_cache.POINTS] * 6  # the unreadable capture's error too


def test_points_that_do_not_fit_their_types_are_a_miss_and_rewritten(tmp_path, monkeypatch, caplog):
    run = slow_leak_run(tmp_path / "logs", "job", captures=4)
    cache = DiskCache(str(tmp_path / "cache"), 1 << 30)
    before = Engine.for_path(str(tmp_path / "logs"), disk=cache).history("job")
    path = next((run.run_dir / "plugins" / "profile" / run.sessions[1]).glob("*.xplane.pb"))
    entry = cache.path_for(files.identity(str(path)))
    with zipfile.ZipFile(entry) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    # A byte count become a string: the codec checks every stored value against the field it fills.
    members[disk_cache.POINTS], changed = re.subn(
        rb'"heap_floor_bytes":\d+', b'"heap_floor_bytes":"x"', members[disk_cache.POINTS]
    )
    assert changed == 1
    with zipfile.ZipFile(entry, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    restarted = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache.folder, 1 << 30))
    assert restarted.history("job") == before and restarted.analyses == 1
    warnings = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(f"tb_leakfinder: the cache entry {entry}"), warnings
    again = Engine.for_path(str(tmp_path / "logs"), disk=DiskCache(cache.folder, 1 << 30))
    assert again.history("job") == before and again.analyses == 0
