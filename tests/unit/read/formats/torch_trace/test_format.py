"""Which files are PyTorch traces, their hosts, and discovery of a run folder of them."""

from __future__ import annotations

import gzip

import pytest

import tb_leakfinder
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats.registry import format_of
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
