"""What a host's report decides once, for every view to read rather than decide again: its verdict (its allocators',
the static view's and the process memory's together), and the allocator shown first (the default allocator) with
the reason it was chosen. The views, the tab and `check` read these as fields of the JSON, never from sentences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis, is_host_memory
from tb_leakfinder.analyses.verdict import LEAK, Verdict

if TYPE_CHECKING:
    from tb_leakfinder.analyses.static_buffers import ModuleSummaryResult

# DefaultAllocatorChoice.rule: why the tab and the queries open on an allocator.
ONLY = "only"  # the host's one allocator
LEAKS = "leaks"  # the one allocator that leaks
LEAKS_FASTEST = "leaks_fastest"  # of several that leak: device memory first, then the fastest leak
HIGHEST_PEAK = "highest_peak"  # none leaks: device memory with the highest peak (host memory only when no other)
NAMED: Final = "named"  # the one a report was asked for (`--allocator`): not chosen here
RULES = (ONLY, LEAKS, LEAKS_FASTEST, HIGHEST_PEAK, NAMED)
NAMED_REASON = "the allocator asked for"


@dataclass(frozen=True)
class DefaultAllocatorChoice:
    """The allocator a host opens on, when none is named, and why (`rule`, and `reason` in words)."""

    allocator: AllocatorAnalysis
    rule: str
    reason: str


@dataclass(frozen=True)
class HostDecisions:
    """A host's verdict and its default allocator (None: it has no allocator)."""

    verdict: Verdict
    default_allocator: DefaultAllocatorChoice | None


def decide_host(h: HostAnalysis, modules: Sequence[ModuleSummaryResult]) -> HostDecisions:
    return HostDecisions(host_verdict(h, modules), default_allocator(h))


def host_verdict(h: HostAnalysis, modules: Sequence[ModuleSummaryResult]) -> Verdict:
    """A host's verdict. With no memory events its reason says so, and where its compiled programs are when it has
    some; how its format records them is the host's `format_hints.record_events`, which the tab and the CLI show
    once beside it (a PyTorch trace is not told about TensorFlow's allocator). The process's memory, when recorded,
    is judged beside its allocators' (`with_process`)."""
    programs = " Its compiled programs are in the static view." if modules else ""
    no_events = f"{verdicts.NO_EVENTS_REASON}{programs}"
    verdict = verdicts.host_verdict([(a.label, a.verdict) for a in h.allocators], list(modules), no_events)
    return with_process(verdict, process_verdict(h))


def process_verdict(h: HostAnalysis) -> Verdict | None:
    """The verdict on the process's memory outside the allocators, None when it was not recorded."""
    p = h.process_memory
    return None if p is None else Verdict(p.verdict, p.reason)


def with_process(verdict: Verdict, process: Verdict | None) -> Verdict:
    """A host's verdict with its process's beside it: when the process's memory leaks, the host leaks and says why,
    after its allocators' reason (its own reason says how it was measured)."""
    if process is None or process.verdict != LEAK:
        return verdict
    reason = verdict.reason.rstrip()
    return replace(verdict, verdict=LEAK, reason=f"{reason}{'' if reason.endswith('.') else '.'} {process.reason}")


def default_allocator(h: HostAnalysis) -> DefaultAllocatorChoice | None:
    """The allocator a host opens on: one that leaks (device memory first, then the fastest leak), else the device
    memory with the largest peak (host memory only when there is no other); the first in the host's order of a tie."""
    allocators = h.allocators
    if not allocators:
        return None
    if len(allocators) == 1:
        return DefaultAllocatorChoice(allocators[0], ONLY, "its only allocator")
    host = {a.memory_id: is_host_memory(h.profile, a.memory_id) for a in allocators}
    leaking = [a for a in allocators if a.verdict.verdict == LEAK]
    if leaking:
        # min keeps the first of a tie
        chosen = min(leaking, key=lambda a: (host[a.memory_id], -a.leak_bytes_per_step))
        if len(leaking) == 1:
            return DefaultAllocatorChoice(chosen, LEAKS, "the one that leaks")
        return DefaultAllocatorChoice(chosen, LEAKS_FASTEST, f"the {_memory(host[chosen.memory_id])} that leaks fastest")
    devices = [a for a in allocators if not host[a.memory_id]] or allocators
    chosen = max(devices, key=lambda a: a.summary.peak_bytes_in_use)  # max keeps the first of a tie
    return DefaultAllocatorChoice(chosen, HIGHEST_PEAK, f"the {_memory(host[chosen.memory_id])} with the highest peak")


def _memory(host_memory: bool) -> str:
    return "host memory" if host_memory else "device memory"
