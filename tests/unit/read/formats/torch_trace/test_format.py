"""Which files are PyTorch traces, their hosts, and discovery of a run folder of them."""

from __future__ import annotations

import gzip

import pytest

import tb_leakfinder
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats.registry import format_of
from tb_leakfinder.read.formats.torch_trace import reader
from tb_leakfinder.read.formats.torch_trace.format import TORCH_TRACE, looks_like_trace
from tb_leakfinder.views import cli
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, write


def _trace(path):
    events = [complete("ProfilerStep#1", 0.0, 10.0, cat="user_annotation"), memory(1.0, 64), memory(2.0, -64)]
    events += [memory(3.0, 128, device_id=0), memory(4.0, -128, device_id=0, device_type=0)]
    return write(path, events)


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("node1_1234.1700000000123456789.pt.trace.json.gz", "node1_1234"),
        ("worker0.1623212756351.pt.trace.json", "worker0"),
        ("mine.pt.trace.json", "mine"),
    ],
)
def test_host_names(name, host):
    assert TORCH_TRACE.host_name(name) == host


def test_host_names_claim_no_xprof_json():
    assert TORCH_TRACE.host_name("host.trace.json.gz") is None
    assert TORCH_TRACE.host_name("host.memory_profile.json.gz") is None


def test_sniff_by_name_and_by_content(tmp_path):
    assert TORCH_TRACE.sniff(str(tmp_path / "a.pt.trace.json.gz"))  # by name, unread
    kineto = _trace(tmp_path / "run_trace.json.gz")
    other = tmp_path / "config.json"
    other.write_text('{"lr": 0.1}')
    assert TORCH_TRACE.sniff(str(kineto)) and format_of(str(kineto)) is TORCH_TRACE
    assert not TORCH_TRACE.sniff(str(other))
    assert not TORCH_TRACE.sniff(str(tmp_path / "missing.json"))
    assert looks_like_trace(gzip.compress(b' {"metadata": {}, "traceEvents": ['))
    assert not looks_like_trace(b"\x1f\x8bnot gzip")


def test_a_run_folder_of_workers_is_one_session(tmp_path):
    run = tmp_path / "logs" / "resnet"
    run.mkdir(parents=True)
    _trace(run / "node_1.1.pt.trace.json.gz")
    _trace(run / "node_2.1.pt.trace.json")
    _trace(run / "extra.json")
    (run / "notes.json").write_text("[]")
    (run / "plugins" / "profile").mkdir(parents=True)  # no XProf session: nothing else
    (runs,) = discovery.discover(str(tmp_path / "logs"))
    assert runs.name == "resnet"
    assert sorted(runs.hosts) == ["extra", "node_1", "node_2"]
    (single,) = discovery.runs_for_path(str(run / "extra.json"))
    assert single.hosts == {"extra": str(run / "extra.json")}


def test_analyze_gives_one_allocator_per_device(tmp_path):
    _trace(tmp_path / "h_1.5.pt.trace.json.gz")
    report = tb_leakfinder.analyze(str(tmp_path), cache=False)
    (run,) = report["runs"]
    (host,) = run["hosts"]
    assert host["host"] == "h_1"
    assert sorted(a["memory_id"] for a in host["allocators"]) == ["cpu", "cuda:0"]


def test_cli_on_a_corrupt_trace_exits_2_naming_it(tmp_path, capsys):
    path = tmp_path / "broken_9.9.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' * 100)[:40])
    assert cli.main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert str(path) in captured.err + captured.out


def _cycle(path, k):
    """The k-th cycle of a schedule(repeat=...): three steps, k MiB more held at its end than at the last's."""
    events = [complete(f"ProfilerStep#{10 * k + s}", 100.0 * s, 100.0, cat="user_annotation") for s in range(3)]
    for s in range(3):
        events += [memory(100.0 * s + 10, 1 << 20, Addr=0x1000 * (k * 10 + s)), memory(100.0 * s + 20, 4096, Addr=0x10)]
        events.append(memory(100.0 * s + 30, -4096, Addr=0x10))
    return write(path, events, baseTimeNanoseconds=1_700_000_000_000_000_000 + k * 60_000_000_000)


def test_the_cycles_of_a_worker_are_captures_of_its_run(tmp_path):
    job = tmp_path / "logs" / "job"
    job.mkdir(parents=True)
    stamps = {"a_1": [1_700_000_000_500, 1_700_000_060_500, 1_700_000_120_500], "b_2": [1_700_000_000_400, 1_700_000_060_600]}
    for worker, times in stamps.items():
        for k, stamp in enumerate(times):
            _cycle(job / f"{worker}.{stamp}.pt.trace.json.gz", k)
    once = tmp_path / "logs" / "once"
    once.mkdir()
    _cycle(once / "a_1.5.pt.trace.json", 0)
    runs = discovery.discover(str(tmp_path / "logs"))
    # A session is named by the earliest time in its traces' names; b_2 has no third cycle.
    assert [(r.name, sorted(r.hosts)) for r in runs] == [
        ("job/1700000000400", ["a_1", "b_2"]),
        ("job/1700000060500", ["a_1", "b_2"]),
        ("job/1700000120500", ["a_1"]),
        ("once", ["a_1"]),
    ]
    assert runs[1].hosts["b_2"].endswith("b_2.1700000060600.pt.trace.json.gz")
    assert [r.name for r in discovery.runs_for_path(str(job))] == [r.name for r in runs[:3]]
    history = Engine.for_path(str(tmp_path / "logs")).history("job")
    assert history["num_captures"] == 3
    (a_1,) = [s for s in history["series"] if s["host"] == "a_1"]
    assert [c["capture"] for c in a_1["captures"]] == [r.name for r in runs[:3]]


def test_cycles_without_times_in_their_names_are_numbered(tmp_path):
    _cycle(tmp_path / "w.pt.trace.json", 0)
    _cycle(tmp_path / "w.pt.trace.json.gz", 1)
    assert [
        (name, sorted(hosts))
        for name, hosts in TORCH_TRACE.folder_sessions(str(tmp_path), sorted(p.name for p in tmp_path.iterdir()))
    ] == [
        ("cycle_1", ["w"]),
        ("cycle_2", ["w"]),
    ]


def test_remote_traces_stream_through_gfile_fsspec(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    local = [_cycle(tmp_path / f"w_1.{k + 1}.pt.trace.json.gz", k) for k in range(2)]
    for path in local:
        with fs.open(f"/remote_traces/job/{path.name}", "wb") as f:
            f.write(path.read_bytes())
    try:
        runs = discovery.discover("memory://remote_traces")
        assert [(r.name, list(r.hosts)) for r in runs] == [("job/1", ["w_1"]), ("job/2", ["w_1"])]
        remote = reader.read_host(runs[1].hosts["w_1"], "w_1")
        mine = reader.read_host(str(local[1]), "w_1")
        assert remote.events.heap_bytes.tolist() == mine.events.heap_bytes.tolist() and len(remote.events) == 9
        assert remote.start_time_ns == mine.start_time_ns == 1_700_000_060_000_000_000  # its first step at ts 0
    finally:
        fs.rm("/remote_traces", recursive=True)


def test_a_time_of_hundreds_of_digits_is_no_time(tmp_path):
    _cycle(tmp_path / f"w.{'9' * 200}.pt.trace.json", 0)
    _cycle(tmp_path / "w.7.pt.trace.json", 1)
    names = sorted(p.name for p in tmp_path.iterdir())
    # Without a time it is ordered first, and named by its place.
    assert [name for name, _ in TORCH_TRACE.folder_sessions(str(tmp_path), names)] == ["cycle_1", "7"]
