"""The fuzz harness shared by the fuzz tests and tests/fuzz/fuzz_long.py.

A seeded, structure-aware mutator (deterministic: a failure reproduces from its
seed and index) over real captures and synthesised profiles; each input runs
through what the plugin runs (`read_host`, `analyze_host`, the report, timeline
and buffer JSON) under both decoders, or through the HLO decoder and the static
analysis, and ends in a tally of outcomes and crashes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tb_leakfinder import compiled, proto, wire
from tb_leakfinder.analyses import static_buffers
from tb_leakfinder.analyses.buffer_paging import query_buffers
from tb_leakfinder.analyses.host_decisions import decide_host
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.analyses.timeline import timeline
from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.xplane import decoder, hlo, reader, scan
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, encode_varint, synthesize_devices, synthesize_training

ROOT = Path(__file__).resolve().parents[2]
PURE_ENV = compiled.PURE_PYTHON_ENV
REQUIRE_SCANNER_ENV = "TB_LEAKFINDER_REQUIRE_SCANNER"  # set by tests/run.sh, which builds the scanner
# Bounded time: generous enough never to flake on a loaded 2-core CI machine.
MAX_SECONDS_PER_INPUT = 10.0
# Bounded memory: the peak RSS of the whole run may grow at most this much.
MAX_RSS_GROWTH_BYTES = 512 << 20
# Real captures keep this many events per line as seeds; the whole file is mutated too, more rarely.
SEED_EVENTS_PER_LINE = 60
WHOLE_FILE_SHARE = 0.04

HUGE_LENGTHS = (2**31 - 1, 2**31, 2**32 + 5, 2**40, 2**63 - 1, 2**64 - 1)


# --- wire format -------------------------------------------------------------


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < end and shift < 70:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


@dataclass(frozen=True)
class Field:
    """One field: key at `tag`, value varint or length prefix at `head`, body to `end`; enclosing LEN fields' indexes."""

    tag: int
    head: int
    body: int
    end: int
    wire_type: int
    parents: tuple[int, ...] = ()


def wire_fields(
    data: bytes, start: int = 0, end: int | None = None, parents: tuple[int, ...] = (), out: list[Field] | None = None
) -> list[Field] | None:
    """Every field of the message in data[start:end], nested messages included; None if not a message."""
    end = len(data) if end is None else end
    out = [] if out is None else out
    pos = start
    while pos < end:
        key = _read_varint(data, pos, end)
        if key is None or key[0] >> 3 == 0:
            return None
        tag, (value, head) = pos, key
        wire_type = value & 7
        if wire_type == 0:
            got = _read_varint(data, head, end)
            if got is None:
                return None
            out.append(Field(tag, head, head, got[1], 0, parents))
            pos = got[1]
        elif wire_type in (1, 5):
            pos = head + (8 if wire_type == 1 else 4)
            out.append(Field(tag, head, head, pos, wire_type, parents))
        elif wire_type == 2:
            got = _read_varint(data, head, end)
            if got is None or got[1] + got[0] > end:
                return None
            length, body = got
            out.append(Field(tag, head, body, body + length, 2, parents))
            if len(parents) < 12 and length:
                mark = len(out)
                if wire_fields(data, body, body + length, (*parents, mark - 1), out) is None:
                    del out[mark:]  # not a message: a string or bytes
            pos = body + length
        else:
            return None
    return out if pos == end else None


def replace_in_message(data: bytes, fields: list[Field], f: Field, start: int, stop: int, new: bytes) -> bytes:
    """data[start:stop] (inside or beside `f`) replaced by `new`, with every enclosing length prefix fixed."""
    out = data[:start] + new + data[stop:]
    delta = len(new) - (stop - start)
    for index in reversed(f.parents):  # innermost first; heads precede bodies, so outer positions hold
        p = fields[index]
        head = encode_varint(p.end - p.body + delta)
        out = out[: p.head] + head + out[p.body :]
        delta += len(head) - (p.body - p.head)
    return out


# --- the mutator -------------------------------------------------------------


@dataclass
class Seed:
    name: str
    data: bytes
    fields: list[Field] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fields = wire_fields(self.data) or []


# Mutated inputs larger than this are not re-parsed for structure-aware mutations (too slow in Python).
REPARSE_LIMIT = 16 << 10


