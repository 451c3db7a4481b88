"""Likely causes on built profiles: each rule's evidence, and where a rule must stay silent."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable, Sequence

from tb_leakfinder.analyses.causes import (
    CACHE_PER_STEP,
    FIXES,
    GRAPH_KEPT,
    MODULES_PER_STEP,
    OPTIMIZER_PER_STEP,
    REGROWN,
    VARIABLE_PER_STEP,
)
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis
from tb_leakfinder.analyses.suspects import CauseResult
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tb_leakfinder.views import text
from tb_leakfinder.wire import schema
from tests.support.demo import ROOT
from tests.support.training_loops import analyze

STEP_PS = 1_000_000
ALLOCATOR = "GPU_0_bfc"
KIB = 1024
TRAIN = "$train.py:10 train"
ADAM = ("$torch/optim/optimizer.py:509 wrapper", "$torch/optim/adam.py:214 step", "$torch/optim/adam.py:139 _init_group")
LINEAR_INIT = ("$class Linear", "$torch/nn/modules/linear.py:96 __init__")
BACKWARD = ("$torch/_tensor.py:566 backward", "$torch/autograd/__init__.py:255 backward")
TANH_FORWARD = ("$class Tanh", "$torch/nn/modules/activation.py:428 forward")
LINEAR_FORWARD = ("$class Linear", "$torch/nn/modules/linear.py:130 forward")


class Loop:
    """Steps of a training loop on one thread: buffers made under the calls given, kept or freed in their step."""

    def __init__(self) -> None:
        self.b = ProfileBuilder()
        self.b.allocator(ALLOCATOR)
        self.addr = itertools.count(0x10_0000, 0x1_0000)
        self.clock = 0
        self.kept = 0  # a buffer a step keeps for the next (regrown)

    def made(self, step: int, nbytes: int, op: str, calls: Sequence[str] = (), freed: bool = False) -> int:
        """A buffer made in `step` under `calls` (outermost first), inside the step's TRAIN call."""
        self.clock += 1000
        t = step * STEP_PS + self.clock
        for depth, call in enumerate((TRAIN, *calls)):
            self.b.span(call, t - 500 + depth, t + 500 - depth)
        addr = next(self.addr)
        self.b.alloc(t, addr, nbytes, allocator=ALLOCATOR, op=op, shape="[16]", line="python")
        if freed:
            self.b.free(t + 100, addr, nbytes, allocator=ALLOCATOR, line="python")
        return addr

    def run(self, steps: int, each: Callable[[Loop, int], None]) -> AllocatorAnalysis:
        for step in range(steps):
            self.clock = 0
            self.b.step(step, step * STEP_PS, step * STEP_PS + STEP_PS - 10)
            each(self, step)
        (allocator,) = analyze(self.b).allocators
        return allocator


def causes(allocator: AllocatorAnalysis) -> dict[str, CauseResult | None]:
    strings = allocator.events.strings
    return {strings[f.op]: f.cause for f in allocator.suspects.families}


def ids(allocator: AllocatorAnalysis) -> dict[str, str | None]:
    return {op: None if cause is None else cause.id for op, cause in causes(allocator).items()}


def test_optimizer_state_made_every_step_is_an_optimizer_made_every_step():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 8 * KIB, "aten::zeros_like", ADAM)
        loop.made(step, 4 * KIB, "aten::zeros_like", ADAM)

    allocator = loop_of(8, each)
    assert allocator.verdict.verdict == "leak"
    cause = causes(allocator)["aten::zeros_like"]
    assert cause is not None and cause.id == OPTIMIZER_PER_STEP
    assert "16 aten::zeros_like buffers, 2 per step, made in adam.py:139 in _init_group" in cause.evidence


