"""The allocation log's entry in the registry: its files, its hosts, reading one, and what it tells users. It has
none of the optional parts (compiled programs, companions, folder sessions, snapshots)."""

from __future__ import annotations

from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import FormatHintsInfo, HostReading

SUFFIX = ".allocs.csv"
HINTS = FormatHintsInfo(
    name="allocation log",
    suffix=SUFFIX,
    layout=f"<run>/plugins/profile/<session>/<host>{SUFFIX}",
    record_events="Log each allocation with `logger.alloc(nbytes, address)` and each free with `logger.free(address)`.",
    python_frames="No Python frames in this log: it records none",
)


class AllocationLogFormat:
    name = "allocation_log"
    hints = HINTS

    @property
    def max_file_bytes(self) -> int:
        from tests.support.example_format import reader

        return reader.MAX_FILE_BYTES

    def sniff(self, path: str) -> bool:
        return self.host_name(files.basename(path)) is not None

    def host_name(self, file_name: str) -> str | None:
        return file_name[: -len(SUFFIX)] if file_name.endswith(SUFFIX) and len(file_name) > len(SUFFIX) else None

    def stem(self, file_name: str) -> str | None:
        return self.host_name(file_name)

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        from tests.support.example_format import reader

        return HostReading(reader.read_host(path, host), [], {})


EXAMPLE = AllocationLogFormat()
