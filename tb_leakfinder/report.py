"""The one JSON report model that the plugin, the CLI and the Python API all present."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.breakdown import BreakdownRow
from tb_leakfinder.analyses.buffer_query import MAX_PAGE, BufferPage
from tb_leakfinder.analyses.capacity import Forecast, OutOfMemory
from tb_leakfinder.analyses.downsample import MAX_POINTS
from tb_leakfinder.analyses.history import History
from tb_leakfinder.analyses.history import measure as history_measure
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.analyses.pod_ranking import worst_first
from tb_leakfinder.analyses.static_buffers import SMALL_BUFFER_BYTES, ModuleDetail, ModuleSummary, PeakBuffer, WholeProgramBuffer
from tb_leakfinder.analyses.step_sources import NONE, StepSource
from tb_leakfinder.analyses.timeline import Timeline
from tb_leakfinder.analyses.words import format_bytes, short_program_ids
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.lifetimes import NO_TIME, STATUS_NAMES
from tb_leakfinder.model.memory import CompiledPrograms, Steps
from tb_leakfinder.model.sites import NO_SITE, Site
from tb_leakfinder.read.formats import registry
from tb_leakfinder.store.json_shape import Shape, dataclass_shape

# The comparison's types, for its JSON: the diff engine itself is imported only where a comparison is made.
if TYPE_CHECKING:
    from tb_leakfinder.analyses.diff import AllocatorDiff, Comparison, Delta, GroupDiff, GroupSide, ModuleDiff

REPORT_VERSION = 1
Json = dict[str, Any]


def known_capacity(allocator: Json) -> int:
    """An allocator JSON's memory capacity, 0 when unknown. Its `memory_capacity_bytes` is XProf's (stack + heap +
    free at the peak), so one no larger than the peak means no free memory was reported (a CPU's, PyTorch 1.9's) or
    none was left: either way no capacity to measure against."""
    capacity = int(allocator["memory_capacity_bytes"])
    return capacity if capacity > allocator["peak_bytes_in_use"] else 0


def steps_json(steps: Steps) -> list[Json]:
    return [
        {"step": int(n), "start_ps": int(s), "end_ps": int(e)}
        for n, s, e in zip(steps.step_num, steps.start_ps, steps.end_ps, strict=True)
    ]


def step_source_json(source: StepSource) -> Json:
    return {"kind": source.kind, "name": source.name, "num_steps": source.num_steps, "description": source.description}


def forecast_json(forecast: Forecast | None) -> Json | None:
    if forecast is None:
        return None
    return {
        "bytes_available": forecast.bytes_available,
        "growth_bytes_per_step": round(forecast.growth_bytes_per_step, 1),
        "steps_to_oom": forecast.steps_to_oom,
        "step_duration_ps": forecast.step_duration_ps,
        "seconds_to_oom": None if forecast.seconds_to_oom is None else round(forecast.seconds_to_oom, 3),
        "description": forecast.description,
    }


def _group_key_json(strings: list[str], row: BreakdownRow) -> Json:
    return {
        "op": short_program_ids(strings[row.op]),
        "shape": strings[row.shape],
        "dtype": strings[row.dtype],
        "region": strings[row.region],
    }


def site_json(site: Site) -> Json:
    """Where buffers were made (model/sites.py), with the line of code as `where`."""
    return {
        **{name: getattr(site, name) for name in _SITE_FIELDS},
        "candidates": list(site.candidates),
        "stack": list(site.stack),
    }


def _where_json(sites: list[Site], index: int) -> Json:
    site = sites[index] if 0 <= index < len(sites) else NO_SITE
    return {"where": site.where, "site": site_json(site)}


def stack_hint(a: AllocatorAnalysis, profile_format: str) -> str | None:
    """How to get Python frames in a profile of that format (its hints' `python_frames`), when none of the
    allocator's buffers has them."""
    if any(site.stack for site in a.sites):
        return None
    return registry.hints(profile_format).python_frames


def format_hints_json(profile_format: str) -> Json:
    """What a host's format tells its users, for the CLI and the tab (which have no per-format switch)."""
    hints = registry.hints(profile_format)
    return {
        "name": hints.name,
        "record_events": hints.record_events,
        "memory_id_note": hints.memory_id_note,
        "static_modules": registry.has_modules(profile_format),
        "xprof_tools": hints.xprof_tools,
    }


def allocator_json(a: AllocatorAnalysis, profile_format: str) -> Json:
    s, strings = a.summary, a.events.strings
    groups = [
        {
            "group": i,
            "op": short_program_ids(strings[g.op]),
            "shape": g.shape,
            "dtype": strings[g.dtype],
            "region": strings[g.region],
            "label": short_program_ids(verdicts.family_label(g, strings, a.sites)),
            "num_shapes": g.num_shapes,
            "latest_shape": g.latest_shape,
            "kind": g.kind,
            "count": g.count,
            "requested_bytes": g.requested_bytes,
            "bytes": g.bytes,
            "steps": g.steps,
            "first_step": g.first_step,
            "last_step": g.last_step,
            "onset_step": g.onset_step,
            "growth_steps": g.growth_steps,
            "regrown": g.regrown,
            "bytes_per_step": round(g.bytes_per_step, 1),
            "allocated_bytes_per_step": round(g.allocated_bytes_per_step, 1),
            "score": g.score,
            **_where_json(a.sites, g.site),
        }
        for i, g in enumerate(a.suspects.groups)
    ]
    breakdown = [
        {
            "category": r.category,
            **_group_key_json(strings, r),
            "count": r.count,
            "bytes": r.bytes,
            **_where_json(a.sites, r.site),
        }
        for r in a.breakdown
    ]
    return {
        "memory_id": a.memory_id,
        "name": a.name,
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
        "freed_before_window_count": s.freed_before_window_count,
        "growth_bytes_per_step": round(s.growth_bytes_per_step, 1),
        "leak_bytes_per_step": round(a.leak_bytes_per_step, 1),
        "heap_start_bytes": s.heap_start_bytes,
        "heap_end_bytes": s.heap_end_bytes,
        "heap_floor_bytes": s.heap_floor_bytes,
        "verdict": a.verdict.verdict,
        "reason": short_program_ids(a.verdict.reason),
        "forecast": forecast_json(a.forecast),
        "out_of_memory": None if a.out_of_memory is None else asdict(a.out_of_memory),
        "fragmentation_note": a.fragmentation_note,
        "warnings": a.warnings,
        "groups": groups,
        "peak_breakdown": breakdown,
        "stack_hint": stack_hint(a, profile_format),
    }


def host_json(h: HostAnalysis, modules: list[ModuleSummary]) -> Json:
    allocators = [allocator_json(a, h.profile.format) for a in h.allocators]
    verdict = verdicts.host_verdict([(a.name, a.verdict) for a in h.allocators], modules)
    return {
        "host": h.profile.host,
        "format": h.profile.format,
        "format_hints": format_hints_json(h.profile.format),
        "verdict": verdict.verdict,
        "reason": short_program_ids(verdict.reason),
        "warnings": list(h.profile.warnings),
        "duration_ps": h.profile.duration_ps,
        "start_time_ns": h.profile.start_time_ns,
        "event_clock_ps": h.profile.event_clock_ps,
        "snapshot": h.profile.snapshot,
        "compiled_programs": [asdict(c) for c in h.profile.compiled_programs],
        "step_source": step_source_json(h.step_source),
        "num_steps": len(h.profile.steps),
        "steps": steps_json(h.profile.steps),
        "allocators": allocators,
        "modules": [module_summary_json(m) for m in modules],
    }


def host_error_json(host: str, profile_format: str, error: LeakfinderError, path: str) -> Json:
    """A host whose file at `path` (of that format) cannot be analysed: the run's other hosts still are."""
    verdict = verdicts.not_analysed(error.message)
    return {
        "host": host,
        "format": profile_format,
        "format_hints": format_hints_json(profile_format),
        "verdict": verdict.verdict,
        "reason": verdict.reason,
        "error": error.message,
        "file": path,
        "warnings": [],
        "duration_ps": 0,
        "start_time_ns": None,
        "event_clock_ps": None,
        "snapshot": False,
        "compiled_programs": [],
        "step_source": step_source_json(StepSource(NONE, None, Steps.empty(), "not analysed")),
        "num_steps": 0,
        "steps": [],
        "allocators": [],
        "modules": [],
    }


def run_json(name: str, hosts: list[Json]) -> Json:
    return {"run": name, "verdict": verdicts.run_verdict(hosts), "hosts": hosts}


def error_json(run: str, host: str, path: str, message: str) -> Json:
    """A file that could not be read: its run, host and path, and why (its message, less the path it opens with)."""
    return {"run": run, "host": host, "file": path, "reason": message.removeprefix(f"{path}: ")}


def report_json(runs: list[Json], histories: list[Json] | None = None) -> Json:
    """The report of some runs; `histories`: those of their TensorBoard runs that hold several captures. `errors`
    lists every host file of the runs that could not be read (each also a host entry with `error`, in its run)."""
    errors = [error_json(r["run"], h["host"], h["file"], h["error"]) for r in runs for h in r["hosts"] if "error" in h]
    return {"version": REPORT_VERSION, "limits": limits_json(), "runs": runs, "histories": histories or [], "errors": errors}


def history_json(h: History, errors: list[Json] | None = None) -> Json:
    """A run's captures as one history (analyses/history.py): per allocator, its captures over time and trend;
    `errors` (`error_json`): the files of its captures that could not be read."""
    return {
        "run": h.run,
        "num_captures": h.num_captures,
        "verdict": h.verdict,
        "reason": h.reason,
        "note": h.note,
        "errors": errors or [],
        "series": [
            {
                "host": s.host,
                "memory_id": s.memory_id,
                "name": s.name,
                "verdict": s.verdict,
                "reason": s.reason,
                "rise_bytes": s.rise_bytes,
                "bytes_per_hour": _rounded(s.bytes_per_hour, 1),
                "bytes_per_step": _rounded(s.bytes_per_step, 1),
                "bytes_per_capture": round(s.bytes_per_capture, 1),
                "hours_to_oom": _rounded(s.hours_to_oom, 3),
                "capacity_bytes": s.capacity_bytes,
                "time_note": s.time_note,
                "unexplained": s.unexplained,
                "captures": [
                    {
                        "capture": c.capture,
                        "kind": c.kind,
                        "time_s": round(c.time_s, 3),
                        "time_source": c.time_source,
                        "duration_s": round(c.duration_s, 6),
                        "heap_start_bytes": c.heap_start_bytes,
                        "heap_peak_bytes": c.heap_peak_bytes,
                        "heap_end_bytes": c.heap_end_bytes,
                        "heap_floor_bytes": c.heap_floor_bytes,
                        "measure_bytes": history_measure(c),
                        "never_freed_bytes": c.never_freed_bytes,
                        "first_step": c.first_step,
                        "last_step": c.last_step,
                        "program": c.program,
                        "verdict": c.verdict,
                    }
                    for c in s.captures
                ],
                "families": [
                    {**asdict(f), "bytes_per_step": round(f.bytes_per_step, 1), "bytes_per_hour": _rounded(f.bytes_per_hour, 1)}
                    for f in s.families
                ],
            }
            for s in h.series
        ],
    }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def limits_json() -> Json:
    """The server's limits the frontend follows (docs/http_api.md, "limits")."""
    return {"small_buffer_bytes": SMALL_BUFFER_BYTES, "page_size": MAX_PAGE, "max_points": MAX_POINTS}


# Long-lived temporaries a module summary lists (the module route lists all of them).
SUMMARY_LONG_LIVED = 3


def _group_small(entries: list[PeakBuffer] | list[WholeProgramBuffer], label_key: str) -> list[Json]:
    """Entries below SMALL_BUFFER_BYTES folded into one, so that totals stay whole."""
    grouped = [{**asdict(e), "count": 1} for e in entries if e.bytes >= SMALL_BUFFER_BYTES]
    small = [e for e in entries if e.bytes < SMALL_BUFFER_BYTES]
    if small:
        grouped.append(
            {
                **dict.fromkeys(("instruction", "opcode", "op_name", "shape", "source", "last_user"), ""),
                "logical_buffer": None,
                "label": f"small (<{format_bytes(SMALL_BUFFER_BYTES)})",
                "bytes": sum(e.bytes for e in small),
                "count": len(small),
                label_key: "small",
            }
        )
    return grouped


def module_summary_json(m: ModuleSummary) -> Json:
    """A module's entry in the report: small whole-program buffers folded, the top long-lived temporaries."""
    out = asdict(m)
    out["whole_program_buffers"] = _group_small(m.whole_program_buffers, "reason")
    out["num_long_lived_temporaries"] = len(m.long_lived_temporaries)
    out["long_lived_temporaries"] = out["long_lived_temporaries"][:SUMMARY_LONG_LIVED]
    return _short_messages(out)


def module_detail_json(m: ModuleDetail) -> Json:
    """The module route's answer: the peak's small buffers folded, everything else in full."""
    out = asdict(m)
    out["peak_buffers"] = _group_small(m.peak_buffers, "kind")
    return _short_messages(out)


def _short_messages(module: Json) -> Json:
    """The module's sentences (`actionable` messages) with long program ids cut; its `name` stays whole."""
    for flag in module["actionable"]:
        flag["message"] = short_program_ids(flag["message"])
    return module


def _delta_json(d: Delta, digits: int | None = None) -> Json:
    """{"a", "b", "delta"}; rounded as each side's report rounds the figure."""
    a, b = (d.a, d.b) if digits is None else (round(d.a, digits), round(d.b, digits))
    return {"a": a, "b": b, "delta": b - a}


def _side_label(side: GroupSide | None) -> str:
    return side.label if side is not None else ""


def _group_diff_json(g: GroupDiff) -> Json:
    a, b = g.a, g.b
    return {
        "op": g.op,
        "shape": g.shape,
        "dtype": g.dtype,
        "region": g.region,
        "status": g.status,
        "label": _side_label(b or a),
        "kind_a": a.kind if a else None,
        "kind_b": b.kind if b else None,
        "count_a": a.count if a else 0,
        "count_b": b.count if b else 0,
        "bytes_a": a.bytes if a else 0,
        "bytes_b": b.bytes if b else 0,
        "bytes_per_step_a": round(a.bytes_per_step, 1) if a else 0,
        "bytes_per_step_b": round(b.bytes_per_step, 1) if b else 0,
        "onset_step_a": a.onset_step if a else None,
        "onset_step_b": b.onset_step if b else None,
        "new_leak": g.new_leak,
    }


def _allocator_diff_json(d: AllocatorDiff) -> Json:
    a, b = d.a, d.b
    return {
        "name_a": a.name if a else None,
        "name_b": b.name if b else None,
        "verdict_a": a.verdict.verdict if a else None,
        "verdict_b": b.verdict.verdict if b else None,
        "reason_a": a.verdict.reason if a else None,
        "reason_b": b.verdict.reason if b else None,
        "peak_bytes_in_use": _delta_json(d.peak_bytes_in_use),
        "never_freed_bytes": _delta_json(d.never_freed_bytes),
        "growth_bytes_per_step": _delta_json(d.growth_bytes_per_step, 1),
        "num_allocations": _delta_json(d.num_allocations),
        "num_deallocations": _delta_json(d.num_deallocations),
        "groups": [_group_diff_json(g) for g in d.groups],
    }


def _module_diff_json(m: ModuleDiff) -> Json:
    return {
        "name": m.name,
        "name_a": m.name_a,
        "name_b": m.name_b,
        "peak_heap_bytes": _delta_json(m.peak_heap_bytes),
        "live_out_bytes": _delta_json(m.live_out_bytes),
        "whole_program_buffers_added": [{**asdict(w), "count": 1} for w in m.whole_program_buffers_added],
        "whole_program_buffers_removed": [{**asdict(w), "count": 1} for w in m.whole_program_buffers_removed],
    }


def comparison_json(c: Comparison) -> Json:
    """The answer of the compare route and of `tb-leakfinder diff --json`."""
    hosts = [
        {
            "host_a": h.a.host,
            "host_b": h.b.host,
            "verdict_a": h.a.verdict.verdict,
            "verdict_b": h.b.verdict.verdict,
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
        "verdict_a": c.verdict_a,
        "verdict_b": c.verdict_b,
        "hosts": hosts,
        "unmatched_hosts": c.unmatched_hosts,
        "regression": c.regression,
        "regressions": c.regressions,
    }


def timeline_json(a: AllocatorAnalysis, steps: Steps, t: Timeline) -> Json:
    out: Json = {
        "allocator": a.name,
        "memory_id": a.memory_id,
        "total_events": t.total_events,
        "time_ps": t.time_ps.tolist(),
        "heap_bytes": t.heap_bytes.tolist(),
        "stack_bytes": t.stack_bytes.tolist(),
        "fragmentation": np.round(t.fragmentation, 6).tolist(),
        "never_freed_bytes": t.never_freed_bytes.tolist(),
        "peak": {"time_ps": a.summary.peak_time_ps, "bytes": a.summary.peak_bytes_in_use, "step": a.summary.peak_step},
        "steps": steps_json(steps),
    }
    if t.group is not None and t.group_bytes is not None:
        out["group"] = t.group
        out["group_bytes"] = t.group_bytes.tolist()
    return out


def buffers_json(a: AllocatorAnalysis, steps: Steps, page: BufferPage) -> Json:
    """A page of buffers. Each row's `site` indexes the page's `sites`: a site is written once, not per buffer."""
    used = np.unique(a.buffers.site[page.rows]).tolist() if len(page.rows) else []
    position = {site: k for k, site in enumerate(used)}
    sites = [site_json(a.sites[k] if 0 <= k < len(a.sites) else NO_SITE) for k in used]
    rows = _buffer_rows(a, steps, page.rows, position)
    return {"total": page.total, "offset": page.offset, "limit": page.limit, "buffers": rows, "sites": sites}


_BUFFER_COLUMNS = (
    "addr",
    "alloc_time_ps",
    "free_time_ps",
    "alloc_step",
    "free_step",
    "tensor_bytes",
    "chunk_bytes",
    "op",
    "shape",
    "dtype",
    "region",
    "status",
    "site",
)


def _buffer_rows(a: AllocatorAnalysis, steps: Steps, page: np.ndarray, position: dict[int, int]) -> list[Json]:
    """The JSON of the buffers at `page`; each column is gathered once for the whole page, not per row."""
    strings, step_nums = a.events.strings, steps.step_num.tolist()
    columns = [getattr(a.buffers, name)[page].tolist() for name in _BUFFER_COLUMNS]
    groups = a.suspects.group_of_buffer[page].tolist()
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
            "allocation_bytes": allocated,
            "op": ops[op],
            "shape": strings[shape],
            "dtype": strings[dtype],
            "region": strings[region],
            "status": STATUS_NAMES[status],
            "group": group if group >= 0 else None,
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
        ), group in zip(page.tolist(), zip(*columns, strict=True), groups, strict=True)
    ]


