"""How close an allocator comes to running out: the forecast to out-of-memory, and fragmentation at the peak."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.words import format_bytes, format_duration_ps
from tb_leakfinder.model.memory import ALLOC, MemoryEvents

# Below this share of free memory outside the largest free block, fragmentation is not worth a note.
HIGH_FRAGMENTATION = 0.25


@dataclass
class Forecast:
    bytes_available: int  # free at window end
    growth_bytes_per_step: float
    steps_to_oom: int
    step_duration_ps: int
    seconds_to_oom: float | None  # None when the step duration is unknown
    description: str  # "At +512 KiB/step the 15.2 GiB still free runs out in about 31,000 steps (…)."


def forecast(events: MemoryEvents, growth_bytes_per_step: float, step_duration_ps: float, unit: str = "step") -> Forecast | None:
    """When the allocator runs out at this growth, from what is free at window end; None without growth or capacity."""
    if growth_bytes_per_step <= 0 or len(events) == 0:
        return None
    available = int(events.free_bytes[-1])
    if available <= 0:
        return None
    steps = int(available // growth_bytes_per_step)
    duration = round(step_duration_ps)
    seconds = steps * duration / 1e12 if duration > 0 else None
    text = f"At +{format_bytes(growth_bytes_per_step)}/{unit} the {format_bytes(available)} still free runs out in about "
    text += f"{about(steps)} {unit}s"
    if seconds is not None:
        text += f" (about {format_duration_ps(seconds * 1e12)} at {format_duration_ps(duration)}/{unit})"
    return Forecast(available, float(growth_bytes_per_step), steps, duration, seconds, text + ".")


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
    allocations = events.chunk_bytes[events.kind == ALLOC]
    if share < HIGH_FRAGMENTATION or free <= 0 or len(allocations) == 0:
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
