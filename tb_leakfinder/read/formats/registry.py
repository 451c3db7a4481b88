"""The formats tb_leakfinder reads, and which one a host's file is."""

from __future__ import annotations

from typing import Protocol

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.base import HostReading, ProfileFormat
from tb_leakfinder.read.formats.pprof.format import PPROF
from tb_leakfinder.read.formats.torch_snapshot.format import TORCH_SNAPSHOT
from tb_leakfinder.read.formats.torch_trace.format import TORCH_TRACE
from tb_leakfinder.read.formats.xplane.format import XPLANE


class SnapshotFormat(ProfileFormat, Protocol):
    """A format whose every file is a session of its own with one host (a snapshot or capture: a JAX device
    memory profile, a PyTorch memory snapshot), not one host of a session folder: discovery lists each file of
    a folder outside `plugins/profile` as a session of that folder's TensorBoard run."""

    def snapshot_order(self, paths: list[str]) -> list[str]:
        """A folder's snapshot files in the order they were taken."""
        ...


class FolderFormat(ProfileFormat, Protocol):
    """A session format whose files sit in a TensorBoard run's own folder, not under `plugins/profile`: discovery
    makes every folder outside `plugins/` that holds some one session, its hosts those files (PyTorch traces), or
    several, the captures of that run, when the format finds several per host."""

    def folder_sessions(self, folder: str, names: list[str]) -> list[tuple[str, dict[str, str]]]:
        """The sessions among a folder's file names (not its subfolders'), in the order recorded: (name, host -> path)
        each, several when a host has several files (a profiler's cycles); may read their first bytes."""
        ...


# Formats whose files are the hosts of a session folder (`<run>/plugins/profile/<session>/<host>.xplane.pb`,
# or a run's folder of PyTorch traces).
FOLDER_FORMATS: tuple[FolderFormat, ...] = (TORCH_TRACE,)
SESSION_FORMATS: tuple[ProfileFormat, ...] = (XPLANE, *FOLDER_FORMATS)
SNAPSHOT_FORMATS: tuple[SnapshotFormat, ...] = (PPROF, TORCH_SNAPSHOT)
FORMATS: tuple[ProfileFormat, ...] = (*SESSION_FORMATS, *SNAPSHOT_FORMATS)


def format_of(path: str) -> ProfileFormat:
    """The format of a host's file, as discovery found it."""
    for candidate in FORMATS:
        if candidate.sniff(path):
            return candidate
    raise LeakfinderError(f"{path}: not a profile file of any known format", source=path)


# What a parser can raise on input it was not written for, besides the project's error: Python's digit limit for
# int() (ValueError), deep nesting (RecursionError), text that is not UTF-8 (UnicodeError), a structure larger than
# the memory left (MemoryError), a number past a type's range (OverflowError).
PARSER_ERRORS = (ValueError, RecursionError, UnicodeError, MemoryError, OverflowError)


def read_host(profile_format: ProfileFormat, path: str, host: str, session_dir: str) -> HostReading:
    """`profile_format.read`, every error a parser raises on a hostile file being the project's, naming the file."""
    try:
        return profile_format.read(path, host, session_dir)
    except LeakfinderError:
        raise
    except PARSER_ERRORS as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise LeakfinderError(f"{path}: not a readable {profile_format.name} profile ({detail})", source=path) from exc
