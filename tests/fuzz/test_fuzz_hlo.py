"""Fuzzing the HLO decoder: every hostile HloProto ends in a module summary or a LeakfinderError.

Seeds are the HloProtos of the demo captures' `/host:metadata` planes (JAX
writes them) and synthesised modules with parameters, constants, live-out
and thread-local allocations, tuple shapes, SHARE_WITH events and stack
frames. The mutator is the XSpace fuzz's own (tests/support/fuzzing.py).
"""

from __future__ import annotations

import re

import pytest

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError
from tests.support.fuzzing import (
    MAX_SECONDS_PER_INPUT,
    Tally,
    encode_varint,
    hlo_inputs,
    hlo_seed_protos,
    run_hlo_input,
    summarise,
    synthetic_module,
)

CI_SEED = 7
CI_INPUTS = 1200


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
