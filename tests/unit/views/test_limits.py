"""Per-request limits (docs/http_api.md, "Limits"): file size, hosts per report, timeout; listing without decoding."""

from __future__ import annotations

import json
import resource
import threading
import time

import pytest

from tb_leakfinder.analyses import static_buffers
from tb_leakfinder.read.formats.xplane import reader, scan
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session
from tb_leakfinder.views import plugin, route_args
from tests.support.demo import ROOT

SESSION = "2026_11_29_09_31_25"
MANY_RUNS = 3000
# Listing MANY_RUNS runs must take less than this: generous for a loaded CI machine; decoding them would take minutes.
LIST_SECONDS = 20.0


def _small_profile(host: str) -> ProfileBuilder:
    builder = ProfileBuilder(host)
    for step in range(4):
        builder.step(step, step * 1000, step * 1000 + 999)
        builder.alloc(step * 1000 + 10, 0x1000 + step * 0x100, 1024, allocator="GPU_0_bfc")
    return builder


def _get(client, route: str, **args) -> tuple[int, dict]:
    response = client.get(f"{PREFIX}/{route}", query_string=args)
    return response.status_code, json.loads(response.get_data(as_text=True))


def test_a_file_over_the_size_limit_is_refused_without_reading_it(tmp_path, monkeypatch):
    path = write_session(tmp_path, "big", SESSION, {"host0": _small_profile("host0")})[0]
    monkeypatch.setattr(scan, "MAX_FILE_BYTES", 100)
    client, _ = make_client(str(tmp_path))
    status, body = _get(client, "report", run=f"big/{SESSION}")
    assert status == 422
    assert path in body["error"] and "over the 100-byte limit" in body["error"]


def test_a_sparse_file_past_the_real_limit_costs_no_memory(tmp_path):
    folder = tmp_path / "huge" / "plugins" / "profile" / SESSION
    folder.mkdir(parents=True)
    path = folder / "host0.xplane.pb"
    with open(path, "wb") as out:
        out.truncate(scan.MAX_FILE_BYTES + 1)  # sparse: no disk used, but stat says 4 GiB + 1
    client, _ = make_client(str(tmp_path))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    start = time.monotonic()
    status, body = _get(client, "report", run=f"huge/{SESSION}")
    assert status == 422 and "limit" in body["error"]
    assert time.monotonic() - start < 5
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - rss_before < 256 << 20


def test_a_report_over_more_hosts_than_the_limit_must_name_one(tmp_path, monkeypatch):
    hosts = {f"host{i}": _small_profile(f"host{i}") for i in range(4)}
    write_session(tmp_path, "wide", SESSION, hosts)
    monkeypatch.setattr(route_args, "MAX_HOSTS_PER_REQUEST", 3)
    client, _ = make_client(str(tmp_path))
    status, body = _get(client, "report", run=f"wide/{SESSION}")
    assert status == 400
    assert "4 hosts, more than the 3" in body["error"] and "host0" in body["error"]
    status, body = _get(client, "compare", run_a=f"wide/{SESSION}", run_b=f"wide/{SESSION}", host_b="host1")
    assert status == 400 and "4 hosts, more than the 3" in body["error"]
    status, body = _get(client, "report", run=f"wide/{SESSION}", host="host3")
    assert status == 200 and [h["host"] for h in body["runs"][0]["hosts"]] == ["host3"]
    monkeypatch.setattr(route_args, "MAX_HOSTS_PER_REQUEST", 4)
    status, body = _get(client, "report", run=f"wide/{SESSION}")
    assert status == 200 and len(body["runs"][0]["hosts"]) == 4


def test_a_slow_analysis_times_out_with_503_and_a_retry_gets_it(tmp_path, monkeypatch):
    write_session(tmp_path, "slow", SESSION, {"host0": _small_profile("host0")})
    client, instance = make_client(str(tmp_path))
    read_host = reader.read_host
    release = threading.Event()

    def slow_read_host(*args):
        release.wait(30)
        return read_host(*args)

    monkeypatch.setattr(reader, "read_host", slow_read_host)
    monkeypatch.setattr(plugin, "REQUEST_TIMEOUT_S", 0.3)
    start = time.monotonic()
    status, body = _get(client, "report", run=f"slow/{SESSION}")
    assert status == 503 and "still being analysed after 0.3 s" in body["error"]
    assert time.monotonic() - start < 5
    release.set()
    deadline = time.monotonic() + 30
    while True:  # the analysis goes on in the background and lands in the cache
        status, body = _get(client, "report", run=f"slow/{SESSION}")
        if status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200 and body["runs"][0]["run"] == f"slow/{SESSION}"
    assert instance.engine.computations == 1


@pytest.mark.slow
def test_thousands_of_runs_list_quickly_without_decoding(tmp_path, monkeypatch):
    garbage = b"\xff" * 64  # would fail to decode, if anything decoded it
    for i in range(MANY_RUNS):
        folder = tmp_path / f"run{i:05d}" / "plugins" / "profile" / SESSION
        folder.mkdir(parents=True)
        (folder / "host0.xplane.pb").write_bytes(garbage)

    def no_decoding(*args):
        raise AssertionError("listing runs decoded a profile")

    monkeypatch.setattr(reader, "decode", no_decoding)
    monkeypatch.setattr(reader, "read_host", no_decoding)
    client, _ = make_client(str(tmp_path))
    start = time.monotonic()
    status, body = _get(client, "runs")
    seconds = time.monotonic() - start
    assert status == 200 and len(body["runs"]) == MANY_RUNS
    assert body["runs"][0] == {"run": f"run00000/{SESSION}", "hosts": ["host0"], "errors": []}
    assert seconds < LIST_SECONDS, f"listing {MANY_RUNS} runs took {seconds:.1f} s"


@pytest.mark.parametrize(
    "text",
    [
        f"| {scan.MAX_FILE_BYTES >> 30} GiB |",
        f"| {route_args.MAX_HOSTS_PER_REQUEST} |",
        f"| {plugin.REQUEST_TIMEOUT_S:g} s |",
        f"| {route_args.MAX_ARG_CHARS} characters |",
        f"| 8 to {plugin.MAX_POINTS} |",
    ],
)
def test_the_limits_are_the_documented_ones(text):
    limits = (ROOT / "docs" / "http_api.md").read_text().split("## Limits", 1)[1]
    assert text in limits


def test_the_reports_limits_are_the_ones_the_routes_enforce(tmp_path):
    write_session(tmp_path, "r", SESSION, {"host0": _small_profile("host0")})
    client, _ = make_client(str(tmp_path))
    status, report = _get(client, "report", run=f"r/{SESSION}")
    assert status == 200
    limits = report["limits"]
    page, points = limits["page_size"], limits["max_points"]
    run = f"r/{SESSION}"
    assert _get(client, "buffers", run=run, limit=page)[0] == 200
    assert _get(client, "buffers", run=run, limit=page + 1)[0] == 400
    assert _get(client, "timeline", run=run, points=points)[0] == 200
    assert _get(client, "timeline", run=run, points=points + 1)[0] == 400
    # Buffers below small_buffer_bytes are what a module's "small" row folds.
    assert limits["small_buffer_bytes"] == static_buffers.SMALL_BUFFER_BYTES
