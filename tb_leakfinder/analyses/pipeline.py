"""All dynamic analyses of one host, per allocator."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tb_leakfinder.analyses.attribution import CallIndex, attribute, call_index
from tb_leakfinder.analyses.breakdown import BreakdownRowResult, peak_breakdown
from tb_leakfinder.analyses.capacity import (
    ForecastResult,
    Limit,
    OutOfMemoryResult,
    forecast,
    fragmentation_note,
    held_at_oom,
    limits,
)
from tb_leakfinder.analyses.causes import with_causes
from tb_leakfinder.analyses.lifetimes import pair_events
from tb_leakfinder.analyses.step_sources import NONE, StepSourceResult, find_steps, step_period_ps
from tb_leakfinder.analyses.summary import Summary, summarize
from tb_leakfinder.analyses.suspects import Suspects, leak_suspects
from tb_leakfinder.analyses.verdict import (
    INCONCLUSIVE,
    LEAK,
    NO_LEAK,
    Verdict,
    cannot_tell,
    decide,
    leak_families,
    whose,
)
from tb_leakfinder.analyses.words import count_of, format_bytes, held_by
from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.model.columns import permute
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    NO_ALLOCATOR_KEY,
    AllocatorInfo,
    Groups,
    HostProfile,
    MemoryEvents,
    Spans,
    Steps,
    grouping_order,
)
from tb_leakfinder.model.recordings import PARTIAL, Recordings
from tb_leakfinder.model.sites import NO_SITE, SiteInfo

if TYPE_CHECKING:
    from tb_leakfinder.analyses import holders as holder_analysis
    from tb_leakfinder.analyses import process_memory as process_analysis
else:
    # Cold start: what the companion file adds (its holders, the process's memory) loads for a host that has one.
    holder_analysis = LazyModule("tb_leakfinder.analyses.holders")
    process_analysis = LazyModule("tb_leakfinder.analyses.process_memory")

_NUMBERS = re.compile(r"(\d+)")
SNAPSHOT_STEPS = "none: the file holds the buffers live at one moment, with no times"
# No device holds a pebibyte: a size or counter above this is corruption, not a measurement.
MAX_PLAUSIBLE_BYTES = 1 << 50


@dataclass
class AllocatorAnalysis:
    memory_id: str  # XProf's key for the allocator
    label: str  # readable: "TPU:2", "GPU:0", else the memory id
    events: MemoryEvents
    buffers: Buffers
    summary: Summary
    suspects: Suspects
    breakdown: list[BreakdownRowResult]
    peak_before_window_bytes: int
    verdict: Verdict
    warnings: list[str] = field(default_factory=list)
    forecast: ForecastResult | None = None  # to out-of-memory, when the allocator leaks and reports what is free
    fragmentation_note: str | None = None
    leak_bytes_per_step: float = 0.0  # the growing families' rates summed, when the allocator leaks
    sites: list[SiteInfo] = field(default_factory=lambda: [NO_SITE])  # where its buffers were made: Buffers.site indexes it
    out_of_memory: OutOfMemoryResult | None = None  # what held the memory, when the capture was taken at an out-of-memory error
    limits: list[Limit] = field(default_factory=list)  # what bounds it at window end: its own, its device's, its machine's
    # From the companion file (analyses/holders.py), one entry per family when it has one, else []: each family's
    # holders, and the text of its line of code ("" when not recorded).
    holders: list[list[holder_analysis.HolderResult]] = field(default_factory=list)
    where_texts: list[str] = field(default_factory=list)

    @property
    def python_frames(self) -> bool:
        """Whether any of its buffers was made with Python frames recorded: without, its format's hint says how."""
        return any(site.stack for site in self.sites)


@dataclass
class HostAnalysis:
    profile: HostProfile  # without its events: each allocator holds its own, and a cache keeps one copy
    allocators: list[AllocatorAnalysis]  # device memory first, then host memory; in natural order of label in each
    step_source: StepSourceResult  # where profile.steps came from
    # How the search for holders went; None without one (no companion file).
    holder_status: holder_analysis.HolderStatus | None = None
    # What grows outside the allocators, when the capture helper recorded the process's memory beside the profile.
    process_memory: process_analysis.ProcessMemoryAnalysis | None = None


