"""The compiled scanner's side of reading an XSpace: the file read into private memory and scanned into raw rows,
without numpy, so that it can run ahead on a thread of its own while a cold command loads numpy and the analyses
(read/read_ahead.py); reader.py turns the rows into the model. Also the refusals both decoders share."""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tb_leakfinder import compiled
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.xplane import clock

# Not built (no compiler at install time): the reference decoder serves.
_scanner = compiled.built("tb_leakfinder.read.formats.xplane._xspace_scan")

# Profiles larger than this are refused rather than read into memory.
MAX_FILE_BYTES = 4 << 30
# Threads that scan one profile's /host:CPU events (in chunks of about 1 MB; smaller profiles use one).
SCAN_THREADS = min(os.cpu_count() or 1, 4)
# A top-level field said to end beyond this is garbage, not the end of a file cut short.
WHOLE_FILE_BYTES = 1 << 40


@dataclass
class ScannedFile:
    """A host file as the scanner gave it: its rows, and when its profile began on the wall clock (None when the
    file does not say)."""

    scanned: dict[str, Any]
    start_ns: int | None


def compiled_scanner() -> ModuleType | None:
    """The compiled scanner module, or None when it is not built or TB_LEAKFINDER_PURE_PYTHON=1."""
    return None if compiled.pure_python() else _scanner


def scan_file(scanner: ModuleType, path: str) -> ScannedFile:
    """A local or remote file, scanned. A lower peak: the scanner gives back the pages of this private copy once
    scanned, so that the file's bytes are not all held while its columns grow."""
    with files.read_private(path, limit=MAX_FILE_BYTES) as data:
        start_ns = clock.profile_start_ns(data)  # before the scan gives the pages back
        return ScannedFile(scan_bytes(scanner, data, path, drop=True), start_ns)


def scan_bytes(scanner: ModuleType, data: bytes | memoryview, path: str, drop: bool = False) -> dict[str, Any]:
    """`drop`: `data` is writable memory whose scanned pages may go (see scan_file)."""
    refuse_empty(data, path)
    try:
        scanned: dict[str, Any] = scanner.scan(data, threads=SCAN_THREADS, drop=drop, max_planes=limits.MAX_PLANES)
        return scanned
    except scanner.ScanError as exc:
        raise corrupt_profile(path, exc) from exc


def refuse_empty(data: bytes | memoryview, path: str) -> None:
    """Refuses an empty file, and one cut short: its top-level fields (planes) run past its end."""
    if not data:
        raise LeakfinderError(f"{path}: the file is empty, not an XSpace profile", source=path)
    needs = files.protobuf_needs(data, WHOLE_FILE_BYTES)
    if needs is not None:
        raise corrupt_profile(path, files.truncated(len(data), needs, "its last plane runs past the end of the file"))


def corrupt_profile(path: str, detail: object) -> LeakfinderError:
    """The error for bytes that do not decode as an XSpace, in the words of both decoders."""
    return LeakfinderError(f"{path}: incomplete or corrupt profile, not a readable XSpace ({detail})", source=path)
