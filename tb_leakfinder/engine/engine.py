"""Runs, their cached analyses and reports: what every view asks for."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from tb_leakfinder import wire
from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.host_decisions import HostDecisions, decide_host
from tb_leakfinder.analyses.pipeline import HostAnalysis, analyze_host
from tb_leakfinder.engine.history import capture_points, several_captures, tensorboard_run
from tb_leakfinder.errors import LeakfinderError, NotFoundError, WorkerDiedError
from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.model.memory import MACHINE_READER
from tb_leakfinder.read import discovery
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.read.files import FileIdentity
from tb_leakfinder.read.formats.registry import format_of, read_host, read_recordings
from tb_leakfinder.store.consistency import check_consistent
from tb_leakfinder.store.memory_cache import ComputeCache

if TYPE_CHECKING:
    # A comparison's sides: the diff engine is imported only when one is made; the disk cache (hashlib, zipfile,
    # logging) by whoever makes one, never by a report without it; the modules below load on first use.
    from tb_leakfinder.analyses import history as history_analysis
    from tb_leakfinder.analyses import history_points, static_buffers
    from tb_leakfinder.analyses.diff import HostSide, RunSide
    from tb_leakfinder.model import history as history_model
    from tb_leakfinder.store.disk_cache import DiskCache, Entry
else:
    # Cold start: a host without compiled programs has no static view, a run of one capture no history, and a host's
    # history points are made for the disk cache: none of their analyses loads for a report without them.
    history_analysis = LazyModule("tb_leakfinder.analyses.history")
    history_points = LazyModule("tb_leakfinder.analyses.history_points")
    static_buffers = LazyModule("tb_leakfinder.analyses.static_buffers")
    history_model = LazyModule("tb_leakfinder.model.history")

T = TypeVar("T")
U = TypeVar("U")
DEFAULT_CACHE_BYTES = 2 << 30
# Each host being read holds its file and its columns (about twice the file) until it is analysed.
MAX_DEFAULT_WORKERS = 4
DISCOVERY_TTL_S = 5.0


@dataclass
class HostResult:
    """One host's analyses, or the error its file gives, with the report JSON made once."""

    analysis: HostAnalysis | None
    error: LeakfinderError | None = None
    hlo_protos: dict[str, bytes] = field(default_factory=dict)  # "<module>(<id>)" -> HloProto bytes
    modules: list[static_buffers.ModuleSummaryResult] = field(default_factory=list)
    _decisions: HostDecisions | None = field(default=None, repr=False)
    _json: wire.HostReport | None = field(default=None, repr=False)
    _points: history_model.HostPoints | None = field(default=None, repr=False)

    def unwrap(self) -> HostAnalysis:
        if self.error is not None:
            raise self.error
        assert self.analysis is not None
        return self.analysis

    def check(self) -> None:
        """ValueError where a result read back from a disk cache entry contradicts itself."""
        if self.analysis is not None:
            check_consistent(self.analysis)

    def decisions(self) -> HostDecisions:
        """Its verdict and default allocator, decided once for its report and its side of a comparison."""
        if self._decisions is None:
            self._decisions = decide_host(self.unwrap(), self.modules)
        return self._decisions

    def json(self) -> wire.HostReport:
        if self._json is None:
            self._json = wire.host_json(self.unwrap(), self.modules, self.decisions())
        return self._json

    def points(self) -> history_model.HostPoints | None:
        """What the run's history takes of this host, made once; None for an error."""
        if self.analysis is not None and self._points is None:
            self._points = history_points.host_points(self.analysis, self.modules)
        return self._points

    def side(self, host: str) -> HostSide:
        """This host as a side of a comparison."""
        from tb_leakfinder.analyses.diff import HostSide

        if self.error is not None:
            return HostSide(host, verdicts.not_analysed(self.error.message), [], [])
        analysis = self.unwrap()
        return HostSide(host, self.decisions().verdict, analysis.allocators, self.modules)