def analyze_host(profile: HostProfile, modules: Sequence[HloModule] = ()) -> HostAnalysis:
    """All analyses of one host, whose compiled programs are `modules`. Takes the profile's events: they move
    to the allocators column by column, so that a large profile is never held twice; `profile.events` is left empty."""
    events = profile.events
    # A snapshot is one moment: it has no steps to find, not even time windows.
    source = StepSourceResult(NONE, None, Steps.empty(), SNAPSHOT_STEPS) if profile.one_moment else find_steps(profile)
    calls = call_index(profile.spans, modules, profile.device_planes)
    profile.events = MemoryEvents.empty()
    # The candidate spans have served: the cached analysis keeps only the steps they gave.
    profile = replace(
        profile,
        steps=source.steps,
        spans=Spans.empty(),
        groups=Groups.empty(),
        warnings=[*profile.warnings, *_step_warnings(profile.steps)],
    )
    result = []
    for memory_id, mine in zip(events.allocator_names, _by_allocator(events), strict=True):
        result.append(analyze_allocator(memory_id, mine, profile, source, calls, modules))
    result.sort(key=lambda a: (_info(profile, a.memory_id).host_memory, natural_key(a.label), a.memory_id))
    status = None
    process = None
    recorded = profile.recordings
    if recorded is not None:
        for a in result:
            _recorded(a, recorded, source)
        status = holder_analysis.holder_status(recorded, [holder_analysis.never_freed_addresses(a.buffers) for a in result])
        if recorded.process_memory is not None:
            host_memory = [(a.label, a.summary.growth_bytes_per_step) for a in result if _info(profile, a.memory_id).host_memory]
            process = process_analysis.analyze_process_memory(
                recorded.process_memory, recorded.framework, source.steps, host_memory
            )
    return HostAnalysis(profile, result, source, status, process)


def _recorded(a: AllocatorAnalysis, recordings: Recordings, source: StepSourceResult) -> None:
    """What the companion file adds to an allocator: its families' holders and lines' text; a leak's verdict names
    the holder of its top family."""
    a.where_texts = holder_analysis.family_where_texts(a.suspects, a.sites, recordings.sources)
    search = recordings.holders
    if search is None:
        return
    a.holders = holder_analysis.family_holders(a.buffers, a.suspects, search, recordings.sources)
    leaking = leak_families(a.suspects.families, source) if a.verdict.verdict == LEAK else []
    if not leaking:
        return
    top = next(i for i, g in enumerate(a.suspects.families) if g is leaking[0])
    if not a.holders[top]:
        return
    h = a.holders[top][0]
    of = a.suspects.families[top].count
    said = held_by(f"`{h.path}`", h.type_name, h.count, of, h.requested_bytes, h.chunk_bytes, at_least=not h.all_listed)
    partial = f" (the search for holders was partial: {search.warning or 'a bound was hit'})" if search.status == PARTIAL else ""
    reason = a.verdict.reason.rstrip()
    a.verdict = replace(a.verdict, reason=f"{reason}{'' if reason.endswith('.') else '.'} {said[0].upper()}{said[1:]}{partial}.")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """A name's sort key with its numbers compared as numbers: GPU:2 before GPU:10."""
    return tuple((0, int(part)) if part.isdecimal() else (1, part) for part in _NUMBERS.split(name) if part)


