"""A real `tensorboard` process on demo_logs lists the Leaks tab and serves the report."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tb_leakfinder.testing import hostile
from tests.support.demo import DEMO_LOGS, ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _tensorboard(logdir: Path, *flags: str) -> subprocess.Popen[bytes]:
    exe = shutil.which("tensorboard")
    assert exe, "tensorboard is not on PATH"
    # The plugin of this tree, not an installed copy's.
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    command = [exe, "--logdir", str(logdir), "--host", "127.0.0.1", *flags]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd="/")


@contextlib.contextmanager
def _serving(logdir: Path) -> Iterator[tuple[str, int]]:
    """(URL, process id) of a tensorboard serving `logdir`, once it answers."""
    port = _free_port()
    proc = _tensorboard(logdir, "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(url + "/data/plugins_listing", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                    pytest.fail(f"tensorboard did not start:\n{out}")
                time.sleep(0.5)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _threads(pid: int) -> int:
    found = re.search(r"^Threads:\s+(\d+)$", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    assert found is not None
    return int(found[1])


@pytest.fixture(scope="module")
def tensorboard_url(tmp_path_factory):
    # The Profile plugin writes cache files into sessions it lists: serve a copy.
    logdir = tmp_path_factory.mktemp("tb") / "demo_logs"
    shutil.copytree(DEMO_LOGS, logdir)
    with _serving(logdir) as (url, _):
        yield url


def test_leaks_tab_is_listed_beside_profile(tensorboard_url):
    status, listing = _fetch(tensorboard_url + "/data/plugins_listing")
    assert status == 200
    assert listing["leakfinder"]["enabled"] is True
    assert listing["leakfinder"]["tab_name"] == "Leaks"
    assert listing["leakfinder"]["loading_mechanism"]["type"] == "IFRAME"
    assert "profile" in listing


def test_report_from_the_installed_plugin(tensorboard_url):
    _, runs = _fetch(tensorboard_url + "/data/plugin/leakfinder/runs")
    run = next(r["run"] for r in runs["runs"] if r["run"].startswith("tf_leak/"))
    status, report = _fetch(tensorboard_url + "/data/plugin/leakfinder/report?run=" + urllib.parse.quote(run))
    assert status == 200
    assert report["runs"][0]["verdict"] == "leak"
    status, error = _fetch(tensorboard_url + "/data/plugin/leakfinder/report?run=nope")
    assert status == 404 and "nope" in error["error"]


def test_a_fifo_in_the_logdir_leaves_tensorboard_answering(tmp_path):
    """Issue 31: a FIFO named as each format's file once blocked discovery in open(), and with it all of TensorBoard."""
    logdir = tmp_path / "logs"
    shutil.copytree(DEMO_LOGS / "tf_leak", logdir / "tf_leak")
    (logdir / "torch").mkdir()
    for name in hostile.FIFO_NAMES:
        hostile.fifo(logdir / "torch" / name)
    with _serving(logdir) as (url, pid):
        status, listing = _fetch(url + "/data/plugins_listing")
        assert status == 200 and listing["leakfinder"]["enabled"] is True
        _, runs = _fetch(url + "/data/plugin/leakfinder/runs")
        names = [r["run"] for r in runs["runs"]]
        assert any(n.startswith("tf_leak/") for n in names) and "torch/m" in names
        threads = _threads(pid)
        fifo = logdir / "torch" / "m.prof"
        for _ in range(10):
            status, error = _fetch(url + "/data/plugin/leakfinder/report?run=torch%2Fm")
            assert status == 422 and error["error"] == f"{fifo}: a FIFO, not a regular file: it is not read"
        assert _threads(pid) <= threads + 2  # none left blocked on the FIFO (before: 11 threads, then 35)
        tf_leak = next(n for n in names if n.startswith("tf_leak/"))
        status, report = _fetch(url + "/data/plugin/leakfinder/report?run=" + urllib.parse.quote(tf_leak))
        assert status == 200 and report["runs"][0]["verdict"] == "leak"


def test_a_bad_size_flag_stops_tensorboard_at_start_with_a_message(tmp_path):
    proc = _tensorboard(tmp_path, "--port", str(_free_port()), "--leakfinder_cache_dir_gb", "inf")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert b"argument --leakfinder_cache_dir_gb: a number of GiB from 0 to 1048576, not 'inf'" in out
