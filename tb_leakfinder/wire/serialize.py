"""The analyses as the JSON objects `schema.py` declares: what the plugin, the CLI and the Python API all present.

Each function returns its declared `TypedDict`, so mypy holds the keys it writes to the schema. The strings the
analyses keep as `str` (a verdict, a kind) are cast to their declared choices; tests/unit/wire holds those
choices to the analyses' constants. The objects built by `dataclasses.asdict` are cast too; the same tests hold
each such dataclass's fields to its declaration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.buffer_paging import DEFAULT_PAGE, MAX_PAGE
from tb_leakfinder.analyses.downsample import MAX_POINTS
from tb_leakfinder.analyses.pipeline import is_host_memory
from tb_leakfinder.analyses.recompiles import modules_cause
from tb_leakfinder.analyses.step_sources import NONE, StepSourceResult
from tb_leakfinder.analyses.words import format_bytes, short_program_ids
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.columns import sorted_distinct
from tb_leakfinder.model.hlo import SMALL_BUFFER_BYTES
from tb_leakfinder.model.lifetimes import NO_TIME, STATUS_NAMES
from tb_leakfinder.model.memory import Steps
from tb_leakfinder.model.sites import NO_SITE
from tb_leakfinder.read.formats import registry

# The analyses' dataclasses only type what is serialized here: what a report of one capture without compiled programs
# or a companion file does not make (a history, a module's buffers, holders, the process's memory, a comparison) is
# not loaded for it. The schema's classes only type the dicts built here (`wire/__init__.py` says why it loads them
# on first use).
if TYPE_CHECKING:
    from tb_leakfinder.analyses.breakdown import BreakdownRowResult
    from tb_leakfinder.analyses.buffer_paging import BufferPageResult
    from tb_leakfinder.analyses.capacity import ForecastResult
    from tb_leakfinder.analyses.diff import (
        AllocatorDiffResult,
        Comparison,
        DeltaResult,
        FamilyDiffResult,
        FamilySide,
        ModuleDiffResult,
    )
    from tb_leakfinder.analyses.history import History
    from tb_leakfinder.analyses.holders import HolderResult, HolderStatus
    from tb_leakfinder.analyses.host_decisions import DefaultAllocatorChoice, HostDecisions
    from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
    from tb_leakfinder.analyses.process_memory import ProcessMemoryAnalysis
    from tb_leakfinder.analyses.static_buffers import (
        ModuleDetail,
        ModuleSummaryResult,
        PeakBufferResult,
        WholeProgramBufferResult,
    )
    from tb_leakfinder.analyses.suspects import CauseResult
    from tb_leakfinder.analyses.timeline import Timeline
    from tb_leakfinder.model.history import CapturePoint
    from tb_leakfinder.model.sites import SiteInfo
    from tb_leakfinder.wire.schema import (
        AllocatorDiff,
        AllocatorReport,
        BreakdownCategory,
        BreakdownRow,
        Buffer,
        BufferPage,
        BufferStatus,
        CaptureKind,
        Cause,
        CauseId,
        ComparisonAnswer,
        DefaultAllocator,
        DefaultAllocatorRule,
        Delta,
        Family,
        FamilyDiff,
        FamilyStatus,
        Forecast,
        ForecastLimit,
        FormatHints,
        FormatListing,
        HistoryAnswer,
        HistoryCapture,
        HistoryFamily,
        HistorySeries,
        Holder,
        HolderKind,
        HolderMatch,
        HolderSearch,
        HostDiff,
        HostReport,
        LeakKind,
        Limits,
        ListedWholeProgramBuffer,
        ModuleDetailBody,
        ModuleDiff,
        ModuleSummary,
        NearBy,
        OutOfMemory,
        OverviewAnswer,
        OverviewRow,
        ProcessMeasure,
        ProcessMemory,
        RateBasis,
        ReportAnswer,
        RunReport,
        SearchStatus,
        Site,
        SiteContext,
        SiteMatch,
        SmallBuffers,
        Step,
        StepSource,
        StepSourceKind,
        TimelineBody,
        TimeSource,
        UnreadableFile,
        Verdict,
    )

REPORT_VERSION = 3
# A JSON object read back (from the disk cache, where the shape check vouched for its keys) or not yet typed.
Json = Mapping[str, Any]


def _verdict(value: str) -> Verdict:
    return cast("Verdict", value)


def steps_json(steps: Steps) -> list[Step]:
    columns = (steps.step_num.tolist(), steps.start_ps.tolist(), steps.end_ps.tolist())  # Python ints, made in C
    return [{"step": n, "start_ps": s, "end_ps": e} for n, s, e in zip(*columns, strict=True)]


def step_source_json(source: StepSourceResult) -> StepSource:
    kind = cast("StepSourceKind", source.kind)
    return {"kind": kind, "name": source.name, "num_steps": source.num_steps, "description": source.description}


def forecast_json(forecast: ForecastResult | None) -> Forecast | None:
    if forecast is None:
        return None
    return {
        "limit": cast("ForecastLimit", forecast.limit),
        "limit_bytes": forecast.limit_bytes,
        "bytes_available": forecast.bytes_available,
        "growth_bytes_per_step": round(forecast.growth_bytes_per_step, 1),
        "steps_to_oom": forecast.steps_to_oom,
        "step_duration_ps": forecast.step_duration_ps,
        "seconds_to_oom": None if forecast.seconds_to_oom is None else round(forecast.seconds_to_oom, 3),
        "description": forecast.description,
    }


def site_json(site: SiteInfo) -> Site:
    """Where buffers were made (model/sites.py), with the line of code as `where`."""
    return {
        "context": cast("SiteContext", site.context),
        "program": site.program,
        "buffer": site.buffer,
        "allocation": site.allocation,
        "hlo_op": site.hlo_op,
        "op_name": site.op_name,
        "hlo_shape": site.hlo_shape,
        "source": site.source,
        "match": cast("SiteMatch", site.match),
        "near_by": cast("NearBy", site.near_by),
        "model_frame": site.model_frame,
        "candidates": list(site.candidates),
        "stack": list(site.stack),
    }


def _site_at(sites: list[SiteInfo], index: int) -> SiteInfo:
    return sites[index] if 0 <= index < len(sites) else NO_SITE


def format_hints_json(profile_format: str) -> FormatHints:
    """What a host's format tells its users, for the CLI and the tab (which have no per-format switch)."""
    hints = registry.hints(profile_format)
    return {
        "name": hints.name,
        "record_events": hints.record_events,
        "memory_id_note": hints.memory_id_note,
        "static_modules": registry.has_modules(profile_format),
        "xprof_tools": hints.xprof_tools,
        "shape_label": hints.shape_label,
        "live_entry": hints.live_entry,
    }


