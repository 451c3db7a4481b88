"""Decode XLA HloProtos (module + buffer assignment) into `model.hlo.HloModule`.

Serialized HloProtos come from two places: the `/host:metadata` plane of an
XSpace (`hlo_protos_from_metadata_plane`) and the `<module>(<id>).hlo_proto.pb`
files XProf writes into a session folder (`session_hlo_files`). Both give a
dict "<module>(<program_id>)" -> bytes, which `decode_modules` / `read_module`
turn into models.

Compiled programs on two layers: model/hlo.py declares their columns; here XLA's protos are decoded into them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from google.protobuf.message import DecodeError, Message

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import (
    ALLOC,
    FREE,
    SHARE_WITH,
    Allocations,
    HeapTrace,
    HloModule,
    Instructions,
    LogicalBuffers,
)
from tb_leakfinder.proto import HloProto
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.xplane.names import HLO_SUFFIX

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
# XProf's `<module>(<id>).hlo_proto.pb` files are at most this large (the largest real ones are a few MB).
MAX_HLO_FILE_BYTES = 1 << 30

_KEY = re.compile(r"^(?P<name>.*)\((?P<id>-?\d+)\)$")

# xla.PrimitiveType -> the spelling XLA uses in shapes.
_ELEMENT_TYPES = {
    1: "pred",
    2: "s8",
    3: "s16",
    4: "s32",
    5: "s64",
    6: "u8",
    7: "u16",
    8: "u32",
    9: "u64",
    10: "f16",
    11: "f32",
    12: "f64",
    13: "tuple",
    14: "opaque",
    15: "c64",
    16: "bf16",
    17: "token",
    18: "c128",
    19: "f8e5m2",
    20: "f8e4m3fn",
    21: "s4",
    22: "u4",
    23: "f8e4m3b11fnuz",
    24: "f8e5m2fnuz",
    25: "f8e4m3fnuz",
    26: "s2",
    27: "u2",
    28: "f8e4m3",
    29: "f8e3m4",
    32: "f4e2m1fn",
    33: "f8e8m0fnu",
}
_TUPLE = 13
# Ops whose result is (part of) their operand's buffer: its users use the buffer too.
_FORWARDING = frozenset({"bitcast", "get-tuple-element", "tuple", "optimization-barrier"})


def hlo_protos_from_metadata_plane(plane: Message) -> dict[str, bytes]:
    """Map "<module>(<program_id>)" to serialized HloProto, from a decoded `/host:metadata` XPlane.

    `plane` is a `tb_leakfinder.xplane.XPlane`. Event metadata without an
    `Hlo Proto` stat are skipped. JAX's names carry the program id; TF-XLA's
    do not and get the `program_id` stat appended, as XProf names them.
    """
    stat_names = {sid: meta.name for sid, meta in plane.stat_metadata.items()}
    entries: list[tuple[int, str, bytes | None, int | None]] = []
    for key, meta in plane.event_metadata.items():
        data: bytes | None = None
        program_id: int | None = None
        for stat in meta.stats:
            stat_name = stat_names.get(stat.metadata_id)
            if stat_name == HLO_PROTO_STAT and stat.WhichOneof("value") == "bytes_value":
                data = stat.bytes_value
            elif stat_name == PROGRAM_ID_STAT:
                kind = stat.WhichOneof("value")
                program_id = getattr(stat, kind) if kind in ("int64_value", "uint64_value") else None
        entries.append((key, meta.name, data, program_id))
    return hlo_protos_from_entries(entries)


def hlo_protos_from_entries(entries: Iterable[tuple[int, str, bytes | None, int | None]]) -> dict[str, bytes]:
    """Map "<module>(<program_id>)" to serialized HloProto, from the metadata plane's event metadata
    as (id, name, `Hlo Proto` bytes or None, `program_id` or None): what both decoders extract.

    Entries without an HloProto are skipped; of a repeated id, the last wins (as in a protobuf map).
    """
    by_id = {key: (name, data, program_id) for key, name, data, program_id in entries}
    return {module_key(name, program_id): data for name, data, program_id in by_id.values() if data is not None}


def module_key(name: str, program_id: int | None) -> str:
    """The "<module>(<program_id>)" a module is known by; names that carry their id keep it."""
    if _KEY.match(name) or program_id is None:
        return name
    return f"{name}({program_id})"


def session_hlo_files(session_dir: str) -> dict[str, bytes]:
    """Map "<module>(<id>)" to the bytes of each `<module>(<id>).hlo_proto.pb` in a session folder.

    Through `read.files` (gfile for remote paths). Listing, not globbing:
    module names hold parentheses and a folder may hold glob metacharacters.
    """
    if not files.isdir(session_dir):
        return {}
    return {
        name[: -len(HLO_SUFFIX)]: files.read_bytes(files.join(session_dir, name), MAX_HLO_FILE_BYTES)
        for name in files.listdir(session_dir)
        if name.endswith(HLO_SUFFIX)
    }


def decode_modules(hlo_protos: dict[str, bytes], source: str) -> tuple[list[HloModule], list[str]]:
    """Every module that can be decoded, sorted by key, and one warning per module that cannot."""
    modules: list[HloModule] = []
    warnings: list[str] = []
    for key in sorted(hlo_protos):
        try:
            modules.append(decode_module(key, hlo_protos[key], source))
        except LeakfinderError as e:
            warnings.append(e.message)
    return modules, warnings


def read_module(hlo_protos: dict[str, bytes], key: str, source: str) -> HloModule:
    """The module named `key`; NotFoundError listing the known names otherwise."""
    if key not in hlo_protos:
        known = ", ".join(sorted(hlo_protos)) or "none"
        raise NotFoundError(f"{source}: no HLO module named {key!r} (modules: {known})")
    return decode_module(key, hlo_protos[key], source)


def decode_module(key: str, data: bytes, source: str) -> HloModule:
    """Decode one serialized HloProto; LeakfinderError naming module and file if it cannot be used."""
    where = f"{source}: HLO module {key}"
    try:
        proto = HloProto().FromString(data)
    except DecodeError as e:
        raise LeakfinderError(f"{where}: corrupt HloProto ({len(data)} bytes): {e}", source=source) from e
    if not proto.HasField("hlo_module") or not proto.hlo_module.computations:
        raise LeakfinderError(f"{where}: the HloProto holds no HLO module", source=source)
    assignment = proto.buffer_assignment
    if not proto.HasField("buffer_assignment") or not assignment.buffer_allocations:
        raise LeakfinderError(
            f"{where}: no buffer assignment recorded (the program was not compiled with one,"
            " or the profiler stored only the HLO graph)",
            source=source,
        )
    buffers, instructions, buffer_row = _logical_buffers(assignment, proto.hlo_module)
    allocations = _allocations(assignment, buffers, buffer_row)
    traces = [_trace(trace, buffer_row) for trace in assignment.heap_simulator_traces]
    match = _KEY.match(key)
    return HloModule(
        key=key,
        name=proto.hlo_module.name or (match.group("name") if match else key),
        program_id=int(match.group("id")) if match else None,
        entry_computation=proto.hlo_module.entry_computation_name,
        num_instructions=sum(len(c.instructions) for c in proto.hlo_module.computations),
        instructions=instructions,
        buffers=buffers,
        allocations=allocations,
        traces=traces,
        source=source,
    )


class _InstructionTable:
    """Instructions.columns, filled only for the instructions that define a logical buffer:
    a large program has several times more instructions than buffers."""

    def __init__(self, module: Message) -> None:
        self._source_of = _source_resolver(module)
        self._by_id: dict[int, tuple[str, Message]] = {}
        self._by_name: dict[str, tuple[str, Message]] = {}
        self._users: dict[int, list[int]] = {}
        for computation in module.computations:
            for instruction in computation.instructions:
                self._by_id[instruction.id] = (computation.name, instruction)
                self._by_name[instruction.name] = (computation.name, instruction)
                for operand in instruction.operand_ids:
                    self._users.setdefault(operand, []).append(instruction.id)
        self._position = {
            iid: k for sequence in module.schedule.sequences.values() for k, iid in enumerate(sequence.instruction_ids)
        }
        self._row: dict[str, int] = {}
        self.table = Instructions([], [], [], [], [], [])

    def _last_user(self, instruction_id: int) -> str:
        """The user that runs last, looking through the ops that pass the buffer on; "" without a schedule."""
        users: set[int] = set()
        frontier = [instruction_id]
        while frontier:
            for user in self._users.get(frontier.pop(), ()):
                if user not in users:
                    users.add(user)
                    if self._by_id[user][1].opcode in _FORWARDING:
                        frontier.append(user)
        scheduled = [u for u in users if u in self._position]
        return self._by_id[max(scheduled, key=self._position.__getitem__)][1].name if scheduled else ""

    def row(self, instruction_id: int, instruction_name: str) -> tuple[int, Message | None]:
        """The table row of an instruction (-1 if unknown, e.g. older protos that name it only) and its proto."""
        found = self._by_id.get(instruction_id) or self._by_name.get(instruction_name)
        if found is None:
            return -1, None
        computation, instruction = found
        key = instruction.name  # unique within an HLO module
        if key not in self._row:
            self._row[key] = len(self.table)
            metadata = instruction.metadata
            t = self.table
            t.name.append(instruction.name)
            t.opcode.append(instruction.opcode)
            t.op_name.append(metadata.op_name)
            if metadata.source_file:
                t.source.append(f"{metadata.source_file}:{metadata.source_line}")
            else:
                t.source.append(self._source_of(metadata.stack_frame_id))
            t.computation.append(computation)
            t.last_user.append(self._last_user(instruction.id))
        return self._row[key], instruction


def _source_resolver(module: Message) -> Callable[[int], str]:
    """stack_frame_id -> "file:line" of that (innermost) frame, "" when absent."""
    index = module.stack_frame_index

    @functools.cache
    def source(frame_id: int) -> str:
        if not 0 < frame_id <= len(index.stack_frames):
            return ""
        location_id = index.stack_frames[frame_id - 1].file_location_id
        if not 0 < location_id <= len(index.file_locations):
            return ""
        location = index.file_locations[location_id - 1]
        if not 0 < location.file_name_id <= len(index.file_names):
            return ""
        return f"{index.file_names[location.file_name_id - 1]}:{location.line}"

    return source


def shape_text(shape: Message) -> str:
    """XLA's text for a ShapeProto, without layout: "f32[256,3072]", "(f32[2], s32[])"."""
    if shape.element_type == _TUPLE:
        return "(" + ", ".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    element = _ELEMENT_TYPES.get(shape.element_type, f"type{shape.element_type}")
    return f"{element}[{','.join(str(d) for d in shape.dimensions)}]"


