"""`tb-leakfinder watch` against a fake XProf client: its capture process (the real remote_trace module, with a fake
`xprof` package first on its path), the loop's retries, stops and abandons, and the command line's checks.

The watch of real TensorFlow and JAX jobs is tests/integration/test_watch.py.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sys
import threading
import time

import pytest

from tb_leakfinder.capture import watch
from tb_leakfinder.capture.server_session import XPROF_CLIENT
from tb_leakfinder.capture.sessions import STAGING_PREFIX
from tb_leakfinder.capture.watch import Watch, WatchSettings
from tb_leakfinder.errors import BadArgumentError
from tb_leakfinder.views import cli

ADDRESS = "localhost:6009"
# XProf's client as the watch's capture process calls it; FAKE_XPROF says how it behaves.
FAKE_CLIENT = """
import json, os, pathlib, sys, time

def trace(address, logdir, workers, dataset_ops, duration_ms, attempts, options):
    mode = os.environ.get("FAKE_XPROF", "ok")
    if mode == "fail":
        # What the native client logs for an address that does not answer, then raises.
        print(f"W0000 00:00:1.000000 1 capture_profile.cc:181] {address} returned UNAVAILABLE: Connection refused",
              file=sys.stderr, flush=True)
        print("=== Source Location Trace: ===", file=sys.stderr, flush=True)
        raise RuntimeError("UNAVAILABLE: No trace event was collected")
    if mode == "hang":
        time.sleep(600)
    if mode == "crash":
        os._exit(3)
    time.sleep(duration_ms / 1000)
    print("Starting to trace for", duration_ms, "ms", flush=True)  # the native client's own stdout
    session = pathlib.Path(logdir, "plugins", "profile", options["session_id"])
    session.mkdir(parents=True)
    request = {"address": address, "duration_ms": duration_ms, "attempts": attempts, "options": options}
    (session / (address.replace(":", "_") + ".xplane.pb")).write_text(json.dumps(request))
"""


@pytest.fixture
def fake_client(tmp_path, monkeypatch):
    """Puts the fake client first on the capture process's path; `fake_client(mode)` sets how it behaves."""
    convert = tmp_path / "fake" / "xprof" / "convert"
    convert.mkdir(parents=True)
    (convert.parent / "__init__.py").write_text("")
    (convert / "__init__.py").write_text("")
    (convert / "_pywrap_profiler_plugin.py").write_text(FAKE_CLIENT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path / "fake"), os.environ.get("PYTHONPATH")) if p))

    def mode(name: str) -> None:
        monkeypatch.setenv("FAKE_XPROF", name)

    mode("ok")
    return mode


def make_watch(logdir: pathlib.Path, every_s=0.3, duration_s=0.1, count=None, timeout_s=None, on_out=None):
    out: list[str] = []
    err: list[str] = []

    def emit(line: str) -> None:
        out.append(line)
        if on_out is not None:
            on_out(line)

    settings = WatchSettings(ADDRESS, logdir, every_s, duration_s, count, timeout_s)
    return Watch(settings, emit, err.append), out, err


def left_in(logdir: pathlib.Path) -> list[str]:
    return sorted(p.name for p in (logdir / "plugins").iterdir()) if (logdir / "plugins").is_dir() else []


def test_each_capture_is_a_session_with_memory_and_python_events_asked_for(fake_client, tmp_path):
    logdir = tmp_path / "logs"
    w, out, err = make_watch(logdir, count=3, every_s=0.25)
    assert w.run() == "count"
    assert len(w.sessions) == 3
    assert sorted(w.sessions) == w.sessions  # session names sort in capture order
    for session in w.sessions:
        (profile,) = session.iterdir()
        assert profile.name == "localhost_6009.xplane.pb"  # XProf names the file by the address
        request = json.loads(profile.read_text())
        assert (request["address"], request["duration_ms"], request["attempts"]) == (ADDRESS, 100, 1)
        options = request["options"]
        assert (options["host_tracer_level"], options["python_tracer_level"], options["device_tracer_level"]) == (2, 1, 1)
        assert options["session_id"] == session.name
    assert left_in(logdir) == ["profile"]  # nothing of the staging left
    assert [line.split(" ", 1)[1].split(":")[0] for line in out] == ["capture 1 of 3", "capture 2 of 3", "capture 3 of 3"]
    assert f"{w.sessions[0]} (localhost_6009.xplane.pb " in out[0] and out[0].endswith("; no memory events)")
    # The fake's file holds no memory events: said once, with what to do.
    (note,) = err
    assert "holds no memory events" in note and "TF_CPU_ALLOCATOR_USE_BFC=true" in note
    assert w.summary("count") == [f"3 captures of {ADDRESS} in {logdir} (--count 3 reached)", *map(str, w.sessions)]
    assert w.exit_status("count") == 0