def format_listings() -> list[FormatListing]:
    """Every format read: how to record one and where its files go, for a logdir where none is found."""
    return [{"name": f.hints.name, "capture": f.hints.capture, "layout": f.hints.layout} for f in registry.FORMATS]


def holder_json(h: HolderResult) -> Holder:
    return {
        "path": h.path,
        "kind": cast("HolderKind", h.kind),
        "type": h.type_name,
        "count": h.count,
        "requested_bytes": h.requested_bytes,
        "chunk_bytes": h.chunk_bytes,
        "all_listed": h.all_listed,
        "created": h.created,
        "created_text": h.created_text,
        "match": cast("HolderMatch", h.match),
    }


def holder_search_json(s: HolderStatus | None) -> HolderSearch | None:
    if s is None:
        return None
    return {**cast("HolderSearch", asdict(s)), "status": cast("SearchStatus", s.status), "elapsed_s": round(s.elapsed_s, 3)}


def _families_json(a: AllocatorAnalysis) -> list[Family]:
    strings = a.events.strings
    families: list[Family] = []
    for i, g in enumerate(a.suspects.families):
        site = _site_at(a.sites, g.site)
        holders = a.holders[i] if i < len(a.holders) else []
        families.append(
            {
                "family": i,
                "op": short_program_ids(strings[g.op]),
                "shape": g.shape,
                "dtype": strings[g.dtype],
                "region": strings[g.region],
                "label": short_program_ids(verdicts.family_label(g, strings, a.sites)),
                "num_shapes": g.num_shapes,
                "latest_shape": g.latest_shape,
                "kind": cast("LeakKind", g.kind),
                "count": g.count,
                "requested_bytes": g.requested_bytes,
                "chunk_bytes": g.chunk_bytes,
                "steps": g.steps,
                "first_step": g.first_step,
                "last_step": g.last_step,
                "onset_step": g.onset_step,
                "growth_steps": g.growth_steps,
                "regrown": g.regrown,
                "bytes_per_step": round(g.bytes_per_step, 1),
                "chunk_bytes_per_step": round(g.chunk_bytes_per_step, 1),
                "score": g.score,
                "where": site.where,
                "where_text": a.where_texts[i] if i < len(a.where_texts) else "",
                "site": site_json(site),
                "holders": [holder_json(h) for h in holders],
                "cause": _cause_json(g.cause),
            }
        )
    return families


