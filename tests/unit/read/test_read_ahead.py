"""read/read_ahead.py: a file read ahead on a thread is what its reader takes, the same as reading it then; a reading
not wanted, failed or of a file changed since gives nothing, and the reader reads it itself."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import EVENT_COLUMNS
from tb_leakfinder.read import files, read_ahead
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.xplane import reader, scan
from tests.support.demo import ROOT, demo_xplane
from tests.support.scans import record_scans

needs_scanner = pytest.mark.skipif(scan.compiled_scanner() is None, reason="the compiled scanner is not built")


@needs_scanner
def test_a_host_read_ahead_is_the_host_read_then(monkeypatch):
    """The format begins the scan on its own thread; the reader takes it instead of scanning again."""
    path = str(demo_xplane("tf_leak"))
    direct = reader.read_host(path, "host")
    scanned_on = record_scans(monkeypatch)
    registry.read_ahead(path, lambda: True)
    ahead = reader.read_host(path, "host")
    assert scanned_on == [f"read ahead {path}"]
    assert ahead.start_time_ns == direct.start_time_ns and len(ahead.events) == len(direct.events) > 0
    for column in EVENT_COLUMNS:
        assert np.array_equal(getattr(ahead.events, column), getattr(direct.events, column)), column
    assert (ahead.steps.start_ps.tolist(), ahead.hlo_protos, ahead.device_planes, ahead.warnings) == (
        direct.steps.start_ps.tolist(),
        direct.hlo_protos,
        direct.device_planes,
        direct.warnings,
    )


def test_nothing_begun_gives_nothing(tmp_path):
    assert read_ahead.take(str(tmp_path / "never.xplane.pb")) is None


def test_a_reading_not_wanted_is_not_read(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x")
    read: list[str] = []
    read_ahead.begin(str(path), read.append, lambda: False)
    assert read_ahead.take(str(path)) is None and read == []


def test_the_projects_error_read_ahead_is_the_readers(tmp_path):
    """A file cut while it was read ahead: the reader says so, as it would have reading it itself."""
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x")

    def cut(p: str) -> None:
        raise files.changed_while_read(p, 0)

    read_ahead.begin(str(path), cut, lambda: True)
    with pytest.raises(LeakfinderError, match="changed while it was read"):
        read_ahead.take(str(path))


def test_a_reading_failed_otherwise_gives_nothing_and_is_taken_once(tmp_path):
    """A bug, or memory short: the reader reads the file itself."""
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x")

    def broken(p: str) -> None:
        raise ValueError("a reader's failure")

    read_ahead.begin(str(path), broken, lambda: True)
    assert read_ahead.take(str(path)) is None
    read_ahead.begin(str(path), lambda p: "read", lambda: True)  # taken: a new reading may begin
    assert read_ahead.take(str(path)) == "read"
    assert read_ahead.take(str(path)) is None


def test_a_file_changed_while_read_ahead_gives_nothing(tmp_path):
    """Its size or modification time changed after the reading began: the reader reads the file as it is now."""
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"old")
    started, changed = threading.Event(), threading.Event()

    def slow(p: str) -> str:
        started.set()
        changed.wait(10)
        return "old"

    read_ahead.begin(str(path), slow, lambda: True)
    started.wait(10)
    path.write_bytes(b"newer")
    changed.set()
    assert read_ahead.take(str(path)) is None


def test_a_second_begin_of_the_same_file_reads_once(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x")
    release = threading.Event()
    calls: list[str] = []

    def read(p: str) -> int:
        calls.append(p)
        release.wait(10)
        return len(calls)

    read_ahead.begin(str(path), read, lambda: True)
    read_ahead.begin(str(path), read, lambda: True)
    release.set()
    assert read_ahead.take(str(path)) == 1 and calls == [str(path)]


_BEGIN_WITHOUT_NUMPY = """
import sys
from tb_leakfinder.read import read_ahead
from tb_leakfinder.read.formats import registry

registry.read_ahead(sys.argv[1], lambda: True)
loaded_before = "numpy" in sys.modules
ahead = read_ahead.take(sys.argv[1])
print(loaded_before, type(ahead).__name__, ahead.scanned["has_cpu"])
"""


@needs_scanner
def test_reading_ahead_loads_no_numpy():
    """It runs while a cold command loads numpy: had it needed numpy, it would wait for it."""
    path = str(demo_xplane("tf_leak"))
    out = subprocess.run(
        [sys.executable, "-c", _BEGIN_WITHOUT_NUMPY, path],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.split() == ["False", "ScannedFile", "True"]
