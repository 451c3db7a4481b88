"""A host's file read ahead, on a thread of its own, for the reader that will ask for it.

A cold command spends about 90 ms of one core loading numpy and the analyses before it reads a byte, while the
other core waits: the file's reading and scanning (compiled, without the GIL) can run meanwhile. The command line
begins it for the first host a report reads (views/cli.py), through the format (registry.read_ahead); the format's
reader takes what was read when it comes to that host, or the project's error the reading gave (a file cut while it
was read), or reads it then if it was not read ahead, failed otherwise, or the file changed since. Nothing here
imports numpy, so that the thread starts before numpy loads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files


@dataclass(eq=False)
class _Ahead:
    thread: threading.Thread
    identity: files.FileIdentity | None = None  # the file as it was when its reading began
    result: Any = None
    error: LeakfinderError | None = None  # what the file gave: the reader's answer too
    done: bool = False  # read in full, or the project's error; any other failure leaves the reading to the reader


_pending: dict[str, _Ahead] = {}
_pending_lock = threading.Lock()


def begin(path: str, read: Callable[[str], Any], wanted: Callable[[], bool]) -> None:
    """Starts `read(path)` on a thread, unless `wanted()`, asked on that thread first (it may read files itself),
    says the reading will not be needed. Once per path: a second call for a path already begun does nothing."""

    def run() -> None:
        try:
            if not wanted():
                return
            ahead.identity = files.identity(path)
        except Exception:  # noqa: BLE001 - the reader reads the file itself, and says what is wrong in its own words
            return
        try:
            ahead.result = read(path)
        except LeakfinderError as exc:
            ahead.error = exc
        except Exception:  # noqa: BLE001 - as above
            return
        ahead.done = True

    with _pending_lock:
        if path in _pending:
            return
        # A daemon: a reading nobody takes (its analysis came from the disk cache) never holds the process open.
        ahead = _Ahead(threading.Thread(target=run, name=f"read ahead {path}", daemon=True))
        _pending[path] = ahead
    ahead.thread.start()


def take(path: str) -> Any | None:
    """What was read ahead of `path`, once its reading ends, or the project's error it raised; None when none was
    begun, it was not wanted or failed otherwise, or the file has changed since it began (its size or modification
    time) and was read in full."""
    with _pending_lock:
        ahead = _pending.pop(path, None)
    if ahead is None:
        return None
    ahead.thread.join()
    if not ahead.done or ahead.identity is None:
        return None
    if ahead.error is not None:
        raise ahead.error
    try:
        now = files.identity(path)
    except LeakfinderError:
        return None
    same = (now.size, now.mtime_ns) == (ahead.identity.size, ahead.identity.mtime_ns)
    return ahead.result if same else None