class Mutator:
    """Structure-aware mutations of protobuf wire bytes, reproducible from a seed."""

    def __init__(self, seeds: list[Seed], rng: random.Random, whole_files: list[Seed] | None = None) -> None:
        self.seeds = seeds
        self.whole_files = whole_files or []
        self.rng = rng
        self.ops: list[Callable[[bytes, list[Field]], bytes]] = [
            self.truncate,
            self.truncate_in_field,
            self.flip_bits,
            self.set_bytes,
            self.length_prefix,
            self.huge_length,
            self.varint,
            self.wire_type,
            self.field_number,
            self.duplicate_field,
            self.delete_field,
            self.splice,
            self.deep_nesting,
            self.insert_random,
        ]

    def next(self) -> tuple[str, bytes]:
        """(description, input): one to three mutations of one seed."""
        rng = self.rng
        pool = self.whole_files if self.whole_files and rng.random() < WHOLE_FILE_SHARE else self.seeds
        seed = rng.choice(pool)
        data, fields = seed.data, seed.fields
        names = []
        for i in range(rng.choice((1, 1, 1, 2, 3))):
            if i:  # the structure after the previous mutation
                fields = (wire_fields(data) or []) if len(data) <= REPARSE_LIMIT else []
            op = rng.choice(self.ops)
            names.append(op.__name__)
            data = op(data, fields)
        return f"{seed.name}:{'+'.join(names)}", data

    def _field(self, fields: list[Field], wire_type: int | None = None) -> Field | None:
        candidates = [f for f in fields if wire_type is None or f.wire_type == wire_type]
        return self.rng.choice(candidates) if candidates else None

    def truncate(self, data: bytes, fields: list[Field]) -> bytes:
        return data[: self.rng.randrange(len(data) + 1)]

    def truncate_in_field(self, data: bytes, fields: list[Field]) -> bytes:
        f = self._field(fields)
        return data[: self.rng.randint(f.tag, f.end)] if f else data[:-1]

    def flip_bits(self, data: bytes, fields: list[Field]) -> bytes:
        out = bytearray(data)
        for _ in range(self.rng.randint(1, 8)):
            if out:
                out[self.rng.randrange(len(out))] ^= 1 << self.rng.randrange(8)
        return bytes(out)

    def set_bytes(self, data: bytes, fields: list[Field]) -> bytes:
        out = bytearray(data)
        for _ in range(self.rng.randint(1, 4)):
            if out:
                out[self.rng.randrange(len(out))] = self.rng.choice((0x00, 0xFF, 0x80, 0x7F, self.rng.randrange(256)))
        return bytes(out)

    def length_prefix(self, data: bytes, fields: list[Field]) -> bytes:
        """A LEN field's prefix made wrong, its enclosing messages' prefixes kept consistent."""
        f = self._field(fields, 2)
        if f is None:
            return data
        n = f.end - f.body
        new = self.rng.choice((0, max(n - 1, 0), n + 1, n + 7, 2 * n + 1, self.rng.randrange(1 << 20)))
        return replace_in_message(data, fields, f, f.head, f.body, encode_varint(new))

    def huge_length(self, data: bytes, fields: list[Field]) -> bytes:
        f = self._field(fields, 2)
        huge = encode_varint(self.rng.choice(HUGE_LENGTHS))
        if f is None:
            return encode_varint(1 << 3 | 2) + huge + data[:8]
        return replace_in_message(data, fields, f, f.head, f.body, huge)

    def varint(self, data: bytes, fields: list[Field]) -> bytes:
        """A varint value replaced: extreme, negative (ten bytes) or over-long and malformed."""
        f = self._field(fields, 0)
        if f is None:
            return data
        value = self.rng.choice((0, 1, -1, 2**31, 2**63 - 1, -(2**63), 2**64 - 1, self.rng.getrandbits(64)))
        raw = encode_varint(value)
        if self.rng.random() < 0.2:  # more than ten bytes, or a continuation bit at the end
            raw = b"\xff" * self.rng.randint(10, 12) + (b"\x01" if self.rng.random() < 0.5 else b"")
        return replace_in_message(data, fields, f, f.body, f.end, raw)

    def wire_type(self, data: bytes, fields: list[Field]) -> bytes:
        f = self._field(fields)
        key = _read_varint(data, f.tag, f.head) if f else None
        if f is None or key is None:
            return data
        new = (key[0] & ~7) | self.rng.choice([w for w in range(8) if w != f.wire_type])
        return replace_in_message(data, fields, f, f.tag, f.head, encode_varint(new))

    def field_number(self, data: bytes, fields: list[Field]) -> bytes:
        """A field moved to another number: a stat of another kind, an unknown field, a clash."""
        f = self._field(fields)
        if f is None:
            return data
        number = self.rng.choice((1, 2, 3, 4, 5, 6, 7, 19, 2**29 - 1, self.rng.randrange(1, 2**29)))
        return replace_in_message(data, fields, f, f.tag, f.head, encode_varint(number << 3 | f.wire_type))

    def duplicate_field(self, data: bytes, fields: list[Field]) -> bytes:
        f = self._field(fields)
        if f is None:
            return data + data[: self.rng.randrange(len(data) + 1)]
        return replace_in_message(data, fields, f, f.end, f.end, data[f.tag : f.end] * self.rng.choice((1, 1, 2, 16)))

    def delete_field(self, data: bytes, fields: list[Field]) -> bytes:
        f = self._field(fields)
        return replace_in_message(data, fields, f, f.tag, f.end, b"") if f else data

    def splice(self, data: bytes, fields: list[Field]) -> bytes:
        other = self.rng.choice(self.seeds).data
        return data[: self.rng.randrange(len(data) + 1)] + other[self.rng.randrange(len(other) + 1) :]

    def deep_nesting(self, data: bytes, fields: list[Field]) -> bytes:
        depth = self.rng.choice((50, 101, 1000, 20000))
        number = self.rng.choice((1, 3, 15, 1000))
        if self.rng.random() < 0.5:  # groups: unknown fields whose skipping recurses
            start, stop = encode_varint(number << 3 | 3), encode_varint(number << 3 | 4)
            return data + start * depth + stop * depth
        body = data[:16]  # length-delimited fields inside each other
        for _ in range(min(depth, 2000)):
            body = encode_varint(number << 3 | 2) + encode_varint(len(body)) + body
        return body

    def insert_random(self, data: bytes, fields: list[Field]) -> bytes:
        at = self.rng.randrange(len(data) + 1)
        return data[:at] + self.rng.randbytes(self.rng.randint(1, 64)) + data[at:]


