"""PyTorch's profiler as a capture records it: memory, shapes and stacks on, one `ProfilerStep#<step>` per step.

`torch.profiler.profile` marks steps only when it has a schedule, so it gets one that records every step (the
capture's own window decides which steps are profiled), and its `step_num` is set to the program's step before
each `prof.step()`, so the trace's `ProfilerStep#N` are the program's step numbers. The trace is exported as
`tensorboard_trace_handler` names it, `<host>_<pid>.<ns>.pt.trace.json.gz`, into a staging folder first and then
moved into the logdir with one rename (see `sessions.Staging.publish_file`): a reader never sees half a trace.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType, ModuleType
from typing import Any, cast

from tb_leakfinder.capture.sessions import Staging

TORCH = "torch"
TRACE_SUFFIX = ".pt.trace.json.gz"


def worker_name() -> str:
    """The worker `tensorboard_trace_handler` names a process by: `<host>_<pid>`."""
    import socket  # here: the package's import (TensorBoard's, the CLI's) records nothing

    return f"{socket.gethostname()}_{os.getpid()}"


def trace_file_name() -> str:
    return f"{worker_name()}.{time.time_ns()}{TRACE_SUFFIX}"


def line_marks(torch: ModuleType) -> contextlib.AbstractContextManager[object]:
    """Marks each torch call the step's Python code makes with the line that makes it: a record_function named
    "tb_leakfinder line <file>(<line>): <function>" (model/memory.LINE_MARK_PREFIX) around the call, whose
    allocations the reader then names by that line. PyTorch's with_stack frames carry only their function's first
    line (or the line a frame was at when the profiler started: the `with cap.step(step):` line), never the one
    that allocated. Calls inside torch (a module's forward, an optimizer) are marked with the user's line that
    led to them; code being compiled (torch.compile) is left alone."""
    # Here, not at the module's top: the model's module loads numpy, which the helper's import must not (numpy_start).
    from tb_leakfinder.model.memory import LINE_MARK_PREFIX

    own = (os.path.dirname(str(torch.__file__)) + os.sep, os.path.dirname(os.path.dirname(__file__)) + os.sep)
    # PyTorch's C record_function (2.1 on): the Python one's own frames would open the mark inside its __enter__,
    # which ends before the op the mark is around, so that the mark would not nest the op's allocations.
    record = getattr(torch._C._profiler, "_RecordFunctionFast", torch.profiler.record_function)
    compiling = _is_compiling(torch)

    class LineMarks(torch.overrides.TorchFunctionMode):  # type: ignore[misc, name-defined]
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if compiling():
                return func(*args, **kwargs)
            frame: FrameType | None = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith(own):
                frame = frame.f_back
            if frame is None:
                return func(*args, **kwargs)
            code = frame.f_code
            with record(f"{LINE_MARK_PREFIX}{code.co_filename}({frame.f_lineno}): {code.co_name}"):
                return func(*args, **kwargs)

    return cast("contextlib.AbstractContextManager[object]", LineMarks())


def _is_compiling(torch: ModuleType) -> Callable[[], bool]:
    """Whether torch.compile is tracing the caller: `torch.compiler.is_compiling` (PyTorch 2.3 on), else dynamo's own
    (2.0 to 2.2), else never (before torch.compile)."""
    for owner, name in (("compiler", "is_compiling"), ("_dynamo", "is_compiling")):
        found = getattr(getattr(torch, owner, None), name, None)
        if callable(found):
            return cast("Callable[[], bool]", found)
    return lambda: False


class TorchProfiler:
    """One `torch.profiler.profile` per capture window: begun at the window's first step, exported when it ends.
    A recorders.Profiler: its trace is published into the logdir itself, not into a session folder."""

    name = TORCH

    def __init__(self, torch: ModuleType, mark_lines: bool = True) -> None:
        self.torch = self.module = torch
        self.mark_lines = mark_lines
        self._profile: Any = None
        self._staging: pathlib.Path | None = None
        self._started = False

    def _new_profile(self) -> Any:
        profiler = self.torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        record = profiler.ProfilerAction.RECORD
        return profiler.profile(
            activities=activities,
            schedule=lambda step: record,
            profile_memory=True,
            record_shapes=True,
            with_stack=True,
        )

    def available(self) -> bool:
        return TORCH in sys.modules

    def cpu_allocator(self) -> str | None:
        return None

    def start(self, directory: pathlib.Path) -> None:
        # The profile begins with the window's first step (see step), as TensorFlow's and JAX's begin just before it.
        self._staging = directory
        self._profile = self._new_profile()
        self._started = False

    @contextlib.contextmanager
    def step(self, step_num: int) -> Iterator[None]:
        profile = self._profile
        if profile is None:
            raise RuntimeError("the PyTorch profiler was not started")
        if not self._started:
            profile.step_num = step_num
            profile.start()
            self._started = True
        else:  # prof.step() ends the step before and begins ProfilerStep#<step_num + 1>
            profile.step_num = step_num - 1
            profile.step()
        with line_marks(self.torch) if self.mark_lines else contextlib.nullcontext():
            yield

    def stop(self) -> None:
        profile, staging = self._profile, self._staging
        self._profile = self._staging = None
        if profile is None or staging is None or not self._started:
            return  # no step of the window ran
        profile.stop()
        profile.export_chrome_trace(str(staging / trace_file_name()))

    def written(self, staging: pathlib.Path) -> list[pathlib.Path]:
        return sorted(p for p in staging.iterdir() if p.name.endswith(TRACE_SUFFIX))

    def notes(self) -> list[str]:
        return []

    def publish(self, staging: Staging) -> pathlib.Path | None:
        return staging.publish_file(TRACE_SUFFIX)

    def destination(self, logdir: pathlib.Path) -> pathlib.Path:
        return logdir
