"""All dynamic analyses of one host, per allocator."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tb_leakfinder.analyses.breakdown import BreakdownRow, peak_breakdown
from tb_leakfinder.analyses.lifetimes import pair_events
from tb_leakfinder.analyses.summary import Summary, summarize
from tb_leakfinder.analyses.suspects import Suspects, leak_suspects
from tb_leakfinder.analyses.verdict import Verdict, decide
from tb_leakfinder.model.lifetimes import Buffers
from tb_leakfinder.model.memory import HostProfile, MemoryEvents


@dataclass
class AllocatorAnalysis:
    name: str
    events: MemoryEvents
    buffers: Buffers
    summary: Summary
    suspects: Suspects
    breakdown: list[BreakdownRow]
    unexplained_peak_bytes: int
    verdict: Verdict
    warnings: list[str] = field(default_factory=list)


@dataclass
class HostAnalysis:
    profile: HostProfile
    allocators: list[AllocatorAnalysis]  # largest peak first


def analyze_host(profile: HostProfile) -> HostAnalysis:
    events = profile.events
    result = []
    for index, name in enumerate(events.allocator_names):
        mine = events.take(np.flatnonzero(events.allocator == index))
        result.append(analyze_allocator(name or "(unnamed allocator)", mine, profile))
    result.sort(key=lambda a: -a.summary.peak_bytes_in_use)
    return HostAnalysis(profile, result)


def analyze_allocator(name: str, events: MemoryEvents, profile: HostProfile) -> AllocatorAnalysis:
    pairing = pair_events(events, profile.steps)
    buffers = pairing.buffers
    summary = summarize(events, buffers, profile.steps)
    suspects = leak_suspects(buffers, profile.steps)
    rows, unexplained = peak_breakdown(events, buffers, summary.peak_event)
    verdict = decide(summary, suspects.groups, len(profile.steps), events.strings)
    warnings = []
    if pairing.double_allocations:
        warnings.append(
            f"{name}: {pairing.double_allocations} allocation(s) of an address already in use; "
            "the earlier buffer is taken as freed when the address was reused"
        )
    if pairing.unmatched_frees:
        warnings.append(f"{name}: {pairing.unmatched_frees} free(s) of an address already freed were ignored")
    return AllocatorAnalysis(name, events, buffers, summary, suspects, rows, unexplained, verdict, warnings)
