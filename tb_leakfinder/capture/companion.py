"""The companion file a capture writes beside each profile file of a window: what its recorders found inside the
training process (docs/recordings.md). Written whole, by a rename: a reader never sees half of one."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

from tb_leakfinder.model.recordings import COMPANION_SUFFIX, MAX_COMPANION_BYTES, RECORDINGS_FORMAT, RECORDINGS_VERSION


def companion_path(profile: pathlib.Path, suffix: str) -> pathlib.Path:
    """`<host>.leakfinder.json` beside `<host><suffix>` (the profile file, whose format's suffix is `suffix`)."""
    return profile.with_name(profile.name[: -len(suffix)] + COMPANION_SUFFIX)


def write_companion(path: pathlib.Path, host: str, framework: str, sections: dict[str, Any]) -> pathlib.Path | None:
    """The companion file of one host, holding each recorder's section (None: that recorder was off); None when no
    recorder recorded anything, or the file would exceed its limit."""
    kept = {name: section for name, section in sections.items() if section is not None}
    if not kept:
        return None
    body = {"format": RECORDINGS_FORMAT, "version": RECORDINGS_VERSION, "host": host, "pid": os.getpid()}
    text = json.dumps({**body, "framework": framework, **kept}, separators=(",", ":"))
    if len(text.encode()) > MAX_COMPANION_BYTES:
        return None
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path
