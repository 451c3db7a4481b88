"""Which allocator a user's name means: in an analysis, or among the (label, memory id) pairs a report lists."""

from __future__ import annotations

from collections.abc import Iterable

from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.errors import NotFoundError


def names_allocator(allocator: str, label: str, memory_id: str) -> bool:
    """Whether a user's `allocator` argument means the allocator of this label or memory id."""
    return allocator in (label, memory_id)


def allocator_choices(allocators: Iterable[tuple[str, str]]) -> str:
    """'TPU:0 (memory id 0), gpu_host_bfc': what an allocator argument may name, of these (label, memory id)."""
    return ", ".join(label if label == memory_id else f"{label} (memory id {memory_id!r})" for label, memory_id in allocators)


def find_allocator(h: HostAnalysis, allocator: str | None, record_events: str = "") -> AllocatorAnalysis:
    """The allocator whose label or memory id is `allocator`; the device memory with the largest peak when None.
    `record_events`: how the host's format records memory events, said when it has none."""
    if not h.allocators:
        advice = f" {record_events}" if record_events else ""
        raise NotFoundError(f"host {h.profile.host!r} ({h.profile.path}) has no memory events.{advice}")
    if allocator is None:
        return h.largest_device()
    for a in h.allocators:
        if names_allocator(allocator, a.label, a.memory_id):
            return a
    choices = allocator_choices((a.label, a.memory_id) for a in h.allocators)
    raise NotFoundError(f"host {h.profile.host!r} has no allocator {allocator!r}; its allocators are {choices}")
