"""How close an allocator comes to running out: the forecast to out-of-memory, fragmentation at the peak, and,
in a capture taken at an out-of-memory error, what held the memory then."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tb_leakfinder.analyses.words import format_bytes, format_duration_ps
from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.memory import (
    ALLOC,
    LIMIT_ALLOCATOR,
    LIMIT_DEVICE,
    LIMIT_MACHINE,
    MACHINE_PROFILED,
    AllocatorInfo,
    MemoryEvents,
)
from tb_leakfinder.model.sites import NO_SITE, SiteInfo

# Below this share of free memory outside the largest free block, fragmentation is not worth a note.
HIGH_FRAGMENTATION = 0.25


@dataclass
class Limit:
    """One bound on what an allocator can still take: its own, its device's, or its machine's memory."""

    source: str  # LIMIT_*
    bytes_available: int  # what is still free of it at window end
    limit_bytes: int  # the whole of it: the allocator's capacity, the device's or the machine's memory
    words: str  # how the forecast names it: "its allocator's limit (64.0 GiB)"


@dataclass
class ForecastResult:
    bytes_available: int  # free at window end, of the smallest limit
    growth_bytes_per_step: float
    steps_to_oom: int
    step_duration_ps: int
    seconds_to_oom: float | None  # None when the step duration is unknown
    description: str  # "At +512 KiB/step the 15.2 GiB still free of its allocator's limit (16.0 GiB) runs out in …"
    limit: str = LIMIT_ALLOCATOR  # which limit it ran against (LIMIT_*): the smallest that applies
    limit_bytes: int = 0  # the whole of that limit


def known_capacity(capacity_bytes: int, peak_bytes_in_use: int) -> int:
    """An allocator's memory capacity, 0 when unknown. Its capacity is XProf's (stack + heap + free at the peak),
    so one no larger than the peak means no free memory was reported (a CPU's, PyTorch 1.9's) or none was left:
    either way no capacity to measure against."""
    return capacity_bytes if capacity_bytes > peak_bytes_in_use else 0


def limits(events: MemoryEvents, info: AllocatorInfo, machine_memory_bytes: int, machine_memory_of: str) -> list[Limit]:
    """What bounds an allocator at window end: the free bytes its events report (its own limit, or its device's,
    as its format says), and for host memory the machine's physical memory less what the allocator holds."""
    if len(events) == 0:
        return []
    found = []
    free, held = int(events.free_bytes[-1]), int(events.heap_bytes[-1]) + int(events.stack_bytes[-1])
    if free > 0:
        whose = "its device's memory" if info.free_bytes_of == LIMIT_DEVICE else "its allocator's limit"
        found.append(Limit(info.free_bytes_of, free, free + held, f"{whose} ({format_bytes(free + held)})"))
    if info.host_memory and machine_memory_bytes > held:
        whose = "its host's" if machine_memory_of == MACHINE_PROFILED else "this machine's"
        why = "" if machine_memory_of == MACHINE_PROFILED else "; the profile does not record its host's"
        words = f"{whose} memory ({format_bytes(machine_memory_bytes)}{why})"
        found.append(Limit(LIMIT_MACHINE, machine_memory_bytes - held, machine_memory_bytes, words))
    return found


