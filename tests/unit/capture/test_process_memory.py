"""The process-memory recorder on this process and real children of it: what it reads at each step's end, through
psutil and through /proc, and that a failed reading switches it off with a warning instead of raising."""

from __future__ import annotations

import json
import mmap
import multiprocessing
import os
import sys
import time

import numpy as np
import pytest

from tb_leakfinder.capture.process_memory import ProcessMemoryRecorder, ProcProbe, PsutilProbe, default_probe
from tb_leakfinder.model.recordings import COMPLETE, FAILED, PARTIAL

MiB = 1 << 20
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def _child(ready, go) -> None:
    kept = [np.ones(MiB // 8)]  # pages of its own
    ready.set()
    go.wait(30)
    del kept


@pytest.fixture
def children():
    context = multiprocessing.get_context("fork")
    ready = [context.Event() for _ in range(2)]
    go = context.Event()
    procs = [context.Process(target=_child, args=(r, go)) for r in ready]
    for p in procs:
        p.start()
    for r in ready:
        r.wait(30)
    yield sorted(p.pid for p in procs)
    go.set()
    for p in procs:
        p.join(30)


def probes():
    found = [pytest.param(ProcProbe(), id="proc", marks=linux)]
    try:
        import psutil
    except ImportError:
        return found
    return [pytest.param(PsutilProbe(psutil), id="psutil"), *found]


@pytest.mark.parametrize("probe", probes())
def test_it_reads_this_process_and_its_children_at_each_step_end(probe, children):
    recorder = ProcessMemoryRecorder(probe=probe)
    recorder.start()
    kept = []
    for step in range(3, 8):
        with recorder.step(step):
            # 4 MiB of fresh pages each step (an anonymous map: never memory malloc freed before), all written.
            kept.append(mmap.mmap(-1, 4 * MiB))
            kept[-1].write(b"x" * (4 * MiB))
        time.sleep(0.02)  # the reading thread's USS/PSS
    recorder.stop()
    record = recorder.record
    assert record is not None and record.status == COMPLETE and record.warning == ""
    assert record.source == probe.source
    assert [s.step for s in record.samples] == [3, 4, 5, 6, 7]
    assert all(s.main.pid == os.getpid() for s in record.samples)
    # Its two children at every step (in a whole test run pytest may have others of its own: a server a test left).
    assert all(set(children) <= {c.pid for c in s.children} for s in record.samples)
    rss = [s.main.rss for s in record.samples]
    assert rss[-1] - rss[0] >= 4 * 4 * MiB * 0.95
    last = record.samples[-1]
    if sys.platform.startswith("linux"):
        # The last step's USS and PSS are read before the window's end returns.
        assert last.main.uss is not None and last.main.pss is not None
        assert 0 < last.main.uss <= last.main.pss <= last.main.rss
        for child in (c for c in last.children if c.pid in children):
            assert child.uss is not None and child.uss >= MiB  # its own array, written after the fork
    section = recorder.section()
    assert section is not None
    assert json.loads(json.dumps(section.value))["samples"][0]["step"] == 3


class Failing(ProcProbe):
    """A probe whose RSS reading fails from some call on, as a /proc that a policy hides would."""

    def __init__(self, fail_from: int) -> None:
        self.calls, self.fail_from = 0, fail_from

    def rss(self, pid: int) -> int:
        self.calls += 1
        if self.calls >= self.fail_from:
            raise PermissionError(13, "Permission denied", f"/proc/{pid}/statm")
        return 1 << 30

    def children(self, pid: int) -> list[int]:
        return []

    def private(self, pid: int) -> tuple[int | None, int | None]:
        raise PermissionError(13, "Permission denied", f"/proc/{pid}/smaps_rollup")


def test_a_failed_reading_switches_it_off_for_the_window_with_a_warning():
    recorder = ProcessMemoryRecorder(probe=Failing(fail_from=3))
    recorder.start()
    for step in range(6):
        with recorder.step(step):
            pass
    recorder.stop()
    record = recorder.record
    assert record is not None
    assert record.status == PARTIAL
    assert [s.step for s in record.samples] == [0, 1]
    assert "failed at step 2" in record.warning and "Permission denied" in record.warning
    assert "not recorded for the rest of this window" in record.warning
    section = recorder.section()
    assert section is not None and section.warning == record.warning
    # A next window starts afresh.
    recorder.probe = Failing(fail_from=1)
    recorder.start()
    with recorder.step(9):
        pass
    recorder.stop()
    assert recorder.record is not None and recorder.record.status == FAILED and not recorder.record.samples


def test_unreadable_uss_leaves_rss_and_says_so():
    probe = Failing(fail_from=10**9)
    recorder = ProcessMemoryRecorder(probe=probe)
    recorder.start()
    for step in range(4):
        with recorder.step(step):
            pass
    recorder.stop()
    record = recorder.record
    assert record is not None and record.status == COMPLETE and len(record.samples) == 4
    assert all(s.main.uss is None for s in record.samples)
    assert record.warning.startswith("USS and PSS could not be read (PermissionError")


def test_a_step_that_raises_still_raises_and_is_not_read():
    recorder = ProcessMemoryRecorder(probe=Failing(fail_from=10**9))
    recorder.start()
    with pytest.raises(KeyError), recorder.step(0):
        raise KeyError("the loop's own")
    recorder.stop()
    assert recorder.record is not None and [s.step for s in recorder.record.samples] == []


def test_without_psutil_it_reads_proc_on_linux(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    probe = default_probe()
    if sys.platform.startswith("linux"):
        assert isinstance(probe, ProcProbe)
    else:
        assert probe is None
        assert not ProcessMemoryRecorder(probe=None).available()
