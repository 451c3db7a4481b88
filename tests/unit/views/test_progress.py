"""The progress bar of precompute and long reports: hosts done of the total, bytes per second, time left; on a terminal only."""

from __future__ import annotations

import io
import sys
import time

import pytest

from tb_leakfinder.views import progress
from tb_leakfinder.views.progress import HostProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO) -> str:
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    with HostProgress(total_hosts=3, total_bytes=3 << 20, what="precompute") as bar:
        for host in ("host0", "host1", "host2"):
            time.sleep(0.15)  # past tqdm's redraw interval
            bar(host, 1 << 20)
        assert bar.hosts_done == 3
    return stderr.getvalue()


def test_a_terminal_sees_hosts_bytes_per_second_and_time_left(monkeypatch):
    pytest.importorskip("tqdm")  # the progress extra draws the bar
    drawn = _run(monkeypatch, Terminal())
    assert "precompute" in drawn and "3/3 hosts" in drawn
    assert "3.00MB/3.00MB" in drawn  # bytes done of the total (binary units)
    assert "B/s" in drawn and "<" in drawn  # the rate, and elapsed<remaining


def test_a_pipe_or_a_file_sees_nothing(monkeypatch):
    assert _run(monkeypatch, io.StringIO()) == ""


def test_a_pipe_makes_no_bar(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert HostProgress(total_hosts=2, total_bytes=1, what="report")._bar is None
