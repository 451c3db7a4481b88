"""A companion file into `model.recordings`, every value checked: the file comes from a training process's disk and
may be truncated, hand-edited or hostile. Anything that is not as docs/recordings.md says refuses the whole file
(LeakfinderError naming it), so that a host is reported with all its recordings or none of them."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.recordings import (
    ADDRESS,
    COMPLETE,
    FAILED,
    HOLDER_KINDS,
    HOLDER_MATCHES,
    MAX_ADDRESSES,
    MAX_COMPANION_BYTES,
    PARTIAL,
    RECORDINGS_FORMAT,
    RECORDINGS_VERSION,
    HolderRecord,
    HolderSearchRecord,
    ProcessMemoryRecord,
    ProcessReading,
    ProcessSample,
    Recordings,
)
from tb_leakfinder.read import files

STATUSES = (COMPLETE, PARTIAL, FAILED)
# A text longer than this is cut (with "…"): names, paths and source lines are short, and every view shows them whole.
MAX_TEXT = 1000
MAX_INT = (1 << 63) - 1
MAX_ADDRESS = (1 << 64) - 1
# The longest a recorder may have run, in seconds: more is no measurement.
MAX_ELAPSED_S = 1e7

T = TypeVar("T")


class _RefusedError(Exception):
    """A value not as the contract says: where it is, and what is wrong."""


def read_recordings(path: str) -> Recordings:
    data = files.read_bytes(path, limit=MAX_COMPANION_BYTES)
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
        return recordings(document)
    except _RefusedError as exc:
        raise LeakfinderError(f"{path}: not a readable companion file of tb_leakfinder ({exc})", source=path) from exc
    except (ValueError, RecursionError, UnicodeError, MemoryError, OverflowError) as exc:
        # Not JSON, a number of more digits than int() takes, nesting deeper than the parser's stack.
        detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise LeakfinderError(f"{path}: not a readable companion file of tb_leakfinder ({detail})", source=path) from exc


def _no_constant(name: str) -> float:
    raise _RefusedError(f"{name} is not a number JSON has")


def recordings(document: Any) -> Recordings:
    """A parsed companion file into the model."""
    top = _object(document, "the file")
    found = top.get("format")
    if found != RECORDINGS_FORMAT:
        raise _RefusedError(f"its format is {str(found)[:80]!r}, not {RECORDINGS_FORMAT!r}")
    version = _int(top, "version", "the file")
    if not 1 <= version <= RECORDINGS_VERSION:
        raise _RefusedError(f"version {version}; this tb_leakfinder reads versions up to {RECORDINGS_VERSION}")
    return Recordings(
        version=version,
        host=_text(top, "host", "the file"),
        pid=_int(top, "pid", "the file"),
        framework=_text(top, "framework", "the file"),
        holders=_optional(top, "holders", _holder_search),
        process_memory=_optional(top, "process_memory", _process_memory),
        sources=_sources(top.get("sources", {})),
    )


def _optional(top: dict[str, Any], key: str, parse: Callable[[dict[str, Any]], T]) -> T | None:
    value = top.get(key)
    return None if value is None else parse(_object(value, key))


def _holder_search(section: dict[str, Any]) -> HolderSearchRecord:
    where = "holders"
    listed = _list(section.get("holders", []), "holders.holders")
    return HolderSearchRecord(
        status=_choice(section, "status", where, STATUSES),
        warning=_text(section, "warning", where, ""),
        objects_visited=_int(section, "objects_visited", where),
        elapsed_s=_seconds(section, "elapsed_s", where),
        holders=[_holder(_object(h, f"holders.holders[{i}]"), f"holders.holders[{i}]") for i, h in enumerate(listed)],
        unmatched_count=_int(section, "unmatched_count", where, 0),
        unmatched_bytes=_int(section, "unmatched_bytes", where, 0),
        ambiguous_count=_int(section, "ambiguous_count", where, 0),
        ambiguous_bytes=_int(section, "ambiguous_bytes", where, 0),
    )


def _holder(h: dict[str, Any], where: str) -> HolderRecord:
    addresses = _list(h.get("addresses", []), f"{where}.addresses")
    if len(addresses) > MAX_ADDRESSES:
        raise _RefusedError(f"{where}: {len(addresses)} addresses listed, more than the {MAX_ADDRESSES} a holder lists")
    listed = [_bounded(a, f"{where}.addresses", MAX_ADDRESS) for a in addresses]
    count = _int(h, "count", where)
    if count < len(set(listed)):
        raise _RefusedError(f"{where}: it keeps {count} buffers but lists {len(set(listed))} addresses")
    return HolderRecord(
        path=_text(h, "path", where),
        kind=_choice(h, "kind", where, HOLDER_KINDS),
        type_name=_text(h, "type", where),
        created=_text(h, "created", where, ""),
        addresses=listed,
        count=count,
        bytes=_int(h, "bytes", where),
        match=_choice(h, "match", where, HOLDER_MATCHES, ADDRESS),
    )


def _process_memory(section: dict[str, Any]) -> ProcessMemoryRecord:
    where = "process_memory"
    samples = []
    for i, s in enumerate(_list(section.get("samples", []), f"{where}.samples")):
        at = f"{where}.samples[{i}]"
        sample = _object(s, at)
        children = _list(sample.get("children", []), f"{at}.children")
        samples.append(
            ProcessSample(
                step=_int(sample, "step", at),
                time_ns=_int(sample, "time_ns", at),
                main=_reading(_object(sample.get("main"), f"{at}.main"), f"{at}.main"),
                children=[_reading(_object(c, f"{at}.children[{k}]"), f"{at}.children[{k}]") for k, c in enumerate(children)],
                malloc_in_use=None if sample.get("malloc_in_use") is None else _int(sample, "malloc_in_use", at),
                malloc_free=None if sample.get("malloc_free") is None else _int(sample, "malloc_free", at),
            )
        )
    return ProcessMemoryRecord(
        status=_choice(section, "status", where, STATUSES),
        warning=_text(section, "warning", where, ""),
        source=_text(section, "source", where),
        samples=samples,
    )


def _reading(r: dict[str, Any], where: str) -> ProcessReading:
    return ProcessReading(
        pid=_int(r, "pid", where),
        rss=_int(r, "rss", where),
        uss=None if r.get("uss") is None else _int(r, "uss", where),
        pss=None if r.get("pss") is None else _int(r, "pss", where),
    )


def _sources(value: Any) -> dict[str, str]:
    lines = _object(value, "sources")
    return {_cut(_string(k, "sources")): _cut(_string(v, f"sources[{str(k)[:80]!r}]")) for k, v in lines.items()}


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _RefusedError(f"{where} is {_kind(value)}, not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _RefusedError(f"{where} is {_kind(value)}, not a list")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _RefusedError(f"{where} is {_kind(value)}, not a string")
    return value


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


_MISSING = object()


def _text(d: dict[str, Any], key: str, where: str, default: str | object = _MISSING) -> str:
    if key not in d and isinstance(default, str):
        return default
    return _cut(_string(d.get(key), f"{where}.{key}"))


def _choice(d: dict[str, Any], key: str, where: str, choices: tuple[str, ...], default: str | None = None) -> str:
    if key not in d and default is not None:
        return default
    value = _string(d.get(key), f"{where}.{key}")
    if value not in choices:
        raise _RefusedError(f"{where}.{key} is {value[:80]!r}, not one of {', '.join(choices)}")
    return value


def _int(d: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    if key not in d and default is not None:
        return default
    return _bounded(d.get(key), f"{where}.{key}", MAX_INT)


def _bounded(value: Any, where: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _RefusedError(f"{where} is {_kind(value)}, not an integer")
    if not 0 <= value <= most:
        raise _RefusedError(f"{where} is {str(value)[:40]}, outside 0..{most}")
    return value


def _seconds(d: dict[str, Any], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _RefusedError(f"{where}.{key} is {_kind(value)}, not a number")
    seconds = float(value)
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_ELAPSED_S):
        raise _RefusedError(f"{where}.{key} is {str(value)[:40]}, outside 0..{MAX_ELAPSED_S:g} s")
    return seconds


def _kind(value: Any) -> str:
    if value is None:
        return "missing or null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )
