"""Reading one host's `.xplane.pb` into the model.

Two readers give identical `HostProfile`s: the compiled scanner
(`_xspace_scan.c`, which walks the wire format straight into columns without
building message objects) and the reference decoder over protobuf objects
(`decoder`). The scanner is used when it was built, unless
TB_LEAKFINDER_PURE_PYTHON=1 asks for the reference decoder.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_leakfinder.model.columns import permute
from tb_leakfinder.model.memory import EVENT_COLUMNS, HostProfile, MemoryEvents, Steps, event_order
from tb_leakfinder.read import files, read_ahead
from tb_leakfinder.read.formats.common import rows as model_rows
from tb_leakfinder.read.formats.xplane import clock, decoder, hlo, scan
from tb_leakfinder.read.formats.xplane.labels import in_neutral_terms

# The scanner's span rows (its SpanRow struct).
SPAN_ROW = np.dtype(
    [
        ("start", "<i8"),
        ("end", "<i8"),
        ("name", "<i4"),
        ("device", "<i4"),
        ("source", "i1"),
        ("root", "i1"),
        ("pad", "V2"),
        ("line", "<i4"),
        ("flow_out", "<i8"),
        ("flow_in", "<i8"),
        ("program_id", "<i8"),
    ]
)


def read_host(path: str, host: str) -> HostProfile:
    """Decode `path` (one host's XSpace) into memory events, steps and HLO modules."""
    scanner = scan.compiled_scanner()
    if scanner is None:
        return decode(files.read_bytes(path, limit=scan.MAX_FILE_BYTES), host, path)
    ahead: scan.ScannedFile | None = read_ahead.take(path)
    read = ahead if ahead is not None else scan.scan_file(scanner, path)
    return _host_profile(read.scanned, host, path, read.start_ns)


def decode(data: bytes, host: str, path: str) -> HostProfile:
    """Decode one host's serialized XSpace, read from `path`."""
    scanner = scan.compiled_scanner()
    if scanner is None:
        return decoder.decode(data, host, path)
    start_ns = clock.profile_start_ns(data)
    scanned = scan.scan_bytes(scanner, data, path)
    # The bytes go once scanned, before the columns are sorted: a lower peak (read_host keeps
    # no reference to them, and CPython 3.11+ hands an argument over to the callee).
    del data
    return _host_profile(scanned, host, path, start_ns)


def _host_profile(scanned: dict[str, Any], host: str, path: str, start_ns: int | None) -> HostProfile:
    warnings: list[str] = []
    hlo_protos = hlo.hlo_protos_from_entries(scanned["hlo"])
    devices = [name.decode() for name in scanned["device_planes"]]
    decoder.check_planes(path, scanned["num_planes"], len(devices))
    if not scanned["has_cpu"]:
        if scanned["num_planes"] == 0:
            warnings.append(f"{path}: the profile has no planes")
        return HostProfile(host, path, MemoryEvents.empty(), Steps.empty(), 0, hlo_protos, warnings, devices)
    raw = scanned.pop("columns")  # the arrays below become the only owners of the scanner's buffers
    columns = {name: _column(raw.pop(name), dtype) for name, dtype in EVENT_COLUMNS.items()}
    names, index = _allocator_names(scanned["allocators"])
    if index is not None:
        columns["allocator"] = index[columns["allocator"]]
    # Grouped by allocator here, in the same gather as the time order, rather than in a second one by the pipeline.
    order = event_order(columns["time_ps"], columns["allocator"], len(names))
    if order is not None:
        permute(columns, order)
    strings = [s.decode() for s in scanned["strings"]]
    events = MemoryEvents(**columns, strings=strings, allocator_names=names)
    rows = _column(scanned["steps"], np.int64).reshape(-1, 3)
    steps = model_rows.steps_from_markers(rows[:, 0], rows[:, 1], rows[:, 2], warnings)
    span = _column(scanned["spans"], SPAN_ROW)
    span_names = [s.decode() for s in scanned["span_names"]]
    spans = model_rows.spans_from_rows(
        span["source"],
        span["name"],
        span_names,
        span["device"],
        span["root"].astype(bool),
        span["start"],
        span["end"],
        span["line"],
        flows=(span["flow_out"], span["flow_in"], span["program_id"]),
    )
    decoder.check_host(path, events, spans)
    group = _column(scanned["groups"], np.int64).reshape(-1, 3)
    groups = model_rows.groups_from_rows(group[:, 0], group[:, 1], group[:, 2])
    profile = HostProfile(host, path, events, steps, int(scanned["end_ps"]), hlo_protos, warnings, devices, spans, groups)
    profile.start_time_ns = clock.wall_clock_start_ns(int(scanned["time_base_ns"]), start_ns)
    return in_neutral_terms(profile)


def _column(buffer: Any, dtype: type | np.dtype) -> np.ndarray:  # a scanner Column: a buffer of `dtype` items
    return np.frombuffer(buffer, dtype) if memoryview(buffer).nbytes else np.zeros(0, dtype)


def _allocator_name(key: bytes) -> str:
    """The memory id of a scanner's allocator key: a name (S), or an int64 (I) or uint64 (U) id in decimal."""
    tag, value = key[:1], key[1:]
    if tag == b"S":
        return value.decode()
    return str(int.from_bytes(value, "little", signed=tag == b"I"))


def _allocator_names(keys: list[bytes]) -> tuple[list[str], np.ndarray | None]:
    """Allocator names in order of first use, and a remapping of indices when two keys give one name."""
    names: list[str] = []
    position: dict[str, int] = {}
    index = []
    for key in keys:
        name = _allocator_name(key)
        index.append(position.setdefault(name, len(names)))
        if index[-1] == len(names):
            names.append(name)
    if len(names) == len(keys):
        return names, None
    return names, np.asarray(index, np.int32)