# The pod overview of a multi-host run: one row per host and allocator, worst first.
def _overview_row(host: Json, allocator: Json | None) -> Json:
    a = allocator or {}
    return {
        "host": host["host"],
        "memory_id": a.get("memory_id", a.get("name")),
        "name": a.get("name"),
        "verdict": a.get("verdict", host["verdict"]),
        "bytes_per_step": a.get("growth_bytes_per_step"),
        "leak_bytes_per_step": a.get("leak_bytes_per_step"),
        "peak_bytes_in_use": a.get("peak_bytes_in_use"),
        "memory_capacity_bytes": a.get("memory_capacity_bytes"),
        "step_source": host.get("step_source"),
        "error": host.get("error"),
    }


def overview_host_rows(host: Json) -> list[Json]:
    """One host's rows, from its report JSON (`host_json` or `host_error_json`)."""
    return [_overview_row(host, a) for a in (host["allocators"] or [None])]


def overview_json(run: str, rows_per_host: list[list[Json]]) -> Json:
    """What the Leaks tab shows first for a pod; a host leaks when one of its allocators does."""
    rows = sorted((row for rows in rows_per_host for row in rows), key=worst_first)
    return {
        "run": run,
        "num_hosts": len(rows_per_host),
        "num_leaking_hosts": sum(1 for rows in rows_per_host if any(r["verdict"] == verdicts.LEAK for r in rows)),
        "rows": rows,
    }