def _cause_json(cause: CauseResult | None) -> Cause | None:
    if cause is None:
        return None
    return {"id": cast("CauseId", cause.id), "evidence": cause.evidence, "fix": cause.fix}


def _breakdown_json(a: AllocatorAnalysis, r: BreakdownRowResult) -> BreakdownRow:
    strings, site = a.events.strings, _site_at(a.sites, r.site)
    return {
        "category": cast("BreakdownCategory", r.category),
        "op": short_program_ids(strings[r.op]),
        "shape": strings[r.shape],
        "dtype": strings[r.dtype],
        "region": strings[r.region],
        "count": r.count,
        "bytes": r.bytes,
        "where": site.where,
        "site": site_json(site),
    }


def allocator_json(a: AllocatorAnalysis, profile_format: str, host_memory: bool) -> AllocatorReport:
    """`host_memory`: whether its format says it hands out host RAM (`pipeline.is_host_memory`)."""
    s = a.summary
    return {
        "memory_id": a.memory_id,
        "allocator": a.label,
        "num_allocations": s.num_allocations,
        "num_deallocations": s.num_deallocations,
        "balance": s.num_allocations - s.num_deallocations,
        "peak_bytes_in_use": s.peak_bytes_in_use,
        "peak_heap_bytes": s.peak_heap_bytes,
        "peak_stack_reserved_bytes": s.peak_stack_reserved_bytes,
        "memory_capacity_bytes": s.memory_capacity_bytes,
        "peak_time_ps": s.peak_time_ps,
        "peak_step": s.peak_step,
        "peak_fragmentation": round(s.peak_fragmentation, 6),
        "peak_before_window_bytes": a.peak_before_window_bytes,
        "never_freed_count": s.never_freed_count,
        "never_freed_bytes": s.never_freed_bytes,
        "never_freed_requested_bytes": s.never_freed_requested_bytes,
        "freed_before_window_count": s.freed_before_window_count,
        "growth_bytes_per_step": round(s.growth_bytes_per_step, 1),
        "leak_bytes_per_step": round(a.leak_bytes_per_step, 1),
        "heap_start_bytes": s.heap_start_bytes,
        "heap_end_bytes": s.heap_end_bytes,
        "heap_floor_bytes": s.heap_floor_bytes,
        "verdict": _verdict(a.verdict.verdict),
        "reason": short_program_ids(a.verdict.reason),
        "forecast": forecast_json(a.forecast),
        "out_of_memory": None if a.out_of_memory is None else cast("OutOfMemory", asdict(a.out_of_memory)),
        "fragmentation_note": a.fragmentation_note,
        "warnings": a.warnings,
        "families": _families_json(a),
        "peak_breakdown": [_breakdown_json(a, r) for r in a.breakdown],
        "stack_hint": None if a.python_frames else registry.hints(profile_format).python_frames,
        "host_memory": host_memory,
        "cannot_tell": a.verdict.cannot_tell,
    }


def record_events(profile_format: str) -> str:
    """How a host of this format gets memory events, in plain words: what a host without any is told."""
    return registry.hints(profile_format).record_events.replace("`", "")


