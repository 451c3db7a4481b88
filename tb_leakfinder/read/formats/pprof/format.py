"""The device memory profile format's entry in the registry, and the order of a run's snapshots.

Each device memory profile is a snapshot of its own: a session with one host,
HOST. JAX's docs name them `.prof`; users also save them as `.pb` or
`.pb.gz`, suffixes other files share, so such a file is one only when its
bytes are (gzip, then a pprof Profile's first field, its sample types), and
XProf's own `.xplane.pb` and `.hlo_proto.pb` never are. A folder of them
(outside `plugins/profile`) is a TensorBoard run whose sessions are its
snapshots, in the order `common.file_sessions.session_order` gives.
"""

from __future__ import annotations

import zlib

from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import FormatHintsInfo, HostReading
from tb_leakfinder.read.formats.common.file_sessions import session_order

SUFFIX = ".prof"  # what JAX's docs and users name save_device_memory_profile's files
# Other suffixes users give them: a file of these is one only when its first bytes are.
CONTENT_SUFFIXES = (".pb.gz", ".pb")
# XProf's own files, which end in `.pb` too: a session's hosts and its HLO modules' cache.
XPROF_SUFFIXES = (".xplane.pb", ".hlo_proto.pb")
HOST = "memory_profile"  # the one host of a snapshot's session
# A sniff reads this much of a file, and decompresses this much of it: a Profile's sample types come first.
HEAD_BYTES = 256
HEAD_TEXT = 64
# The first field of a Profile as its writers (JAX, Go) put it: sample_type (field 1, length-delimited), a ValueType
# of varints `type` (field 1) and `unit` (field 2).
_SAMPLE_TYPE_TAG = 0x0A
_VALUE_TYPE_TAGS = (0x08, 0x10)


def _suffix(file_name: str) -> str | None:
    """The device memory profile suffix a file name ends in, None when none (or XProf's own files)."""
    if file_name.endswith(XPROF_SUFFIXES):
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
    if head[:2] != files.GZIP_MAGIC:
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


HINTS = FormatHintsInfo(
    framework="JAX",
    name="JAX device memory profile",
    suffix=SUFFIX,
    layout=f"<folder>/<snapshot>{SUFFIX}",
    capture=f"Save one with `jax.profiler.save_device_memory_profile('<logdir>/<run>/memory{SUFFIX}')`.",
)


class PprofFormat:
    name = "pprof"
    hints = HINTS

    @property
    def max_file_bytes(self) -> int:
        from tb_leakfinder.read.formats.pprof import reader

        return reader.MAX_FILE_BYTES

    def sniff(self, path: str) -> bool:
        name = files.basename(path)
        if _suffix(name) == SUFFIX:
            return True
        return is_snapshot_name(name) and looks_like_profile(files.read_head(path, HEAD_BYTES))

    def host_name(self, file_name: str) -> str | None:
        return HOST if is_snapshot_name(file_name) else None

    def stem(self, file_name: str) -> str | None:
        return snapshot_stem(file_name) if is_snapshot_name(file_name) else None

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        from tb_leakfinder.read.formats.pprof import reader

        return HostReading(reader.read_host(path, host), [], {})

    def session_order(self, paths: list[str]) -> list[str]:
        return session_order(paths, snapshot_stem)


PPROF = PprofFormat()
