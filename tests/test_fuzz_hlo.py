"""Fuzzing the HLO decoder: every hostile HloProto ends in a module summary or a LeakfinderError.

Seeds are the HloProtos of the demo captures' `/host:metadata` planes (JAX
writes them) and synthesised modules with parameters, constants, live-out
and thread-local allocations, tuple shapes, SHARE_WITH events and stack
frames. The mutator is the XSpace fuzz's own (tests/test_fuzz_xspace.py).
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Iterator

import pytest

from tb_leakfinder import proto
from tb_leakfinder.analyses import static_buffers
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import hlo, xspace_proto
from tests.test_fuzz_xspace import (
    MAX_SECONDS_PER_INPUT,
    Mutator,
    Seed,
    Tally,
    demo_xplanes,
    encode_varint,
    run_guarded,
)

CI_SEED = 7
CI_INPUTS = 1200
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
        space = xspace_proto.parse_xspace(path.read_bytes(), str(path))
        for plane in space.planes:
            if plane.name == xspace_proto.METADATA_PLANE:
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


def test_seeds_decode_and_summarise():
    for key, data in hlo_seed_protos().items():
        assert summarise(key, data) == "summary"


def test_fuzzed_hlo_protos_end_in_summary_or_project_error():
    tally = Tally()
    for name, key, data in hlo_inputs(CI_SEED, CI_INPUTS):
        run_hlo_input(tally, name, key, data)
    assert tally.inputs == CI_INPUTS
    assert tally.crashes == [], tally.crashes[:10]
    assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
    assert tally.outcomes["summary"] >= CI_INPUTS // 10, tally.outcomes
    assert tally.outcomes["error"] >= CI_INPUTS // 10, tally.outcomes


def _nested_tuple_shape(depth: int) -> bytes:
    shape = b"\x10\x0b"  # element_type f32
    for _ in range(depth):
        shape = b"\x10\x0d" + b"\x22" + encode_varint(len(shape)) + shape  # tuple of the shape inside
    return shape


@pytest.mark.parametrize("depth", [90, 5000])
def test_deeply_nested_tuple_shapes(depth):
    """ShapeProto nests itself; shape text is recursive, so depth must be bounded by the parser."""
    instruction = b"\x0a\x01x" + b"\x12\x05tuple" + b"\x1a" + encode_varint(len(_nested_tuple_shape(depth)))
    instruction += _nested_tuple_shape(depth)
    computation = b"\x0a\x04main" + b"\x12" + encode_varint(len(instruction)) + instruction
    module = b"\x0a\x01m" + b"\x1a" + encode_varint(len(computation)) + computation
    allocation = b"\x08\x00\x10\x04"
    assignment = b"\x1a" + encode_varint(len(allocation)) + allocation
    data = b"\x0a" + encode_varint(len(module)) + module + b"\x1a" + encode_varint(len(assignment)) + assignment
    tally = Tally()
    run_hlo_input(tally, f"depth {depth}", "m(1)", data)
    assert tally.crashes == []
    assert tally.outcomes == ({"summary": 1} if depth < 100 else {"error": 1})


def _edited(edit) -> bytes:
    message = proto.HloProto()().FromString(synthetic_module())
    edit(message)
    return message.SerializeToString()


def _set_first_event_kind(message) -> None:
    message.buffer_assignment.heap_simulator_traces[0].events[0].kind = -(2**31)


def _set_huge_sizes(message) -> None:
    for buffer in message.buffer_assignment.logical_buffers:
        buffer.size = 2**62


@pytest.mark.parametrize(
    ("edit", "message"),
    [(_set_first_event_kind, "unknown heap-simulator event kind"), (_set_huge_sizes, "the heap size passes 2^63 bytes")],
)
def test_values_found_by_the_long_fuzz_run(edit, message):
    """Each once raised an OverflowError; now a LeakfinderError that names the module and the file."""
    tally = Tally()
    run_hlo_input(tally, "regression", "jit_train_step(10)", _edited(edit))
    assert tally.crashes == [] and tally.outcomes == {"error": 1}
    with pytest.raises(LeakfinderError, match=re.escape(message)):
        summarise("jit_train_step(10)", _edited(edit))
