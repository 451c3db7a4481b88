"""The likely cause `recompile_per_step`: a function compiled again each step (a static argument that changes every
step, a new `jax.jit` kept each step), which keeps a compiled program per step. Two views show it:

- across a run's device memory profiles, a series whose compiled programs multiply capture after capture
  (`history.recompile_cause`; JAX counts its programs per stack where they were compiled: the user's line that
  grew most is named);
- within one XSpace capture, its compiled programs (HLO modules) of one name under as many program ids as the capture
  has steps, MIN_SAME_NAME at least: the same function compiled again for each step.

A new `jax.jit` each step that is not kept frees its programs with it: the history sees nothing multiply (no memory
is kept, only compile time lost), one XSpace capture still lists a program per step. Programs compiled for a few
shapes (buckets, a last short batch) are as many as the shapes: a capture of fewer steps than that is mistaken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tb_leakfinder.analyses.suspects import CauseResult

if TYPE_CHECKING:
    from tb_leakfinder.analyses.static_buffers import ModuleSummaryResult

RECOMPILE_PER_STEP = "recompile_per_step"
RECOMPILE_FIX = (
    "make the argument that changes every step a traced value, not a static one (`static_argnums`), or create the"
    " jitted function once, outside the loop"
)
# One capture's programs of one name are compiled again each step when at least this many, and as many as its steps.
MIN_SAME_NAME = 3


def modules_cause(modules: Sequence[ModuleSummaryResult], num_steps: int) -> CauseResult | None:
    """`recompile_per_step` when one capture of `num_steps` steps holds programs of one name under as many program
    ids as its steps (MIN_SAME_NAME at least); None otherwise, or when its steps are not known."""
    ids: dict[str, set[int]] = {}
    for m in modules:
        if m.program_id is not None:
            ids.setdefault(m.module, set()).add(m.program_id)
    if num_steps < 1 or not ids:
        return None
    name, found = max(ids.items(), key=lambda item: (len(item[1]), item[0]))
    if len(found) < max(MIN_SAME_NAME, num_steps):
        return None
    listed = sorted(found)
    shown = ", ".join(map(str, listed[:8])) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")
    steps = f"{num_steps} step{'s' if num_steps != 1 else ''}"
    evidence = f"{len(listed)} compiled programs named {name} in a capture of {steps}, one or more per step: program ids {shown}"
    return CauseResult(RECOMPILE_PER_STEP, evidence, RECOMPILE_FIX)
