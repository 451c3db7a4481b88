"""The companion file's entry in the registry: which file accompanies a profile, and reading one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tb_leakfinder.model.recordings import MAX_COMPANION_BYTES, RECORDINGS_SUFFIX
from tb_leakfinder.read import files

if TYPE_CHECKING:
    from tb_leakfinder.model.recordings import Recordings


class LeakfinderRecordings:
    name = "leakfinder"
    max_file_bytes = MAX_COMPANION_BYTES

    def accompanies(self, stem: str) -> str:
        return stem + RECORDINGS_SUFFIX

    def sniff(self, path: str) -> bool:
        name = files.basename(path)
        return name.endswith(RECORDINGS_SUFFIX) and len(name) > len(RECORDINGS_SUFFIX)

    def read(self, path: str) -> Recordings:
        from tb_leakfinder.read.formats.recordings import reader

        return reader.read_recordings(path)


LEAKFINDER_RECORDINGS = LeakfinderRecordings()