def _by_allocator(events: MemoryEvents) -> list[MemoryEvents]:
    """Each allocator's events, in time order, as slices of one array per column grouped by allocator.

    Events the reader grouped (XProf's), like one allocator's (the usual case),
    are sliced as they are; the others are reordered in their own memory
    (`events` is left with empty columns), so that they are never held twice.
    """
    count = len(events.allocator_names)
    if count <= 1:
        return [events][:count]
    order = grouping_order(events.allocator, count)
    grouped: dict[str, np.ndarray] = {}
    for name, dtype in EVENT_COLUMNS.items():
        grouped[name] = getattr(events, name)
        setattr(events, name, np.zeros(0, dtype))
    if order is not None:
        permute(grouped, order)
    # Where each allocator's rows begin, in the grouped column: a search, not a count over every row.
    allocator = grouped["allocator"]
    bounds = np.searchsorted(allocator, np.arange(count + 1, dtype=allocator.dtype))  # in its dtype: no widened copy
    result = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        columns: dict[str, Any] = {name: column[lo:hi] for name, column in grouped.items()}
        result.append(MemoryEvents(**columns, strings=events.strings, allocator_names=events.allocator_names))
    return result


def analyze_allocator(
    memory_id: str,
    events: MemoryEvents,
    profile: HostProfile,
    source: StepSourceResult,
    calls: CallIndex | None = None,
    modules: Sequence[HloModule] = (),
) -> AllocatorAnalysis:
    """One allocator's analyses; `profile.steps` are the steps `source` gave, `calls` the host's calls (none: the
    profile's own, when it still has its spans)."""
    info = _info(profile, memory_id)
    label = info.label
    warnings: list[str] = []
    if not memory_id:
        warnings.append(
            f"{label}: {count_of(len(events), 'memory event')} carry no index_on_host, device_ordinal or allocator_name stat; "
            "they are shown together as one allocator"
        )
    # Fragmentation is a share of the pool: NaN, infinite or past [0, 1] is corruption (and would break JSON).
    fraction = np.isfinite(events.fragmentation) & (events.fragmentation >= 0) & (events.fragmentation <= 1)
    if not fraction.all():
        events = replace(events, fragmentation=np.where(fraction, events.fragmentation, 0.0))
        bad = count_of(int(np.count_nonzero(~fraction)), "fragmentation value")
        warnings.append(f"{label}: {bad} not a fraction in [0, 1], shown as 0")
    if np.any(events.time_ps < 0):
        warnings.append(
            f"{label}: {count_of(int(np.count_nonzero(events.time_ps < 0)), 'memory event')} before the profile's start: "
            "its clock runs backwards or its timestamps are corrupt"
        )
    problems = _inconsistencies(events)
    warnings += [f"{label}: {problem}" for problem in problems]
    attribution = attribute(events, calls or call_index(profile.spans, modules, profile.device_planes))
    pairing = pair_events(events, profile.steps, attribution.site)
    buffers = pairing.buffers
    summary = summarize(events, buffers, profile.steps)
    suspects = leak_suspects(buffers, profile.steps, events.strings)
    rows, before_window = peak_breakdown(events, buffers, summary.peak_event)
    judged = whose(label, profile.framework, info.spoken)
    freed = _freed_in_one_step(buffers, source)
    verdict = decide(summary, suspects.families, source, events.strings, attribution.sites, freed, judged)
    if problems and verdict.verdict != INCONCLUSIVE:
        # Never present a verdict built on impossible numbers as certain.
        verdict = Verdict(INCONCLUSIVE, f"Inconclusive: {problems[0]}. Taken at face value: {verdict.reason}")
    if info.partial is not None:
        warnings.append(info.partial)
        verdict = _partial(verdict, info.partial)
    if profile.one_moment:
        live = count_of(summary.num_allocations, f"live {profile.live_entry}")
        verdict = Verdict(
            INCONCLUSIVE,
            f"A snapshot: {live} holding {format_bytes(summary.heap_end_bytes)} at one moment; growth shows across "
            "snapshots, in the run's history",
        )
    if pairing.double_allocations:
        reused = f"{count_of(pairing.double_allocations, 'allocation')} of an address already in use"
        warnings.append(f"{label}: {reused}; the earlier buffer is taken as freed when the address was reused")
        verdict = cannot_tell(reused, verdict)
    if info.guessed_pairs is not None and summary.never_freed_count:
        # Which allocations a guessed free ends decides which buffers stay live; with none live it decides nothing.
        verdict = cannot_tell(info.guessed_pairs, verdict)
    if pairing.unmatched_frees:
        ignored = "was" if pairing.unmatched_frees == 1 else "were"
        warnings.append(f"{label}: {count_of(pairing.unmatched_frees, 'free')} of an address already freed {ignored} ignored")
    growth = sum(g.bytes_per_step for g in leak_families(suspects.families, source)) if verdict.verdict == LEAK else 0.0
    if verdict.verdict == LEAK:
        # Causes only where the verdict is a leak, and only on the families that make it.
        leaking = leak_families(suspects.families, source)
        suspects = replace(suspects, families=with_causes(suspects, leaking, buffers, events.strings, attribution))
    bounds = limits(events, info, profile.machine_memory_bytes, profile.machine_memory_of)
    outlook = forecast(bounds, growth, step_period_ps(source.steps), source.unit) if verdict.verdict == LEAK else None
    return AllocatorAnalysis(
        memory_id,
        label,
        events,
        buffers,
        summary,
        suspects,
        rows,
        before_window,
        verdict,
        warnings,
        outlook,
        fragmentation_note(events, summary.peak_event),
        growth,
        attribution.sites,
        held_at_oom(
            events,
            buffers,
            attribution.sites,
            info.out_of_memory,
            info.reserved_bytes,
            info.oom_request_bytes,
            info.oom_device_free_bytes,
        ),
        bounds,
    )