def process_memory_json(p: ProcessMemoryAnalysis) -> ProcessMemory:
    main = p.main
    return {
        "verdict": _verdict(p.verdict),
        "reason": p.reason,
        "source": p.source,
        "status": cast("SearchStatus", p.status),
        "warning": p.warning,
        "threshold_bytes_per_step": p.threshold_bytes_per_step,
        "bytes_per_step": round(p.outside_bytes_per_step, 1),
        "main_grows": main is not None and main.grows,
        "rss_bytes_per_step": round(p.rss_bytes_per_step, 1),
        "allocator_bytes_per_step": round(p.allocator_bytes_per_step, 1),
        "malloc_free_bytes_per_step": round(p.malloc_free_bytes_per_step, 1),
        "allocators": p.allocators,
        "workers": [
            {
                "pid": w.pid,
                "measure": cast("ProcessMeasure", w.measure),
                "bytes_per_step": round(w.bytes_per_step, 1),
                "grows": w.grows,
                "bytes": w.bytes,
            }
            for w in p.workers
        ],
        "workers_bytes_per_step": round(p.workers_bytes_per_step, 1),
        "causes": [{"id": c.id, "title": c.title, "fix": c.fix, "doc": c.doc} for c in p.causes],
        "steps": p.steps,
        "time_ps": p.time_ps,
        "main_bytes": [0 if b is None else b for b in main.bytes] if main is not None else [],
        "workers_bytes": p.workers_bytes,
    }


def default_allocator_json(choice: DefaultAllocatorChoice | None) -> DefaultAllocator | None:
    if choice is None:
        return None
    a = choice.allocator
    return {
        "memory_id": a.memory_id,
        "allocator": a.label,
        "rule": cast("DefaultAllocatorRule", choice.rule),
        "reason": choice.reason,
    }


def host_json(h: HostAnalysis, modules: list[ModuleSummaryResult], decisions: HostDecisions) -> HostReport:
    """A host's report; `decisions`: its verdict and default allocator (analyses/host_decisions.py)."""
    allocators = [allocator_json(a, h.profile.format, is_host_memory(h.profile, a.memory_id)) for a in h.allocators]
    verdict = decisions.verdict
    body: HostReport = {
        "host": h.profile.host,
        "format": h.profile.format,
        "format_hints": format_hints_json(h.profile.format),
        "verdict": _verdict(verdict.verdict),
        "reason": short_program_ids(verdict.reason),
        "warnings": list(h.profile.warnings),
        "duration_ps": h.profile.duration_ps,
        "start_time_ns": h.profile.start_time_ns,
        "event_clock_ps": h.profile.event_clock_ps,
        "one_moment": h.profile.one_moment,
        "compiled_programs": [{"device": c.device, "count": c.count, "bytes": c.bytes} for c in h.profile.compiled_programs],
        "step_source": step_source_json(h.step_source),
        "num_steps": len(h.profile.steps),
        "steps": steps_json(h.profile.steps),
        "allocators": allocators,
        "modules": [module_summary_json(m) for m in modules],
        "recordings_file": h.profile.recordings_file,
        "holder_search": holder_search_json(h.holder_status),
        "cause": _cause_json(modules_cause(modules, len(h.profile.steps))),
        "cannot_tell": verdict.cannot_tell,
        "default_allocator": default_allocator_json(decisions.default_allocator),
    }
    if h.process_memory is not None:
        body["process_memory"] = process_memory_json(h.process_memory)
    return body


def host_error_json(host: str, profile_format: str, error: LeakfinderError, path: str) -> HostReport:
    """A host whose file at `path` (of that format) cannot be analysed: the run's other hosts still are."""
    verdict = verdicts.not_analysed(error.message)
    return {
        "host": host,
        "format": profile_format,
        "format_hints": format_hints_json(profile_format),
        "verdict": _verdict(verdict.verdict),
        "reason": verdict.reason,
        "error": error.message,
        "file": path,
        "warnings": [],
        "duration_ps": 0,
        "start_time_ns": None,
        "event_clock_ps": None,
        "one_moment": False,
        "compiled_programs": [],
        "step_source": step_source_json(StepSourceResult(NONE, None, Steps.empty(), "not analysed")),
        "num_steps": 0,
        "steps": [],
        "allocators": [],
        "modules": [],
        "recordings_file": "",
        "holder_search": None,
        "cause": None,
        "cannot_tell": False,
        "default_allocator": None,
    }