def forecast(
    limits: list[Limit], growth_bytes_per_step: float, step_duration_ps: float, unit: str = "step"
) -> ForecastResult | None:
    """When the allocator runs out at this growth, against the smallest of its limits (the one with the least still
    free at window end); None without growth or a limit."""
    if growth_bytes_per_step <= 0 or not limits:
        return None
    limit = min(limits, key=lambda m: m.bytes_available)
    available = limit.bytes_available
    steps = int(available // growth_bytes_per_step)
    duration = round(step_duration_ps)
    seconds = steps * duration / 1e12 if duration > 0 else None
    text = f"At +{format_bytes(growth_bytes_per_step)}/{unit} the {format_bytes(available)} still free of {limit.words} "
    text += f"runs out in about {about(steps)} {unit}s"
    if seconds is not None:
        text += f" (about {format_duration_ps(seconds * 1e12)} at {format_duration_ps(duration)}/{unit})"
    return ForecastResult(
        available, float(growth_bytes_per_step), steps, duration, seconds, text + ".", limit.source, limit.limit_bytes
    )


def about(n: int) -> str:
    """`n` to two significant figures, with thousands separators: 31,130 -> '31,000'."""
    if n < 100:
        return str(n)
    scale = 10 ** (int(math.log10(n)) - 1)
    return f"{int(n / scale + 0.5) * scale:,}"


def fragmentation_note(events: MemoryEvents, peak_event: int) -> str | None:
    """A sentence when, at the peak, free memory is too scattered for the allocator's largest buffer; else None.

    TF's BFC allocator reports fragmentation as the share of its free pool
    outside the largest free chunk. Taking the pool as all memory still
    available bounds the largest free block from above, so the note errs on
    the side of silence.
    """
    if peak_event < 0 or len(events) == 0:
        return None
    share = float(events.fragmentation[peak_event])
    free = int(events.free_bytes[peak_event])
    if share < HIGH_FRAGMENTATION or free <= 0:
        return None
    allocations = events.chunk_bytes[events.kind == ALLOC]
    if len(allocations) == 0:
        return None
    largest_block = (1 - share) * free
    largest_buffer = int(np.max(allocations))
    if not largest_block < largest_buffer <= free:
        return None
    return (
        f"Fragmentation at the peak is {share:.0%}: of the {format_bytes(free)} still free, the largest free block "
        f"is at most about {format_bytes(largest_block)}, less than the {format_bytes(largest_buffer)} of this "
        "allocator's largest buffer, so such an allocation can fail with memory left."
    )


@dataclass
class HeldAtErrorResult:
    """Where memory held at an out-of-memory error was made: the frame that tells its buffers apart, else the op
    (what keeps buffers alive is a holder, analyses/holders.py)."""

    where: str  # the frame that tells the buffers apart (SiteInfo.where), else their op, else BEFORE_TRACE or NOT_NAMED
    bytes: int  # chunk bytes held at the error
    count: int  # buffers; 0 for the memory held from before the trace, whose buffers it does not list
    stack: list[str] = field(default_factory=list)  # the user's frames of its largest buffer, innermost first


@dataclass
class OutOfMemoryResult:
    cause: str  # what says the capture was taken at the error: "its trace records 1 oom entry"
    held_bytes: int  # in use at the error: the heap at the capture's end
    capacity_bytes: int  # what the allocator had reserved from the device, at least what it held
    held_at_error: list[HeldAtErrorResult]  # largest first, at most MAX_HELD_ROWS, the rest in one last row
    description: str  # "At the out-of-memory error 11.8 GiB of 11.8 GiB was held by: …"
    request_bytes: int | None = None  # what the failed request asked for, when the capture records it
    device_free_bytes: int | None = None  # what the device had free then, when recorded
    reserved_free_bytes: int = 0  # reserved by the allocator but held by no buffer: cached, fragmented


BEFORE_TRACE = "allocated before the trace began"
NOT_NAMED = "(no frames or op recorded)"
MAX_HELD_ROWS = 10
HELD_IN_SENTENCE = 5


def held_at_oom(
    events: MemoryEvents,
    buffers: Buffers,
    sites: Sequence[SiteInfo],
    cause: str,
    reserved_bytes: int,
    request_bytes: int | None = None,
    device_free_bytes: int | None = None,
) -> OutOfMemoryResult | None:
    """What held the allocator's memory at the out-of-memory error the capture was taken at (`cause` says why it is
    taken to be one; "" when it is not): its live buffers at the capture's end by their site's `where` (the frame
    that tells them apart, analyses/frames.telling_frames), else their op, largest first; what was live before the
    trace began is one row. The failed request's size and the device's free bytes come from the capture when it
    records them. None when not at one."""
    if not cause or len(events) == 0:
        return None
    held = int(events.heap_bytes[-1])
    live = np.flatnonzero(buffers.status == NEVER_FREED)
    made_at = [sites[s] if 0 <= s < len(sites) else NO_SITE for s in buffers.site[live].tolist()]
    by_where: dict[str, HeldAtErrorResult] = {}
    largest: dict[str, int] = {}
    for b, site in zip(live.tolist(), made_at, strict=True):
        where = site.where or events.strings[int(buffers.op[b])] or NOT_NAMED
        size = int(buffers.chunk_bytes[b])
        row = by_where.setdefault(where, HeldAtErrorResult(where, 0, 0))
        row.bytes += size
        row.count += 1
        if size > largest.get(where, -1):
            largest[where] = size
            row.stack = list(site.stack)
    rows = list(by_where.values())
    earlier = held - sum(r.bytes for r in rows)
    if earlier > 0:
        rows.append(HeldAtErrorResult(BEFORE_TRACE, earlier, 0))
    rows.sort(key=lambda r: (-r.bytes, r.where))
    if len(rows) > MAX_HELD_ROWS:
        rest = rows[MAX_HELD_ROWS - 1 :]
        folded = HeldAtErrorResult(f"{len(rest)} more places", sum(r.bytes for r in rest), sum(r.count for r in rest))
        rows = [*rows[: MAX_HELD_ROWS - 1], folded]
    capacity = max(reserved_bytes, held)
    text = _held_sentence(cause, held, capacity, rows, request_bytes, device_free_bytes)
    return OutOfMemoryResult(cause, held, capacity, rows, text, request_bytes, device_free_bytes, capacity - held)


def _held_sentence(
    cause: str, held: int, capacity: int, rows: list[HeldAtErrorResult], request_bytes: int | None, device_free_bytes: int | None
) -> str:
    parts = [f"{r.where} {format_bytes(r.bytes)}" + (f" ({r.count:,} buffers)" if r.count > 1 else "") for r in rows]
    shown = parts[:HELD_IN_SENTENCE]
    more = f" and {len(parts) - len(shown)} more" if len(parts) > len(shown) else ""
    asked = ""
    if request_bytes:
        free = f", with {format_bytes(device_free_bytes)} free on the device" if device_free_bytes is not None else ""
        asked = f" It failed to allocate {format_bytes(request_bytes)}{free}."
    cached = capacity - held
    if cached > 0:
        asked += f" {format_bytes(cached)} was reserved by the allocator but held by no buffer (cached or fragmented)."
    return (
        f"At the out-of-memory error {format_bytes(held)} of {format_bytes(capacity)} was held by: "
        f"{'; '.join(shown) or 'nothing the capture names'}{more} ({cause}).{asked}"
    )
