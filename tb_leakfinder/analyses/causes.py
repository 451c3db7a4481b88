"""The likely cause of a leaking family, from the profile alone: what the ops and the calls around its never-freed
buffers show, and the change that usually fixes it.

A cause is given only to a family that grows on an allocator whose verdict is a leak, and only when its evidence
is in the profile: the op that made the buffers, the shape of their growth, and the host calls around their
allocations (the Python tracer's frames, the frameworks' as well as the user's; PyTorch's module calls). Each
rule reads one kind of evidence:

- `regrown`: the family grows by freeing one buffer and making it again larger (a `torch.cat` / `tf.concat` of
  itself): `FamilyResult.regrown`.
- `optimizer_per_step`: the buffers were made inside an optimizer (a frame of `torch/optim/`, of Keras' optimizer
  files, or torch's `_init_group`): its state, which an optimizer makes on its first step only.
- `modules_per_step`: made inside a module's `__init__` or `reset_parameters` (torch.nn's, Flax's, Haiku's
  modules) or Keras' `add_weight`; a family made by backward in the same allocator is their gradients.
- `cache_per_step`: made under a user's function whose name says it memoizes (`cache`, `memo`), under the user's
  `__getitem__` / `__missing__`, or under functools' `cached_property`.
- `variable_per_step`: TensorFlow makes a resource handle (a `VarHandleOp` buffer) for every `tf.Variable`; a
  family of them that grows, not made by an optimizer's or a layer's code, is a variable made each step. A family
  kept in the same steps, at most as many per step as the handles, is likely their values: eager `tf.Variable(t)`
  keeps `t`'s buffer as its value.
- `graph_kept`: two families or more of a module's forward (PyTorch's module calls around them), each keeping as
  many buffers per step: the forward's saved activations, kept together by an autograd graph that outlives the step.

What no rule can see: `functools.lru_cache` and a dict used as a memo run no Python frame of their own (a cache is
seen only by its function's name); a forward's activations kept by two lists of detached tensors look like a
graph; a graph of one saved activation is one family; without the Python tracer, TensorFlow's optimizers and layers
show only the variables they make (`variable_per_step`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tb_leakfinder.analyses.attribution import Attribution
from tb_leakfinder.analyses.frames import base_name, frame_text, python_frames
from tb_leakfinder.analyses.recompiles import RECOMPILE_FIX, RECOMPILE_PER_STEP
from tb_leakfinder.analyses.suspects import CauseResult, FamilyResult, Suspects
from tb_leakfinder.analyses.words import format_bytes
from tb_leakfinder.model.lifetimes import Buffers
from tb_leakfinder.model.memory import MODULE_CALL_PREFIX
from tb_leakfinder.model.sites import NO_SITE

GRAPH_KEPT = "graph_kept"
REGROWN = "regrown"
OPTIMIZER_PER_STEP = "optimizer_per_step"
MODULES_PER_STEP = "modules_per_step"
CACHE_PER_STEP = "cache_per_step"
VARIABLE_PER_STEP = "variable_per_step"
# A family's stacks the rules read, its commonest: a leak made on thousands of threads is judged by a sample.
MAX_STACKS = 32
# Each cause's fix, one sentence; docs/causes.md has a section per cause (the schema's CauseId) with an example.
FIXES = {
    GRAPH_KEPT: "keep `loss.item()` or `.detach()` of what outlives the step, drop `retain_graph=True`, and evaluate "
    "under `torch.no_grad()`",
    REGROWN: "preallocate the buffer at its final size and write into it, or bound it (a fixed window, a ring buffer)",
    OPTIMIZER_PER_STEP: "create the optimizer once, before the training loop",
    MODULES_PER_STEP: "create modules (and their parameters) once, outside the training loop",
    CACHE_PER_STEP: "bound the cache (`functools.lru_cache(maxsize=...)`), key it by something that repeats, or hold "
    "its values weakly",
    VARIABLE_PER_STEP: "create each `tf.Variable` once and `.assign()` to it in the loop",
    RECOMPILE_PER_STEP: RECOMPILE_FIX,  # a history series' or a host's cause (analyses/recompiles.py), not a family's
}

# TensorFlow's op that makes a tf.Variable's resource handle: one small buffer per variable.
VARIABLE_HANDLE_OP = "VarHandleOp"
# A frame of an optimizer: a file of a package or folder of optimizers, or torch's lazy state init.
_OPTIMIZER_DIRS = frozenset({"optim", "optimizers", "optax"})
_OPTIMIZER_FILES = frozenset({"optimizer.py", "optimizers.py", "base_optimizer.py"})
_OPTIMIZER_FUNCTIONS = frozenset({"_init_group"})
# A module's parameters being made: its constructor, its weights' (re)initialisation, Keras' lazy build.
_INIT_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "build", "init"})
# Keras' one way to make a layer's weight, wherever its file is (TensorFlow's tracer names files by base name).
_ADD_WEIGHT = "add_weight"
# The frameworks' code of modules and layers, as the Python tracer names their files (a path relative to an import
# root, or a site-packages path): torch.nn's modules, Keras' layers, Flax's and Haiku's modules.
_MODULE_DIRS = (("torch", "nn"), ("keras",), ("tf_keras",), ("flax",), ("haiku",), ("equinox",))
# Backward: PyTorch's autograd engine runs under these calls.
_BACKWARD_DIRS = (("torch", "autograd"),)
_BACKWARD_CALLS = frozenset({"backward", "_engine_run_backward", "run_backward"})
_MEMO_NAME = re.compile(r"cache|memo", re.IGNORECASE)
_MEMO_FUNCTIONS = frozenset({"__getitem__", "__missing__"})
_STDLIB_MEMO_FILES = frozenset({"functools.py"})  # cached_property's __get__, the pure-Python lru_cache wrapper
_SEPARATORS = re.compile(r"[/\\]")
# A forward: torch.nn's module calls, or the function a model library frame names.
_FORWARD = "forward"


@dataclass(frozen=True)
class FamilyEvidence:
    """What the rules read of one leaking family."""

    op: str
    count: int  # never-freed buffers
    steps: int  # distinct steps they were made in
    first_step: int | None
    regrown: bool
    bytes_per_step: float
    model_frame: str  # of its newest never-freed buffer's site: "Tanh.forward (activation.py:428)"
    stacks: tuple[tuple[str, ...], ...]  # the host calls around its never-freed buffers' allocations, innermost first


def family_causes(families: Sequence[FamilyEvidence]) -> list[CauseResult | None]:
    """Each leaking family's likely cause (None: its evidence shows none), the families of one allocator together:
    some causes are read across families (the gradients of new parameters, a forward's activations)."""
    found: list[CauseResult | None] = [_own_cause(f) for f in families]
    modules = [k for k, c in enumerate(found) if c is not None and c.id == MODULES_PER_STEP]
    variables = [k for k, c in enumerate(found) if c is not None and c.id == VARIABLE_PER_STEP]
    for k, family in enumerate(families):
        if found[k] is not None:
            continue
        if modules and _under_backward(family):
            new = families[modules[0]]
            found[k] = CauseResult(
                MODULES_PER_STEP,
                f"{_buffers(family)} made in backward, beside new parameters made in {_init_frame(new)}: their gradients",
                FIXES[MODULES_PER_STEP],
            )
        elif (twin := next((families[v] for v in variables if _values_of(families[v], family)), None)) is not None:
            found[k] = CauseResult(
                VARIABLE_PER_STEP,
                f"{_buffers(family)} kept in step with {twin.count} tf.Variable handles ({VARIABLE_HANDLE_OP}): their values",
                FIXES[VARIABLE_PER_STEP],
            )
    forward = [k for k, f in enumerate(families) if found[k] is None and _forward_frame(f)]
    together = [k for k in forward if any(j != k and _in_step(families[j], families[k]) for j in forward)]
    if together:
        ops = ", ".join(f"{families[k].op} in {_forward_frame(families[k]).split(' (', 1)[0]}" for k in together[:3])
        more = f" and {len(together) - 3} more" if len(together) > 3 else ""
        for k in together:
            found[k] = CauseResult(
                GRAPH_KEPT,
                f"{ops}{more}: outputs of module forwards kept together, {_per_step(families[k])} each per step, as "
                "an autograd graph keeps the activations it saved",
                FIXES[GRAPH_KEPT],
            )
    return found


def _own_cause(family: FamilyEvidence) -> CauseResult | None:
    """The cause a family's own evidence shows: its growth, then the calls around it (an optimizer's or a module's
    code says more than the variables they make), then its op."""
    if family.regrown:
        return CauseResult(
            REGROWN,
            f"one {family.op} buffer freed and made again {format_bytes(family.bytes_per_step)} larger every step",
            FIXES[REGROWN],
        )
    frames = _frames(family)
    made = f"{_buffers(family)}, {_per_step(family)} per step, made"
    optimizer = next((f for f in frames if _optimizer_frame(f)), None)
    if optimizer is not None:
        return CauseResult(
            OPTIMIZER_PER_STEP, f"{made} in {frame_text(*optimizer[:3])}: optimizer state", FIXES[OPTIMIZER_PER_STEP]
        )
    init = _init_frame(family)
    if init:
        return CauseResult(MODULES_PER_STEP, f"{made} in {init}: new parameters", FIXES[MODULES_PER_STEP])
    memo = next((f for f in frames if _memo_frame(f)), None)
    if memo is not None:
        return CauseResult(CACHE_PER_STEP, f"{made} under {frame_text(*memo[:3])}", FIXES[CACHE_PER_STEP])
    if family.op == VARIABLE_HANDLE_OP:
        return CauseResult(
            VARIABLE_PER_STEP,
            f"{_buffers(family)} (tf.Variable resource handles), {_per_step(family)} per step",
            FIXES[VARIABLE_PER_STEP],
        )
    return None


_Frame = tuple[str, int, str, bool]  # file, line, function, whether it is the user's


def _frames(family: FamilyEvidence) -> list[_Frame]:
    """The Python frames around the family's buffers, innermost first, each once."""
    seen: dict[_Frame, None] = {}
    for stack in family.stacks:
        seen.update(dict.fromkeys(python_frames(stack)))
    return list(seen)


def _parts(file: str) -> list[str]:
    return _SEPARATORS.split(file)


def _under(file: str, prefixes: Sequence[tuple[str, ...]]) -> bool:
    """Whether a file lies in one of the folder paths `prefixes` (relative to an import root, or anywhere in a
    whole path)."""
    parts = _parts(file)[:-1]
    return any(tuple(parts[k : k + len(prefix)]) == prefix for prefix in prefixes for k in range(len(parts) - len(prefix) + 1))


def _optimizer_frame(frame: _Frame) -> bool:
    file, _, function, _ = frame
    return (
        any(part in _OPTIMIZER_DIRS for part in _parts(file)[:-1])
        or base_name(file) in _OPTIMIZER_FILES
        or function in _OPTIMIZER_FUNCTIONS
    )


def _init_frame(family: FamilyEvidence) -> str:
    """The module code that made the family's buffers as parameters ("linear.py:96 in __init__"); "" when none."""
    for file, line, function, _ in _frames(family):
        if function == _ADD_WEIGHT or (function in _INIT_FUNCTIONS and _under(file, _MODULE_DIRS)):
            return frame_text(file, line, function)
    return ""


def _memo_frame(frame: _Frame) -> bool:
    """A user's function that says it memoizes, or the standard library's (cached_property): a framework's own
    `__getitem__` (TensorFlow's slicing) or caches say nothing of the user's."""
    file, _, function, users = frame
    named = bool(_MEMO_NAME.search(function)) or function in _MEMO_FUNCTIONS
    return (users and named) or base_name(file) in _STDLIB_MEMO_FILES


def _under_backward(family: FamilyEvidence) -> bool:
    return any(
        not users and (_under(file, _BACKWARD_DIRS) or function in _BACKWARD_CALLS)
        for file, _, function, users in _frames(family)
    )


def _forward_frame(family: FamilyEvidence) -> str:
    """The module forward that made the family's buffers ("Tanh.forward (activation.py:428)"), when a module call
    encloses them; "" otherwise."""
    inside_module = any(name.startswith(MODULE_CALL_PREFIX) for stack in family.stacks for name in stack)
    function = family.model_frame.split(" (", 1)[0].rsplit(".", 1)[-1]
    return family.model_frame if inside_module and function == _FORWARD else ""


def _in_step(a: FamilyEvidence, b: FamilyEvidence) -> bool:
    """Whether two families kept as many buffers in the same steps."""
    return a.count == b.count and a.steps == b.steps and a.first_step == b.first_step


def _values_of(handles: FamilyEvidence, family: FamilyEvidence) -> bool:
    """Whether a family may be the values of a family of variable handles: kept in the same steps, at most as many
    per step as the handles (a variable's value is made with it; a layer's kernel and bias, two handles, are two
    families of values)."""
    same_steps = handles.steps == family.steps and handles.first_step == family.first_step
    return same_steps and 0 < family.count <= handles.count and family.count % max(family.steps, 1) == 0


def _buffers(family: FamilyEvidence) -> str:
    return f"{family.count} {family.op} buffer{'s' if family.count != 1 else ''}"


def _per_step(family: FamilyEvidence) -> str:
    rate = family.count / max(family.steps, 1)
    return f"{rate:.0f}" if rate == round(rate) else f"{rate:.1f}"


def with_causes(
    suspects: Suspects,
    leaking: Sequence[FamilyResult],
    buffers: Buffers,
    strings: Sequence[str],
    attribution: Attribution,
) -> list[FamilyResult]:
    """The allocator's families, each of `leaking` with its likely cause (when its evidence shows one)."""
    position = {id(f): k for k, f in enumerate(suspects.families)}
    chosen = [position[id(f)] for f in leaking]
    stacks = _stacks_of(suspects.never_freed_family, chosen, buffers, attribution)
    sites = attribution.sites
    evidence = []
    for k in chosen:
        family = suspects.families[k]
        site = sites[family.site] if 0 <= family.site < len(sites) else NO_SITE
        figures = (family.count, family.steps, family.first_step, family.regrown, family.bytes_per_step)
        evidence.append(FamilyEvidence(strings[family.op], *figures, site.model_frame, stacks.get(k, ())))
    result = list(suspects.families)
    for k, cause in zip(chosen, family_causes(evidence), strict=True):
        if cause is not None:
            result[k] = replace(result[k], cause=cause)
    return result


def _stacks_of(
    never_freed_family: np.ndarray, chosen: Sequence[int], buffers: Buffers, attribution: Attribution
) -> dict[int, tuple[tuple[str, ...], ...]]:
    """The host call stacks around the never-freed buffers of each family of `chosen` (its MAX_STACKS commonest),
    by their allocation events: one pass over the buffers for them all."""
    if not chosen or not len(attribution.stack):
        return {}
    rows = np.flatnonzero(np.isin(never_freed_family, np.asarray(chosen, never_freed_family.dtype)))
    events = buffers.alloc_event[rows]
    inside = events >= 0
    stack = attribution.stack[events[inside]].astype(np.int64)
    family = never_freed_family[rows[inside]].astype(np.int64)
    known = stack >= 0
    pairs, counts = np.unique(np.stack([family[known], stack[known]], axis=1), axis=0, return_counts=True)
    ranked = pairs[np.lexsort((-counts, pairs[:, 0]))]
    # Each pair's rank within its family, commonest first: a family's pairs follow one another.
    rank = np.arange(len(ranked)) - np.searchsorted(ranked[:, 0], ranked[:, 0], side="left")
    found: dict[int, list[tuple[str, ...]]] = {}
    for k, s in ranked[rank < MAX_STACKS].tolist():
        found.setdefault(k, []).append(attribution.calls(s))
    return {k: tuple(v) for k, v in found.items()}
