"""The device memory profile format's entry in the registry, and the order of a run's snapshots.

Each `.prof` file is a snapshot of its own: a session with one host, HOST. A
folder of them (outside `plugins/profile`) is a TensorBoard run whose
sessions are its snapshots, in the order `snapshot_order` gives (which every
snapshot format's files follow, each format stripping its own suffix).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import HostReading
from tb_leakfinder.read.formats.pprof.reader import read_host

SUFFIX = ".prof"  # what JAX's docs and users name save_device_memory_profile's files
HOST = "memory_profile"  # the one host of a snapshot's session
# The step a snapshot's file name ends in: step_120.prof, mem_120.prof, 120.prof.
_STEP = re.compile(r"(\d+)$")


def is_snapshot_name(file_name: str) -> bool:
    return file_name.endswith(SUFFIX) and len(file_name) > len(SUFFIX)


def snapshot_stem(file_name: str) -> str:
    """A snapshot's name in its run: its file name without `.prof`."""
    return file_name[: -len(SUFFIX)] if is_snapshot_name(file_name) else file_name


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
        return is_snapshot_name(files.basename(path))

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
