"""The never-freed buffers of a real XProf profile, found by the test's own pairing of its events: what a companion
file names, in the tests of holders."""

from __future__ import annotations

from pathlib import Path

from tb_leakfinder.model.memory import ALLOC
from tb_leakfinder.read.formats.xplane import reader


def never_freed(profile: Path) -> dict[int, tuple[str, int]]:
    """address -> (op, chunk bytes) of every buffer allocated in the window and not freed in it, pairing each free
    with the live allocation at its address, in time order (one allocator, as the demo captures have)."""
    events = reader.read_host(str(profile), profile.name).events
    live: dict[int, tuple[str, int]] = {}
    for kind, addr, op, size in zip(
        events.kind.tolist(), events.addr.tolist(), events.op.tolist(), events.chunk_bytes.tolist(), strict=True
    ):
        if kind == ALLOC:
            live[addr] = (events.strings[op], size)
        else:
            live.pop(addr, None)
    return live
