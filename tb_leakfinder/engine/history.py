"""A run's captures: which sessions are one TensorBoard run's, and their hosts' points placed in time.

Each host's points (`analyses/history_points.py`, a few KB stored beside its
analysis in the disk cache) hold what a capture point needs but the capture
itself, so a history of a thousand captures reads no profile, no array and
no report.

A tb_run's history on three layers: model/history.py declares its capture points; analyses/history.py judges the
history from them; here they are gathered from the runs.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tb_leakfinder.lazy import LazyModule

if TYPE_CHECKING:
    from tb_leakfinder.model import history as history_model
else:
    # Cold start: every report names its runs' TensorBoard runs; only a history of several captures makes points.
    history_model = LazyModule("tb_leakfinder.model.history")

_SESSION = re.compile(r"([0-9]{4}(?:_[0-9]{2}){5})(?:_[0-9]+)?")


def tensorboard_run(name: str) -> str:
    """The TensorBoard run of a discovered session, "job" of "job/2026_12_01_22_30_16". A name without "/" is a
    session at the logdir's top ("") when it is named by its time, as XProf's Capture button and `watch` name
    sessions; any other (a PyTorch trace's folder, a snapshot file at the top) is a run of its own, not one of
    the top's captures."""
    head, slash, tail = name.rpartition("/")
    return head if slash or _SESSION.fullmatch(tail) else name


def several_captures(names: Iterable[str]) -> list[str]:
    """The TensorBoard runs, sorted, that two or more of these discovered sessions belong to."""
    counts = Counter(map(tensorboard_run, names))
    return sorted(t for t, n in counts.items() if n > 1)


def capture_points(capture: str, host: history_model.HostPoints, mtime_ns: int) -> list[history_model.CapturePoint]:
    """One point per allocator of a host file found as `capture`. Its time is the capture's own, else its session
    folder's name, else its file's `mtime_ns` (when it was written, or copied) less its duration."""
    named = session_time(capture)
    if host.start_time_ns:
        time_s, source = host.start_time_ns / 1e9, history_model.OWN_CLOCK
    elif named is not None:
        time_s, source = named, history_model.SESSION_NAME
    else:
        time_s, source = mtime_ns / 1e9 - host.duration_s, history_model.FILE_MTIME
    first, last = host.first_step, host.last_step
    if first is None and host.kind == history_model.ONE_MOMENT:  # a snapshot has no markers: its name may say its step
        first = last = _trailing_number(capture)
    return [
        history_model.CapturePoint(
            **vars(a),
            capture=capture,
            host=host.host,
            kind=host.kind,
            time_s=time_s,
            duration_s=host.duration_s,
            first_step=first,
            last_step=last,
            program=host.program,
            time_source=source,
        )
        for a in host.allocators
    ]


def session_time(name: str) -> float | None:
    """When a session began by its folder's name ("job/2026_12_01_19_36_26", made unique as "..._26_2"), in
    seconds since the epoch; XProf names it in the capturing machine's local time, taken as this machine's."""
    match = _SESSION.fullmatch(name.rpartition("/")[2])
    if match is None:
        return None
    try:
        return time.mktime(time.strptime(match[1], "%Y_%m_%d_%H_%M_%S"))
    except (ValueError, OverflowError):
        return None


def _trailing_number(name: str) -> int | None:
    """The step in a snapshot's name: 120 of "job/step_120"."""
    digits = ""
    for ch in reversed(name.rpartition("/")[2]):
        if not ch.isdigit():
            break
        digits = ch + digits
    return int(digits) if digits else None
