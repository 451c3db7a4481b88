"""The process-memory recorder: the training process's memory and its child processes' (DataLoader workers) at the end
of each step of a capture window, to judge beside the allocator's heap that the profile holds.

At each step's end it reads on the training thread only what is cheap: the training process's RSS and each child's
(`/proc/<pid>/statm`, psutil's `memory_info`), and the children's pids (`/proc/<pid>/task/*/children` on Linux, else
psutil). USS and PSS come from `/proc/<pid>/smaps_rollup`, which the kernel makes by walking the process's page tables:
milliseconds per process, far over what a step can spend. A thread of the recorder's own reads them while the next
step runs, each process's into the latest step's sample as the reading begins: a reading is at most one step late,
never put on a step it was not made after. When steps end faster than it reads, it moves on to the latest step,
starting each round with the next process in turn, so every process is read now and then.

It never raises into the training loop: a failed reading switches it off for the rest of the window, and its
`warning` says why (the capture warns with it). Without psutil it reads /proc on Linux; elsewhere it is off.

Process memory on two layers: here it is recorded in the training process; analyses/process_memory.py judges what
was recorded.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from types import ModuleType
from typing import Any, Protocol

from tb_leakfinder.capture.recorder import Section, Window
from tb_leakfinder.model.recordings import COMPLETE, FAILED, PARTIAL, ProcessMemoryRecord, ProcessReading, ProcessSample

NAME = "process_memory"
PSUTIL = "psutil"
PROC = "proc"
# How long the window's end waits for the USS/PSS reading still under way: it is milliseconds per process.
PRIVATE_WAIT_S = 2.0
# The companion file stays under its 1 MB: a sample of 8 workers is about 600 bytes.
MAX_SAMPLES = 1000
MAX_CHILDREN = 64
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# A child may exit between being listed and being read (a DataLoader's workers at an epoch's end): not a failure.
_GONE: tuple[type[BaseException], ...] = (FileNotFoundError, ProcessLookupError)


class Probe(Protocol):
    """One way to read processes' memory: psutil's, or Linux's /proc."""

    source: str
    gone: tuple[type[BaseException], ...]  # what a read of a process that has exited raises

    def children(self, pid: int) -> list[int]: ...

    def rss(self, pid: int) -> int: ...

    def private(self, pid: int) -> tuple[int | None, int | None]:
        """(USS, PSS) in bytes, None where the platform gives none."""
        ...


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _proc_children(pid: int) -> list[int] | None:
    """A process's children from each of its threads' `children` file (a child is listed under the thread that made
    it); None where the kernel has no such files."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found: list[int] = []
    for tid in tasks:
        try:
            found.extend(int(p) for p in _read(f"/proc/{pid}/task/{tid}/children").split())
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{tid}"):
                return None  # the thread is there but not the file: a kernel without CONFIG_PROC_CHILDREN
            # else the thread ended since the listing
    return sorted(set(found))


class ProcProbe:
    """Linux's /proc: RSS from `statm`, USS and PSS from `smaps_rollup` (Linux 4.14 and later)."""

    source = PROC
    gone = _GONE

    def children(self, pid: int) -> list[int]:
        found = _proc_children(pid)
        if found is None:
            raise OSError(f"/proc/{pid}/task/*/children is not there (a kernel without CONFIG_PROC_CHILDREN)")
        return found

    def rss(self, pid: int) -> int:
        return int(_read(f"/proc/{pid}/statm").split()[1]) * _PAGE_BYTES

    def private(self, pid: int) -> tuple[int | None, int | None]:
        try:
            text = _read(f"/proc/{pid}/smaps_rollup")
        except FileNotFoundError:
            if os.path.exists(f"/proc/{pid}"):
                return None, None  # a kernel before smaps_rollup
            raise
        fields: dict[bytes, int] = {}
        for line in text.splitlines()[1:]:
            key, _, rest = line.partition(b":")
            value = rest.split()
            if value:
                fields[key] = int(value[0]) * 1024
        uss = fields.get(b"Private_Clean", 0) + fields.get(b"Private_Dirty", 0) + fields.get(b"Private_Hugetlb", 0)
        return uss, fields.get(b"Pss")


class PsutilProbe:
    """psutil, on any platform it supports; on Linux it lists children from /proc, as psutil's `children()` reads every
    process's `stat` (milliseconds on a busy machine)."""

    source = PSUTIL

    def __init__(self, psutil: ModuleType) -> None:
        self.psutil = psutil
        self.gone = (psutil.NoSuchProcess, *_GONE)
        self._processes: dict[int, Any] = {}

    def _process(self, pid: int) -> Any:
        process = self._processes.get(pid)
        if process is None:
            process = self._processes[pid] = self.psutil.Process(pid)
        return process

    def children(self, pid: int) -> list[int]:
        found = _proc_children(pid) if sys.platform.startswith("linux") else None
        if found is None:
            found = sorted(c.pid for c in self._process(pid).children())
        for gone in set(self._processes) - {pid, *found}:
            del self._processes[gone]
        return found

    def rss(self, pid: int) -> int:
        return int(self._process(pid).memory_info().rss)

    def private(self, pid: int) -> tuple[int | None, int | None]:
        full = self._process(pid).memory_full_info()
        uss, pss = getattr(full, "uss", None), getattr(full, "pss", None)
        return (None if uss is None else int(uss)), (None if pss is None else int(pss))