def _sub_shape(shape: Message, index: Sequence[int]) -> Message:
    for i in index:
        if shape.element_type != _TUPLE or not 0 <= i < len(shape.tuple_shapes):
            break
        shape = shape.tuple_shapes[i]
    return shape


def _logical_buffers(assignment: Message, module: Message) -> tuple[LogicalBuffers, Instructions, dict[int, int]]:
    instructions = _InstructionTable(module)
    n = len(assignment.logical_buffers)
    ids = np.empty(n, np.int64)
    sizes = np.empty(n, np.int64)
    colors = np.empty(n, np.int64)
    rows = np.empty(n, np.int32)
    shapes: list[str] = []
    buffer_row: dict[int, int] = {}
    for k, buffer in enumerate(assignment.logical_buffers):
        ids[k] = buffer.id
        sizes[k] = buffer.size
        colors[k] = buffer.color
        buffer_row[buffer.id] = k
        defined_at = buffer.defined_at
        rows[k], instruction = instructions.row(defined_at.instruction_id, defined_at.instruction_name)
        shapes.append("" if instruction is None else shape_text(_sub_shape(instruction.shape, defined_at.shape_index)))
    buffers = LogicalBuffers(
        id=ids,
        size=sizes,
        color=colors,
        instruction=rows,
        shape=shapes,
        allocation=np.full(n, -1, np.int32),
        offset=np.zeros(n, np.int64),
    )
    return buffers, instructions.table, buffer_row


