"""The CLI's text of the lines a report names, for a host with no companion file to have recorded them: read from the
local source file, for those lines only. The plugin never calls this: a server reads no source file from its disk.

A line is looked up by the program's source path (`site.source`, a whole path) else by the frame's file as named
(`train.py`, taken from the working folder), in a regular file of at most MAX_SOURCE_BYTES, at most MAX_FILES files
per report. Anything that cannot be read leaves the line without its text: this never fails a report. The file may
have changed since the capture; the text is today's.
"""

from __future__ import annotations

import os

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files
from tb_leakfinder.wire import Json

MAX_SOURCE_BYTES = 4 << 20
MAX_FILES = 64
MAX_LINE_CHARS = 1000


def fill_where_texts(report: Json, folder: str = ".") -> None:
    """Sets `where_text` of each family of `report` that has none, on hosts without a companion file."""
    lines = _SourceFiles(folder)
    for run in report["runs"]:
        for host in run["hosts"]:
            if host.get("recordings_file"):
                continue
            for allocator in host["allocators"]:
                for family in allocator["families"]:
                    if not family["where_text"]:
                        family["where_text"] = lines.text(family["site"]["source"]) or lines.text(family["where"])


class _SourceFiles:
    """Each file's lines, read once; a file that cannot be read, or one past the count, gives none."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._lines: dict[str, list[str] | None] = {}

    def text(self, where: str) -> str:
        """The stripped text of the line `where` names ("train.py:42 in step", "/src/model.py:57"); "" when unknown."""
        place = where.split(" in ", 1)[0].strip()
        file, _, line = place.rpartition(":")
        if not file or not line.isdecimal() or len(line) > 9:
            return ""
        lines = self._read(os.path.join(self.folder, file))
        number = int(line)
        if lines is None or not 1 <= number <= len(lines):
            return ""
        return lines[number - 1].strip()[:MAX_LINE_CHARS]

    def _read(self, path: str) -> list[str] | None:
        if path in self._lines:
            return self._lines[path]
        found = None
        if len(self._lines) < MAX_FILES and files.is_local(path):
            try:
                found = files.read_bytes(path, limit=MAX_SOURCE_BYTES).decode("utf-8", "replace").splitlines()
            except (LeakfinderError, OSError, ValueError):
                found = None
        self._lines[path] = found
        return found
