"""A real `tensorboard` process on demo_logs lists the Leaks tab and serves the report."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from tests.support.demo import DEMO_LOGS


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


@pytest.fixture(scope="module")
def tensorboard_url(tmp_path_factory):
    # The Profile plugin writes cache files into sessions it lists: serve a copy.
    logdir = tmp_path_factory.mktemp("tb") / "demo_logs"
    shutil.copytree(DEMO_LOGS, logdir)
    exe = shutil.which("tensorboard")
    assert exe, "tensorboard is not on PATH"
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [exe, "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd="/",
    )
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
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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
