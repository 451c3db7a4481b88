"""The order of a folder's snapshot files: by the step number their names end in, else by when they were written.

Every snapshot format's files follow it, each format stripping its own suffix (`stem`) before the step is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files

# The step a snapshot's file name ends in: step_120.prof, mem_120.prof, 120.prof.
_STEP = re.compile(r"(\d+)$")


def step_of(file_name: str, stem: Callable[[str], str]) -> int | None:
    """The step number a snapshot's file name ends in (before the suffix `stem` strips), None when it ends in none."""
    found = _STEP.search(stem(files.basename(file_name)))
    return int(found.group(1)) if found else None


def session_order(paths: list[str], stem: Callable[[str], str]) -> list[str]:
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
