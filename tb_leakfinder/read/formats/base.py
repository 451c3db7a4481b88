"""The interface every input format implements, the optional parts only some have, and what reading one host gives.

Every format implements `ProfileFormat`. What only some formats have is a small protocol of its own, which the
registry and discovery check with `isinstance`: compiled programs to look up (`StaticModules`), files besides a
host's own in its cache key (`Companions`), files that sit in a TensorBoard run's own folder (`FolderSessions`),
files that are each a capture of their own (`FileSessions`).

Beside the formats of profiles, `RecordingsFormat`: a file that something other than a profiler recorded beside a
host's profile (the capture helper's companion file, docs/recordings.md), read with that host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

# Types only: the registry, and so every format's entry, loads without numpy (`tb-leakfinder --help` lists them).
if TYPE_CHECKING:
    from collections.abc import Callable

    from tb_leakfinder.model.hlo import HloModule
    from tb_leakfinder.model.memory import HostProfile
    from tb_leakfinder.model.recordings import Recordings


@dataclass
class HostReading:
    """One host read into the model, with the compiled programs its session holds."""

    profile: HostProfile  # its warnings include what could not be read of the programs
    modules: list[HloModule]  # decoded, sorted by key
    hlo_protos: dict[str, bytes]  # "<module>(<id>)" -> HloProto bytes, for the module route's detail


@dataclass(frozen=True)
class FormatHintsInfo:
    """What a format tells its users in its own words. The report carries them to the CLI and the tab
    (`wire.serialize.format_hints_json`); the CLI's help and discovery's errors list every format's `name`, `suffix` and
    `layout`."""

    name: str  # one file's kind, singular: "PyTorch profiler trace"
    suffix: str  # its files' suffix as users see it: ".pt.trace.json[.gz]"
    layout: str  # where discovery finds its files under a logdir: "<folder>/<worker>.pt.trace.json[.gz]"
    # How to record a profile of this format, for a logdir where none is found; `code` in backticks.
    capture: str = ""
    # Why a host of this format may hold no memory events, and how to record them; `code` in backticks.
    record_events: str = "Its profile holds no allocations."
    # How to record the Python frames that name each buffer's line; None when its files always hold them.
    python_frames: str | None = None
    # What follows "memory id <id>" in the tab: where its memory ids come from.
    memory_id_note: str = ", the device its profile names"
    xprof_tools: bool = False  # XProf's own tools (Memory Profile, Memory Viewer) open its files
    framework: str = ""  # the framework whose allocator its files record ("PyTorch"); "" when several may write it
    # What a buffer's `shape` is: its tensor's shape, or (a PyTorch trace) the shapes of the inputs of the op that made it.
    shape_label: str = "shape"
    # What one entry of a file of buffers live at one moment is, for counts of them: a block of a PyTorch snapshot
    # is one buffer; a sample of a device memory profile groups the buffers of one stack ("buffer group").
    live_entry: str = "buffer"


class ProfileFormat(Protocol):
    """A format's entry in the registry. It imports its reader only when it reads (or is asked its file limit): the
    registry loads every format's entry to sniff files and to list them in the CLI's help, which loads no numpy."""

    name: str  # its registry name, the report's `format`: "xplane"
    hints: FormatHintsInfo

    @property
    def max_file_bytes(self) -> int:
        """The largest file its reader reads (in bytes as stored); the disk cache bounds its entries by it."""
        ...

    def sniff(self, path: str) -> bool:
        """Whether a file path a user gave is one host's profile in this format."""
        ...

    def host_name(self, file_name: str) -> str | None:
        """The host a file of a session folder holds, or None when it is not one of this format's hosts."""
        ...

    def stem(self, file_name: str) -> str | None:
        """A file name without this format's suffix (`w.123.pt.trace.json.gz`: `w.123`), None when it does not end in
        one: what the files recorded beside the profile are named after (`RecordingsFormat.accompanies`)."""
        ...

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        """One host's file into the model; raises LeakfinderError naming the file."""
        ...


@runtime_checkable
class StaticModules(Protocol):
    """A format whose sessions hold compiled programs (XProf's HLO), which the static view and the module route
    show."""

    def module(self, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
        """One compiled program of a host, by the name its summary gives; NotFoundError when there is none of it."""
        ...


@runtime_checkable
class Companions(Protocol):
    """A format whose hosts' analyses also depend on other files of their session folder."""

    def companions(self, names: list[str]) -> tuple[str, ...]:
        """The names of a session folder that a host's analysis also depends on (in its cache key), sorted."""
        ...


@runtime_checkable
class ReadsAhead(Protocol):
    """A format whose host files can be read ahead, on a thread begun before a cold command loads numpy and the
    analyses (read/read_ahead.py); its `read` takes what was read."""

    def read_ahead(self, path: str, wanted: Callable[[], bool]) -> None:
        """Begins reading the host file `path` on a thread, unless `wanted()` (asked on that thread) says no."""
        ...


@runtime_checkable
class FileSessions(Protocol):
    """A format whose every file is a session of its own with one host (a snapshot or capture: a JAX device memory
    profile, a PyTorch memory snapshot), not one host of a session folder: discovery lists each file of a folder
    outside `plugins/profile` as a session of that folder's TensorBoard run."""

    def session_order(self, paths: list[str]) -> list[str]:
        """A folder's snapshot files in the order they were taken."""
        ...


@runtime_checkable
class FolderSessions(Protocol):
    """A session format whose files sit in a TensorBoard run's own folder, not under `plugins/profile`: discovery
    makes every folder outside `plugins/` that holds some one session, its hosts those files (PyTorch traces), or
    several, the captures of that run, when the format finds several per host."""

    def folder_sessions(self, folder: str, names: list[str]) -> list[tuple[str, dict[str, str]]]:
        """The sessions among a folder's file names (not its subfolders'), in the order recorded: (name, host -> path)
        each, several when a host has several files (a profiler's cycles); may read their first bytes."""
        ...


class RecordingsFormat(Protocol):
    """A file recorded beside a host's profile by something other than its profiler (the capture helper's companion
    file, docs/recordings.md): no host of its own, but read with the host it accompanies, in that host's cache key.
    Its entry, like a format's, imports its reader only in `read`."""

    name: str  # its registry name: "leakfinder"
    max_file_bytes: int  # the largest file it reads; a larger one is refused

    def accompanies(self, stem: str) -> str:
        """The name of its file beside a profile file of that stem (`ProfileFormat.stem`), in the same folder."""
        ...

    def sniff(self, path: str) -> bool:
        """Whether a path is one of its files, by its name."""
        ...

    def read(self, path: str) -> Recordings:
        """The file into the model; raises LeakfinderError naming the file."""
        ...