def test_a_capture_that_fails_is_one_line_with_the_clients_reason_then_retried(fake_client, tmp_path):
    fake_client("fail")
    logdir = tmp_path / "logs"
    # Room for two tries even when the machine is loaded: each starts a Python process of its own. The count only
    # bounds the test: on an idle machine ten quick failures at 0.2 s intervals ended it before the timeout.
    w, out, err = make_watch(logdir, every_s=0.2, duration_s=0.1, count=1000, timeout_s=3.0)
    assert w.run() == "timeout"
    assert out == [] and w.sessions == []
    # The last attempt may still be in flight at --timeout: then it is abandoned, not failed.
    failed = err[: w.failures]
    assert len(failed) >= 2 and len(err) == w.failures + w.abandoned
    for line in failed:
        assert "\n" not in line
        assert f"capture failed: {ADDRESS} returned UNAVAILABLE: Connection refused; " in line
    assert "next try at " in err[0]
    assert err[-1].endswith("no time left before --timeout") or err[-1].endswith("abandoned at --timeout 3s")
    assert left_in(logdir) == []
    abandoned = f", {w.abandoned} abandoned" if w.abandoned else ""
    summary = f"0 captures of {ADDRESS} in {logdir}, {w.failures} failed{abandoned} (--timeout 3s reached)"
    assert w.summary("timeout")[0] == summary
    assert w.exit_status("timeout") == watch.EXIT_SHORT


def test_a_capture_process_that_dies_or_hangs_is_a_failure(fake_client, tmp_path, monkeypatch):
    fake_client("crash")
    w, _, err = make_watch(tmp_path / "logs", count=1)
    w.run()
    assert "capture failed: the capture process ended with status 3" in err[0]
    fake_client("hang")
    monkeypatch.setattr(watch, "CONNECT_TIMEOUT_S", 0.3)
    w, _, err = make_watch(tmp_path / "logs", count=1)
    assert w.run() == "count"
    assert f"capture failed: no answer from {ADDRESS} in 400ms: abandoned" in err[0]
    assert left_in(tmp_path / "logs") == []


def test_count_ends_the_watch_after_that_many_attempts_failed_or_not(fake_client, tmp_path):
    fake_client("fail")
    w, out, err = make_watch(tmp_path / "logs", every_s=0.1, duration_s=0.05, count=2)
    assert w.run() == "count"
    assert (w.failures, len(err), out) == (2, 2, [])
    assert w.summary("count")[0] == f"0 captures of {ADDRESS} in {tmp_path / 'logs'}, 2 failed (--count 2 reached)"
    assert w.exit_status("count") == watch.EXIT_SHORT


def test_timeout_abandons_the_capture_in_flight_at_once(fake_client, tmp_path):
    fake_client("hang")  # a server that accepts and never answers: the capture's own deadline is 30 s away
    w, _, err = make_watch(tmp_path / "logs", every_s=60, duration_s=0.1, count=3, timeout_s=0.5)
    started = time.monotonic()
    assert w.run() == "timeout"
    assert time.monotonic() - started < 5
    assert "abandoned at --timeout 500ms" in err[-1] and w.abandoned == 1
    assert w.exit_status("timeout") == watch.EXIT_SHORT
    assert left_in(tmp_path / "logs") == []


def test_a_stop_between_captures_ends_the_watch_at_once(fake_client, tmp_path):
    holder: list[Watch] = []
    w, out, _ = make_watch(tmp_path / "logs", every_s=60, on_out=lambda line: holder[0].request_stop("SIGINT"))
    holder.append(w)
    assert w.run() == "SIGINT"  # not a minute later
    assert len(w.sessions) == 1 and len(out) == 1
    assert w.summary("SIGINT")[0] == f"1 capture of {ADDRESS} in {tmp_path / 'logs'} (stopped by SIGINT)"
    assert w.exit_status("SIGINT") == 0


def test_a_first_stop_waits_for_the_capture_in_flight_and_a_second_abandons_it(fake_client, tmp_path):
    fake_client("hang")
    w, out, err = make_watch(tmp_path / "logs", every_s=60, duration_s=30)
    threading.Timer(0.5, w.request_stop, ["SIGINT"]).start()
    threading.Timer(1.0, w.request_stop, ["SIGTERM"]).start()
    assert w.run() == "SIGINT"
    assert out == [] and (w.failures, w.abandoned) == (0, 1)
    assert "SIGINT: stopping once the capture in flight is written (again: abandon it)" in err[0]
    assert err[1].endswith("the capture in flight was abandoned at a second signal")
    assert left_in(tmp_path / "logs") == []
    assert w.summary("SIGINT")[0].endswith(", 1 abandoned (stopped by SIGINT)")