def run_json(name: str, hosts: Sequence[Mapping[str, Any]]) -> RunReport:
    """`hosts`: `host_json`s, or ones read back from the disk cache (whose shape check vouched for them)."""
    typed = cast("list[HostReport]", hosts)
    return {"run": name, "verdict": _verdict(verdicts.worst([h["verdict"] for h in typed])), "hosts": typed}


def error_json(run: str, host: str, path: str, message: str) -> UnreadableFile:
    """A file that could not be read: its run, host and path, and why (its message, less the path it opens with)."""
    return {"run": run, "host": host, "file": path, "reason": message.removeprefix(f"{path}: ")}


def report_json(runs: Sequence[RunReport], histories: Sequence[HistoryAnswer] | None = None) -> ReportAnswer:
    """The report of some runs; `histories`: those of their TensorBoard runs that hold several captures. `errors`
    lists every host file of the runs that could not be read (each also a host entry with `error`, in its run)."""
    errors = [error_json(r["run"], h["host"], h["file"], h["error"]) for r in runs for h in r["hosts"] if "error" in h]
    return {
        "version": REPORT_VERSION,
        "limits": limits_json(),
        "runs": list(runs),
        "histories": list(histories or []),
        "errors": errors,
    }


def _history_capture_json(c: CapturePoint, measure_bytes: int) -> HistoryCapture:
    return {
        "capture": c.capture,
        "kind": cast("CaptureKind", c.kind),
        "time_s": round(c.time_s, 3),
        "time_source": cast("TimeSource", c.time_source),
        "duration_s": round(c.duration_s, 6),
        "heap_start_bytes": c.heap_start_bytes,
        "peak_heap_bytes": c.peak_heap_bytes,
        "heap_end_bytes": c.heap_end_bytes,
        "heap_floor_bytes": c.heap_floor_bytes,
        "measure_bytes": measure_bytes,
        "never_freed_bytes": c.never_freed_bytes,
        "first_step": c.first_step,
        "last_step": c.last_step,
        "program": c.program,
        "verdict": _verdict(c.verdict),
    }


def history_json(h: History, errors: list[UnreadableFile] | None = None) -> HistoryAnswer:
    """A run's captures as one history (analyses/history.py): per allocator, its captures over time and trend;
    `errors` (`error_json`): the files of its captures that could not be read."""
    series: list[HistorySeries] = [
        {
            "host": s.host,
            "memory_id": s.memory_id,
            "allocator": s.label,
            "verdict": _verdict(s.verdict),
            "reason": s.reason,
            "rate_basis": cast("RateBasis", s.rate_basis),
            "rise_bytes": s.rise_bytes,
            "bytes_per_hour": _rounded(s.bytes_per_hour, 1),
            "bytes_per_step": _rounded(s.bytes_per_step, 1),
            "bytes_per_capture": round(s.bytes_per_capture, 1),
            "hours_to_oom": _rounded(s.hours_to_oom, 3),
            "capacity_bytes": s.capacity_bytes,
            "time_note": s.time_note,
            "unexplained": s.unexplained,
            "captures": [_history_capture_json(c, m) for c, m in zip(s.captures, s.measures, strict=True)],
            "families": [
                cast(
                    "HistoryFamily",
                    {**asdict(f), "bytes_per_step": round(f.bytes_per_step, 1), "bytes_per_hour": _rounded(f.bytes_per_hour, 1)},
                )
                for f in s.families
            ],
            "cause": _cause_json(s.cause),
        }
        for s in h.series
    ]
    return {
        "tb_run": h.tb_run,
        "num_captures": h.num_captures,
        "verdict": _verdict(h.verdict),
        "reason": h.reason,
        "note": h.note,
        "errors": errors or [],
        "series": series,
        "gate_verdict": _verdict(h.gate_verdict),
    }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def limits_json() -> Limits:
    """The server's limits the frontend follows (docs/http_api.md, "limits")."""
    return {
        "small_buffer_bytes": SMALL_BUFFER_BYTES,
        "page_size": MAX_PAGE,
        "max_points": MAX_POINTS,
        "default_page_size": DEFAULT_PAGE,
    }


# Long-lived temporaries a module summary lists (the module route lists all of them).
SUMMARY_LONG_LIVED = 3


