"""The device memory profile format's entry in the registry, and the order of a run's snapshots.

Each device memory profile is a snapshot of its own: a session with one host,
HOST. JAX's docs name them `.prof`; users also save them as `.pb` or
`.pb.gz`, suffixes other files share, so such a file is one only when its
bytes are (gzip, then a pprof Profile's first field, its sample types), and
XProf's own `.xplane.pb` and `.hlo_proto.pb` never are. A folder of them
(outside `plugins/profile`) is a TensorBoard run whose sessions are its
snapshots, in the order `snapshot_order` gives (which every snapshot format's
files follow, each format stripping its own suffix).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import HostReading
from tb_leakfinder.read.formats.pprof.reader import GZIP_MAGIC, read_host
from tb_leakfinder.read.formats.xplane.names import HLO_SUFFIX, XPLANE_SUFFIX

SUFFIX = ".prof"  # what JAX's docs and users name save_device_memory_profile's files
# Other suffixes users give them: a file of these is one only when its first bytes are.
CONTENT_SUFFIXES = (".pb.gz", ".pb")
HOST = "memory_profile"  # the one host of a snapshot's session
# The step a snapshot's file name ends in: step_120.prof, mem_120.prof, 120.prof.
_STEP = re.compile(r"(\d+)$")
# A sniff reads this much of a file, and decompresses this much of it: a Profile's sample types come first.
HEAD_BYTES = 256
HEAD_TEXT = 64
# The first field of a Profile as its writers (JAX, Go) put it: sample_type (field 1, length-delimited), a ValueType
# of varints `type` (field 1) and `unit` (field 2).
_SAMPLE_TYPE_TAG = 0x0A
_VALUE_TYPE_TAGS = (0x08, 0x10)


def _suffix(file_name: str) -> str | None:
    """The device memory profile suffix a file name ends in, None when none (or XProf's own files)."""
    if file_name.endswith((XPLANE_SUFFIX, HLO_SUFFIX)):
        return None
    return next((s for s in (SUFFIX, *CONTENT_SUFFIXES) if file_name.endswith(s) and len(file_name) > len(s)), None)


def is_snapshot_name(file_name: str) -> bool:
    """Whether a file of this name may be a device memory profile (a `.pb` one only when its bytes say so)."""
    return _suffix(file_name) is not None


def snapshot_stem(file_name: str) -> str:
    """A snapshot's name in its run: its file name without `.prof`, `.pb.gz` or `.pb`."""
    suffix = _suffix(file_name)
    return file_name[: -len(suffix)] if suffix else file_name


def looks_like_profile(head: bytes) -> bool:
    """Whether a file's first bytes are gzip whose text opens a pprof Profile with its sample types."""
    if head[:2] != GZIP_MAGIC:
        return False
    try:
        text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_TEXT)
    except zlib.error:
        return False
    if len(text) < 2 or text[0] != _SAMPLE_TYPE_TAG or text[1] >= 0x80 or len(text) < 2 + text[1]:
        return False
    value_type, k = text[2 : 2 + text[1]], 0
    while k < len(value_type):
        if value_type[k] not in _VALUE_TYPE_TAGS:
            return False
        k += 1
        while k < len(value_type) and value_type[k] & 0x80:  # the varint's continuation bytes
            k += 1
        k += 1
    return k == len(value_type)


def step_of(file_name: str, stem: Callable[[str], str] = snapshot_stem) -> int | None:
    """The step number a snapshot's file name ends in (before the suffix `stem` strips), None when it ends in none."""
    found = _STEP.search(stem(files.basename(file_name)))
    return int(found.group(1)) if found else None


def snapshot_order(paths: list[str], stem: Callable[[str], str] = snapshot_stem) -> list[str]:
    """Snapshot files in the order they were taken: by the step number their names end in (before the suffix
    `stem` strips) when every name has one, else by modification time (one stat each, remote on gs://); equal
    keys by name."""
    steps = [step_of(p, stem) for p in paths]
    if all(step is not None for step in steps):
        return [p for _, _, p in sorted((step or 0, files.basename(p), p) for step, p in zip(steps, paths, strict=True))]
    return [p for _, _, p in sorted((_mtime_ns(p), files.basename(p), p) for p in paths)]


def _mtime_ns(path: str) -> int:
    try:
        return files.identity(path).mtime_ns
    except LeakfinderError:  # gone since it was listed: its analysis will say so
        return -1


class PprofFormat:
    name = "pprof"

    def sniff(self, path: str) -> bool:
        name = files.basename(path)
        if _suffix(name) == SUFFIX:
            return True
        return is_snapshot_name(name) and looks_like_profile(files.read_head(path, HEAD_BYTES))

    def host_name(self, file_name: str) -> str | None:
        return HOST if is_snapshot_name(file_name) else None

    def companions(self, names: list[str]) -> tuple[str, ...]:
        return ()

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        return HostReading(read_host(path, host), [], {})

    def snapshot_order(self, paths: list[str]) -> list[str]:
        return snapshot_order(paths)

    def module(self, hlo_protos: dict[str, bytes], name: str, source: str) -> HloModule:
        raise NotFoundError(f"{source}: a device memory profile holds no compiled programs, so none named {name!r}")


PPROF = PprofFormat()
