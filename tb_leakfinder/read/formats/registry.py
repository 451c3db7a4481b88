"""The formats tb_leakfinder reads, which one a host's file is, and what the rest of tb_leakfinder asks of them.

Adding a format adds it to FORMATS and nothing else here: every other list is derived from what its object
implements (base.py's optional protocols), at each call, so a test may register a format into a copy of FORMATS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read.formats.base import (
    Companions,
    FileSessions,
    FolderSessions,
    FormatHintsInfo,
    HostReading,
    ProfileFormat,
    ReadsAhead,
    RecordingsFormat,
    StaticModules,
)
from tb_leakfinder.read.formats.pprof.format import PPROF
from tb_leakfinder.read.formats.recordings.format import LEAKFINDER_RECORDINGS
from tb_leakfinder.read.formats.torch_snapshot.format import TORCH_SNAPSHOT
from tb_leakfinder.read.formats.torch_trace.format import TORCH_TRACE
from tb_leakfinder.read.formats.xplane.format import XPLANE

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from tb_leakfinder.model.hlo import HloModule
    from tb_leakfinder.model.recordings import Recordings

# In the order a file is sniffed, and the formats are listed to users.
FORMATS: tuple[ProfileFormat, ...] = (XPLANE, TORCH_TRACE, PPROF, TORCH_SNAPSHOT)
# What is recorded beside a profile and read with its host (the capture helper's companion file).
RECORDINGS: tuple[RecordingsFormat, ...] = (LEAKFINDER_RECORDINGS,)


class FileSessionFormat(ProfileFormat, FileSessions, Protocol):
    """A format whose every file is a capture of its own."""


class FolderFormat(ProfileFormat, FolderSessions, Protocol):
    """A session format whose files sit in a TensorBoard run's own folder."""


def session_formats() -> list[ProfileFormat]:
    """Formats whose files are the hosts of a session folder (`<run>/plugins/profile/<session>/<host>.xplane.pb`,
    or a run's folder of PyTorch traces)."""
    return [f for f in FORMATS if not isinstance(f, FileSessions)]


def folder_formats() -> list[FolderFormat]:
    return [f for f in FORMATS if isinstance(f, FolderSessions)]


def file_session_formats() -> list[FileSessionFormat]:
    return [f for f in FORMATS if isinstance(f, FileSessions)]


def companions(names: list[str]) -> tuple[str, ...]:
    """The names of a session folder that its hosts' analyses also depend on, as the formats that have them say."""
    return tuple(sorted({c for f in session_formats() if isinstance(f, Companions) for c in f.companions(names)}))


def format_of(path: str) -> ProfileFormat:
    """The format of a host's file, as discovery found it."""
    for candidate in FORMATS:
        if candidate.sniff(path):
            return candidate
    raise LeakfinderError(f"{path}: not a profile file of any known format", source=path)


def read_ahead(path: str, wanted: Callable[[], bool]) -> None:
    """Begins reading a host's file ahead (read/read_ahead.py), when its format can; its reader takes it."""
    profile_format = format_of(path)
    if isinstance(profile_format, ReadsAhead):
        profile_format.read_ahead(path, wanted)


# The hints of a host whose file is of no format any more (a link gone dangling): the defaults, said of no format.
NO_FORMAT_HINTS = FormatHintsInfo(name="profile", suffix="", layout="")


def hints(name: str) -> FormatHintsInfo:
    """The hints of the format of that registry name (NO_FORMAT_HINTS for a name no format has)."""
    return next((f.hints for f in FORMATS if f.name == name), NO_FORMAT_HINTS)


def has_modules(name: str) -> bool:
    """Whether the format of that registry name holds compiled programs (the static view, the module route)."""
    return any(f.name == name and isinstance(f, StaticModules) for f in FORMATS)


def module(profile_format: ProfileFormat, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
    """One compiled program of a host, by the name its summary gives; NotFoundError when its format has none."""
    if not isinstance(profile_format, StaticModules):
        plural = f"{profile_format.hints.name}s"
        raise NotFoundError(f"{source}: {plural} hold no compiled programs, so none named {name!r}")
    return profile_format.module(hlo_protos, name, source)


def max_file_bytes() -> int:
    """The largest file any format reads."""
    return max(f.max_file_bytes for f in FORMATS)


def file_kinds() -> str:
    """Every format's files, for the CLI's description."""
    return _listed([f"{f.hints.name}s ({f.hints.suffix})" for f in FORMATS], "and")


def path_help() -> str:
    """What a CLI or API path may be, every format's file listed."""
    return _listed(["a logdir", "one profile session folder", *(f"one {f.hints.name} ({f.hints.suffix})" for f in FORMATS)])


def expected_layouts() -> str:
    """Where discovery looks for each format's files under a logdir, for its 'no profiles found' error."""
    return " or ".join(f.hints.layout for f in FORMATS)


def suffixes() -> str:
    """Every format's suffix, for the error of a path that is none of them."""
    return _listed([f.hints.suffix for f in FORMATS])


def _listed(items: list[str], last: str = "or") -> str:
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


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


def recordings_name(file_name: str, names: Collection[str]) -> str | None:
    """The name, among a folder's `names`, of the file recorded beside its profile file `file_name`; None when
    there is none. The profile's stem is each format's that names it (the first, in FORMATS' order, whose file is
    there)."""
    stems = [s for s in (f.stem(file_name) for f in FORMATS) if s]
    return next((name for stem in stems for r in RECORDINGS if (name := r.accompanies(stem)) in names), None)


def read_recordings(path: str) -> Recordings:
    """A file recorded beside a profile, every error a parser raises on a hostile file being the project's."""
    recorded = next((r for r in RECORDINGS if r.sniff(path)), None)
    if recorded is None:
        raise LeakfinderError(f"{path}: not a file recorded beside a profile", source=path)
    try:
        return recorded.read(path)
    except LeakfinderError:
        raise
    except PARSER_ERRORS as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise LeakfinderError(f"{path}: not a readable {recorded.name} recordings file ({detail})", source=path) from exc
