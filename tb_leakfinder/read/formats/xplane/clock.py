"""When an XSpace's events happened on the wall clock: what orders a run's captures and times its history.

XProf writes the session's start (`profile_start_time`, ns since the epoch) as a stat of the "Task Environment"
plane, and each line's `timestamp_ns` as ns since that start (a few µs for the first line). A profile whose lines
carry ns since the epoch themselves needs no start. The plane is found by walking the XSpace's top-level fields
and each plane's fields up to its name, skipping by length: a few dozen fields, whatever the file's size.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import DecodeError

from tb_leakfinder import proto
from tb_leakfinder.read.formats.common import limits

TASK_ENVIRONMENT_PLANE = b"Task Environment"
PROFILE_START_STAT = "profile_start_time"
EPOCH_NS = 946_684_800 * 10**9  # 2000-01-01: an earlier time is a clock since something else, not the epoch's
_LEN = 2  # wire type of a length-delimited field
_PLANES = 1  # XSpace.planes
_NAME = 2  # XPlane.name
# Fields walked, at the top and in a plane before its name: a writer puts a plane's id and name first and the planes
# before the other fields; past more planes than are read, the scanner refuses the file, so a file of millions of
# tiny fields costs this walk no more than a real one.
_TOP_FIELDS = limits.MAX_PLANES + 1
_PLANE_HEAD_FIELDS = 8


def wall_clock_start_ns(time_base_ns: int, profile_start: int | None) -> int | None:
    """When the event at time 0 happened (ns since the epoch), `time_base_ns` being the earliest host line's
    timestamp_ns and `profile_start` profile_start_ns's; None when the profile does not say."""
    if time_base_ns >= EPOCH_NS:
        return time_base_ns
    return profile_start + time_base_ns if profile_start is not None else None


def profile_start_ns(data: bytes | memoryview) -> int | None:
    """The Task Environment plane's profile_start_time, when it is a time since the epoch."""
    with memoryview(data) as view:
        planes = _fields(view, 0, len(view), _PLANES, _TOP_FIELDS)
        found = (bytes(view[s:e]) for s, e in planes if _name(view, s, e) == TASK_ENVIRONMENT_PLANE)
        raw = next(found, None)
        found.close()
    if raw is None:
        return None
    try:
        plane = proto.message_class("tb_leakfinder.xplane.XPlane")().FromString(raw)
    except DecodeError:
        return None  # a damaged plane: the scanner says what is wrong with the file, if anything
    names = {key: m.name for key, m in plane.stat_metadata.items()}
    for stat in plane.stats:
        value = stat.uint64_value or stat.int64_value
        if names.get(stat.metadata_id) == PROFILE_START_STAT and value >= EPOCH_NS:
            return int(value)
    return None


def _name(view: memoryview, start: int, end: int) -> bytes | None:
    for s, e in _fields(view, start, end, _NAME, _PLANE_HEAD_FIELDS):
        return bytes(view[s:e])
    return None


def _fields(view: memoryview, pos: int, end: int, number: int, most: int) -> Iterator[tuple[int, int]]:
    """The (start, end) of each length-delimited field `number` among the first `most` fields in view[pos:end]; a
    malformed field ends the walk quietly (the scanner reports it)."""
    for _ in range(most):
        if pos >= end:
            return
        tag, pos = _varint(view, pos, end)
        wire = tag & 7
        if tag < 0 or wire not in (0, 1, _LEN, 5):
            return
        if wire == 0:
            value, pos = _varint(view, pos, end)
            if value < 0:
                return
        elif wire != _LEN:
            pos += 8 if wire == 1 else 4
        else:
            size, pos = _varint(view, pos, end)
            if size < 0 or pos + size > end:
                return
            if tag >> 3 == number:
                yield pos, pos + size
            pos += size


def _varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """A varint at `pos` and the position after it; -1 when it is cut off or longer than 64 bits."""
    value = shift = 0
    while pos < end and shift < 64:
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return -1, end
