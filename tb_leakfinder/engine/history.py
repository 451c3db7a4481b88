"""A run's captures from their hosts' report JSON: what the history follows, read from the disk cache's reports.

Each host report (a few KB, stored beside every analysis) holds what a capture
point needs, so a history of a hundred captures reads no profile and no array.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tb_leakfinder.analyses.step_sources import STEP_NUM
from tb_leakfinder.model.history import FILE_MTIME, OWN_CLOCK, PROFILE, SESSION_NAME, SNAPSHOT, CapturePoint, FamilyPoint
from tb_leakfinder.report import known_capacity

Json = dict[str, Any]
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


def capture_points(capture: str, host: Mapping[str, Any], mtime_ns: int) -> list[CapturePoint]:
    """One point per allocator of a host's report JSON. Its time is the capture's own, else its session folder's
    name, else its file's `mtime_ns` (when it was written, or copied) less its duration."""
    duration_s = host["duration_ps"] / 1e12
    start_ns = host.get("start_time_ns")
    named = session_time(capture)
    if start_ns:
        time_s, source = start_ns / 1e9, OWN_CLOCK
    elif named is not None:
        time_s, source = named, SESSION_NAME
    else:
        time_s, source = mtime_ns / 1e9 - duration_s, FILE_MTIME
    snapshot = bool(host.get("snapshot"))
    steps = [s["step"] for s in host["steps"]] if host["step_source"]["kind"] == STEP_NUM else []
    step_of_name = _trailing_number(capture)
    first = min(steps) if steps else (step_of_name if snapshot else None)
    last = max(steps) if steps else (step_of_name if snapshot else None)
    from tb_leakfinder.analyses.diff import module_base_name  # the diff's names; `report` does not load the diff

    program = ", ".join(sorted({module_base_name(m["name"]) for m in host["modules"]}))
    return [
        CapturePoint(
            capture=capture,
            host=host["host"],
            memory_id=a["memory_id"],
            name=a["name"],
            kind=SNAPSHOT if snapshot else PROFILE,
            time_s=time_s,
            duration_s=duration_s,
            heap_start_bytes=a["heap_start_bytes"],
            heap_peak_bytes=a["peak_heap_bytes"],
            heap_end_bytes=a["heap_end_bytes"],
            heap_floor_bytes=a["heap_floor_bytes"],
            never_freed_bytes=a["never_freed_bytes"],
            capacity_bytes=known_capacity(a),
            first_step=first,
            last_step=last,
            program=program,
            verdict=a["verdict"],
            families=[_family(g) for g in a["groups"]],
            time_source=source,
        )
        for a in host["allocators"]
    ]


def _family(g: Json) -> FamilyPoint:
    from tb_leakfinder.analyses.diff import normalize_name

    key = " ".join(part for part in (normalize_name(g["op"]), g["shape"], g["dtype"], g["region"]) if part)
    stack = list(g["site"]["stack"])
    return FamilyPoint(key, g["label"], g["where"], stack, g["kind"], g["bytes"], g["bytes_per_step"], g["count"])


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
