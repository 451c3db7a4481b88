"""The recorder seam: everything a capture records over a window is a `Recorder`, and `RECORDERS` lists them all.

A capture runs one *profiler* (the framework's: it writes the window's profile, see framework_profiler.py and
torch_profiler.py) and any number of *companion recorders*, which record inside the training process what no
profile holds. When a window closes, each companion recorder gives its `Section` of the window's companion file
(`<host>.leakfinder.json` beside the profile; companion.py writes it, docs/recordings.md is its contract).

A new recorder is a class with the `CompanionRecorder` methods and one `RecorderEntry` in `RECORDERS`; nothing else
in the capture names it. Its section's key is its `name`, which `tb_leakfinder.capture(recorders=[...])` takes too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import ModuleType

from tb_leakfinder.capture.recorder import CompanionRecorder, Profiler, Recorder
from tb_leakfinder.errors import CaptureError


@dataclasses.dataclass(frozen=True)
class Context:
    """What a recorder is made for: the capture's framework and its options."""

    framework: str  # "tensorflow", "jax" or "torch"
    module: ModuleType  # the framework, as the program imported it
    python_tracer: bool = False
    mark_lines: bool = True  # PyTorch: mark each torch call of a step with its caller's line (torch_profiler.line_marks)


PROFILER = "profiler"  # RecorderEntry.role: the framework's profiler, one per capture, named by its framework
COMPANION = "companion"  # RecorderEntry.role: a companion recorder, named by its section of the companion file


@dataclasses.dataclass(frozen=True)
class RecorderEntry:
    """One recorder of the registry."""

    name: str  # a profiler's framework, or a companion recorder's section
    role: str  # PROFILER or COMPANION
    make: Callable[[Context], Recorder]
    default: bool = True  # a companion recorder that is on unless `recorders=` leaves it out


def _tensorflow(context: Context) -> Recorder:
    from tb_leakfinder.capture.framework_profiler import TensorflowProfiler, TensorflowServerProfiler

    if context.python_tracer:
        return TensorflowServerProfiler(context.module)
    return TensorflowProfiler(context.module)


def _jax(context: Context) -> Recorder:
    from tb_leakfinder.capture.framework_profiler import JaxProfiler

    return JaxProfiler(context.module, context.python_tracer)


def _torch(context: Context) -> Recorder:
    from tb_leakfinder.capture.torch_profiler import TorchProfiler

    return TorchProfiler(context.module, context.mark_lines)


def _holders(context: Context) -> Recorder:
    from tb_leakfinder.capture.holders.finder import HolderFinder  # its matchers load with the first capture

    return HolderFinder(context.framework, context.module)


def _process_memory(context: Context) -> Recorder:
    from tb_leakfinder.capture.process_memory import ProcessMemoryRecorder

    return ProcessMemoryRecorder()


# Every recorder. Companion recorders' sections are written in this order: nothing else in the capture names one.
RECORDERS: tuple[RecorderEntry, ...] = (
    RecorderEntry("tensorflow", PROFILER, _tensorflow),
    RecorderEntry("jax", PROFILER, _jax),
    RecorderEntry("torch", PROFILER, _torch),
    RecorderEntry("holders", COMPANION, _holders),
    RecorderEntry("process_memory", COMPANION, _process_memory),
)


def profiler(context: Context, registry: Sequence[RecorderEntry] = RECORDERS) -> Profiler:
    """The profiler of the capture's framework."""
    for entry in registry:
        if entry.role == PROFILER and entry.name == context.framework:
            made = entry.make(context)
            assert isinstance(made, Profiler)
            return made
    raise CaptureError(f"no profiler records {context.framework}")


def companion_recorders(
    context: Context,
    chosen: Sequence[str | CompanionRecorder] | None,
    registry: Sequence[RecorderEntry] = RECORDERS,
) -> tuple[list[CompanionRecorder], list[str]]:
    """The companion recorders a capture runs, and a warning for each one asked for by name that cannot record here.

    `chosen` None: every default recorder that is available. Else each name is the registry's recorder (an
    unavailable one is a warning), and a recorder object is taken as it is (a HolderFinder with other bounds).
    """
    companions = {entry.name: entry for entry in registry if entry.role == COMPANION}
    if chosen is None:
        made = [_companion(entry, context) for entry in companions.values() if entry.default]
        return [r for r in made if r.available()], []
    recorders: list[CompanionRecorder] = []
    notes: list[str] = []
    for item in chosen:
        if isinstance(item, str):
            if item not in companions:
                known = ", ".join(repr(name) for name in companions)
                raise CaptureError(f"recorders: no recorder is named {item!r}; the recorders are {known}")
            recorder = _companion(companions[item], context)
        elif isinstance(item, CompanionRecorder):
            recorder = item
        else:
            raise CaptureError(f"recorders: {type(item).__name__} is neither a recorder's name nor a recorder")
        if recorder.available():
            recorders.append(recorder)
        else:
            notes.append(f"the {recorder.name} recorder cannot record with {context.framework} here: it is off")
    names = [r.name for r in recorders]
    if len(set(names)) != len(names):
        raise CaptureError(f"recorders: each recorder at most once, not {names}")
    return recorders, notes


def _companion(entry: RecorderEntry, context: Context) -> CompanionRecorder:
    made = entry.make(context)
    assert isinstance(made, CompanionRecorder)
    return made
