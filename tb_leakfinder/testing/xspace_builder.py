"""Build real XSpace profiles with memory events, for tests, benchmarks and fuzz seeds.

`ProfileBuilder` writes protobuf wire bytes itself, so that a million events
take seconds, not minutes. Memory events are added in bulk as numpy columns
(`add_memory_events`) or one at a time (`alloc`, `free`). Either way, they are
encoded in vectorized chunks. With `spool=True`, each line's encoded events go
to a temporary file, so a profile of ~10,000,000 events (~1 GB) is written
without being held in memory.

The layout follows TensorFlow 2.21's own output (see demo_logs/README.md):
- a `/host:CPU` plane with one line per thread name;
- `MemoryAllocation` and `MemoryDeallocation` instant events;
- their stats in TF's order and value kinds;
- a stat-metadata table that holds both stat names and the strings that
  `ref_value` stats point to;
- `train` step markers with `step_num` and `_r`.

Accelerator conventions (see the format notes, "Accelerator profiles"):
- an allocator keyed by `index_on_host` or `device_ordinal` (an int64, as
  TPU runtimes write it) instead of `allocator_name` (`id_stat`);
- `group_id` on events, root events (`_r`) and the host calls XProf groups
  by (`TraceContext`, `FunctionRun`, `__inference_*`, `PjitFunction(...)`),
  written with `span`;
- `/device:TPU:N` / `/device:GPU:N` planes whose `XLA Modules` line holds one
  `<module>(<program_id>)` event per execution (with `run_id`) and whose
  `Steps` line holds one event per step (`xla_module`, `device_step`,
  `device_event`).

HLO modules go on a `/host:metadata` plane, as JAX writes them.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from tb_leakfinder.model.memory import ALLOC, FREE

# (kind, value) pins a stat's value kind; a bare int is int64, float double, str ref, bytes bytes.
StatValue = int | float | str | bytes | tuple[str, Any]

# The memory stats in the order TF 2.21 writes them, with TF's value kinds.
MEMORY_STATS: dict[str, str] = {
    "index_on_host": "int64",
    "device_ordinal": "int64",
    "allocator_name": "ref",
    "bytes_reserved": "int64",
    "bytes_allocated": "int64",
    "bytes_available": "int64",
    "fragmentation": "double",
    "peak_bytes_in_use": "int64",
    "requested_bytes": "int64",
    "allocation_bytes": "int64",
    "addr": "int64",
    "tf_op": "ref",
    "id": "int64",
    "region_type": "ref",
    "data_type": "int64",
    "shape": "ref",
    "group_id": "int64",
}
# The stats that can name an event's allocator (its memory id); the builder writes one of them.
ID_STATS = ("allocator_name", "index_on_host", "device_ordinal")
_WRITTEN_WHEN_GIVEN = ("index_on_host", "device_ordinal", "group_id")
INT_KINDS = ("int64", "uint64")
_KIND_TAG = {"double": 0x11, "uint64": 0x18, "int64": 0x20, "str": 0x2A, "bytes": 0x32, "ref": 0x38}
_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LEN = 0, 1, 2
_CHUNK_EVENTS = 1 << 16
_COPY_BLOCK = 1 << 24


# --- scalar wire encoding (headers, metadata, the odd event) ---------------


def encode_varint(value: int) -> bytes:
    """Varint of an int64/uint64; negative values take ten bytes, as in protobuf."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field_number: int, wire_type: int) -> bytes:
    return encode_varint(field_number << 3 | wire_type)


def _int_field(field_number: int, value: int) -> bytes:
    return _key(field_number, _WIRE_VARINT) + encode_varint(value)


def _len_field(field_number: int, payload: bytes) -> bytes:
    return _key(field_number, _WIRE_LEN) + encode_varint(len(payload)) + payload


def _stat(metadata_id: int, kind: str, value: Any) -> bytes:
    """One XStat message; `value` is already a stat-metadata id for kind 'ref'."""
    body = _int_field(1, metadata_id) + bytes([_KIND_TAG[kind]])
    if kind == "double":
        body += struct.pack("<d", value)
    elif kind in ("str", "bytes"):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        body += encode_varint(len(raw)) + raw
    else:
        body += encode_varint(int(value))
    return body


# --- vectorized encoding of many events ------------------------------------


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row varint lengths and an (n, width) byte matrix of int64/uint64 values."""
    u = np.asarray(values)
    u = u.astype(np.int64).view(np.uint64) if u.dtype != np.uint64 else u
    lengths = np.ones(u.shape[0], np.int64)
    for k in range(1, 10):
        lengths += u >= np.uint64(1 << (7 * k))
    width = int(lengths.max(initial=1))
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    matrix = ((u[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    matrix |= np.where(np.arange(width) < (lengths - 1)[:, None], 0x80, 0).astype(np.uint8)
    return lengths, matrix


def _const(raw: bytes, n: int) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(raw, np.uint8), (n, len(raw)))


@dataclass(eq=False)
class _Piece:
    """A run of bytes per row: row i's bytes are matrix[i, :lengths[i]]."""

    lengths: np.ndarray
    matrix: np.ndarray


def _assemble(pieces: Sequence[_Piece]) -> bytes:
    """Concatenate, row by row, the pieces' bytes into one buffer."""
    row_lengths = np.sum([p.lengths for p in pieces], axis=0)
    position = np.cumsum(row_lengths) - row_lengths
    out = np.empty(int(row_lengths.sum()), np.uint8)
    for piece in pieces:
        width = piece.matrix.shape[1]
        index = position[:, None] + np.arange(width)
        keep = np.arange(width) < piece.lengths[:, None]
        out[index[keep]] = piece.matrix[keep]
        position = position + piece.lengths
    return out.tobytes()


