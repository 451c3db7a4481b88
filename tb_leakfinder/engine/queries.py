"""What each view asks of the engine: one typed function per answer, the routes', the CLI's, the Python API's
and the standalone page's alike.

Arguments come checked and found: runs as discovery found them, hosts among their run's, allocators and
modules looked up here (`host`, then `allocator` or `module_at`) before being asked about; numbers as ints. A name that
matches nothing is a NotFoundError. Nothing here knows of requests or TensorBoard.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from tb_leakfinder import wire
from tb_leakfinder.analyses import allocator_lookup
from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.buffer_paging import DEFAULT_PAGE, MAX_PAGE, query_buffers
from tb_leakfinder.analyses.downsample import DEFAULT_POINTS
from tb_leakfinder.analyses.host_decisions import NAMED, NAMED_REASON, with_process
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.errors import NotFoundError
from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.registry import format_of

# The engine serves the queries: typed against it, imported by the views that hold one.
if TYPE_CHECKING:
    from tb_leakfinder.analyses import pod_ranking, static_buffers
    from tb_leakfinder.analyses import timeline as timelines
    from tb_leakfinder.engine.engine import Engine, HostDone
    from tb_leakfinder.wire.schema import DefaultAllocator, Verdict
else:
    # Cold start: what a report of one host does not ask for (a pod's ranking, a timeline, a module's buffers) loads
    # when asked.
    pod_ranking = LazyModule("tb_leakfinder.analyses.pod_ranking")
    static_buffers = LazyModule("tb_leakfinder.analyses.static_buffers")
    timelines = LazyModule("tb_leakfinder.analyses.timeline")


@dataclass(frozen=True)
class HostAt:
    """A host of a run whose file was analysed: what its allocators and modules are found in."""

    run: str
    host: str
    analysis: HostAnalysis
    hlo_protos: dict[str, bytes]


@dataclass(frozen=True)
class AllocatorAt:
    """An allocator found on a host of a run: what its timeline and buffers are asked of."""

    run: str
    host: str
    analysis: HostAnalysis
    allocator: AllocatorAnalysis


@dataclass(frozen=True)
class ModuleAt:
    """A compiled program found on a host of a run."""

    run: str
    host: str
    module: HloModule


def runs(engine: Engine) -> wire.RunsAnswer:
    """Discovered runs, each with the errors of its files found unreadable so far (it reads nothing), and the formats
    read, for the tab's notice when there are none."""
    return {
        "runs": [{"run": r.name, "hosts": list(r.hosts), "errors": engine.known_errors(r)} for r in engine.runs()],
        "formats": wire.format_listings(),
    }


def report(
    engine: Engine, run: Run | None = None, host: str | None = None, done: HostDone | None = None, allocator: str | None = None
) -> wire.ReportAnswer:
    """The report of one run (or one host of it), or of every run, with the histories of the TensorBoard runs
    holding several captures (`Engine.report`, the one place a report is assembled); with `allocator`, each host
    keeps only the allocator of that label or memory id (`select_allocator`)."""
    answer = engine.report(None if run is None else run.name, host, done)
    return answer if allocator is None else select_allocator(answer, allocator)


def select_allocator(report: wire.ReportAnswer, allocator: str) -> wire.ReportAnswer:
    """The report with each host keeping only the allocator whose label or memory id is `allocator`.

    A host's verdict is then that allocator's, with its process's beside it
    (`host_decisions.with_process`), and its default allocator that one;
    hosts without it are left out, except those that could not be read. A
    name no host has is an error naming the allocators there are.
    """
    runs: list[wire.RunReport] = []
    for run in report["runs"]:
        hosts: list[wire.HostReport] = []
        for h in run["hosts"]:
            mine = [a for a in h["allocators"] if allocator_lookup.names_allocator(allocator, a["allocator"], a["memory_id"])]
            if mine:
                hosts.append(_with_allocators(h, mine))
            elif "error" in h:
                hosts.append(h)
        if hosts:
            runs.append({**run, "verdict": cast("Verdict", verdicts.worst([h["verdict"] for h in hosts])), "hosts": hosts})
    if not any(h["allocators"] for run in runs for h in run["hosts"]):
        every = dict.fromkeys(
            (a["allocator"], a["memory_id"]) for run in report["runs"] for h in run["hosts"] for a in h["allocators"]
        )
        choices = allocator_lookup.allocator_choices(every) or "none"
        raise NotFoundError(f"no allocator {allocator!r}; the allocators are {choices}")
    return {**report, "runs": runs}


def _with_allocators(h: wire.HostReport, mine: list[wire.AllocatorReport]) -> wire.HostReport:
    named = [(a["allocator"], verdicts.Verdict(a["verdict"], a["reason"], a["cannot_tell"])) for a in mine]
    process = h.get("process_memory")
    verdict = with_process(
        verdicts.combine(named), None if process is None else verdicts.Verdict(process["verdict"], process["reason"])
    )
    chosen: DefaultAllocator = {
        "memory_id": mine[0]["memory_id"],
        "allocator": mine[0]["allocator"],
        "rule": NAMED,
        "reason": NAMED_REASON,
    }
    return {
        **h,
        "allocators": mine,
        "verdict": cast("Verdict", verdict.verdict),
        "reason": verdict.reason,
        "cannot_tell": verdict.cannot_tell,
        "default_allocator": chosen,
    }


