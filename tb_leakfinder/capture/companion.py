"""The companion file of a window: what its companion recorders found, written beside its profile (docs/recordings.md).

`<host>.leakfinder.json`, the profile's name with its suffix replaced, is written whole (a temporary file renamed)
into the window's staging folder, so that it is published with the profile; it is kept under MAX_COMPANION_BYTES by
dropping listed addresses first, then source lines, then the longest lists of a section.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import pathlib
from collections.abc import Iterable
from typing import Any

from tb_leakfinder.model.recordings import (
    FAILED,
    MAX_COMPANION_BYTES,
    RECORDINGS_FORMAT,
    RECORDINGS_SUFFIX,
    RECORDINGS_VERSION,
)

# The profile suffixes a capture writes, longest first: the companion's name replaces them.
PROFILE_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".xplane.pb")
# A source line longer than this is cut: a line a report names is code, not data.
MAX_SOURCE_CHARS = 400
ADDRESSES = "addresses"


def companion_path(profile: pathlib.Path) -> pathlib.Path:
    """`<host>.leakfinder.json` beside `<host>.xplane.pb`, `<worker>.<ns>.leakfinder.json` beside a PyTorch trace."""
    name = profile.name
    stem = next((name[: -len(s)] for s in PROFILE_SUFFIXES if name.endswith(s)), profile.stem)
    return profile.with_name(stem + RECORDINGS_SUFFIX)


def source_lines(lines: Iterable[str]) -> dict[str, str]:
    """The text of each "path:line" (stripped, cut at MAX_SOURCE_CHARS) that linecache has; the others are left out."""
    found: dict[str, str] = {}
    for where in sorted(set(lines)):
        path, _, number = where.rpartition(":")
        if not path or not number.isdecimal():
            continue
        text = linecache.getline(path, int(number)).strip()
        if text:
            found[where] = text[:MAX_SOURCE_CHARS]
    return found


def document(host: str, framework: str, sections: dict[str, dict[str, Any]], sources: dict[str, str]) -> dict[str, Any]:
    return {
        "format": RECORDINGS_FORMAT,
        "version": RECORDINGS_VERSION,
        "host": host,
        "pid": os.getpid(),
        "framework": framework,
        **sections,
        "sources": sources,
    }


def encode(doc: dict[str, Any], limit: int = MAX_COMPANION_BYTES) -> bytes:
    """The file's bytes, at most `limit`: addresses are dropped first, then source lines, then the longest lists."""
    data = _dumps(doc)
    while len(data) > limit and _halve_addresses(doc):
        data = _dumps(doc)
    if len(data) > limit and doc.get("sources"):
        doc["sources"] = {}
        data = _dumps(doc)
    while len(data) > limit and _halve_longest_list(doc):
        data = _dumps(doc)
    if len(data) > limit:
        for key, value in doc.items():
            if isinstance(value, dict):
                doc[key] = {"status": FAILED, "warning": f"more than {limit} bytes: not written"}
        data = _dumps(doc)
    return data


def write(path: pathlib.Path, data: bytes) -> None:
    """Writes `path` whole: a temporary file beside it (in the window's own staging folder, so its name meets no
    other's), renamed over it. Made with open(), not mkstemp: the file gets the permissions the profile gets."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _lists_of(value: Any, key: str | None = None) -> Iterable[tuple[dict[str, Any], str]]:
    """Every (dict, key) whose value is a list, in a section."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, list):
                yield value, k
            yield from _lists_of(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _lists_of(item)


def _halve_addresses(doc: dict[str, Any]) -> bool:
    """Halves every listed `addresses`; False when none is left to drop."""
    cut = False
    for owner, key in list(_lists_of({k: v for k, v in doc.items() if k != "sources"})):
        if key == ADDRESSES and owner[key]:
            owner[key] = owner[key][: len(owner[key]) // 2]
            cut = True
    return cut


def _halve_longest_list(doc: dict[str, Any]) -> bool:
    lists = [(len(owner[key]), owner, key) for owner, key in _lists_of(doc) if owner[key]]
    if not lists:
        return False
    _, owner, key = max(lists, key=lambda item: item[0])
    owner[key] = owner[key][: len(owner[key]) // 2]
    return True