def _allocations(assignment: Message, buffers: LogicalBuffers, buffer_row: dict[int, int]) -> Allocations:
    protos = assignment.buffer_allocations
    for row, allocation in enumerate(protos):
        for assigned in allocation.assigned:
            k = buffer_row.get(assigned.logical_buffer_id)
            if k is not None:
                buffers.allocation[k] = row
                buffers.offset[k] = assigned.offset

    def column(field: str, dtype: type) -> np.ndarray:
        return np.fromiter((getattr(a, field) for a in protos), dtype, len(protos))

    return Allocations(
        index=column("index", np.int64),
        size=column("size", np.int64),
        color=column("color", np.int64),
        is_thread_local=column("is_thread_local", np.bool_),
        is_tuple=column("is_tuple", np.bool_),
        is_parameter=column("is_entry_computation_parameter", np.bool_),
        parameter_number=column("parameter_number", np.int64),
        is_constant=column("is_constant", np.bool_),
        maybe_live_out=column("maybe_live_out", np.bool_),
    )


def _trace(trace: Message, buffer_row: dict[int, int]) -> HeapTrace:
    events = trace.events
    n = len(events)
    kind = np.empty(n, np.int8)
    buffer = np.empty(n, np.int32)
    share_with = np.full(n, -1, np.int32)
    instruction: list[str] = []
    for k, event in enumerate(events):
        # An unknown kind (an open enum: any int32) becomes -1, which the simulation refuses by name.
        kind[k] = event.kind if event.kind in (ALLOC, FREE, SHARE_WITH) else -1
        buffer[k] = buffer_row.get(event.buffer_id, -1)
        if event.kind == SHARE_WITH:
            share_with[k] = buffer_row.get(event.share_with_canonical_id, -1)
        instruction.append(event.instruction_name)
    return HeapTrace(kind, buffer, share_with, instruction, bool(trace.whole_module_simulation))
