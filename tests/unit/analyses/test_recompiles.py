"""recompile_per_step within one capture: programs of one name under as many program ids as the capture's steps."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.recompiles import MIN_SAME_NAME, RECOMPILE_FIX, RECOMPILE_PER_STEP, modules_cause
from tb_leakfinder.analyses.static_buffers import ModuleSummaryResult


def module(name: str, program_id: int | None, memory_space: int = 0) -> ModuleSummaryResult:
    return ModuleSummaryResult(
        name=f"{name}({program_id})",
        module=name,
        program_id=program_id,
        memory_space=memory_space,
        num_instructions=4,
        num_positions=0,
        peak_heap_bytes=4096,
        peak_position=None,
        peak_instruction=None,
        peak_temporary_bytes=0,
        whole_program_bytes=4096,
        live_out_bytes=4,
        parameter_bytes=4096,
        constant_bytes=0,
        thread_local_bytes=0,
        whole_program_buffers=[],
        actionable=[],
        long_lived_temporaries=[],
    )


def test_one_name_compiled_for_every_step_is_a_recompile_per_step():
    # A step function compiled at steps 0..4 of a 4-step capture (JAX keeps the earlier one too), in two memory
    # spaces each (one program, listed twice), beside the data's programs compiled once.
    modules = [module("jit_step", 2 * k + 4, space) for k in range(5) for space in (0, 1)]
    modules += [module("jit_broadcast_in_dim", 2), module("jit_convert_element_type", 0)]
    cause = modules_cause(modules, num_steps=4)
    assert cause is not None and (cause.id, cause.fix) == (RECOMPILE_PER_STEP, RECOMPILE_FIX)
    assert cause.evidence == (
        "5 compiled programs named jit_step in a capture of 4 steps, one or more per step: program ids 4, 6, 8, 10, 12"
    )


@pytest.mark.parametrize(
    ("ids", "num_steps"),
    [
        ([4], 10),  # compiled once
        ([4, 6, 8], 10),  # three shapes (buckets, a last short batch) over ten steps: fewer than its steps
        ([4, 6], 2),  # two programs in two steps: fewer than MIN_SAME_NAME
        ([4, 6, 8, 10], 0),  # no steps known: nothing to say per step
        ([None, None, None], 1),  # no program ids: not told apart
    ],
)
def test_fewer_programs_of_a_name_than_steps_or_no_steps_give_no_cause(ids, num_steps):
    assert MIN_SAME_NAME == 3
    assert modules_cause([module("jit_step", i) for i in ids], num_steps) is None
