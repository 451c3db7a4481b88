"""Reading one host's `.xplane.pb` into the model."""

from __future__ import annotations

from tb_leakfinder.model.memory import HostProfile
from tb_leakfinder.read import files, xspace_proto

# Profiles larger than this are refused rather than read into memory.
MAX_FILE_BYTES = 4 << 30


def read_host(path: str, host: str) -> HostProfile:
    """Decode `path` (one host's XSpace) into memory events, steps and HLO modules."""
    data = files.read_bytes(path, limit=MAX_FILE_BYTES)
    return xspace_proto.decode(data, host, path)