class _MallocInfo(ctypes.Structure):
    """glibc's `struct mallinfo2` (2.33 and later): every field a size_t."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def malloc_reader() -> Callable[[], tuple[int, int]] | None:
    """What reads glibc's malloc's bytes in use and held free in this process (mallinfo2: under a microsecond); None
    without glibc 2.33. Freed memory that malloc keeps (fragmentation: a freed block split by later small ones) is
    resident, so RSS grows with it though nothing is kept: the analysis takes it off."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    mallinfo2.restype = _MallocInfo
    mallinfo2.argtypes = []

    def read() -> tuple[int, int]:
        info = mallinfo2()
        return int(info.uordblks) + int(info.hblkhd), int(info.fordblks)

    return read


def default_probe() -> Probe | None:
    """psutil when it is installed, else /proc on Linux, else None (the recorder is off)."""
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return ProcProbe() if os.path.isfile(f"/proc/{os.getpid()}/statm") else None
    return PsutilProbe(psutil)


class ProcessMemoryRecorder:
    """Records the training process's and its children's memory at the end of each step of a window.

    `start` begins a window, `step(n)` wraps step n (it reads when the step ends), `stop` ends the window and keeps
    its `record`, which `section` gives as the companion file's JSON.
    """

    name = NAME

    def __init__(self, pid: int | None = None, probe: Probe | None = None) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.probe = probe if probe is not None else default_probe()
        self.record: ProcessMemoryRecord | None = None
        # Only the training process's own malloc can be asked: the recorder runs in it.
        self.malloc = malloc_reader() if self.pid == os.getpid() else None
        self._on = False
        self._private_ok = True
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def available(self) -> bool:
        return self.probe is not None

    def start(self, directory: pathlib.Path | None = None) -> None:
        """A new window (`directory`, where the profiler writes, is not needed: what it records goes in the companion)."""
        self.stop()
        probe = self.probe
        if probe is None:
            self.record = None
            return
        self.record = ProcessMemoryRecord(COMPLETE, "", probe.source, [])
        self._on, self._private_ok = True, True
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._read_private, args=(probe, self.record, self._wake), daemon=True)
        self._thread.name = "tb-leakfinder process memory"
        self._thread.start()

    @contextlib.contextmanager
    def step(self, step_num: int) -> Iterator[None]:
        yield
        self.sample(step_num)

    def sample(self, step_num: int) -> None:
        """The processes' memory now, at the end of step `step_num`."""
        record, probe = self.record, self.probe
        if not self._on or record is None or probe is None:
            return
        if len(record.samples) >= MAX_SAMPLES:
            self._on = False
            record.status = PARTIAL
            record.warning = f"the first {MAX_SAMPLES} steps of the window were recorded: capture fewer steps (count)"
            return
        try:
            main = ProcessReading(self.pid, probe.rss(self.pid), None, None)
            in_use, held = self.malloc() if self.malloc is not None else (None, None)
            sample = ProcessSample(step_num, time.time_ns(), main, malloc_in_use=in_use, malloc_free=held)
            for child in probe.children(self.pid)[:MAX_CHILDREN]:
                try:
                    sample.children.append(ProcessReading(child, probe.rss(child), None, None))
                except probe.gone:
                    continue
        except Exception as exc:  # noqa: BLE001 - whatever the platform raises: the training loop goes on without it
            self._fail(f"reading the memory of process {self.pid} or its children failed at step {step_num}", exc)
            return
        record.samples.append(sample)
        self._wake.set()

    def _read_private(self, probe: Probe, record: ProcessMemoryRecord, wake: threading.Event) -> None:
        """Reads USS and PSS into the latest sample until the window ends, then once more, whole, into its last."""
        turn = 0
        while self._private_ok:
            if self._on:
                wake.wait()
                wake.clear()
            if not record.samples:
                return  # stopped before any step
            latest = record.samples[-1]
            readings = [latest.main, *latest.children]
            first, read = turn % len(readings), 0
            for reading in readings[first:] + readings[:first]:
                if read and record.samples[-1] is not latest:
                    break  # a later step ended: read into its sample, from where this round stopped
                try:
                    reading.uss, reading.pss = probe.private(reading.pid)
                except probe.gone:
                    pass  # a worker gone since the step's end
                except Exception as exc:  # noqa: BLE001 - a /proc that hides smaps_rollup (hidepid, a container policy)
                    self._private_off(f"USS and PSS could not be read ({_describe(exc)}): RSS only")
                    return
                read += 1
            turn += read
            if not self._on and read == len(readings):
                return

    def _private_off(self, why: str) -> None:
        self._private_ok = False
        if self.record is not None and not self.record.warning:
            self.record.warning = why

    def _fail(self, what: str, exc: BaseException) -> None:
        self._on = False
        record = self.record
        if record is None:
            return
        record.status = PARTIAL if record.samples else FAILED
        record.warning = f"{what} ({_describe(exc)}): process memory is not recorded for the rest of this window"

    def stop(self) -> None:
        """Ends the window: the reading thread reads the last step's USS/PSS, for at most PRIVATE_WAIT_S, and ends."""
        self._on = False
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._wake.set()
        thread.join(PRIVATE_WAIT_S)

    def section(self, window: Window | None = None) -> Section | None:
        """The companion file's `process_memory` (docs/recordings.md), None when nothing was recorded."""
        if self.record is None:
            return None
        return Section(asdict(self.record), self.record.warning)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