# --- seeds -------------------------------------------------------------------


def _trimmed(data: bytes, events_per_line: int) -> bytes:
    """A real capture with each line cut to its first events: same structure, small enough to fuzz fast."""
    space = proto.XSpace().FromString(data)
    for plane in space.planes:
        for line in plane.lines:
            del line.events[events_per_line:]
    return space.SerializeToString()


def demo_xplanes() -> list[Path]:
    return sorted((ROOT / "demo_logs").glob("*/plugins/profile/*/*.xplane.pb"))


def _accelerator_seed() -> Seed:
    """Accelerator conventions, made odd: ids of both kinds, group ids of every kind and size, garbage device lines."""
    builder, _ = synthesize_devices(2, 3, group_ids=True, temporaries_per_step=2)
    builder.add_memory_events(
        [5, 6, 7, 8],
        [ALLOC, ALLOC, FREE, FREE],
        np.array([64, 128, 64, 128], np.uint64),
        32,
        allocator="0",
        id_stat=["index_on_host", "allocator_name", "allocator_name", "index_on_host"],  # "0" as an int and a string
        group_id=[-1, (1 << 63) - 1, -(1 << 63), None],
        overrides={"bytes_available": [-5, 0, 1 << 62, -(1 << 63)]},
        line="tpu_runtime",
    )
    builder.add_memory_events(
        [9],
        ALLOC,
        [256],
        32,
        kinds={"group_id": "double", "index_on_host": "uint64"},
        overrides={"group_id": 2.5, "index_on_host": 1},
        allocator="1",
        id_stat="index_on_host",
    )
    builder.span("FunctionRun", 1, 2, group_id=("str", "7"), stats={"_r": ("ref", "1")})
    builder.span("__inference_f_1", 3, 1, root=True, group_id=1 << 40)  # ends before it starts
    # Flows and program ids of every kind: runtime calls, a kernel launch, a device run that consumes a flow.
    builder.span("TfrtTpuLoadedExecutable::Execute", 4, 9, stats={"_p": ("str", "3"), "_c": (1 << 64) - 1})
    builder.span("AllocateOutputBufferWithInputReuse", 5, 6, stats={"_p": 12, "program_id": 2.5}, line="tpu_runtime")
    builder.span("hipModuleLaunchKernel", 6, 7, stats={"program_id": -(1 << 63), "_c": ("ref", "12")}, line="Host Threads/1")
    builder.device_event("/device:TPU:0", "XLA Modules", "jit_f(1)", 20, 5, stats={"_c": 12, "_ct": 12})
    builder.device_event("/device:TPU:0", "XLA Modules", "jit_f(1)", -(1 << 40), 1 << 62, stats={"run_id": ("str", "x")})
    builder.device_event("/device:TPU:0", "Steps", "", 10, -5)
    builder.device_event("/device:TPU:0", "XLA Ops", "fusion", 10, 5, stats={"group_id": 3})
    builder.device_event("/device:GPU:7", "Stream #1", "kernel", 1, 1)
    return Seed("synthetic_accelerator", builder.to_bytes())