def test_optimizer_state_made_once_is_no_leak_and_has_no_cause():
    def each(loop: Loop, step: int) -> None:
        if step == 0:
            loop.made(step, 8 * KIB, "aten::zeros_like", ADAM)
        loop.made(step, 64 * KIB, "aten::mm", ("$train.py:30 forward",), freed=True)

    allocator = loop_of(8, each)
    assert allocator.verdict.verdict == "no_leak"
    assert all(f.cause is None for f in allocator.suspects.families)


def test_a_leak_whose_calls_show_nothing_gets_no_cause():
    allocator = loop_of(8, lambda loop, step: loop.made(step, 8 * KIB, "aten::mul", ("$train.py:20 keep",)))
    assert allocator.verdict.verdict == "leak"
    assert ids(allocator) == {"aten::mul": None}


def test_too_few_steps_to_tell_give_no_cause_even_with_its_evidence():
    allocator = loop_of(2, lambda loop, step: loop.made(step, 8 * KIB, "aten::zeros_like", ADAM))
    assert allocator.verdict.verdict == "inconclusive"
    assert ids(allocator) == {"aten::zeros_like": None}


def test_new_parameters_and_their_gradients_are_modules_made_every_step():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 16 * KIB, "aten::empty", LINEAR_INIT)
        loop.made(step, 16 * KIB, "aten::mm", BACKWARD)

    allocator = loop_of(8, each)
    found = causes(allocator)
    assert ids(allocator) == {"aten::empty": MODULES_PER_STEP, "aten::mm": MODULES_PER_STEP}
    assert "made in linear.py:96 in __init__" in found["aten::empty"].evidence  # type: ignore[union-attr]
    assert "their gradients" in found["aten::mm"].evidence  # type: ignore[union-attr]


def test_gradients_kept_without_new_parameters_get_no_cause():
    allocator = loop_of(8, lambda loop, step: loop.made(step, 16 * KIB, "aten::mm", BACKWARD))
    assert allocator.verdict.verdict == "leak"
    assert ids(allocator) == {"aten::mm": None}


def test_activations_of_two_forwards_kept_together_are_a_kept_graph():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 16 * KIB, "aten::tanh", TANH_FORWARD)
        loop.made(step, 1 * KIB, "aten::addmm", LINEAR_FORWARD)

    allocator = loop_of(8, each)
    assert ids(allocator) == {"aten::tanh": GRAPH_KEPT, "aten::addmm": GRAPH_KEPT}
    cause = causes(allocator)["aten::tanh"]
    assert cause is not None and cause.evidence.startswith("aten::tanh in Tanh.forward, aten::addmm in Linear.forward")


def test_one_forward_output_kept_is_not_a_graph():
    allocator = loop_of(8, lambda loop, step: loop.made(step, 16 * KIB, "aten::tanh", TANH_FORWARD))
    assert allocator.verdict.verdict == "leak"
    assert ids(allocator) == {"aten::tanh": None}


def test_forward_outputs_kept_at_different_paces_are_not_a_graph():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 16 * KIB, "aten::tanh", TANH_FORWARD)
        if step % 2:
            loop.made(step, 1 * KIB, "aten::addmm", LINEAR_FORWARD)

    allocator = loop_of(12, each)
    assert allocator.verdict.verdict == "leak"
    assert ids(allocator) == {"aten::tanh": None, "aten::addmm": None}


def test_buffers_made_under_a_memo_or_getitem_are_a_cache_and_a_plain_function_is_not():
    for calls, expected in (
        (("$data.py:30 __getitem__",), CACHE_PER_STEP),
        (("$model.py:12 cached_rotary_table",), CACHE_PER_STEP),
        (("$model.py:12 rotary_table",), None),
    ):
        allocator = loop_of(8, lambda loop, step, calls=calls: loop.made(step, 4 * KIB, "aten::randn", calls))
        assert allocator.verdict.verdict == "leak"
        assert ids(allocator) == {"aten::randn": expected}, calls


def test_a_cache_whose_entries_are_freed_has_no_cause():
    allocator = loop_of(8, lambda loop, step: loop.made(step, 4 * KIB, "aten::randn", ("$data.py:30 __getitem__",), freed=True))
    assert allocator.verdict.verdict == "no_leak"
    assert all(f.cause is None for f in allocator.suspects.families)