def _group_small(entries: list[PeakBufferResult] | list[WholeProgramBufferResult], label_key: str) -> list[dict[str, Any]]:
    """Entries below SMALL_BUFFER_BYTES folded into one, so that totals stay whole: `label_key` (the row's reason
    or kind) says "small" on the folded row."""
    grouped = [{**asdict(e), "count": 1} for e in entries if e.bytes >= SMALL_BUFFER_BYTES]
    small = [e for e in entries if e.bytes < SMALL_BUFFER_BYTES]
    if small:
        folded: SmallBuffers = {
            "instruction": "",
            "opcode": "",
            "op_name": "",
            "shape": "",
            "source": "",
            "last_user": "",
            "logical_buffer": None,
            "label": f"small (<{format_bytes(SMALL_BUFFER_BYTES)})",
            "bytes": sum(e.bytes for e in small),
            "count": len(small),
        }
        grouped.append({**folded, label_key: "small"})
    return grouped


def module_summary_json(m: ModuleSummaryResult) -> ModuleSummary:
    """A module's entry in the report: small whole-program buffers folded, the top long-lived temporaries."""
    out = asdict(m)
    out["whole_program_buffers"] = _group_small(m.whole_program_buffers, "reason")
    out["num_long_lived_temporaries"] = len(m.long_lived_temporaries)
    out["long_lived_temporaries"] = out["long_lived_temporaries"][:SUMMARY_LONG_LIVED]
    return cast("ModuleSummary", _short_messages(out))


def module_detail_json(m: ModuleDetail) -> ModuleDetailBody:
    """The module route's answer: the peak's small buffers folded, everything else in full."""
    out = asdict(m)
    out["peak_buffers"] = _group_small(m.peak_buffers, "kind")
    return cast("ModuleDetailBody", _short_messages(out))


def _short_messages(module: dict[str, Any]) -> dict[str, Any]:
    """The module's sentences (`actionable` messages) with long program ids cut; its `name` stays whole."""
    for flag in module["actionable"]:
        flag["message"] = short_program_ids(flag["message"])
    return module


def _delta_json(d: DeltaResult, digits: int | None = None) -> Delta:
    """{"a", "b", "delta"}; rounded as each side's report rounds the figure."""
    a, b = (d.a, d.b) if digits is None else (round(d.a, digits), round(d.b, digits))
    return {"a": a, "b": b, "delta": b - a}


def _side_label(side: FamilySide | None) -> str:
    return side.label if side is not None else ""


def _kind(side: FamilySide | None) -> LeakKind | None:
    return cast("LeakKind", side.kind) if side else None


def _family_diff_json(g: FamilyDiffResult) -> FamilyDiff:
    a, b = g.a, g.b
    return {
        "op": g.op,
        "shape": g.shape,
        "dtype": g.dtype,
        "region": g.region,
        "status": cast("FamilyStatus", g.status),
        "label": _side_label(b or a),
        "kind_a": _kind(a),
        "kind_b": _kind(b),
        "count_a": a.count if a else 0,
        "count_b": b.count if b else 0,
        "chunk_bytes_a": a.chunk_bytes if a else 0,
        "chunk_bytes_b": b.chunk_bytes if b else 0,
        "requested_bytes_a": a.requested_bytes if a else 0,
        "requested_bytes_b": b.requested_bytes if b else 0,
        "bytes_per_step_a": round(a.bytes_per_step, 1) if a else 0,
        "bytes_per_step_b": round(b.bytes_per_step, 1) if b else 0,
        "onset_step_a": a.onset_step if a else None,
        "onset_step_b": b.onset_step if b else None,
        "new_leak": g.new_leak,
    }


def _allocator_diff_json(d: AllocatorDiffResult) -> AllocatorDiff:
    a, b = d.a, d.b
    return {
        "allocator_a": a.label if a else None,
        "allocator_b": b.label if b else None,
        "verdict_a": _verdict(a.verdict.verdict) if a else None,
        "verdict_b": _verdict(b.verdict.verdict) if b else None,
        "reason_a": a.verdict.reason if a else None,
        "reason_b": b.verdict.reason if b else None,
        "out_of_memory_a": a.out_of_memory.description if a and a.out_of_memory else None,
        "out_of_memory_b": b.out_of_memory.description if b and b.out_of_memory else None,
        "peak_bytes_in_use": _delta_json(d.peak_bytes_in_use),
        "never_freed_bytes": _delta_json(d.never_freed_bytes),
        "never_freed_requested_bytes": _delta_json(d.never_freed_requested_bytes),
        "growth_bytes_per_step": _delta_json(d.growth_bytes_per_step, 1),
        "num_allocations": _delta_json(d.num_allocations),
        "num_deallocations": _delta_json(d.num_deallocations),
        "families": [_family_diff_json(g) for g in d.families],
    }