@dataclass(eq=False)
class _StatColumn:
    """One stat over many events. `values` are stat-metadata ids for kind 'ref'."""

    metadata_id: int
    kind: str
    values: np.ndarray
    present: np.ndarray | None = None

    def piece(self) -> _Piece:
        n = self.values.shape[0]
        if self.kind == "double":
            value_lengths = np.full(n, 8, np.int64)
            value = self.values.astype("<f8").view(np.uint8).reshape(n, 8)
        else:
            value_lengths, value = _varints(self.values)
        head = _int_field(1, self.metadata_id) + bytes([_KIND_TAG[self.kind]])
        # XEvent.stats (field 4) tag, the XStat length (always < 128 here), the XStat head.
        prefix = np.empty((n, 2 + len(head)), np.uint8)
        prefix[:, 0] = 0x22
        prefix[:, 1] = len(head) + value_lengths
        prefix[:, 2:] = _const(head, n)
        lengths = prefix.shape[1] + value_lengths
        if self.present is not None:
            lengths = np.where(self.present, lengths, 0)
        return _Piece(lengths, np.concatenate([prefix, value], axis=1))


def _encode_events(metadata_id: np.ndarray, offset_ps: np.ndarray, stats: Sequence[_StatColumn]) -> bytes:
    """Encoded `XLine.events` entries (field 4) of many instant events, in row order."""
    n = offset_ps.shape[0]
    id_lengths, ids = _varints(metadata_id)
    offset_lengths, offsets = _varints(offset_ps)
    body = [
        _Piece(id_lengths + 1, np.concatenate([_const(b"\x08", n), ids], axis=1)),
        _Piece(offset_lengths + 1, np.concatenate([_const(b"\x10", n), offsets], axis=1)),
        *(s.piece() for s in stats),
    ]
    body_lengths, body_length_bytes = _varints(np.sum([p.lengths for p in body], axis=0))
    head = _Piece(body_lengths + 1, np.concatenate([_const(b"\x22", n), body_length_bytes], axis=1))
    return _assemble([head, *body])


# --- the builder -------------------------------------------------------------


class _Spool:
    """A line's encoded events: in memory, or in a temporary file when spooling."""

    def __init__(self, on_disk: bool) -> None:
        self._file: BinaryIO | None = tempfile.TemporaryFile() if on_disk else None  # noqa: SIM115 - lives until close()
        self._chunks: list[bytes] = []
        self.size = 0

    def append(self, data: bytes) -> None:
        self.size += len(data)
        if self._file is not None:
            self._file.write(data)
        else:
            self._chunks.append(data)

    def copy_to(self, out: BinaryIO) -> None:
        if self._file is None:
            out.writelines(self._chunks)
            return
        self._file.flush()
        self._file.seek(0)
        shutil.copyfileobj(self._file, out, _COPY_BLOCK)
        self._file.seek(0, os.SEEK_END)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


@dataclass
class _Line:
    id: int
    name: str
    spool: _Spool
    num_events: int = 0


@dataclass
class _Allocator:
    """What the builder tracks per allocator, like the BFC allocator's own stats."""

    limit_bytes: int
    bytes_reserved: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0


@dataclass
class _Table:
    """Name -> id, ids counted from 1 in order of first use (as TF does)."""

    ids: dict[str, int] = field(default_factory=dict)

    def id(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids) + 1)

    def entries(self, field_number: int) -> bytes:
        """XPlane.event_metadata (4) or .stat_metadata (5): one map entry {id: (id, name)} each."""
        return b"".join(
            _len_field(field_number, _int_field(1, i) + _len_field(2, _int_field(1, i) + _len_field(2, name.encode())))
            for name, i in self.ids.items()
        )


def _stat_value(table: _Table, int_kind: str, name: str, value: StatValue) -> bytes:
    """One XStat named `name` in `table`: a bare int is `int_kind`, float double, str ref, bytes bytes."""
    if isinstance(value, tuple):
        kind, raw = value
    elif isinstance(value, bool | int):
        kind, raw = int_kind, int(value)
    elif isinstance(value, float):
        kind, raw = "double", value
    elif isinstance(value, str):
        kind, raw = "ref", value
    else:
        kind, raw = "bytes", value
    if kind == "ref":
        raw = table.id(str(raw))
    return _stat(table.id(name), kind, raw)


@dataclass
class _DevicePlane:
    """A `/device:...` plane: its own metadata tables, and encoded events per line name."""

    name: str
    timestamp_ns: int
    events: _Table = field(default_factory=_Table)
    stats: _Table = field(default_factory=_Table)
    lines: dict[str, list[bytes]] = field(default_factory=dict)

    def to_bytes(self, plane_id: int) -> bytes:
        lines = b"".join(
            _len_field(3, _int_field(1, k) + _len_field(2, name.encode()) + _int_field(3, self.timestamp_ns) + b"".join(events))
            for k, (name, events) in enumerate(self.lines.items(), start=1)
        )
        head = _int_field(1, plane_id) + _len_field(2, self.name.encode())
        return head + lines + self.events.entries(4) + self.stats.entries(5)


def _column(value: Any, n: int, dtype: type) -> np.ndarray:
    column: np.ndarray = np.asarray(value, dtype=dtype)
    return np.broadcast_to(column, (n,)) if column.ndim == 0 else column


