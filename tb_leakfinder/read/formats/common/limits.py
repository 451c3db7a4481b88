"""Caps every reader keeps so that its work stays at most linear in its file's bytes.

A small file can name a great many of something that each costs the analysis a pass (an allocator per event), or
name one large thing many times over (a gzip of repeated bytes, a pickle's memo, a stack's location): past a cap,
the file is refused with an error naming it and the cap, in the time of reading it.
"""

from __future__ import annotations

from collections.abc import Callable

from tb_leakfinder.errors import LeakfinderError

# Allocators (devices and memory kinds) of one host: a machine has a few dozen; each costs the analysis a pass.
MAX_ALLOCATORS = 1024
# Threads of one host (the model's lines): a process has hundreds, a few thousand at most.
MAX_LINES = 1 << 16
# Planes of one XSpace (a host, its metadata, its devices and a few more): each costs a walk of its own, so a
# file of empty planes costs a thousand times its bytes.
MAX_PLANES = 1 << 12
# Events of a trace per byte of its file (a gzipped one's compressed bytes), past the first ones: a real event is
# about a hundred bytes of text, a few compressed; an empty one `{}` gzips a thousandfold.
EVENTS_PER_FILE_BYTE = 1
FREE_EVENTS = 1 << 20


def check_allocators(count: int, path: str, refuse: Callable[[str, object], LeakfinderError]) -> None:
    if count > MAX_ALLOCATORS:
        raise refuse(path, f"it names more than {MAX_ALLOCATORS} devices or allocators")


def check_lines(count: int, path: str, refuse: Callable[[str, object], LeakfinderError]) -> None:
    if count > MAX_LINES:
        raise refuse(path, f"its events are on more than {MAX_LINES} threads")


def check_planes(count: int, path: str, refuse: Callable[[str, object], LeakfinderError]) -> None:
    if count > MAX_PLANES:
        raise refuse(path, f"it has more than {MAX_PLANES} planes")


def check_events(count: int, file_bytes: int, path: str, refuse: Callable[[str, object], LeakfinderError]) -> None:
    if count > FREE_EVENTS + EVENTS_PER_FILE_BYTE * file_bytes:
        raise refuse(path, f"more than {count} events in {file_bytes} bytes of file: its gzip holds repeated text")