def overview(engine: Engine, run: Run) -> wire.OverviewAnswer:
    """The pod overview of a run: each host's allocators, worst first."""
    return overview_of(run.name, engine.overview_rows(run))


def run_overview(run: wire.RunReport) -> wire.OverviewAnswer:
    """The pod overview of a run's report (`report`'s `runs[]`): what the CLI's text shows for a run of several hosts."""
    return overview_of(run["run"], [wire.overview_host_rows(h) for h in run["hosts"]])


def overview_of(run: str, rows_per_host: Sequence[Sequence[wire.OverviewRow]]) -> wire.OverviewAnswer:
    """A run's overview from its hosts' rows: ranked worst first, its leaking hosts counted (analyses/pod_ranking.py)."""
    rows = [row for mine in rows_per_host for row in mine]
    order = pod_ranking.ranked([_standing(row) for row in rows])
    leaking = pod_ranking.leaking_hosts([[row["verdict"] for row in mine] for mine in rows_per_host])
    return wire.overview_json(run, len(rows_per_host), leaking, [rows[i] for i in order])


def _standing(row: wire.OverviewRow) -> pod_ranking.Standing:
    return pod_ranking.Standing(
        row["host"],
        row["verdict"],
        row["leak_bytes_per_step"],
        row["bytes_per_step"],
        row["peak_bytes_in_use"],
        row["memory_capacity_bytes"],
    )


def history(engine: Engine, tb_run: str) -> wire.HistoryAnswer:
    """A TensorBoard run's captures as one history ("": the logdir's top); NotFoundError unless it has captures."""
    return engine.history(tb_run)


def diff(
    engine: Engine, run_a: Run, run_b: Run, host_a: str | None = None, host_b: str | None = None, engine_b: Engine | None = None
) -> wire.ComparisonAnswer:
    """Run B (the change) compared with run A (the base), or a host of each; `engine_b` serves B when it is another's."""
    from tb_leakfinder.analyses.diff import compare  # loaded by the first comparison, not with the views

    side_a = engine.run_side(run_a, host_a)
    side_b = (engine_b or engine).run_side(run_b, host_b)
    return wire.comparison_json(compare(side_a, side_b, host_a, host_b))


def host(engine: Engine, run: Run, name: str | None) -> HostAt:
    """A host of `run` (its first when None), analysed; the error its file gives when it cannot be."""
    host_name = run.host_path(name)[0]
    result = engine.host(run, host_name)
    return HostAt(run.name, host_name, result.unwrap(), result.hlo_protos)


def allocator(at: HostAt, name: str | None) -> AllocatorAt:
    """The host's allocator whose label or memory id is `name`; when None, the host's default allocator
    (analyses/host_decisions.py), the one its report's `default_allocator` names."""
    advice = wire.record_events(at.analysis.profile.format)
    return AllocatorAt(at.run, at.host, at.analysis, allocator_lookup.find_allocator(at.analysis, name, advice))


def timeline(
    at: AllocatorAt, points: int, start_ps: int | None = None, end_ps: int | None = None, family: int | None = None
) -> wire.TimelineAnswer:
    """An allocator's memory over time, at most `points` samples of [start_ps, end_ps], of one family or all."""
    a, steps = at.allocator, at.analysis.profile.steps
    body = wire.timeline_json(a, steps, timelines.timeline(a, points, start_ps, end_ps, family, steps))
    return {"run": at.run, "host": at.host, **body}


def buffers(
    at: AllocatorAt,
    offset: int = 0,
    limit: int = DEFAULT_PAGE,
    sort: str = "bytes",
    order: str = "desc",
    family: int | None = None,
    status: str | None = None,
    start_ps: int | None = None,
    end_ps: int | None = None,
    program: str | None = None,
    allocation: int | None = None,
) -> wire.BuffersAnswer:
    """A page of an allocator's buffers (analyses/buffer_paging.py says what each argument selects)."""
    a = at.allocator
    page = query_buffers(a, offset, limit, sort, order, family, status, start_ps, end_ps, program, allocation)
    body = wire.buffers_json(a, at.analysis.profile.steps, page)
    return {"run": at.run, "host": at.host, "allocator": a.label, "memory_id": a.memory_id, **body}


def buffer_pages(at: AllocatorAt) -> Iterator[wire.BuffersAnswer]:
    """Every page of an allocator's buffers, the largest first; a row's `site` indexes its own page's `sites`."""
    offset = 0
    while True:
        page = buffers(at, offset, MAX_PAGE)
        yield page
        offset += len(page["buffers"])
        if not page["buffers"] or offset >= page["total"]:
            return


def module_at(at: HostAt, name: str) -> ModuleAt:
    """The host's compiled program that its report's modules name `name`."""
    path = at.analysis.profile.path
    return ModuleAt(at.run, at.host, registry.module(format_of(path), at.hlo_protos, name, path))


def module(at: ModuleAt, memory_space: int | None = None, points: int = DEFAULT_POINTS) -> wire.ModuleAnswer:
    """A compiled program in detail: its heap over its run, its largest buffers, of one memory space."""
    detail = static_buffers.module_detail(at.module, memory_space, points)
    return {"run": at.run, "host": at.host, **wire.module_detail_json(detail)}
