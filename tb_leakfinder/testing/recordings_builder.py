"""Companion files (docs/recordings.md) built for tests: what the capture helper writes beside a profile, with the
holders, process memory and source lines a test chooses. Plain JSON values, so that a test can also spoil them.

    document = companion(holders=[holder("model.heads", addresses, type_name="ModuleList", nbytes=6 << 20)])
    write_companion(profile_path, document)
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Sequence
from typing import Any

from tb_leakfinder.model.recordings import ADDRESS, COMPLETE, RECORDINGS_FORMAT, RECORDINGS_SUFFIX, RECORDINGS_VERSION

# Every profile suffix docs/recordings.md's rule replaces ("the profile file's name with its format's suffix
# replaced"), longest first: XProf's, PyTorch traces', device memory profiles', memory snapshots'.
PROFILE_SUFFIXES = (
    ".pt.trace.json.gz",
    ".pt.trace.json",
    ".xplane.pb",
    ".json.gz",
    ".pb.gz",
    ".pickle",
    ".json",
    ".prof",
    ".pkl",
    ".pb",
)


def holder(
    path: str,
    addresses: Sequence[int],
    *,
    kind: str = "attribute",
    type_name: str = "list",
    created: str = "",
    count: int | None = None,
    nbytes: int = 0,
    match: str = ADDRESS,
) -> dict[str, Any]:
    """One holder record: it keeps the buffers at `addresses` (`count` of them in all: more when not all are listed);
    `match` SHAPE when they were matched by shape and dtype."""
    return {
        "path": path,
        "kind": kind,
        "type": type_name,
        "created": created,
        "addresses": [int(a) for a in addresses],
        "count": len(addresses) if count is None else count,
        "bytes": nbytes,
        "match": match,
    }


def companion(
    *,
    holders: Sequence[dict[str, Any]] | None = None,
    status: str = COMPLETE,
    warning: str = "",
    objects_visited: int = 1000,
    elapsed_s: float = 0.05,
    unmatched_count: int = 0,
    unmatched_bytes: int = 0,
    ambiguous_count: int = 0,
    ambiguous_bytes: int = 0,
    sources: dict[str, str] | None = None,
    process_memory: dict[str, Any] | None = None,
    host: str = "host",
    pid: int = 4242,
    framework: str = "tensorflow",
) -> dict[str, Any]:
    """A whole companion file; `holders` None leaves the holder finder's section out (it was off)."""
    document: dict[str, Any] = {
        "format": RECORDINGS_FORMAT,
        "version": RECORDINGS_VERSION,
        "host": host,
        "pid": pid,
        "framework": framework,
        "sources": dict(sources or {}),
    }
    if holders is not None:
        document["holders"] = {
            "status": status,
            "warning": warning,
            "objects_visited": objects_visited,
            "elapsed_s": elapsed_s,
            "unmatched_count": unmatched_count,
            "unmatched_bytes": unmatched_bytes,
            "ambiguous_count": ambiguous_count,
            "ambiguous_bytes": ambiguous_bytes,
            "holders": list(holders),
        }
    if process_memory is not None:
        document["process_memory"] = process_memory
    return document


def companion_path(profile: pathlib.Path) -> pathlib.Path:
    """Where the companion of a profile file goes: its name with the profile's suffix replaced, in its folder."""
    name = profile.name
    suffix = next((s for s in PROFILE_SUFFIXES if name.endswith(s) and len(name) > len(s)), None)
    if suffix is None:
        raise ValueError(f"{profile}: no profile suffix to replace")
    return profile.with_name(name[: -len(suffix)] + RECORDINGS_SUFFIX)


def write_companion(profile: pathlib.Path, document: dict[str, Any] | str | bytes) -> pathlib.Path:
    """Writes a companion file beside `profile` (a document, or text or bytes as they are); returns its path."""
    path = companion_path(profile)
    if isinstance(document, dict):
        path.write_text(json.dumps(document), encoding="utf-8")
    elif isinstance(document, str):
        path.write_text(document, encoding="utf-8")
    else:
        path.write_bytes(document)
    return path
