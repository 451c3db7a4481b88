"""Input formats, each a folder behind one small interface (`base.ProfileFormat`), listed in `FORMATS`.

A format says which files of a session folder are its hosts (and which other
files belong in a host's cache key), and reads one host into the model. The
rest of tb_leakfinder knows formats only through this registry. A format may
import the model, `read.files` and `errors`; never analyses, the engine or views.
"""

from __future__ import annotations

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.base import ProfileFormat
from tb_leakfinder.read.formats.xplane import XPLANE

FORMATS: tuple[ProfileFormat, ...] = (XPLANE,)


def format_of(path: str) -> ProfileFormat:
    """The format of a host's file, as discovery found it."""
    for candidate in FORMATS:
        if candidate.sniff(path):
            return candidate
    raise LeakfinderError(f"{path}: not a profile file of any known format", source=path)
