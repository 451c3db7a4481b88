"""The analysis version: a hash of the code that decides what a stored analysis holds."""

from __future__ import annotations

import hashlib
from pathlib import Path

# The layout of a disk cache entry: a new one makes every stored entry a miss.
ENTRY_FORMAT = 6
# Packages whose code only presents what an entry holds: changing them keeps entries valid.
_VERSIONED_SKIP = ("views", "webapp", "static")
_version: str | None = None


def analysis_version() -> str:
    """A hash of the code that produces entries: any change to the readers or analyses invalidates them."""
    global _version
    if _version is None:
        root = Path(__file__).resolve().parent.parent  # the package
        digest = hashlib.sha256(f"format {ENTRY_FORMAT}".encode())
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.suffix in (".py", ".binpb") and rel.parts[0] not in _VERSIONED_SKIP:
                digest.update(str(rel).encode() + b"\0" + path.read_bytes())
        _version = digest.hexdigest()[:16]
    return _version
