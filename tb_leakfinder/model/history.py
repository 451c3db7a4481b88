"""One job's captures over wall-clock time: what each capture of a run says of one allocator.

A tb_run's history on three layers: here its capture points' types; analyses/history.py judges the history from
them; engine/history.py gathers them from the runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# CapturePoint.kind
PROFILE = "profile"  # memory events over a window (an XSpace session)
ONE_MOMENT = "one_moment"  # the buffers live at one moment (a device memory profile)

# AllocatorPoint.memory_id of the series that follow the process's memory (the capture helper's recording), not an
# allocator's: it has no families, so nothing in the windows is expected to explain its growth.
PROCESS_PREFIX = "process:"

# CapturePoint.time_source: where its time came from, best first.
OWN_CLOCK = "profile"  # the capture's own record of when it ran (an XSpace's events, baseTimeNanoseconds, time_us...)
SESSION_NAME = "session_name"  # the session folder's name, as XProf names it by the time the capture began
FILE_MTIME = "file_mtime"  # the file's modification time: when it was written, or copied


@dataclass
class FamilyPoint:
    """One op family as one capture saw it."""

    key: str  # the family's name across captures (program ids and op suffixes dropped)
    label: str  # as this capture names it
    where: str
    stack: list[str]
    kind: str  # the capture's own classification (growing, persistent, ...)
    bytes: int  # what it still holds at the capture's end: never-freed bytes, or a snapshot's live bytes
    bytes_per_step: float  # its rate within the capture (growing families), else 0
    count: int = 0  # the buffers it still holds at the capture's end


@dataclass
class ProgramPoint:
    """A device's compiled programs made at one line of the user's, as one capture counts them."""

    where: str  # the user's innermost frame of where they were compiled ("train.py:12 in main"); "" not known
    count: int


@dataclass
class AllocatorPoint:
    """What one analysis of a host file says of one of its allocators, whichever capture the file turns out to be."""

    memory_id: str
    label: str  # the allocator's label
    heap_start_bytes: int
    peak_heap_bytes: int
    heap_end_bytes: int
    heap_floor_bytes: int  # the least it held at any moment of the window
    never_freed_bytes: int  # in tensor bytes, as the capture's own report shows them
    capacity_bytes: int  # the allocator's memory at its peak (0: not known)
    verdict: str
    families: list[FamilyPoint] = field(default_factory=list)
    heap_growth_bytes_per_step: float = 0.0  # the slope of the heap at its steps' ends, within the window
    profiled_heap: bool = False  # its heap counts only what profilers saw allocated (`AllocatorInfo.profiled_heap`)
    # Its device's compiled programs by where they were compiled, most first (a device memory profile's); [] none seen.
    programs: list[ProgramPoint] = field(default_factory=list)


@dataclass
class HostPoints:
    """What one analysed host file gives a run's history. Made when the host is analysed and stored beside its
    analysis, so that a history reads neither profiles nor reports; what depends on the capture the file is
    found in (its name, its file's mtime) is added when the history is made."""

    host: str
    kind: str  # PROFILE or ONE_MOMENT
    start_time_ns: int | None  # when it began by its own clock; None (or 0): not recorded
    duration_s: float
    first_step: int | None  # step numbers, when markers give them
    last_step: int | None
    program: str  # which programs ran: their names without ids, joined; "" when the profile has none
    allocators: list[AllocatorPoint] = field(default_factory=list)


@dataclass(kw_only=True)
class CapturePoint(AllocatorPoint):
    """One capture of one allocator: its analysis's figures, and the capture they were found in."""

    capture: str  # the discovered session's run name, "job/2026_12_01_22_30_16": the tab opens it
    host: str
    kind: str  # PROFILE or ONE_MOMENT
    time_s: float  # when it began, seconds since the epoch
    duration_s: float
    first_step: int | None  # step numbers, when markers (or a snapshot's name) give them
    last_step: int | None
    program: str
    time_source: str = OWN_CLOCK