class ProfileBuilder:
    """One host's profile: a `/host:CPU` plane, and `/host:metadata` if it has HLO.

    Times are picoseconds from the lines' `timestamp_ns` (the profile start):
    each event's `offset_ps` is the time given. Memory events are tracked per
    allocator in the order they are added: `bytes_allocated` is the heap in use
    after the event, `peak_bytes_in_use` the running peak. `bytes_available` is
    limit - reserved - in use. `fragmentation` is a stand-in: the share of the
    peak not in use, (peak - in use) / peak. Integer stats are written as
    `int_kind` ("int64" as TF does, or "uint64").
    """

    def __init__(
        self,
        hostname: str = "host0",
        *,
        timestamp_ns: int = 0,
        int_kind: str = "int64",
        spool: bool = False,
        start_time_ns: int | None = None,
    ) -> None:
        if int_kind not in INT_KINDS:
            raise ValueError(f"int_kind must be one of {INT_KINDS}, not {int_kind!r}")
        self.hostname = hostname
        self.timestamp_ns = timestamp_ns
        self.int_kind = int_kind
        self.start_time_ns = start_time_ns
        self._spool = spool
        self._lines: dict[str, _Line] = {}
        self._events = _Table()
        self._stats = _Table()
        self._allocators: dict[str, _Allocator] = {}
        self._pending: list[tuple[Any, ...]] = []
        self._hlo: list[tuple[str, int, bytes]] = []
        self._devices: dict[str, _DevicePlane] = {}
        self._end_ps = 0
        self.num_memory_events = 0

    # -- allocators and tracking --

    def allocator(self, name: str, *, limit_bytes: int = 1 << 36, bytes_in_use: int = 0, bytes_reserved: int = 0) -> None:
        """Declare an allocator; `bytes_in_use` counts buffers made before the window."""
        self._allocators[name] = _Allocator(limit_bytes, bytes_reserved, bytes_in_use, bytes_in_use)

    def bytes_in_use(self) -> dict[str, int]:
        """Heap bytes in use per allocator after the events added so far."""
        self._flush()
        return {name: a.bytes_in_use for name, a in self._allocators.items()}

    def peak_bytes_in_use(self) -> dict[str, int]:
        """Peak heap bytes per allocator over the events added so far."""
        self._flush()
        return {name: a.peak_bytes_in_use for name, a in self._allocators.items()}

    def _line(self, name: str) -> _Line:
        if name not in self._lines:
            self._lines[name] = _Line(len(self._lines) + 1, name, _Spool(self._spool))
        return self._lines[name]

    def _ref_ids(self, values: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Stat-metadata ids of string values, and where they are present (non-empty)."""
        if values is None:
            return np.zeros(n, np.int64), np.zeros(n, bool)
        if isinstance(values, str):
            return np.full(n, self._stats.id(values) if values else 0, np.int64), np.full(n, bool(values))
        unique, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
        ids = np.array([self._stats.id(s) if s else 0 for s in unique], np.int64)
        return ids[inverse], (unique != "")[inverse]

    # -- events --

    def add_memory_events(
        self,
        time_ps: Any,
        kind: Any,
        addr: Any,
        nbytes: Any,
        *,
        allocator: str | Sequence[str] | np.ndarray = "GPU_0_bfc",
        id_stat: str | Sequence[str] | np.ndarray = "allocator_name",
        op: Any = None,
        shape: Any = None,
        region: Any = None,
        dtype: Any = 1,
        requested: Any = None,
        step_id: Any = 0,
        group_id: Any = None,
        line: str | Sequence[str] | np.ndarray = "tf_Compute",
        omit: Collection[str] = (),
        kinds: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        """Add memory events in bulk; each argument is one value or one per event.

        `kind` is ALLOC or FREE (tb_leakfinder.model.memory). `nbytes` is the
        allocation size (`allocation_bytes`) and `requested` defaults to it.
        `op`, `shape` and `region` are written as ref stats where non-empty
        (TF writes them on allocations only). `data_type` is `dtype` on
        allocations and 0 on frees, as TF writes it. `id_stat` is the stat
        that names the allocator (ID_STATS): `allocator_name` writes the name
        as a ref; `index_on_host` and `device_ordinal` write int(name) as an
        int64, as TPU runtimes do. `group_id` (None: not written; per event,
        None where absent) is XProf's step group. `omit` drops stats
        entirely; `kinds` changes a stat's value kind; `overrides` replaces a
        stat's values (one or one per event) after tracking.
        """
        self._flush()
        times = np.asarray(time_ps, np.int64)
        n = int(times.shape[0]) if times.ndim else 1
        if n == 0:
            return
        times = _column(times, n, np.int64)
        kind_col = _column(kind, n, np.int8)
        size = _column(nbytes, n, np.int64)
        allocator_col = np.asarray(allocator, dtype=object)
        allocator_names = [str(allocator_col)] if allocator_col.ndim == 0 else sorted(set(allocator_col))
        for name in allocator_names:
            if name not in self._allocators:
                self.allocator(name)

        # Track heap in use per allocator, in row order.
        in_use = np.empty(n, np.int64)
        peak = np.empty(n, np.int64)
        limit = np.empty(n, np.int64)
        reserved = np.empty(n, np.int64)
        delta = np.where(kind_col == ALLOC, size, -size)
        for name in allocator_names:
            rows = slice(None) if allocator_col.ndim == 0 else allocator_col == name
            state = self._allocators[name]
            running = state.bytes_in_use + np.cumsum(delta[rows])
            in_use[rows] = running
            peak[rows] = np.maximum(np.maximum.accumulate(running), state.peak_bytes_in_use)
            limit[rows] = state.limit_bytes
            reserved[rows] = state.bytes_reserved
            if running.size:
                state.bytes_in_use = int(running[-1])
                state.peak_bytes_in_use = int(peak[rows][-1])

        allocator_ids, _ = self._ref_ids(allocator_names[0] if allocator_col.ndim == 0 else allocator_col, n)
        id_col = _column(np.asarray(id_stat, dtype=object), n, object)
        if not set(id_col) <= set(ID_STATS):
            raise ValueError(f"id_stat must be one of {ID_STATS}, not {sorted(set(id_col) - set(ID_STATS))}")
        numeric = id_col != "allocator_name"
        numeric_ids = np.zeros(n, np.int64)
        if numeric.any():
            numeric_ids[numeric] = np.broadcast_to(allocator_col, (n,))[numeric].astype(np.int64)
        groups = _column(np.asarray(group_id, dtype=object), n, object)
        grouped = np.array([g is not None for g in groups], bool)
        columns: dict[str, tuple[np.ndarray, np.ndarray | None]] = {
            "index_on_host": (numeric_ids, id_col == "index_on_host"),
            "device_ordinal": (numeric_ids, id_col == "device_ordinal"),
            "allocator_name": (allocator_ids, ~numeric),
            "bytes_reserved": (reserved, None),
            "bytes_allocated": (in_use, None),
            "bytes_available": (limit - reserved - in_use, None),
            "fragmentation": (np.where(peak > 0, (peak - in_use) / np.maximum(peak, 1), 0.0), None),
            "peak_bytes_in_use": (peak, None),
            "requested_bytes": (size if requested is None else _column(requested, n, np.int64), None),
            "allocation_bytes": (size, None),
            "addr": (_column(addr, n, np.uint64), None),
            "tf_op": self._ref_ids(op, n),
            "id": (_column(step_id, n, np.int64), None),
            "region_type": self._ref_ids(region, n),
            "data_type": (np.where(kind_col == ALLOC, _column(dtype, n, np.int64), 0), None),
            "shape": self._ref_ids(shape, n),
            "group_id": (np.where(grouped, groups, 0).astype(np.int64), grouped),
        }
        for name, value in (overrides or {}).items():
            if MEMORY_STATS.get(name) == "ref":
                columns[name] = self._ref_ids(value, n)
            else:
                columns[name] = (_column(value, n, np.float64 if name == "fragmentation" else np.int64), None)

        stats = []
        for name, default_kind in MEMORY_STATS.items():
            if name in omit:
                continue
            stat_kind = (kinds or {}).get(name) or (self.int_kind if default_kind in INT_KINDS else default_kind)
            values, present = columns[name]
            if name in _WRITTEN_WHEN_GIVEN and present is not None and not present.any():
                continue  # not even a stat-metadata entry: TF's own files have none
            stats.append(_StatColumn(self._stats.id(name), stat_kind, values, present))

        event_ids = np.where(kind_col == ALLOC, self._events.id("MemoryAllocation"), self._events.id("MemoryDeallocation"))
        line_col = np.asarray(line, dtype=object)
        for name in [str(line_col)] if line_col.ndim == 0 else sorted(set(line_col)):
            rows = np.arange(n) if line_col.ndim == 0 else np.flatnonzero(line_col == name)
            target = self._line(name)
            subset = [
                _StatColumn(s.metadata_id, s.kind, s.values[rows], None if s.present is None else s.present[rows]) for s in stats
            ]
            target.spool.append(_encode_events(event_ids[rows], times[rows], subset))
            target.num_events += rows.shape[0]
        self.num_memory_events += n
        self._end_ps = max(self._end_ps, int(times.max()))

    def alloc(
        self,
        time_ps: int,
        addr: int,
        nbytes: int,
        *,
        allocator: str = "GPU_0_bfc",
        id_stat: str = "allocator_name",
        op: str | None = "Mul",
        shape: str | None = "[128,1024]",
        dtype: int = 1,
        region: str | None = "output",
        requested: int | None = None,
        step_id: int = 0,
        group_id: int | None = None,
        line: str = "tf_Compute",
    ) -> None:
        """Add one MemoryAllocation (buffered; encoded with its neighbours in bulk)."""
        self._pending.append(
            (time_ps, ALLOC, addr, nbytes, allocator, id_stat, op, shape, region, dtype, requested, step_id, group_id, line)
        )
        if len(self._pending) >= _CHUNK_EVENTS:
            self._flush()

    def free(
        self,
        time_ps: int,
        addr: int,
        nbytes: int,
        *,
        allocator: str = "GPU_0_bfc",
        id_stat: str = "allocator_name",
        op: str | None = None,
        step_id: int = 0,
        group_id: int | None = None,
        line: str = "tf_Compute",
    ) -> None:
        """Add one MemoryDeallocation (buffered like `alloc`)."""
        self._pending.append((time_ps, FREE, addr, nbytes, allocator, id_stat, op, None, None, 0, None, step_id, group_id, line))
        if len(self._pending) >= _CHUNK_EVENTS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        time, kind, addr, nbytes, allocator, id_stat, op, shape, region, dtype, requested, step_id, group_id, line = zip(
            *rows, strict=True
        )
        self.add_memory_events(
            np.array(time, np.int64),
            np.array(kind, np.int8),
            np.array(addr, np.uint64),
            np.array(nbytes, np.int64),
            allocator=np.array(allocator, dtype=object),
            id_stat=np.array(id_stat, dtype=object),
            op=["" if v is None else v for v in op],
            shape=["" if v is None else v for v in shape],
            region=["" if v is None else v for v in region],
            dtype=np.array(dtype, np.int64),
            requested=np.array([b if r is None else r for r, b in zip(requested, nbytes, strict=True)], np.int64),
            step_id=np.array(step_id, np.int64),
            group_id=None if all(g is None for g in group_id) else np.array(group_id, dtype=object),
            line=np.array(line, dtype=object),
        )

    def event(
        self,
        name: str,
        time_ps: int,
        duration_ps: int = 0,
        *,
        line: str = "python",
        stats: Mapping[str, StatValue] | None = None,
    ) -> None:
        """Add any other event, e.g. a marker or a stat of an odd kind."""
        self._flush()
        body = _int_field(1, self._events.id(name)) + _int_field(2, time_ps)
        if duration_ps:
            body += _int_field(3, duration_ps)
        for stat_name, value in (stats or {}).items():
            body += _len_field(4, self._stat_value(stat_name, value))
        target = self._line(line)
        target.spool.append(_len_field(4, body))
        target.num_events += 1
        self._end_ps = max(self._end_ps, time_ps + duration_ps)

    def span(
        self,
        name: str,
        start_ps: int,
        end_ps: int,
        *,
        line: str = "python",
        root: bool = False,
        group_id: StatValue | None = None,
        stats: Mapping[str, StatValue] | None = None,
    ) -> None:
        """A host event with a duration, e.g. `FunctionRun`, `PjitFunction(f)`; `_r=1` if `root`, and its `group_id`."""
        given = dict(stats or {})
        if root:
            given["_r"] = 1
        if group_id is not None:
            given["group_id"] = group_id
        self.event(name, start_ps, end_ps - start_ps, line=line, stats=given)

    def device_plane(self, name: str, *, timestamp_ns: int | None = None) -> None:
        """Declare a device plane (e.g. `/device:TPU:0`); its lines start at `timestamp_ns` (the builder's by default)."""
        if name not in self._devices:
            self._devices[name] = _DevicePlane(name, self.timestamp_ns if timestamp_ns is None else timestamp_ns)

    def device_event(
        self,
        device: str,
        line: str,
        name: str,
        start_ps: int,
        duration_ps: int = 0,
        *,
        stats: Mapping[str, StatValue] | None = None,
    ) -> None:
        """Any event on a line of a device plane (declared on first use)."""
        self.device_plane(device)
        plane = self._devices[device]
        body = _int_field(1, plane.events.id(name)) + _int_field(2, start_ps)
        if duration_ps:
            body += _int_field(3, duration_ps)
        for stat_name, value in (stats or {}).items():
            body += _len_field(4, _stat_value(plane.stats, self.int_kind, stat_name, value))
        plane.lines.setdefault(line, []).append(_len_field(4, body))

    def xla_module(self, device: str, module: str, start_ps: int, end_ps: int, *, run_id: int) -> None:
        """One execution of a compiled program, `<module>(<program_id>)`, on the device's `XLA Modules` line."""
        self.device_event(device, "XLA Modules", module, start_ps, end_ps - start_ps, stats={"run_id": run_id})

    def device_step(self, device: str, step: int, start_ps: int, end_ps: int) -> None:
        """One step on the device's `Steps` line (TPU), named by its number."""
        self.device_event(device, "Steps", str(step), start_ps, end_ps - start_ps, stats={"step_num": step})

    def _stat_value(self, name: str, value: StatValue) -> bytes:
        return _stat_value(self._stats, self.int_kind, name, value)

    def step(self, step_num: int, start_ps: int, end_ps: int, *, line: str = "python", name: str = "train") -> None:
        """A step marker as `tf.profiler.experimental.Trace("train", step_num=i, _r=1)` writes it."""
        self.event(name, start_ps, end_ps - start_ps, line=line, stats={"step_num": step_num, "_r": 1})

    def add_hlo_module(self, name_with_id: str, hlo_proto: bytes, *, program_id: int | None = None) -> None:
        """A compiled module on `/host:metadata`, named `<module>(<program_id>)`."""
        if program_id is None:
            found = re.fullmatch(r".*\((\d+)\)", name_with_id)
            program_id = int(found.group(1)) if found else 0
        self._hlo.append((name_with_id, program_id, bytes(hlo_proto)))

    # -- output --

    def _write(self, out: BinaryIO) -> None:
        self._flush()
        lines = []
        for line in self._lines.values():
            head = _int_field(1, line.id) + _len_field(2, line.name.encode()) + _int_field(3, self.timestamp_ns)
            tail = _len_field(11, line.name.encode())
            lines.append((head, line, tail))
        trailer = self._events.entries(4) + self._stats.entries(5)
        # XSpace.planes is field 1; the plane's length must be known before its lines are copied in.
        plane_head = _len_field(2, b"/host:CPU")
        line_sizes = [len(h) + line.spool.size + len(t) for h, line, t in lines]
        plane_size = len(plane_head) + sum(len(_key(3, _WIRE_LEN) + encode_varint(s)) + s for s in line_sizes) + len(trailer)
        out.write(_key(1, _WIRE_LEN) + encode_varint(plane_size) + plane_head)
        for (head, line, tail), size in zip(lines, line_sizes, strict=True):
            out.write(_key(3, _WIRE_LEN) + encode_varint(size) + head)
            line.spool.copy_to(out)
            out.write(tail)
        out.write(trailer)
        for plane_id, device in enumerate(self._devices.values(), start=10):
            out.write(_len_field(1, device.to_bytes(plane_id)))
        if self._hlo:
            out.write(_len_field(1, self._metadata_plane()))
        if self.start_time_ns is not None:
            out.write(_len_field(1, self._task_environment_plane()))
        out.write(_len_field(4, self.hostname.encode()))

    def _metadata_plane(self) -> bytes:
        stats = _Table()
        entries = b""
        for event_id, (name, program_id, hlo) in enumerate(self._hlo, start=1):
            metadata = (
                _int_field(1, event_id)
                + _len_field(2, name.encode())
                + _len_field(5, _stat(stats.id("Hlo Proto"), "bytes", hlo))
                + _len_field(5, _stat(stats.id("program_id"), self.int_kind, program_id))
            )
            entries += _len_field(4, _int_field(1, event_id) + _len_field(2, metadata))
        return _int_field(1, 1) + _len_field(2, b"/host:metadata") + entries + stats.entries(5)

    def _task_environment_plane(self) -> bytes:
        stats = _Table()
        start = _stat(stats.id("profile_start_time"), "uint64", self.start_time_ns)
        stop = _stat(stats.id("profile_stop_time"), "uint64", (self.start_time_ns or 0) + self._end_ps // 1000)
        return (
            _int_field(1, 2) + _len_field(2, b"Task Environment") + stats.entries(5) + _len_field(6, start) + _len_field(6, stop)
        )

    def to_bytes(self) -> bytes:
        """The serialized XSpace."""
        out = io.BytesIO()
        self._write(out)
        return out.getvalue()

    def write(self, path: str | os.PathLike[str]) -> int:
        """Write the XSpace to `path`; returns its size in bytes."""
        with open(path, "wb") as out:
            self._write(out)
            return out.tell()

    def close(self) -> None:
        """Drop the spool files (the builder cannot write after this)."""
        for line in self._lines.values():
            line.spool.close()


def write_session(logdir: str | os.PathLike[str], run: str, session: str, hosts: Mapping[str, ProfileBuilder]) -> list[str]:
    """Write `<logdir>/<run>/plugins/profile/<session>/<host>.xplane.pb` per host (run "" = root)."""
    folder = os.path.join(os.fspath(logdir), run, "plugins", "profile", session)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for host, builder in hosts.items():
        path = os.path.join(folder, f"{host}.xplane.pb")
        builder.write(path)
        paths.append(path)
    return paths


# --- a realistic training profile ------------------------------------------

# Temporaries' (op, shape, dtype, bytes): what a small model's step allocates and frees.
_TEMPORARIES: tuple[tuple[str, str, int, int], ...] = (
    ("MatMul", "[256,4096]", 1, 256 * 4096 * 4),
    ("AddV2", "[256,4096]", 1, 256 * 4096 * 4),
    ("Relu", "[256,4096]", 1, 256 * 4096 * 4),
    ("ReluGrad", "[256,4096]", 1, 256 * 4096 * 4),
    ("MatMul", "[4096,1024]", 1, 4096 * 1024 * 4),
    ("Conv2D", "[32,64,56,56]", 1, 32 * 64 * 56 * 56 * 4),
    ("BiasAdd", "[32,64,56,56]", 1, 32 * 64 * 56 * 56 * 4),
    ("Sum", "[1024]", 1, 1024 * 4),
    ("Shape", "[4]", 3, 256),
    ("Cast", "[]", 1, 256),
    ("Mul", "[1024,10]", 1, 1024 * 10 * 4),
    ("SparseSoftmaxCrossEntropyWithLogits", "[256,10]", 1, 256 * 10 * 4),
)
_REGIONS = ("output", "temp")


def _step_hash(step: int) -> int:
    """A signed 64-bit stand-in for TF's step id, which is a hash and not the step number."""
    mixed = (step + 1) * 0x9E3779B97F4A7C15 & ((1 << 64) - 1)
    return mixed - (1 << 64) if mixed >= 1 << 63 else mixed


def synthesize_training(
    num_events: int = 1_000_000,
    steps: int = 100,
    allocators: Sequence[str] = ("GPU_0_bfc", "GPU_1_bfc"),
    *,
    leak_bytes_per_step: int = 1 << 20,
    leak_op: str = "Mul",
    leak_shape: str = "[256,1024]",
    leak_dtype: int = 1,
    leak_allocator: str | None = None,
    weights_per_allocator: int = 16,
    cache_entries: int = 8,
    live_temporaries: int = 48,
    step_ps: int = 10_000_000_000,
    lines: Sequence[str] = ("tf_Compute", "python"),
    hostname: str = "host0",
    seed: int = 0,
    spool: bool = False,
) -> tuple[ProfileBuilder, dict[str, Any]]:
    """A training profile with about `num_events` memory events and one planted leak.

    Per allocator:
    - persistent weights are made before step 0 and kept;
    - temporaries are made and freed within each step, at most
      `live_temporaries` at once, with their addresses reused step after step;
    - the leak allocator also holds a cache that grows for `cache_entries`
      steps and then evicts its oldest entry for each new one;
    - the leak itself: one `leak_op` `leak_shape` buffer per step on
      `leak_allocator`, never freed.

    Returns the builder and a description of what was planted, with the
    tracked peaks and the exact number of events.
    """
    if cache_entries < 1 or live_temporaries < 1:
        raise ValueError(f"cache_entries and live_temporaries must be at least 1, not {cache_entries}, {live_temporaries}")
    rng = np.random.default_rng(seed)
    leak_allocator = leak_allocator or allocators[0]
    builder = ProfileBuilder(hostname, spool=spool)
    for name in allocators:
        builder.allocator(name)
    bases = {name: (0x7F00 << 32) + (k << 36) for k, name in enumerate(allocators)}
    line_names = np.array(list(lines), dtype=object)

    weights = {name: [int(v) for v in rng.choice([1 << 20, 4 << 20, 16 << 20], weights_per_allocator)] for name in allocators}
    # Per step one leak and one cache allocation; a cache eviction (free) once the cache is full.
    fixed = weights_per_allocator * len(allocators) + 2 * steps + max(steps - cache_entries, 0)
    pairs = max(num_events - fixed, 0) // 2
    pairs_per_step = np.full(steps, pairs // max(steps, 1))
    pairs_per_step[: pairs % max(steps, 1)] += 1

    # Weights, made at the start of the window, one after another, before the first step.
    first_step_ps = 1_000_000
    spacing = first_step_ps // (weights_per_allocator * len(allocators) + 1)
    for k, name in enumerate(allocators):
        sizes = np.array(weights[name], np.int64)
        builder.add_memory_events(
            (k * weights_per_allocator + np.arange(1, sizes.shape[0] + 1)) * spacing,
            ALLOC,
            bases[name] + np.cumsum(sizes) - sizes,
            sizes,
            allocator=name,
            op="VarHandleOp",
            shape="[weights]",
            region="persist",
            line="python",
        )
    leak_base = bases[leak_allocator] + (1 << 33)
    cache_base = bases[leak_allocator] + (1 << 34)
    cache_bytes = 2 << 20
    temp_base = {name: bases[name] + (1 << 35) for name in allocators}
    slot_stride = max(t[3] for t in _TEMPORARIES)

    for s in range(steps):
        start, end = s * step_ps + first_step_ps, (s + 1) * step_ps
        builder.step(s, start, end)
        n_pairs = int(pairs_per_step[s])
        pick = rng.integers(0, len(_TEMPORARIES), n_pairs)
        temp_op = np.array([t[0] for t in _TEMPORARIES], dtype=object)[pick]
        temp_shape = np.array([t[1] for t in _TEMPORARIES], dtype=object)[pick]
        temp_dtype = np.array([t[2] for t in _TEMPORARIES])[pick]
        temp_size = np.array([t[3] for t in _TEMPORARIES], np.int64)[pick]
        temp_alloc = np.array(allocators, dtype=object)[rng.integers(0, len(allocators), n_pairs)]
        # Pair j reuses the slot of pair j - live_temporaries (same allocator), and is freed
        # before pair j + live_temporaries takes that slot over.
        # Distinct, increasing times, so that a slot's next user never comes before its free.
        alloc_t = start + 1 + np.sort(rng.integers(0, step_ps * 98 // 100 - n_pairs, n_pairs)) + np.arange(n_pairs)
        slot = np.zeros(n_pairs, np.int64)
        next_use = np.full(n_pairs, end - step_ps // 100, np.int64)
        for name in allocators:
            rows = np.flatnonzero(temp_alloc == name)
            slot[rows] = np.arange(rows.shape[0]) % live_temporaries
            later = rows[live_temporaries:]
            next_use[rows[: later.shape[0]]] = alloc_t[later]
        free_t = alloc_t + 1 + ((next_use - alloc_t - 1) * rng.uniform(0.1, 0.9, n_pairs)).astype(np.int64)
        temp_addr = np.array([temp_base[a] for a in temp_alloc], np.int64) + slot * slot_stride

        # Cache: one entry per step, evicting the oldest once full; the leak: one buffer, kept.
        cache_t = int(rng.integers(start + 1, end - 1))
        leak_t = int(rng.integers(start + 1, end - 1))
        extra_t = [cache_t, leak_t]
        extra_kind = [ALLOC, ALLOC]
        extra_addr = [cache_base + (s % cache_entries) * cache_bytes, leak_base + s * leak_bytes_per_step]
        extra_size = [cache_bytes, leak_bytes_per_step]
        extra_op = ["Identity", leak_op]
        extra_shape = ["[512,1024]", leak_shape]
        extra_dtype = [1, leak_dtype]
        if s >= cache_entries:
            extra_t.append(cache_t - 1)
            extra_kind.append(FREE)
            extra_addr.append(extra_addr[0])
            extra_size.append(cache_bytes)
            extra_op.append("")
            extra_shape.append("")
            extra_dtype.append(0)

        n_extra = len(extra_t)
        time = np.concatenate([alloc_t, free_t, extra_t])
        order = np.argsort(time, kind="stable")
        kind = np.concatenate([np.full(n_pairs, ALLOC), np.full(n_pairs, FREE), extra_kind])
        empty = np.full(n_pairs, "", dtype=object)
        builder.add_memory_events(
            time[order],
            kind[order],
            np.concatenate([temp_addr, temp_addr, extra_addr]).astype(np.uint64)[order],
            np.concatenate([temp_size, temp_size, extra_size])[order],
            allocator=np.concatenate([temp_alloc, temp_alloc, [leak_allocator] * n_extra])[order],
            op=np.concatenate([temp_op, empty, extra_op])[order],
            shape=np.concatenate([temp_shape, empty, extra_shape])[order],
            region=np.concatenate([np.array(_REGIONS, dtype=object)[pick % 2], empty, ["output"] * n_extra])[order],
            dtype=np.concatenate([temp_dtype, np.zeros(n_pairs, np.int64), extra_dtype])[order],
            step_id=_step_hash(s),
            line=line_names[rng.integers(0, len(lines), time.shape[0])],
        )

    planted = {
        "num_events": builder.num_memory_events,
        "steps": steps,
        "step_ps": step_ps,
        "allocators": list(allocators),
        "leak": {
            "allocator": leak_allocator,
            "op": leak_op,
            "shape": leak_shape,
            "dtype": leak_dtype,
            "region": "output",
            "bytes_per_step": leak_bytes_per_step,
            "count": steps,
            "bytes": steps * leak_bytes_per_step,
        },
        "persistent_bytes": {name: sum(weights[name]) for name in allocators},
        "cache": {
            "allocator": leak_allocator,
            "op": "Identity",
            "entries": min(cache_entries, steps),
            "bytes_per_entry": cache_bytes,
        },
        "peak_bytes_in_use": builder.peak_bytes_in_use(),
        "bytes_in_use_at_end": builder.bytes_in_use(),
    }
    return builder, planted


def write_training(path: str | os.PathLike[str], **kwargs: Any) -> dict[str, Any]:
    """`synthesize_training(**kwargs)` spooled to disk and written to `path`.

    Returns the planted description plus the file's size in bytes.
    """
    builder, planted = synthesize_training(spool=True, **kwargs)
    try:
        planted["file_bytes"] = builder.write(path)
    finally:
        builder.close()
    return planted


# --- an accelerator profile ---------------------------------------------------


def synthesize_devices(
    devices: int = 4,
    steps: int = 10,
    *,
    platform: str = "TPU",
    id_stat: str = "index_on_host",
    stack_bytes: int = 1 << 30,
    limit_bytes: int = 16 << 30,
    preallocated_bytes: int = 0,
    leak_device: int | None = None,
    leak_bytes_per_step: int = 1 << 20,
    temporaries_per_step: int = 6,
    step_ps: int = 10_000_000_000,
    module: str = "jit_train_step(7)",
    step_markers: bool = False,
    group_ids: bool = False,
    hostname: str = "host0",
) -> tuple[ProfileBuilder, dict[str, Any]]:
    """A host driving `devices` accelerators, as a PJRT runtime records it.

    Each device has its own allocator, named by `id_stat` (`index_on_host` or
    `device_ordinal`: the device number; `allocator_name`: `GPU_<n>_bfc`), a
    stack reservation of `stack_bytes`, `preallocated_bytes` in use before the
    window, and the same addresses as every other device. Per step, every
    device allocates and frees `temporaries_per_step` buffers and runs
    `module` once on its `XLA Modules` line (TPU planes get a `Steps` line
    too); the host calls `PjitFunction(train_step)`. `leak_device` keeps one
    buffer per step. `step_markers` adds `train` markers with `step_num`,
    `group_ids` puts the step number on every memory event as `group_id`.
    """
    builder = ProfileBuilder(hostname)
    tpu = platform == "TPU"
    names = [f"GPU_{d}_bfc" if id_stat == "allocator_name" else str(d) for d in range(devices)]
    for name in names:
        builder.allocator(name, limit_bytes=limit_bytes, bytes_in_use=preallocated_bytes, bytes_reserved=stack_bytes)
    op, shape, dtype = ("dummy", "f32[256,1024]{1,0:T(8,128)}", 0) if tpu else ("Mul", "[256,1024]", 1)
    weights = [(0x10_0000_0000 + k * (4 << 20), 4 << 20) for k in range(4)]
    temp_base, leak_base, size = 0x20_0000_0000, 0x30_0000_0000, 256 * 1024 * 4
    first_ps = step_ps // 100
    for d, name in enumerate(names):
        builder.add_memory_events(
            first_ps // 2 + np.arange(len(weights)) * 1000 + d,
            ALLOC,
            np.array([a for a, _ in weights], np.uint64),
            [b for _, b in weights],
            allocator=name,
            id_stat=id_stat,
            op=op,
            shape="f32[1024,1024]" if tpu else "[1024,1024]",
            region="persist",
            dtype=dtype,
            line="python",
        )
    for s in range(steps):
        start, end = first_ps + s * step_ps, first_ps + (s + 1) * step_ps - 1
        if step_markers:
            builder.step(s, start, end)
        builder.span("PjitFunction(train_step)", start + 10, start + step_ps // 50, line="python")
        for d, name in enumerate(names):
            device = f"/device:{platform}:{d}"
            builder.xla_module(device, module, start + step_ps // 20, end - step_ps // 20, run_id=1000 + s)
            if tpu:
                builder.device_step(device, s, start + step_ps // 25, end - step_ps // 25)
            k = temporaries_per_step
            alloc_t = start + step_ps // 10 + np.arange(k) * (step_ps // (4 * k)) + d
            free_t = alloc_t + step_ps // (8 * k)
            times = [*alloc_t, *free_t]
            kinds = [ALLOC] * k + [FREE] * k
            addrs = [temp_base + j * size for j in range(k)] * 2
            if leak_device == d:
                times.append(start + step_ps // 2 + d)
                kinds.append(ALLOC)
                addrs.append(leak_base + s * leak_bytes_per_step)
            order = np.argsort(times, kind="stable")
            sizes = np.array([size] * (2 * k) + [leak_bytes_per_step] * (len(times) - 2 * k))[order]
            builder.add_memory_events(
                np.array(times, np.int64)[order],
                np.array(kinds, np.int8)[order],
                np.array(addrs, np.uint64)[order],
                sizes,
                allocator=name,
                id_stat=id_stat,
                op=np.where(np.array(kinds)[order] == ALLOC, op, ""),
                shape=np.where(np.array(kinds)[order] == ALLOC, shape, ""),
                region="output",
                dtype=dtype,
                group_id=s if group_ids else None,
                line="tpu_runtime" if tpu else "tf_Compute",
            )
    planted = {
        "memory_ids": names,
        "devices": [f"/device:{platform}:{d}" for d in range(devices)],
        "steps": steps,
        "step_ps": step_ps,
        "first_step_ps": first_ps,
        "stack_bytes": stack_bytes,
        "limit_bytes": limit_bytes,
        "preallocated_bytes": preallocated_bytes,
        "leak": None
        if leak_device is None
        else {"memory_id": names[leak_device], "bytes_per_step": leak_bytes_per_step, "count": steps, "op": op, "shape": shape},
        "peak_heap_bytes": builder.peak_bytes_in_use(),
        "bytes_in_use_at_end": builder.bytes_in_use(),
    }
    return builder, planted