def test_signals_ask_the_watch_to_stop(tmp_path):
    w, _, _ = make_watch(tmp_path)
    before = signal.getsignal(signal.SIGINT)
    with watch.stop_on_signals(w):
        os.kill(os.getpid(), signal.SIGINT)
        threading.Event().wait(0.05)  # the handler runs in this thread
        assert (w.stopped_by, w.abandon) == ("SIGINT", False)
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(0.05)
        assert w.abandon
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize(
    ("text", "seconds"), [("10m", 600), ("30s", 30), ("2s", 2), ("500ms", 0.5), ("1h", 3600), ("1.5s", 1.5), (" 5s ", 5)]
)
def test_durations(text, seconds):
    assert watch.parse_duration(text, "--every") == seconds


@pytest.mark.parametrize("text", ["10", "10x", "", "-1s", "0s", "1 h", "s", "1e3ms", "\uff15s"])
def test_bad_durations(text):
    with pytest.raises(BadArgumentError, match=r"^--every: .* \(a number and a unit: 500ms, 30s, 10m, 1h\)$"):
        watch.parse_duration(text, "--every")


def test_durations_read_back():
    assert [watch.describe_seconds(s) for s in (600, 30, 0.5, 3600, 1.5, 90)] == ["10m", "30s", "500ms", "1h", "1.5s", "90s"]


@pytest.mark.parametrize(
    ("text", "address"),
    [("localhost:6009", "localhost:6009"), ("grpc://10.0.0.2:6009", "10.0.0.2:6009"), ("[::1]:06009", "[::1]:6009")],
)
def test_addresses(text, address):
    assert watch.parse_address(text) == address


@pytest.mark.parametrize("text", ["localhost", ":6009", "host:0", "host:70000", "host:abc", "::1:6009", "a b:1", "h/x:1", "[]:1"])
def test_bad_addresses(text):
    with pytest.raises(BadArgumentError, match="is not a profiler server's address: give host:port"):
        watch.parse_address(text)


def cli_error(capsys, *args: str) -> str:
    """`tb-leakfinder watch ARGS` in this process: exit 2 and one line on stderr, which it returns."""
    assert cli.main(["watch", *args]) == cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("tb-leakfinder: error: ") and captured.out == ""
    return line


def test_the_command_line_says_what_is_wrong_in_one_line(capsys, tmp_path):
    logdir = str(tmp_path / "logs")
    assert "is not a profiler server's address" in cli_error(capsys, "localhost", "--logdir", logdir)
    assert "--every: '10 minutes' is not a duration" in cli_error(capsys, ADDRESS, "--logdir", logdir, "--every", "10 minutes")
    assert "--duration: '2' is not a duration" in cli_error(capsys, ADDRESS, "--logdir", logdir, "--duration", "2")
    assert "--timeout: 'soon' is not a duration" in cli_error(capsys, ADDRESS, "--logdir", logdir, "--timeout", "soon")
    assert "--count: '0' is not a number of captures" in cli_error(capsys, ADDRESS, "--logdir", logdir, "--count", "0")
    line = cli_error(capsys, ADDRESS, "--logdir", logdir, "--every", "1s", "--duration", "2s")
    assert line.endswith("--every (1s) is shorter than --duration (2s): the captures would overlap")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    line = cli_error(capsys, ADDRESS, "--logdir", str(blocker / "logs"))
    assert line.endswith(f"--logdir: {blocker / 'logs'}: captures cannot be written there (Not a directory)")
    assert "is a URL; the watch writes to a local folder" in cli_error(capsys, ADDRESS, "--logdir", "gs://bucket/logs")


def test_the_command_line_names_what_to_install_without_xprofs_client(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, XPROF_CLIENT, None)  # its import fails
    line = cli_error(capsys, ADDRESS, "--logdir", str(tmp_path))
    assert f"watch needs XProf's profiler client ({XPROF_CLIENT})" in line
    assert line.endswith(": pip install xprof (tensorboard-plugin-profile installs it)")


def test_the_command_line_watches(fake_client, capsys, tmp_path):
    logdir = tmp_path / "logs"
    args = ["watch", ADDRESS, "--logdir", str(logdir), "--every", "200ms", "--duration", "100ms", "--count", "2"]
    assert cli.main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    sessions = sorted((logdir / "plugins" / "profile").iterdir())
    assert lines[0] == f"watching {ADDRESS} every 200ms (100ms captures) into {logdir}; Ctrl-C stops"
    assert lines[-3:] == [f"2 captures of {ADDRESS} in {logdir} (--count 2 reached)", *map(str, sessions)]
    assert not any(p.name.startswith(STAGING_PREFIX) for p in (logdir / "plugins").iterdir())