def _synthetic_seeds() -> list[Seed]:
    builder, _ = synthesize_training(num_events=240, steps=6, allocators=("GPU_0_bfc", "GPU_1_bfc"))
    seeds = [Seed("synthetic_training", builder.to_bytes())]
    odd = ProfileBuilder("odd", int_kind="uint64", start_time_ns=1_700_000_000_000_000_000)
    for step in range(4):
        odd.step(step, step * 1000, step * 1000 + 900)
        odd.alloc(step * 1000 + 10, 0x1000 + step * 64, 4096, allocator="bfc_cpu_allocator_for_gpu", op="Mul")
        odd.free(step * 1000 + 20, 0x1000 + step * 64 - 64, 4096, allocator="bfc_cpu_allocator_for_gpu")
    odd.event("oddities", 5, stats={"fragmentation": ("str", "high"), "addr": 1.5, "blob": b"\x00\xff"})

    odd.add_hlo_module("jit_train_step(10)", synthetic_module())
    seeds.append(Seed("synthetic_odd", odd.to_bytes()))
    seeds.append(Seed("synthetic_empty_host", ProfileBuilder("empty").to_bytes()))
    seeds.append(_accelerator_seed())
    return seeds


@functools.cache
def xspace_seeds() -> tuple[list[Seed], list[Seed]]:
    """(small seeds, whole real files)."""
    real = [(p, p.read_bytes()) for p in demo_xplanes()]
    small = [Seed(f"{p.parts[-5]}_trimmed", _trimmed(d, SEED_EVENTS_PER_LINE)) for p, d in real]
    whole = [Seed(f"{p.parts[-5]}_whole", d) for p, d in real]
    return small + _synthetic_seeds(), whole


# --- the target --------------------------------------------------------------


@dataclass
class Tally:
    """What a fuzz run saw."""

    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    max_seconds: float = 0.0
    slowest: str = ""

    def as_json(self) -> dict:
        return {
            "inputs": self.inputs,
            "outcomes": dict(self.outcomes),
            "crashes": len(self.crashes),
            "max_seconds_per_input": round(self.max_seconds, 3),
            "slowest": self.slowest,
        }


def analyse_file(path: str) -> str:
    """What the plugin does with one host file: the JSON it would answer, or raise LeakfinderError."""
    analysis = analyze_host(reader.read_host(path, "fuzz"))
    body = wire.host_json(analysis, [], decide_host(analysis, []))
    for allocator in analysis.allocators:
        body["timeline"] = wire.timeline_json(allocator, analysis.profile.steps, timeline(allocator, 64))
        body["buffers"] = wire.buffers_json(allocator, analysis.profile.steps, query_buffers(allocator, limit=20))
    return json.dumps(body, allow_nan=False, sort_keys=True)  # strict JSON: NaN or Infinity would break the frontend


def analyse_registry_file(path: str, host: str) -> str:
    """What the plugin answers for one host file of any format: through the registry, the report, timeline and
    buffers (strict JSON)."""
    result = analyze_file(path, host, os.path.dirname(path))
    body = result.json()
    analysis = result.unwrap()
    pages = {}
    for a in analysis.allocators:
        pages[a.memory_id] = [
            wire.timeline_json(a, analysis.profile.steps, timeline(a, 64)),
            wire.buffers_json(a, analysis.profile.steps, query_buffers(a, limit=20)),
        ]
    return json.dumps({"report": body, "pages": pages}, allow_nan=False, sort_keys=True)


