"""Files the CLI writes for people (HTML, CSV, Markdown): whole or not at all.

Each is written to a temporary file in its own folder and renamed over its name only once every one of
them is written, so that a failure (a full disk, a size limit) leaves the files that were there.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable

from tb_leakfinder.views.terminal import ENCODING_ERRORS

TEMP_PREFIX = ".tb-leakfinder-"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_texts(texts: Iterable[tuple[str, str]]) -> None:
    """Write each (path, UTF-8 text; a lone surrogate as its `\\uXXXX`), one text held at a time; OSError (with
    nothing renamed) if any cannot be written."""
    temps: dict[str, str] = {}
    try:
        mode = 0o666 & ~_umask()  # as open() would create it: mkstemp's files are private
        for path, text in texts:
            fd, temps[path] = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=os.path.dirname(path) or ".")
            with os.fdopen(fd, "w", encoding="utf-8", errors=ENCODING_ERRORS, newline="") as f:
                os.fchmod(f.fileno(), mode)
                f.write(text)
        for path, temp in temps.items():
            os.replace(temp, path)
    finally:
        for temp in temps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