def _listed(buffers: list[WholeProgramBufferResult]) -> list[ListedWholeProgramBuffer]:
    return [cast("ListedWholeProgramBuffer", {**asdict(w), "count": 1}) for w in buffers]


def _module_diff_json(m: ModuleDiffResult) -> ModuleDiff:
    return {
        "name": m.name,
        "name_a": m.name_a,
        "name_b": m.name_b,
        "peak_heap_bytes": _delta_json(m.peak_heap_bytes),
        "live_out_bytes": _delta_json(m.live_out_bytes),
        "whole_program_buffers_added": _listed(m.whole_program_buffers_added),
        "whole_program_buffers_removed": _listed(m.whole_program_buffers_removed),
    }


def comparison_json(c: Comparison) -> ComparisonAnswer:
    """The answer of the compare route and of `tb-leakfinder diff --json`."""
    hosts: list[HostDiff] = [
        {
            "host_a": h.a.host,
            "host_b": h.b.host,
            "verdict_a": _verdict(h.a.verdict.verdict),
            "verdict_b": _verdict(h.b.verdict.verdict),
            "reason_a": h.a.verdict.reason,
            "reason_b": h.b.verdict.reason,
            "allocators": [_allocator_diff_json(a) for a in h.allocators],
            "modules": [_module_diff_json(m) for m in h.modules],
        }
        for h in c.hosts
    ]
    return {
        "run_a": c.run_a,
        "run_b": c.run_b,
        "verdict_a": _verdict(c.verdict_a),
        "verdict_b": _verdict(c.verdict_b),
        "hosts": hosts,
        "unmatched_hosts": c.unmatched_hosts,
        "regression": c.regression,
        "regressions": c.regressions,
    }


def timeline_json(a: AllocatorAnalysis, steps: Steps, t: Timeline) -> TimelineBody:
    ops, places = _event_labels(a, t.event_buffer)
    out: TimelineBody = {
        "allocator": a.label,
        "memory_id": a.memory_id,
        "total_events": t.total_events,
        "time_ps": t.time_ps.tolist(),
        "heap_bytes": t.heap_bytes.tolist(),
        "stack_bytes": t.stack_bytes.tolist(),
        "fragmentation": np.round(t.fragmentation, 6).tolist(),
        "never_freed_bytes": t.never_freed_bytes.tolist(),
        "event_bytes": t.event_bytes.tolist(),
        "event_op": ops,
        "event_where": places,
        "window_start_ps": t.window_start_ps,
        "window_end_ps": t.window_end_ps,
        "peak": {"time_ps": a.summary.peak_time_ps, "bytes": a.summary.peak_bytes_in_use, "step": a.summary.peak_step},
        "steps": steps_json(steps),
    }
    if t.family is not None and t.family_bytes is not None:
        out["family"] = t.family
        out["family_bytes"] = t.family_bytes.tolist()
    return out


def _event_labels(a: AllocatorAnalysis, rows: np.ndarray) -> tuple[list[str], list[str]]:
    """The op and the line of code of each sample's buffer (a row of the allocator's buffers, -1 for none)."""
    strings, sites = a.events.strings, a.sites
    found = rows >= 0
    ops, places = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    ops[found], places[found] = a.buffers.op[rows[found]], a.buffers.site[rows[found]]
    op_text = {op: short_program_ids(strings[op]) for op in set(ops.tolist())}
    where = {site: sites[site].where if 0 <= site < len(sites) else "" for site in set(places.tolist())}
    return (
        [op_text[op] if ok else "" for op, ok in zip(ops.tolist(), found.tolist(), strict=True)],
        [where[site] if ok else "" for site, ok in zip(places.tolist(), found.tolist(), strict=True)],
    )


