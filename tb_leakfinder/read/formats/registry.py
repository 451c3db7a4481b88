"""The formats tb_leakfinder reads, and which one a host's file is."""

from __future__ import annotations

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.base import ProfileFormat
from tb_leakfinder.read.formats.xplane.format import XPLANE

FORMATS: tuple[ProfileFormat, ...] = (XPLANE,)


def format_of(path: str) -> ProfileFormat:
    """The format of a host's file, as discovery found it."""
    for candidate in FORMATS:
        if candidate.sniff(path):
            return candidate
    raise LeakfinderError(f"{path}: not a profile file of any known format", source=path)
