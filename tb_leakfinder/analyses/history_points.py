"""What one host's analysis gives its run's history: each allocator's figures at the capture's start, peak and
end, and the families it kept, named as across captures."""

from __future__ import annotations

from collections.abc import Sequence

from tb_leakfinder.analyses.capacity import known_capacity
from tb_leakfinder.analyses.frames import user_frames
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.analyses.process_memory import MEASURE_WORDS, ProcessMemoryAnalysis
from tb_leakfinder.analyses.static_buffers import ModuleSummaryResult
from tb_leakfinder.analyses.step_sources import STEP_NUM
from tb_leakfinder.analyses.suspects import FamilyResult
from tb_leakfinder.analyses.verdict import family_label
from tb_leakfinder.analyses.words import module_base_name, normalize_name, short_program_ids
from tb_leakfinder.model.history import ONE_MOMENT, PROCESS_PREFIX, PROFILE, AllocatorPoint, FamilyPoint, HostPoints, ProgramPoint
from tb_leakfinder.model.memory import DEVICE_UNKNOWN, LIMIT_MACHINE, AllocatorInfo, ProgramSite
from tb_leakfinder.model.sites import NO_SITE


def host_points(h: HostAnalysis, modules: Sequence[ModuleSummaryResult]) -> HostPoints:
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
        allocators=[
            _allocator_point(a, profile.allocators.get(a.memory_id), _programs(profile.program_sites, a.memory_id, k == 0))
            for k, a in enumerate(h.allocators)
        ]
        + _process_points(h.process_memory),
    )


# The history follows the process's memory, when recorded, as it follows an allocator: by these keys across captures.
PROCESS_MAIN = f"{PROCESS_PREFIX}main"
PROCESS_WORKERS = f"{PROCESS_PREFIX}workers"


def _process_points(p: ProcessMemoryAnalysis | None) -> list[AllocatorPoint]:
    """The training process's memory outside the allocators, and the workers' memory summed, each capture judged by
    its own process-memory verdict; [] without a recording. The training process's RSS holds the allocators' heap
    too, whose level between captures is unknown (a profiled heap's) or followed by the allocator's own series: so
    its series is what each capture saw grow outside the allocators within its window (`profiled_heap`: never
    chained, never counting an allocator's leak twice). The workers' memory is theirs alone, followed by its level."""
    if p is None or p.main is None:
        return []
    main = _series_point(
        PROCESS_MAIN, "training process, outside the allocators (RSS)", [v for v in p.main.bytes if v is not None], p
    )
    main.heap_growth_bytes_per_step, main.profiled_heap = p.outside_bytes_per_step, True
    points = [main]
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


def _programs(sites: Sequence[ProgramSite], memory_id: str, first: bool) -> list[ProgramPoint]:
    """A device's compiled programs by the user's line that compiled them, most first: the same line reached by
    different stacks of the framework's is one place to the user. Programs of no device (JAX's on CPU carry no
    device label) are the host's: counted with its `first` allocator's."""
    counts: dict[str, int] = {}
    for site in sites:
        if site.device == memory_id or (first and site.device == DEVICE_UNKNOWN):
            where = next(iter(user_frames(site.stack)), "")
            counts[where] = counts.get(where, 0) + site.count
    return [ProgramPoint(where, n) for where, n in sorted(counts.items(), key=lambda wn: (-wn[1], wn[0]))]


def _allocator_point(a: AllocatorAnalysis, info: AllocatorInfo | None, programs: list[ProgramPoint]) -> AllocatorPoint:
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
        programs=programs,
    )


def _capacity(a: AllocatorAnalysis) -> int:
    """The memory the allocator can hold at most: its own capacity, or its machine's memory when that is less (a CPU
    allocator's limit may be more than the machine has); 0 when neither is known."""
    s = a.summary
    known = [known_capacity(int(s.memory_capacity_bytes), int(s.peak_bytes_in_use))]
    known += [m.limit_bytes for m in a.limits if m.source == LIMIT_MACHINE]
    return min((k for k in known if k > 0), default=0)


def _family(a: AllocatorAnalysis, g: FamilyResult) -> FamilyPoint:
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