def machine_memory_bytes() -> int:
    """This machine's physical memory, 0 when the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def analyze_file(path: str, host: str, session_dir: str, recordings: str | None = None) -> HostResult:
    """Everything tb_leakfinder derives from one host's profile, and from the file recorded beside it (`recordings`:
    its path), which never hides the profile: one that cannot be read is a warning, the host analysed without it."""
    profile_format = format_of(path)
    reading = read_host(profile_format, path, host, session_dir)
    reading.profile.format = profile_format.name
    # A format one framework writes says so; a file several may write (an XSpace) may say which itself.
    reading.profile.framework = profile_format.hints.framework or reading.profile.framework
    reading.profile.live_entry = profile_format.hints.live_entry
    if not reading.profile.machine_memory_bytes:
        # No format records its host's memory: a host-memory allocator is bounded by this machine's, and says so.
        reading.profile.machine_memory_bytes, reading.profile.machine_memory_of = machine_memory_bytes(), MACHINE_READER
    if recordings is not None:
        try:
            reading.profile.recordings = read_recordings(recordings)
            reading.profile.recordings_file = recordings
        except LeakfinderError as exc:
            reading.profile.warnings.append(f"{exc.message}; the profile is reported without it")
    summaries, summary_warnings = static_buffers.module_summaries(reading.modules) if reading.modules else ([], [])
    reading.profile.warnings.extend(summary_warnings)
    return HostResult(analyze_host(reading.profile, reading.modules), hlo_protos=reading.hlo_protos, modules=summaries)


def _nbytes(obj: object) -> int:
    return sum(getattr(v, "nbytes", 0) for v in vars(obj).values())


def _weight(result: HostResult) -> int:
    """The bytes a cached analysis holds: each allocator's columns, the steps, the HLO protos."""
    if result.analysis is None:
        return 1024
    total = _nbytes(result.analysis.profile.steps)
    total += sum(len(data) for data in result.hlo_protos.values())
    for a in result.analysis.allocators:
        total += _nbytes(a.events) + _nbytes(a.buffers)
    return total + 1024


def analyze_result(
    path: str, host: str, session_dir: str, recordings: str | None = None
) -> tuple[HostResult, wire.HostReport | None]:
    """`analyze_file` with its error kept as the result, and the host's report JSON (None on an error)."""
    try:
        result = analyze_file(path, host, session_dir, recordings)
        return result, result.json()
    except LeakfinderError as exc:
        return HostResult(None, exc), None


def analyze_into(disk: DiskCache | None, key: FileIdentity, host: str, session_dir: str) -> HostResult:
    """`analyze_result`, stored on disk."""
    result, body = analyze_result(key.path, host, session_dir, recorded_path(key))
    if disk is not None:
        disk.store(key, result, body, overview_rows(host, key.path, body, result.error), result.points())
    return result


def recorded_path(key: FileIdentity) -> str | None:
    """The path of the file recorded beside a host's profile that its identity holds, None without one."""
    return None if key.recordings is None else key.recordings[0]


def host_json(host: str, path: str, body: wire.HostReport | None, error: LeakfinderError | None) -> wire.HostReport:
    """A host's report JSON, or the entry that says why its file at `path` could not be analysed: one of the two
    is given."""
    if error is not None:
        return wire.host_error_json(host, _format_name(path), error, path)
    assert body is not None
    return body


def _stamp(key: FileIdentity | None) -> tuple[int, int] | None:
    """What tells a file rewritten: its size and modification time (None: it could not be stat'ed)."""
    return None if key is None else (key.size, key.mtime_ns)


def _format_name(path: str) -> str:
    """The format a host's file was discovered as; "" when it no longer sniffs as one (a link gone dangling)."""
    try:
        return format_of(path).name
    except LeakfinderError:
        return ""