def buffers_json(a: AllocatorAnalysis, steps: Steps, page: BufferPageResult) -> BufferPage:
    """A page of buffers. Each row's `site` indexes the page's `sites`: a site is written once, not per buffer."""
    used = sorted_distinct(a.buffers.site[page.rows]).tolist() if len(page.rows) else []
    position = {site: k for k, site in enumerate(used)}
    sites = [site_json(_site_at(a.sites, k)) for k in used]
    rows = _buffer_rows(a, steps, page.rows, position)
    return {"total": page.total, "offset": page.offset, "limit": page.limit, "buffers": rows, "sites": sites}


_BUFFER_COLUMNS = (
    "addr",
    "alloc_time_ps",
    "free_time_ps",
    "alloc_step",
    "free_step",
    "requested_bytes",
    "chunk_bytes",
    "op",
    "shape",
    "dtype",
    "region",
    "status",
    "site",
)
_STATUSES = cast("tuple[BufferStatus, ...]", STATUS_NAMES)


def _buffer_rows(a: AllocatorAnalysis, steps: Steps, page: np.ndarray, position: dict[int, int]) -> list[Buffer]:
    """The JSON of the buffers at `page`; each column is gathered once for the whole page, not per row."""
    strings, step_nums = a.events.strings, steps.step_num.tolist()
    columns = [getattr(a.buffers, name)[page].tolist() for name in _BUFFER_COLUMNS]
    families = a.suspects.never_freed_family[page].tolist()
    ops = {op: short_program_ids(strings[op]) for op in set(columns[_BUFFER_COLUMNS.index("op")])}
    return [
        {
            "id": i,
            "address": hex(addr),
            "alloc_time_ps": None if alloc_time == NO_TIME else alloc_time,
            "free_time_ps": None if free_time == NO_TIME else free_time,
            "alloc_step": step_nums[alloc_step] if alloc_step >= 0 else None,
            "free_step": step_nums[free_step] if free_step >= 0 else None,
            "requested_bytes": requested,
            "chunk_bytes": allocated,
            "op": ops[op],
            "shape": strings[shape],
            "dtype": strings[dtype],
            "region": strings[region],
            "status": _STATUSES[status],
            "family": family if family >= 0 else None,
            "where": a.sites[site].where if 0 <= site < len(a.sites) else "",
            "site": position[site],
        }
        for i, (
            addr,
            alloc_time,
            free_time,
            alloc_step,
            free_step,
            requested,
            allocated,
            op,
            shape,
            dtype,
            region,
            status,
            site,
        ), family in zip(page.tolist(), zip(*columns, strict=True), families, strict=True)
    ]


# The pod overview of a multi-host run: one row per host and allocator, worst first.
def _overview_row(host: Mapping[str, Any], allocator: Mapping[str, Any] | None) -> OverviewRow:
    a = allocator or {}
    return {
        "host": host["host"],
        "memory_id": a.get("memory_id", a.get("allocator")),
        "allocator": a.get("allocator"),
        "verdict": a.get("verdict", host["verdict"]),
        "bytes_per_step": a.get("growth_bytes_per_step"),
        "leak_bytes_per_step": a.get("leak_bytes_per_step"),
        "peak_bytes_in_use": a.get("peak_bytes_in_use"),
        "memory_capacity_bytes": a.get("memory_capacity_bytes"),
        "step_source": host["step_source"],
        "error": host.get("error"),
    }


def overview_host_rows(host: Mapping[str, Any]) -> list[OverviewRow]:
    """One host's rows, from its report (`host_json` or `host_error_json`, or one read back from the disk cache)."""
    return [_overview_row(host, a) for a in (host["allocators"] or [None])]


def overview_json(run: str, num_hosts: int, num_leaking_hosts: int, rows: Sequence[Mapping[str, Any]]) -> OverviewAnswer:
    """What the Leaks tab shows first for a pod. `rows`: `overview_host_rows`, or rows read back from the disk cache
    (whose shape check vouched for them), in the order the engine ranked them."""
    return {
        "run": run,
        "num_hosts": num_hosts,
        "num_leaking_hosts": num_leaking_hosts,
        "rows": [cast("OverviewRow", r) for r in rows],
    }