def run_guarded(
    tally: Tally, name: str, attempt: Callable[[], str], names_input: Callable[[str], bool], label: str = "report"
) -> str:
    """One input: `attempt()`'s value (counted as `label`), else "error", or a crash recorded in `tally`.

    A crash is any exception but a LeakfinderError, and a LeakfinderError whose message does not say which input.
    """
    start = time.perf_counter()
    try:
        answer = attempt()
        outcome = label
    except LeakfinderError as exc:
        answer = outcome = "error" if names_input(exc.message) else "error_unnamed"
        if outcome != "error":
            tally.crashes.append(f"{name}: the message does not say which input: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - recording exactly these is the point of the fuzzer
        answer = outcome = "crash"
        tally.crashes.append(f"{name}: {type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    tally.inputs += 1
    tally.outcomes[outcome] += 1
    if seconds > tally.max_seconds:
        tally.max_seconds, tally.slowest = seconds, name
    return answer


def run_input(tally: Tally, name: str, data: bytes, path: Path) -> str:
    """One XSpace input, from a file as the plugin reads it."""
    path.write_bytes(data)
    return run_guarded(tally, name, lambda: analyse_file(str(path)), lambda message: str(path) in message)


def decoder_paths() -> list[str]:
    """The reference decoder, and the C scanner where it is built (always where CI requires it)."""
    if scan.compiled_scanner() is not None or os.environ.get(REQUIRE_SCANNER_ENV) == "1":
        return ["pure", "compiled"]
    return ["pure"]


@contextlib.contextmanager
def decoder_path(name: str) -> Iterator[None]:
    """Force the reference decoder ("pure") or let read/reader.py pick the compiled scanner."""
    saved = os.environ.get(PURE_ENV)
    os.environ[PURE_ENV] = "1" if name == "pure" else ""
    try:
        if name == "compiled" and scan.compiled_scanner() is None:
            raise RuntimeError("the C scanner is not built (python setup.py build_ext --inplace)")
        yield
    finally:
        if saved is None:
            del os.environ[PURE_ENV]
        else:
            os.environ[PURE_ENV] = saved


def run_differential(tallies: dict[str, Tally], name: str, data: bytes, path: Path) -> bool:
    """One input through each decoder path named in `tallies`; True when their answers are identical."""
    answers = set()
    for path_name, tally in tallies.items():
        with decoder_path(path_name):
            answers.add(run_input(tally, name, data, path))
    return len(answers) == 1


def fuzz_inputs(seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    small, whole = xspace_seeds()
    mutator = Mutator(small, random.Random(seed), whole)
    for i in range(count):
        name, data = mutator.next()
        yield f"#{i} {name}", data


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


HUGE_DECLARATIONS = {
    # 20 bytes: XSpace.planes declared as 2 GB, then a few bytes of body.
    "planes_2gb": encode_varint(1 << 3 | 2) + encode_varint(2**31 - 1) + b"\x12\x09/host:CPU" + b"\x00" * 3,
    "planes_2**64-1": encode_varint(1 << 3 | 2) + encode_varint(2**64 - 1) + b"\x12\x00",
    "plane_name_2gb": b"\x0a\x08" + b"\x12" + encode_varint(2**31) + b"ab",
    "event_stats_4gb": b"\x0a\x0c\x1a\x0a\x22\x08\x22" + encode_varint(2**32) + b"\x08",
    "hostnames_1tb": b"\x22" + encode_varint(2**40) + b"x" * 10,
}


# --- HLO ---------------------------------------------------------------------

SOURCE = "fuzz.xplane.pb"


def _shape(message, element_type: int, dims: list[int]) -> None:
    message.element_type = element_type
    message.dimensions.extend(dims)


def synthetic_module(name: str = "jit_train_step", temporaries: int = 6) -> bytes:
    """A small compiled program: two parameters, a chain of temporaries, a constant and a tuple output."""
    p = proto.HloProto()()
    module = p.hlo_module
    module.name, module.id, module.entry_computation_name = name, 10, "main"
    frames = module.stack_frame_index
    frames.file_names.append("train.py")
    frames.function_names.append("step")
    location = frames.file_locations.add()
    location.file_name_id, location.function_name_id, location.line = 1, 1, 42
    frames.stack_frames.add().file_location_id = 1
    computation = module.computations.add()
    computation.name, computation.id = "main", 1
    names = ["p0", "p1", "c0", *[f"t{i}" for i in range(temporaries)], "out"]
    for iid, iname in enumerate(names, start=1):
        instruction = computation.instructions.add()
        instruction.name, instruction.id = iname, iid
        instruction.opcode = {"p0": "parameter", "p1": "parameter", "c0": "constant", "out": "tuple"}.get(iname, "add")
        instruction.metadata.op_name = f"jit({name})/{iname}"
        instruction.metadata.stack_frame_id = 1
        if iname == "out":
            instruction.shape.element_type = 13
            _shape(instruction.shape.tuple_shapes.add(), 11, [128, 256])
            nested = instruction.shape.tuple_shapes.add()
            nested.element_type = 13
            _shape(nested.tuple_shapes.add(), 4, [])
        else:
            _shape(instruction.shape, 11, [128, 256])
    computation.root_id = len(names)
    assignment = p.buffer_assignment
    size = 128 * 256 * 4
    for bid, iname in enumerate(names, start=1):
        buffer = assignment.logical_buffers.add()
        buffer.id, buffer.size = bid, size
        buffer.defined_at.instruction_id = bid
        buffer.defined_at.instruction_name = iname
        if iname == "out":
            buffer.defined_at.shape_index.extend([1, 0])
            buffer.size = 4
    flags = {
        "p0": "is_entry_computation_parameter",
        "p1": "is_entry_computation_parameter",
        "c0": "is_constant",
        "out": "maybe_live_out",
    }
    temp = None
    for bid, iname in enumerate(names, start=1):
        if iname in flags or temp is None:
            allocation = assignment.buffer_allocations.add()
            allocation.index, allocation.size = len(assignment.buffer_allocations) - 1, size
            if iname in flags:
                setattr(allocation, flags[iname], True)
                allocation.parameter_number = bid - 1 if iname.startswith("p") else 0
            else:
                temp = allocation
                allocation.size = size * 2
        target = allocation if iname in flags else temp
        assigned = target.assigned.add()
        assigned.logical_buffer_id, assigned.offset, assigned.size = bid, (bid % 2) * size if target is temp else 0, size
    trace = assignment.heap_simulator_traces.add()
    trace.buffer_allocation_index = temp.index if temp is not None else 0
    for i in range(temporaries):
        bid = names.index(f"t{i}") + 1
        event = trace.events.add()
        event.kind, event.buffer_id, event.instruction_name = (2 if i == 3 else 0), bid, f"t{i}"
        if i == 3:
            event.share_with_canonical_id = bid - 1
        if i >= 2:
            freed = trace.events.add()
            freed.kind, freed.buffer_id, freed.instruction_name = 1, bid - 2, f"t{i}"
    return p.SerializeToString()


@functools.cache
def hlo_seed_protos() -> dict[str, bytes]:
    """ "<module>(<id>)" -> serialized HloProto: the demo captures' modules and synthesised ones."""
    protos = {"jit_train_step(10)": synthetic_module(), "jit_tiny(3)": synthetic_module("jit_tiny", 1)}
    for path in demo_xplanes():
        space = decoder.parse_xspace(path.read_bytes(), str(path))
        for plane in space.planes:
            if plane.name == decoder.METADATA_PLANE:
                protos.update(hlo.hlo_protos_from_metadata_plane(plane))
    return protos


def summarise(key: str, data: bytes) -> str:
    """What the report and the module route do with one HloProto."""
    module = hlo.decode_module(key, data, SOURCE)
    static_buffers.module_summaries([module])
    for space in module.memory_spaces:
        static_buffers.module_detail(module, space, points=64)
    return "summary"


def hlo_inputs(seed: int, count: int) -> Iterator[tuple[str, str, bytes]]:
    seeds = [Seed(key, data) for key, data in sorted(hlo_seed_protos().items())]
    mutator = Mutator(seeds, random.Random(seed))
    for i in range(count):
        name, data = mutator.next()
        yield f"#{i} {name}", name.split(":")[0], data


def run_hlo_input(tally: Tally, name: str, key: str, data: bytes) -> None:
    def names_input(message: str) -> bool:
        return SOURCE in message and key in message

    run_guarded(tally, name, lambda: summarise(key, data), names_input, label="summary")