def overview_rows(host: str, path: str, body: wire.HostReport | None, error: LeakfinderError | None) -> list[wire.OverviewRow]:
    """A host's rows of the pod overview, from its report JSON or its error."""
    return wire.overview_host_rows(host_json(host, path, body, error))


# What the progress of a long report is told each time a host is done: (host, its file's bytes).
HostDone = Callable[[str, int], None]
# A host's report JSON (or its history points) or its error, and its file's identity (None when its file cannot
# even be stat'ed). A string: the report's schema is loaded on first use (wire/__init__.py).
HostOutcome: TypeAlias = "tuple[wire.HostReport | None, LeakfinderError | None, FileIdentity | None]"
PointsOutcome: TypeAlias = "tuple[history_model.HostPoints | None, LeakfinderError | None, FileIdentity | None]"


class Engine:
    """Lists runs and serves their analyses from a cache keyed by file identity.

    Beneath the in-memory cache, a `DiskCache` (when given) keeps every analysis
    across restarts: a report is answered from the stored report JSON alone,
    the timeline and buffers from the stored columns, without decoding the profile.
    """

    def __init__(
        self,
        list_runs: Callable[[], list[Run]],
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        workers: int | None = None,
        disk: DiskCache | None = None,
    ) -> None:
        """`workers`: how many hosts of a run are read and analysed at once (default: one per CPU, at most 4)."""
        self._list_runs = list_runs
        self.workers = max(1, workers or min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))
        self._cache: ComputeCache[HostResult] = ComputeCache(cache_bytes)
        self.disk = disk
        self.analyses = 0  # profiles actually decoded and analysed (not served from either cache)
        self._runs: list[Run] = []
        self._runs_at = -DISCOVERY_TTL_S
        self._runs_lock = threading.Lock()
        # The files found unreadable, by path: what the run list says of a run before its report is asked again.
        self._unreadable: dict[str, tuple[FileIdentity | None, LeakfinderError]] = {}

    @classmethod
    def for_logdir(cls, logdir: str, cache_bytes: int = DEFAULT_CACHE_BYTES, disk: DiskCache | None = None) -> Engine:
        return cls(lambda: discovery.discover(logdir), cache_bytes, disk=disk)

    @classmethod
    def for_path(
        cls, path: str, workers: int | None = None, disk: DiskCache | None = None, runs: list[Run] | None = None
    ) -> Engine:
        """A logdir, a session folder or one `.xplane.pb`, as the CLI and API take them; `runs`: the path's, when
        the caller has discovered them already."""
        found = discovery.runs_for_path(path) if runs is None else runs
        return cls(lambda: found, workers=workers, disk=disk)

    @property
    def computations(self) -> int:
        """Analyses computed or loaded from disk into memory (one per file identity, however many asked)."""
        return self._cache.computations

    def runs(self) -> list[Run]:
        with self._runs_lock:
            now = time.monotonic()
            if now - self._runs_at >= DISCOVERY_TTL_S:
                self._runs = self._list_runs()
                self._runs_at = now
            return self._runs

    def run(self, name: str) -> Run:
        return discovery.find_run(self.runs(), name)

    def host(self, run: Run, host: str | None) -> HostResult:
        """A host's analysis (its first host's when None), or its error: the whole entry, from memory or disk."""
        host_name = run.host_path(host)[0]
        result, error, _ = self._outcome(run, host_name, None, lambda made: made)
        return result if result is not None else HostResult(None, error)

    def _note(self, path: str, key: FileIdentity | None, error: LeakfinderError | None) -> None:
        if error is None:
            self._unreadable.pop(path, None)
        elif not isinstance(error, WorkerDiedError):
            self._unreadable[path] = (key, error)

    def known_errors(self, run: Run) -> list[wire.UnreadableFile]:
        """`wire.error_json` of each host of `run` whose file was found unreadable and has not changed since:
        what the run list can tell without reading anything (one stat per such file)."""
        found = []
        for host, path in run.hosts.items():
            known = self._unreadable.get(path)
            if known is None:
                continue
            key, error = known
            try:
                current: FileIdentity | None = run.identity(host)
            except LeakfinderError:
                current = None
            if _stamp(current) == _stamp(key):
                found.append(wire.error_json(run.name, host, path, error.message))
        return found

    def outcome(self, run: Run, host: str) -> HostOutcome:
        """A host's report JSON or its error: a file that cannot even be stat'ed (a dangling or looping link)
        is that host's error, not its run's."""
        return self._outcome(run, host, self.disk.load_report if self.disk is not None else None, HostResult.json)

    def points_outcome(self, run: Run, host: str) -> PointsOutcome:
        """A host's history points or its error, as `outcome`."""
        return self._outcome(run, host, self.disk.load_points if self.disk is not None else None, HostResult.points)

    def host_rows(self, run: Run, host: str) -> list[wire.OverviewRow]:
        """A host's overview rows: from memory, else the disk entry's summary alone (a few hundred bytes); an
        unreadable host's row says why."""
        path = run.host_path(host)[1]
        summary = self.disk.load_overview_rows if self.disk is not None else None
        rows, error, _ = self._outcome(run, host, summary, lambda made: overview_rows(host, path, made.json(), None))
        return rows if rows is not None else overview_rows(host, path, None, error)

    def _outcome(
        self, run: Run, host: str, stored: Callable[[FileIdentity], Entry[T] | None] | None, made: Callable[[HostResult], T]
    ) -> tuple[T | None, LeakfinderError | None, FileIdentity | None]:
        """What `made` gives of a host, or its error: from memory, else the disk entry's member (`stored`) alone,
        else the whole entry (`_host`). The one way to a host's cached analysis: every public entry point
        (`host`, `outcome`, `points_outcome`, `host_rows`) is this, for one member of the cache."""
        path = run.host_path(host)[1]
        try:
            key = run.identity(host)
        except LeakfinderError as exc:
            self._note(path, None, exc)
            return None, exc, None
        entry = stored(key) if stored is not None and self._cache.peek(key) is None else None
        if entry is not None and not isinstance(entry.error, WorkerDiedError):
            value, error = entry.value, entry.error
        else:
            result = self._host(run, host, key)
            value, error = (None, result.error) if result.error is not None else (made(result), None)
        self._note(path, key, error)
        return value, error, key

    def _host(self, run: Run, host: str, key: FileIdentity) -> HostResult:
        def compute() -> HostResult:
            stored: HostResult | None = self.disk.load(key, HostResult) if self.disk is not None else None
            if stored is not None:
                return stored
            self.analyses += 1
            return analyze_into(self.disk, key, host, run.session_dir)

        return self._cache.get(key, compute, _weight)

    def run_report(
        self, run: Run, host: str | None = None, done: HostDone | None = None, *, unreadable_raises: bool = True
    ) -> wire.RunReport:
        """The report of a run's hosts (or one host). When none can be read, its error, or with
        `unreadable_raises` False the run's entry whose hosts each say why (a report of several runs)."""
        hosts = list(run.hosts) if host is None else [run.host_path(host)[0]]

        def one(h: str) -> HostOutcome:
            found = self.outcome(run, h)
            if done is not None:
                done(h, 0 if found[2] is None else found[2].size)
            return found

        results = self._map_hosts(hosts, one)
        errors = [error for _, error, _ in results if error is not None]
        if unreadable_raises and len(errors) == len(results):
            raise errors[0]
        # One unreadable host (a job killed mid-write) must not hide the verdicts of the others.
        bodies = [host_json(h, run.host_path(h)[1], body, error) for h, (body, error, _) in zip(hosts, results, strict=True)]
        return wire.run_json(run.name, bodies)

    def overview_rows(self, run: Run) -> list[list[wire.OverviewRow]]:
        """Each host's rows of a run's pod overview (`host_rows`), in the run's order of hosts."""
        return self._map_hosts(list(run.hosts), lambda h: self.host_rows(run, h))

    def run_side(self, run: Run, host: str | None = None) -> RunSide:
        """A run's analyses (or one host's), as a side of a comparison; an error if no host can be read."""
        from tb_leakfinder.analyses.diff import RunSide

        hosts = list(run.hosts) if host is None else [run.host_path(host)[0]]
        results = self._map_hosts(hosts, lambda h: self.host(run, h))
        errors = [r.error for r in results if r.error is not None]
        if len(errors) == len(results):
            raise errors[0]
        return RunSide(run.name, [r.side(h) for h, r in zip(hosts, results, strict=True)])

    def captures(self, tb_run: str) -> list[Run]:
        """The sessions (captures) of a TensorBoard run, as discovered; NotFoundError when it has none."""
        sessions = [r for r in self.runs() if tensorboard_run(r.name) == tb_run]
        if not sessions:
            known = sorted({tensorboard_run(r.name) for r in self.runs()})
            raise NotFoundError(f"no TensorBoard run named {tb_run!r} with captures; runs: {', '.join(known[:20]) or 'none'}")
        return sessions

    def history(self, tb_run: str) -> wire.HistoryAnswer:
        """The history of a TensorBoard run's captures (`wire.history_json`), from their hosts' points; its
        `errors` are the captures' files that could not be read."""
        sessions = self.captures(tb_run)
        pairs = [(run, host) for run in sessions for host in run.hosts]
        points, errors = [], []
        outcomes = self._map_hosts(pairs, lambda p: self.points_outcome(*p))
        for (run, host), (found, error, key) in zip(pairs, outcomes, strict=True):
            if error is not None:
                errors.append(wire.error_json(run.name, host, run.host_path(host)[1], error.message))
            elif found is not None and key is not None:
                points += capture_points(run.name, found, key.mtime_ns)
        unreadable = len({e["run"] for e in errors})
        # Captures without memory events are told how their format records them, as each capture's report is.
        advice = wire.record_events(format_of(pairs[0][0].hosts[pairs[0][1]]).name) if pairs and not points else ""
        history = history_analysis.run_history(tb_run, points, len(sessions), advice)
        return wire.history_json(history_analysis.count_unreadable(history, unreadable), errors)

    def _map_hosts(self, hosts: Sequence[U], work: Callable[[U], T]) -> list[T]:
        """`work` for each host, several at once: the scanner and numpy release the GIL for most of the work."""
        if len(hosts) > 1 and self.workers > 1:
            from concurrent.futures import ThreadPoolExecutor  # with logging: ~5 ms a one-host report does without

            with ThreadPoolExecutor(min(self.workers, len(hosts))) as pool:
                return list(pool.map(work, hosts))
        return [work(h) for h in hosts]

    def report(self, run_name: str | None = None, host: str | None = None, done: HostDone | None = None) -> wire.ReportAnswer:
        """The report of the run named `run_name` (or one host of it), or of every run: the one place a report is
        assembled. Of every run, a run none of whose files can be read is reported with its errors, as one whose other
        hosts can be, so that one bad file hides no other run, and the histories of the TensorBoard runs holding
        several captures come with it. When no file at all can be read there is nothing to report: the error."""
        runs = [self.run(run_name)] if run_name is not None else self.runs()
        runs_json = [self.run_report(r, host, done, unreadable_raises=len(runs) == 1) for r in runs]
        errors = [h["error"] for r in runs_json for h in r["hosts"] if "error" in h]
        if len(runs) > 1 and len(errors) == sum(len(r["hosts"]) for r in runs_json):
            raise LeakfinderError(f"none of the {len(errors)} profile files of these {len(runs)} runs can be read; {errors[0]}")
        histories = []
        if run_name is None and host is None:
            reported = {tensorboard_run(r.name) for r in runs}
            several = [t for t in several_captures(r.name for r in self.runs()) if t in reported]
            histories = [self.history(t) for t in several]
        return wire.report_json(runs_json, histories)
