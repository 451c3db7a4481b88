"""What one host's analysis gives its run's history: each allocator's figures at the capture's start, peak and
end, and the families it kept, named as across captures."""

from __future__ import annotations

from collections.abc import Sequence

from tb_leakfinder.analyses.capacity import known_capacity
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.analyses.process_memory import MEASURE_WORDS, ProcessMemoryAnalysis
from tb_leakfinder.analyses.static_buffers import ModuleSummary
from tb_leakfinder.analyses.step_sources import STEP_NUM
from tb_leakfinder.analyses.suspects import Family
from tb_leakfinder.analyses.verdict import family_label
from tb_leakfinder.analyses.words import module_base_name, normalize_name, short_program_ids
from tb_leakfinder.model.history import ONE_MOMENT, PROCESS_PREFIX, PROFILE, AllocatorPoint, FamilyPoint, HostPoints
from tb_leakfinder.model.memory import LIMIT_MACHINE, AllocatorInfo
from tb_leakfinder.model.sites import NO_SITE


def host_points(h: HostAnalysis, modules: Sequence[ModuleSummary]) -> HostPoints:
    """The history's view of one host, whose compiled programs are `modules`."""
    profile = h.profile
    steps = profile.steps.step_num.tolist() if h.step_source.kind == STEP_NUM else []
    return HostPoints(
        host=profile.host,
        kind=ONE_MOMENT if profile.one_moment else PROFILE,
        start_time_ns=profile.start_time_ns,
        duration_s=profile.duration_ps / 1e12,
        first_step=int(min(steps)) if steps else None,
        last_step=int(max(steps)) if steps else None,
        program=", ".join(sorted({module_base_name(m.name) for m in modules})),
        allocators=[_allocator_point(a, profile.allocators.get(a.memory_id)) for a in h.allocators]
        + _process_points(h.process_memory),
    )


# The history follows the process's memory, when recorded, as it follows an allocator: by these keys across captures.
PROCESS_MAIN = f"{PROCESS_PREFIX}main"
PROCESS_WORKERS = f"{PROCESS_PREFIX}workers"


def _process_points(p: ProcessMemoryAnalysis | None) -> list[AllocatorPoint]:
    """The training process's RSS less the allocators' heap growth is not a figure of one moment: the history follows
    its RSS (its floor over the window: what outlived every step) and the workers' memory summed, each capture judged
    by its own process-memory verdict. None without a recording."""
    if p is None or p.main is None:
        return []
    points = [_series_point(PROCESS_MAIN, "training process (RSS)", [v for v in p.main.bytes if v is not None], p)]
    workers = [v for v in p.workers_bytes if v is not None]
    if workers:
        measure = MEASURE_WORDS[p.workers[0].measure] if p.workers else "USS"
        points.append(_series_point(PROCESS_WORKERS, f"DataLoader workers ({measure}, summed)", workers, p))
    return points


def _series_point(key: str, label: str, values: list[int], p: ProcessMemoryAnalysis) -> AllocatorPoint:
    return AllocatorPoint(
        memory_id=key,
        label=label,
        heap_start_bytes=values[0] if values else 0,
        peak_heap_bytes=max(values, default=0),
        heap_end_bytes=values[-1] if values else 0,
        heap_floor_bytes=min(values, default=0),
        never_freed_bytes=0,
        capacity_bytes=0,
        verdict=p.verdict,
    )


def _allocator_point(a: AllocatorAnalysis, info: AllocatorInfo | None) -> AllocatorPoint:
    s = a.summary
    return AllocatorPoint(
        memory_id=a.memory_id,
        label=a.label,
        heap_start_bytes=int(s.heap_start_bytes),
        peak_heap_bytes=int(s.peak_heap_bytes),
        heap_end_bytes=int(s.heap_end_bytes),
        heap_floor_bytes=int(s.heap_floor_bytes),
        never_freed_bytes=int(s.never_freed_requested_bytes),
        capacity_bytes=_capacity(a),
        verdict=a.verdict.verdict,
        families=[_family(a, g) for g in a.suspects.families],
        heap_growth_bytes_per_step=float(round(s.growth_bytes_per_step, 1)),
        profiled_heap=info is not None and info.profiled_heap,
    )


def _capacity(a: AllocatorAnalysis) -> int:
    """The memory the allocator can hold at most: its own capacity, or its machine's memory when that is less (a CPU
    allocator's limit may be more than the machine has); 0 when neither is known."""
    s = a.summary
    known = [known_capacity(int(s.memory_capacity_bytes), int(s.peak_bytes_in_use))]
    known += [m.limit_bytes for m in a.limits if m.source == LIMIT_MACHINE]
    return min((k for k in known if k > 0), default=0)


def _family(a: AllocatorAnalysis, g: Family) -> FamilyPoint:
    strings = a.events.strings
    site = a.sites[g.site] if 0 <= g.site < len(a.sites) else NO_SITE
    # The report's names (program ids cut), so that a family keeps its key whichever program id a capture saw.
    parts = (normalize_name(short_program_ids(strings[g.op])), g.shape, strings[g.dtype], strings[g.region])
    return FamilyPoint(
        key=" ".join(part for part in parts if part),
        label=short_program_ids(family_label(g, strings, a.sites)),
        where=site.where,
        stack=list(site.stack),
        kind=g.kind,
        bytes=int(g.chunk_bytes),
        bytes_per_step=float(round(g.bytes_per_step, 1)),  # as the report rounds it: the history's rates agree
        count=int(g.count),
    )