def _freed_in_one_step(buffers: Buffers, source: StepSourceResult) -> int:
    """How many allocations the one step of a capture of one step made, when it freed them all; else 0."""
    if source.num_steps != 1:
        return 0
    made = buffers.alloc_step == 0
    return 0 if np.any(buffers.status[made] == NEVER_FREED) else int(np.count_nonzero(made))


def is_host_memory(profile: HostProfile, memory_id: str) -> bool:
    """Whether the format says this allocator hands out host RAM (pinned for a device, or a CPU allocator)."""
    return _info(profile, memory_id).host_memory


def _info(profile: HostProfile, memory_id: str) -> AllocatorInfo:
    """What the profile's format says of an allocator; a profile built without one names it by its key."""
    return profile.allocators.get(memory_id) or AllocatorInfo(memory_id or NO_ALLOCATOR_KEY, False)


def _partial(verdict: Verdict, note: str) -> Verdict:
    """The verdict of an allocator whose events cover only part of what it allocates (say, only large blocks):
    growth seen in them is real, so a leak stays a leak, but finding none among them says nothing of the rest."""
    if verdict.verdict == NO_LEAK:
        return Verdict(INCONCLUSIVE, f"Inconclusive: {note}. Among the large blocks: {verdict.reason}")
    return Verdict(verdict.verdict, f"{verdict.reason.rstrip('.')}. {note}.")


def _inconsistencies(events: MemoryEvents) -> list[str]:
    """What makes an allocator's numbers impossible: each one leaves its verdict inconclusive."""
    checks = [
        ((events.chunk_bytes < 0) | (events.requested_bytes < 0), "with a negative size"),
        (
            (events.chunk_bytes > MAX_PLAUSIBLE_BYTES) | (events.requested_bytes > MAX_PLAUSIBLE_BYTES),
            "with an absurd size (over 1 PiB)",
        ),
        (
            (events.heap_bytes < 0) | (events.stack_bytes < 0) | (events.heap_bytes > MAX_PLAUSIBLE_BYTES),
            "with a negative or absurd heap counter (bytes_allocated, bytes_reserved)",
        ),
        (events.addr == 0, "without an integer addr stat, so they cannot be paired"),
        ((events.kind == ALLOC) & (events.chunk_bytes == 0), "allocating 0 bytes (no allocation_bytes stat)"),
    ]
    return [f"{np.count_nonzero(bad)} of {len(events)} memory events {what}" for bad, what in checks if np.any(bad)]


def _step_warnings(steps: Steps) -> list[str]:
    backwards = steps.end_ps < steps.start_ps
    if not np.any(backwards):
        return []
    n = int(np.count_nonzero(backwards))
    ends = "ends before it starts; that step holds" if n == 1 else "end before they start; those steps hold"
    return [f"{count_of(n, 'step marker')} {ends} no events"]
