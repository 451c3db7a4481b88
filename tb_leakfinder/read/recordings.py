"""The companion file a capture wrote beside a profile (docs/recordings.md), read back into `model.recordings`.

A profile without one reads as before; one that cannot be read is left out with a warning on its host, never an error:
the profile is still analysed.
"""

from __future__ import annotations

import json
from typing import Any

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.recordings import (
    COMPANION_SUFFIX,
    MAX_COMPANION_BYTES,
    RECORDER_STATUSES,
    RECORDINGS_FORMAT,
    RECORDINGS_VERSION,
    ProcessMemoryRecord,
    ProcessReading,
    ProcessSample,
    Recordings,
)
from tb_leakfinder.read import files

# The profile files a capture writes a companion beside, by their suffix (an XSpace, a PyTorch trace).
PROFILE_SUFFIXES = (".xplane.pb", ".pt.trace.json.gz", ".pt.trace.json")


class _BadFileError(ValueError):
    """What is wrong in a companion file, said in its reader's words."""


def companion_path(profile_path: str) -> str | None:
    """Where a profile's companion file would be; None for a profile no capture writes one beside."""
    name = files.basename(profile_path)
    for suffix in PROFILE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return files.join(files.dirname(profile_path), name[: -len(suffix)] + COMPANION_SUFFIX)
    return None


def read_recordings(profile_path: str) -> tuple[Recordings | None, list[str]]:
    """The recordings beside a profile (None when there are none) and what makes them unreadable, as warnings."""
    path = companion_path(profile_path)
    if path is None or not files.exists(path):
        return None, []
    try:
        data = json.loads(files.read_bytes(path, MAX_COMPANION_BYTES + 1))
    except (LeakfinderError, ValueError, RecursionError) as exc:
        return None, [f"{path}: the companion file was not read ({_message(exc)})"]
    try:
        return recordings(data), []
    except (_BadFileError, KeyError, TypeError) as exc:
        return None, [f"{path}: the companion file was not read ({_message(exc)})"]


def _message(exc: BaseException) -> str:
    if isinstance(exc, LeakfinderError):
        return exc.message
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc)


def recordings(data: Any) -> Recordings:
    if not isinstance(data, dict) or data.get("format") != RECORDINGS_FORMAT:
        raise _BadFileError(f"not a {RECORDINGS_FORMAT} file")
    version = _int(data["version"])
    if version > RECORDINGS_VERSION:
        raise _BadFileError(f"version {version}, newer than this tb_leakfinder reads ({RECORDINGS_VERSION}): upgrade it")
    memory = data.get("process_memory")
    return Recordings(
        version,
        _str(data["host"]),
        _int(data["pid"]),
        _str(data["framework"]),
        process_memory=None if memory is None else process_memory(memory),
    )


def process_memory(data: Any) -> ProcessMemoryRecord:
    status = _str(data["status"])
    if status not in RECORDER_STATUSES:
        raise _BadFileError(f"process_memory's status {status!r} is none of {', '.join(RECORDER_STATUSES)}")
    samples = [
        ProcessSample(
            _int(s["step"]),
            _int(s["time_ns"]),
            _reading(s["main"]),
            [_reading(c) for c in _list(s["children"])],
            _optional_bytes(s.get("malloc_in_use")),
            _optional_bytes(s.get("malloc_free")),
        )
        for s in _list(data["samples"])
    ]
    return ProcessMemoryRecord(status, _str(data["warning"]), _str(data["source"]), samples)


def _reading(data: Any) -> ProcessReading:
    uss, pss = data["uss"], data["pss"]
    return ProcessReading(_int(data["pid"]), _bytes(data["rss"]), _optional_bytes(uss), _optional_bytes(pss))


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _BadFileError(f"{value!r} is not an integer")
    return value


def _bytes(value: Any) -> int:
    if _int(value) < 0 or value > 1 << 50:
        raise _BadFileError(f"{value!r} is no process's size in bytes")
    return int(value)


def _optional_bytes(value: Any) -> int | None:
    return None if value is None else _bytes(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise _BadFileError(f"{value!r} is not a string")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _BadFileError(f"{value!r} is not a list")
    return value
