"""A window's never-freed buffers, from its profile read back with the project's readers and paired by its analyses:
the buffers the report's families are made of, so that a holder's addresses are theirs."""

from __future__ import annotations

import dataclasses
import pathlib

from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.model.lifetimes import NEVER_FREED
from tb_leakfinder.read.formats.registry import format_of, read_host


@dataclasses.dataclass
class NeverFreedBuffer:
    """One buffer allocated in the window and live at its end."""

    addr: int
    bytes: int
    shape: str  # as the profile names it: "[64,512]", "float[128,256]"; "" when not recorded
    dtype: str
    where: str  # the allocating line, "train.py:42" (the innermost user frame, or the program's source); "" unknown


def never_freed(profile: pathlib.Path, host: str) -> list[NeverFreedBuffer]:
    """Every allocator's never-freed buffers of a profile file (a host), in allocation order."""
    found = format_of(str(profile))
    reading = read_host(found, str(profile), host, str(profile.parent))
    analysis = analyze_host(reading.profile, reading.modules)
    buffers: list[NeverFreedBuffer] = []
    for allocator in analysis.allocators:
        b, strings = allocator.buffers, allocator.events.strings
        for i in (b.status == NEVER_FREED).nonzero()[0].tolist():
            site = allocator.sites[int(b.site[i])]
            where = site.source or (site.stack[0] if site.stack else "")
            size = int(b.requested_bytes[i]) or int(b.chunk_bytes[i])
            buffers.append(
                NeverFreedBuffer(int(b.addr[i]), size, strings[int(b.shape[i])], strings[int(b.dtype[i])], where.split(" in ")[0])
            )
    return buffers