def test_a_variable_handle_every_step_is_a_variable_and_its_value_kept_in_step_too():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 16 * KIB, "Relu")
        loop.made(step, 256, "VarHandleOp")
        if step % 2:
            loop.made(step, 8 * KIB, "MatMul")

    allocator = loop_of(12, each)
    assert ids(allocator) == {"Relu": VARIABLE_PER_STEP, "VarHandleOp": VARIABLE_PER_STEP, "MatMul": None}
    relu = causes(allocator)["Relu"]
    assert relu is not None
    assert relu.evidence == "12 Relu buffers kept in step with 12 tf.Variable handles (VarHandleOp): their values"


def test_a_buffer_made_again_larger_every_step_is_regrown():
    def each(loop: Loop, step: int) -> None:
        # The concatenation is made before the old buffer goes.
        old, loop.kept = loop.kept, loop.made(step, 4 * KIB * (step + 1), "ConcatV2")
        if step:
            loop.b.free(step * STEP_PS + 1200, old, 4 * KIB * step, allocator=ALLOCATOR, line="python")

    allocator = loop_of(8, each)
    (family,) = allocator.suspects.families
    assert family.regrown
    assert family.cause is not None and family.cause.id == REGROWN
    assert family.cause.evidence == "one ConcatV2 buffer freed and made again 4 KiB larger every step"


def loop_of(steps: int, each: Callable[[Loop, int], None]) -> AllocatorAnalysis:
    return Loop().run(steps, each)


def test_a_frameworks_own_getitem_is_no_cache_of_the_users():
    # TensorFlow's tracer names its slicing `tensor_getitem_override.py:… __getitem__`: a slice the user keeps.
    calls = ("$train.py:20 keep", "$tensor_getitem_override.py:134 __getitem__")
    allocator = loop_of(8, lambda loop, step: loop.made(step, 4 * KIB, "StridedSlice", calls))
    assert allocator.verdict.verdict == "leak"
    assert ids(allocator) == {"StridedSlice": None}


def test_keras_variables_by_base_names_are_a_layer_or_an_optimizer_not_bare_variables():
    layer = ("$layer.py:872 __call__", "$dense.py:124 build", "$layer.py:524 add_weight", "$variables.py:94 __init__")
    optimizer = ("$base_optimizer.py:460 apply_gradients", "$adam.py:81 build", "$base_optimizer.py:241 add_variable")
    for calls, expected in ((layer, MODULES_PER_STEP), (optimizer, OPTIMIZER_PER_STEP), ((), VARIABLE_PER_STEP)):

        def each(loop: Loop, step: int, calls: Sequence[str] = calls) -> None:
            loop.made(step, 256, "VarHandleOp", calls)
            loop.made(step, 256, "VarHandleOp", calls)
            loop.made(step, 4 * KIB, "Fill", calls)

        assert ids(loop_of(8, each)) == {"VarHandleOp": expected, "Fill": expected}, expected


def test_values_of_variables_are_at_most_as_many_per_step_as_their_handles():
    def each(loop: Loop, step: int) -> None:
        loop.made(step, 256, "VarHandleOp")
        loop.made(step, 4 * KIB, "Relu")
        loop.made(step, 4 * KIB, "Relu")  # two values a step for one handle: not its values

    assert ids(loop_of(8, each)) == {"VarHandleOp": VARIABLE_PER_STEP, "Relu": None}


def test_every_cause_has_its_fix_its_words_its_schema_literal_and_its_docs_section():
    ids_ = set(FIXES)
    assert ids_ == set(typing.get_args(schema.CauseId)) == set(text.CAUSE_TITLES)
    page = (ROOT / text.CAUSES_PAGE).read_text(encoding="utf-8")
    assert {line[3:].strip() for line in page.splitlines() if line.startswith("## ")} >= ids_