def run_overview_json(run: Json) -> Json:
    """From a run's report JSON (`run_json`)."""
    return overview_json(run["run"], [overview_host_rows(h) for h in run["hosts"]])


# The shapes of what a disk cache entry stores (a host's report, its overview rows): an entry is
# used only if it has them, so no view meets a missing key. Each follows the function named.
VERDICTS = frozenset(verdicts.SEVERITY)
_STEP_SOURCE: dict[str, Shape] = {"kind": str, "name": (str, None), "num_steps": int, "description": str}  # step_source_json
_GROUP_KEY: dict[str, Shape] = {"op": str, "shape": str, "dtype": str, "region": str}  # _group_key_json
_SITE_FIELDS = ("context", "program", "buffer", "allocation", "hlo_op", "op_name", "hlo_shape", "source", "match", "model_frame")
_SITE: Shape = {  # site_json
    **dict.fromkeys(_SITE_FIELDS, str),
    "allocation": int,
    "candidates": [str],
    "stack": [str],
}
_WHERE: dict[str, Shape] = {"where": str, "site": _SITE}  # _where_json
_GROUP: Shape = {  # an entry of allocator_json's groups
    "group": int,
    **_GROUP_KEY,
    **dict.fromkeys(("label", "latest_shape", "kind"), str),
    **dict.fromkeys(("num_shapes", "count", "requested_bytes", "bytes", "steps", "growth_steps"), int),
    **dict.fromkeys(("first_step", "last_step", "onset_step"), (int, None)),
    "regrown": bool,
    **dict.fromkeys(("bytes_per_step", "allocated_bytes_per_step", "score"), float),
    **_WHERE,
}
_ALLOCATOR: Shape = {  # allocator_json
    **dict.fromkeys(("memory_id", "name", "reason"), str),
    **dict.fromkeys(
        (
            "num_allocations",
            "num_deallocations",
            "balance",
            "peak_bytes_in_use",
            "peak_heap_bytes",
            "peak_stack_reserved_bytes",
            "memory_capacity_bytes",
            "peak_before_window_bytes",
            "never_freed_count",
            "never_freed_bytes",
            "freed_before_window_count",
            "heap_start_bytes",
            "heap_end_bytes",
            "heap_floor_bytes",
        ),
        int,
    ),
    "peak_time_ps": (int, None),
    "peak_step": (int, None),
    "peak_fragmentation": float,
    "growth_bytes_per_step": float,
    "leak_bytes_per_step": float,
    "verdict": VERDICTS,
    "forecast": (dataclass_shape(Forecast), None),
    "out_of_memory": (dataclass_shape(OutOfMemory), None),
    "fragmentation_note": (str, None),
    "warnings": [str],
    "groups": [_GROUP],
    "peak_breakdown": [{**{k: v for k, v in dataclass_shape(BreakdownRow).items() if k != "site"}, **_GROUP_KEY, **_WHERE}],
    "stack_hint": (str, None),
}
_SMALL_ROW: Shape = {"label": str, "bytes": int, "count": int, "reason": str}  # _group_small's folded row
_MODULE: Shape = {  # module_summary_json
    **dataclass_shape(ModuleSummary),
    "whole_program_buffers": [({**dataclass_shape(WholeProgramBuffer), "count": int}, _SMALL_ROW)],
    "num_long_lived_temporaries": int,
}
_FORMAT_HINTS: Shape = {  # format_hints_json
    "name": str,
    "record_events": str,
    "memory_id_note": str,
    "static_modules": bool,
    "xprof_tools": bool,
}
ERROR_SHAPE: Shape = {"run": str, "host": str, "file": str, "reason": str}  # error_json
HOST_SHAPE: Shape = {  # host_json and host_error_json
    "host": str,
    "format": str,
    "format_hints": _FORMAT_HINTS,
    "verdict": VERDICTS,
    "reason": str,
    "warnings": [str],
    "duration_ps": int,
    "start_time_ns": (int, None),
    "event_clock_ps": (int, None),
    "snapshot": bool,
    "compiled_programs": [dataclass_shape(CompiledPrograms)],
    "step_source": _STEP_SOURCE,
    "num_steps": int,
    "steps": [dict.fromkeys(("step", "start_ps", "end_ps"), int)],
    "allocators": [_ALLOCATOR],
    "modules": [_MODULE],
}
OVERVIEW_ROWS_SHAPE: Shape = [  # overview_host_rows
    {
        "host": str,
        "memory_id": (str, None),
        "name": (str, None),
        "verdict": VERDICTS,
        "bytes_per_step": (float, None),
        "leak_bytes_per_step": (float, None),
        "peak_bytes_in_use": (int, None),
        "memory_capacity_bytes": (int, None),
        "step_source": _STEP_SOURCE,
        "error": (str, None),
    }
]
