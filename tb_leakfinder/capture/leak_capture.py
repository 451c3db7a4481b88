"""Record a leak profile from TensorFlow, JAX or PyTorch: the profiler options that keep memory events, one step marker per step.

    with tb_leakfinder.capture("logs/run1", start=5, count=20) as cap:
        for i in range(100):
            with cap.step(i):
                train_step()
    print(cap.report()["runs"][0]["verdict"])

The framework is the one the program already imported; this module never imports one itself.
`python_tracer=True` records Python function events (`$<file>.py:<line> <function>`) too. PyTorch's profiler
always records them (`with_stack=True`), with shapes and memory, and writes `<logdir>/<host>_<pid>.<ns>.pt.trace.json.gz`
(see torch_profiler.py). With `every=N`, the `count` steps from `start`, `start+N`, `start+2N`… are each a session
of their own; with `memory_profile_every=M` (JAX), a device memory profile is saved every M steps from `start` on,
as `<logdir>/memory_profiles/step_<step>.prof`.

When a window closes, the companion recorders (recorders.py: the holder finder, by default) write what they found
inside the process to `<host>.leakfinder.json` beside its profile (docs/recordings.md); `recorders=()` turns them off.

This module is the capture's state machine (which step starts and ends which session, what it warns); the recorders
are recorders.py's, each framework's profiler and its detection framework_profiler.py's and torch_profiler.py's,
TensorFlow's profiler-server session (the Python tracer) server_session.py's, the companion file companion.py's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import pathlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tb_leakfinder.capture import companion
from tb_leakfinder.capture.framework_profiler import (
    ALLOCATOR_WARNINGS,
    JAX,
    MKLCPU,
    MKLCPU_WARNING,
    UNKNOWN,
    detect_framework,
    jax_profiler,
    late_note,
    recorded_allocators,
)
from tb_leakfinder.capture.recorder import CompanionRecorder, Section, Window
from tb_leakfinder.capture.recorders import Context, companion_recorders, profiler
from tb_leakfinder.capture.sessions import Staging
from tb_leakfinder.errors import CaptureError

# JAX's device memory profiles: <logdir>/MEMORY_PROFILES/step_<step>.prof
MEMORY_PROFILES = "memory_profiles"
MEMORY_PROFILE_SUFFIX = ".prof"


class CaptureWarning(UserWarning):
    """The capture works but its profile will lack what a leak verdict needs."""


@dataclasses.dataclass(frozen=True)
class Session:
    """One profile session a capture wrote: its folder (PyTorch: its trace file) and the steps it marks."""

    path: pathlib.Path
    steps: tuple[int, ...]
    recordings: pathlib.Path | None = None  # its companion file, when a companion recorder wrote one


class Capture:
    """Profiles steps `start .. start+count-1` (all from `start` when `count` is None) of a training loop.

    The profiler starts when step `start` begins and stops when the last captured step ends
    (or when the `with` block ends), so warm-up steps (compilation, first allocations) stay out.
    With `every`, it does so every `every` steps, each window a session of its own: session k covers
    steps `start + k*every .. start + k*every + count - 1`. With `python_tracer`, Python function events
    are recorded too. With `memory_profile_every` (JAX), a device memory profile is saved after steps
    `start`, `start + memory_profile_every`, ... as `<logdir>/memory_profiles/step_<step>.prof`. `recorders`
    chooses the companion recorders by name (or as recorder objects); None runs every default one available.
    `mark_lines` (PyTorch) marks each torch call of a captured step with the line that makes it (see `capture`).
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        start: int = 0,
        count: int | None = None,
        framework: str | None = None,
        python_tracer: bool = False,
        every: int | None = None,
        memory_profile_every: int | None = None,
        recorders: Sequence[str | CompanionRecorder] | None = None,
        mark_lines: bool = True,
    ) -> None:
        if count is not None and count < 1:
            raise CaptureError(f"count must be at least 1 (or None for every step from start), not {count}")
        if every is not None:
            if every < 1:
                raise CaptureError(f"every must be at least 1 (the steps from one capture's start to the next's), not {every}")
            if count is None:
                raise CaptureError(f"every={every} needs count, the steps of each capture (e.g. count=5, every=100)")
            if count > every:
                raise CaptureError(f"count ({count}) must be at most every ({every}): the captures would overlap")
        if memory_profile_every is not None and memory_profile_every < 1:
            raise CaptureError(f"memory_profile_every must be at least 1, not {memory_profile_every}")
        self.logdir = pathlib.Path(logdir)
        self.start = start
        self.count = count
        self.every = every
        self.memory_profile_every = memory_profile_every
        self.framework = detect_framework(framework)
        if memory_profile_every is not None and self.framework != JAX:
            raise CaptureError(
                f"memory_profile_every needs JAX (jax.profiler.save_device_memory_profile); {self.framework} has no"
                " device memory profile"
            )
        self.python_tracer = python_tracer
        self.warnings: list[str] = []
        self.steps: list[int] = []  # every captured step, of all sessions
        self.sessions: list[Session] = []
        self.memory_profiles: list[pathlib.Path] = []
        context = Context(self.framework, sys.modules[self.framework], python_tracer, mark_lines)
        self._profiler = profiler(context)
        self._recorders, self._recorder_notes = companion_recorders(context, recorders)
        self._allocator: str | None = None
        self._staging: Staging | None = None
        self._window: int | None = None  # the window being recorded: session k of the docstring
        self._window_steps: list[int] = []
        self._done: set[int] = set()

    @property
    def session_dir(self) -> pathlib.Path | None:
        """The folder of the last session written (None before the first)."""
        return self.sessions[-1].path if self.sessions else None

    def __enter__(self) -> Capture:
        self.warnings = []
        for note in self._recorder_notes:
            self._warn(note, stacklevel=3)
        self._allocator = self._profiler.cpu_allocator()
        if self._allocator in ALLOCATOR_WARNINGS:
            self._warn(ALLOCATOR_WARNINGS[self._allocator] + late_note(), stacklevel=3)
        return self

    def _warn(self, message: str, stacklevel: int) -> None:
        self.warnings.append(message)
        warnings.warn(message, CaptureWarning, stacklevel=stacklevel)

    def __exit__(self, *exc: object) -> None:
        self._stop()
        if not self.steps and exc[0] is None:
            warnings.warn(f"no step in {self.window()} was run: nothing was captured", CaptureWarning, stacklevel=2)

    def window(self) -> str:
        last = "..." if self.count is None else str(self.start + self.count - 1)
        steps = f"steps {self.start}..{last}"
        return steps if self.every is None else f"{steps} and every {self.every} steps after"

    def captures(self, step_num: int) -> bool:
        return self._window_of(step_num) is not None

    def _window_of(self, step_num: int) -> int | None:
        if step_num < self.start:
            return None
        if self.count is None:
            return 0
        if self.every is None:
            return 0 if step_num < self.start + self.count else None
        window, offset = divmod(step_num - self.start, self.every)
        return window if offset < self.count else None

    def _last_step(self, window: int) -> int | None:
        return None if self.count is None else self.start + window * (self.every or 0) + self.count - 1

    @contextlib.contextmanager
    def step(self, step_num: int) -> Iterator[None]:
        """One training step: marked in the profile when it is in a captured window, run as is otherwise."""
        window = self._window_of(step_num)
        if window is not None and window in self._done:
            window = None
        if window is None:
            yield
        else:
            if self._window != window:
                self._stop()  # a step of the next window: the session of the last one ends before it
                self._start(window)
            with self._profiler.step(step_num), contextlib.ExitStack() as marks:
                for recorder in self._recorders:
                    marks.enter_context(_Guarded(self, recorder, step_num))
                yield
            self.steps.append(step_num)
            self._window_steps.append(step_num)
            last = self._last_step(window)
            if last is not None and step_num >= last:
                self._stop()
        self._save_memory_profile(step_num)

    def _start(self, window: int) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        staging = Staging(self.logdir)
        try:
            self._profiler.start(staging.path)
        except Exception as exc:  # each framework raises its own kind
            staging.remove()
            if isinstance(exc, CaptureError):
                raise
            raise CaptureError(
                f"the {self.framework} profiler could not start ({str(exc).strip() or type(exc).__name__}); only one"
                " profile can be captured at a time: is another running (e.g. a TensorBoard callback's profile_batch)?"
            ) from exc
        self._staging, self._window, self._window_steps = staging, window, []
        for recorder in self._recorders:
            self._guard(recorder, "start", functools.partial(recorder.start, staging.path))

    def _stop(self) -> None:
        if self._window is None or self._staging is None:
            return
        staging = self._staging
        self._done.add(self._window)
        self._window = self._staging = None
        recordings = None
        try:
            self._profiler.stop()
            for note in self._profiler.notes():
                self._warn(note, stacklevel=4)
            for recorder in self._recorders:
                self._guard(recorder, "stop", recorder.stop)
            written = self._profiler.written(staging.path)
            if written and self._recorders:
                window = Window(self.framework, tuple(self._window_steps), written[0], _host(written[0]))
                recordings = self._write_recordings(window)
            session_dir = self._profiler.publish(staging)
        finally:
            staging.remove()
        if session_dir is None:
            raise CaptureError(f"the {self.framework} profiler wrote no session for {self._profiler.destination(self.logdir)}")
        if recordings is not None:
            recordings = (session_dir if session_dir.is_dir() else session_dir.parent) / recordings.name
        self.sessions.append(Session(session_dir, tuple(self._window_steps), recordings))
        if self._allocator == UNKNOWN and MKLCPU in recorded_allocators(session_dir):
            # oneDNN is on and the variable is set, but it came after TensorFlow made its CPU device.
            self._allocator = MKLCPU
            self._warn(MKLCPU_WARNING + late_note(), stacklevel=4)

    def _guard(self, recorder: CompanionRecorder, what: str, call: Callable[[], object]) -> object:
        """`call` of a companion recorder, whose error becomes a warning: it never stops the training loop."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - a recorder's own failure, whatever it is, never stops the loop
            failure = f"{type(exc).__name__}: {exc}"
            self._warn(f"the {recorder.name} recorder failed in {what} ({failure}); the capture goes on", stacklevel=5)
            return None

    def _write_recordings(self, window: Window) -> pathlib.Path | None:
        """The window's companion file, beside its profile in the staging folder; None when no recorder wrote."""
        sections: dict[str, dict[str, Any]] = {}
        lines: list[str] = []
        for recorder in self._recorders:
            section = self._guard(recorder, "section", functools.partial(recorder.section, window))
            if not isinstance(section, Section):
                continue
            sections[recorder.name] = section.value
            lines += section.lines
            if section.warning:
                self._warn(f"{recorder.name}: {section.warning}", stacklevel=5)
        if not sections:
            return None
        path = companion.companion_path(window.profile)
        try:
            doc = companion.document(window.host, self.framework, sections, companion.source_lines(lines))
            companion.write(path, companion.encode(doc))
        except Exception as exc:  # noqa: BLE001 - the disk's errors, or a value JSON cannot hold: the profile stands
            self._warn(f"the companion file {path.name} could not be written ({type(exc).__name__}: {exc})", stacklevel=5)
            return None
        return path

    def _save_memory_profile(self, step_num: int) -> None:
        """JAX's device memory profile after `step_num`, when memory profiles are due then; written whole, by a rename."""
        every = self.memory_profile_every
        if every is None or step_num < self.start or (step_num - self.start) % every:
            return
        folder = self.logdir / MEMORY_PROFILES
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"step_{step_num}{MEMORY_PROFILE_SUFFIX}"
        partial = path.with_name(f"{path.name}.partial")
        try:
            jax_profiler(self._profiler.module).save_device_memory_profile(str(partial))
            os.replace(partial, path)
        except Exception as exc:  # JAX's own errors, or the disk's
            partial.unlink(missing_ok=True)
            raise CaptureError(f"the device memory profile of step {step_num} could not be saved to {path} ({exc})") from exc
        self.memory_profiles.append(path)

    def report(self) -> dict[str, Any]:
        """The leak report of this capture's last profile session (tb_leakfinder.analyze on it); `reports` has all."""
        return _analyze(self._finished()[-1])

    def reports(self) -> list[dict[str, Any]]:
        """The leak report of each session this capture wrote, in the order they were captured."""
        return [_analyze(session) for session in self._finished()]

    def _finished(self) -> list[Session]:
        self._stop()
        if not self.sessions:
            raise CaptureError(f"nothing was captured into {self.logdir}: no step in {self.window()} was run")
        return self.sessions


class _Guarded:
    """A companion recorder's `step` around a step: what it raises becomes a warning, the step's own errors pass."""

    def __init__(self, capture: Capture, recorder: CompanionRecorder, step_num: int) -> None:
        self.capture, self.recorder, self.step_num = capture, recorder, step_num
        self.inner: contextlib.AbstractContextManager[object] | None = None

    def __enter__(self) -> None:
        def enter() -> None:
            inner = self.recorder.step(self.step_num)
            inner.__enter__()
            self.inner = inner

        self.capture._guard(self.recorder, f"step {self.step_num}", enter)

    def __exit__(self, *exc: Any) -> None:
        inner = self.inner
        if inner is not None:
            try:
                inner.__exit__(*exc)
            except Exception as raised:  # noqa: BLE001 - judged by _guard, below
                if raised is not exc[1]:  # the step's own exception coming back through the recorder is no failure
                    self.capture._guard(self.recorder, f"step {self.step_num}", _raise(raised))


def _raise(exc: Exception) -> Callable[[], None]:
    def again() -> None:
        raise exc

    return again


def _host(profile: pathlib.Path) -> str:
    """A profile file's host as the readers name it."""
    from tb_leakfinder.read.formats.registry import FORMATS  # not at the top: `import tb_leakfinder` loads no reader

    names = (f.host_name(profile.name) for f in FORMATS)
    return next((name for name in names if name), profile.name)


def _analyze(session: Session) -> dict[str, Any]:
    from tb_leakfinder.api import analyze  # loaded by the first report, not with the capture

    return analyze(str(session.path))


def capture(
    logdir: str | os.PathLike[str],
    start: int = 0,
    count: int | None = None,
    framework: str | None = None,
    python_tracer: bool = False,
    every: int | None = None,
    memory_profile_every: int | None = None,
    recorders: Sequence[str | CompanionRecorder] | None = None,
    mark_lines: bool = True,
) -> Capture:
    """A `Capture` of steps `start .. start+count-1` into `logdir` (a TensorBoard logdir: the Leaks tab finds it).

    `every=N` captures those `count` steps again every N steps, each time as a session of its own (`cap.sessions`;
    `cap.report()` is the last one's report, `cap.reports()` every one's). `memory_profile_every=M` (JAX) saves a
    device memory profile every M steps from `start` on, as `<logdir>/memory_profiles/step_<step>.prof`.
    `python_tracer=True` records Python function events too (`$<file>.py:<line> <function>`, the function's first
    line, on the thread that ran it); on TensorFlow it takes XProf's client and grpcio (see server_session.ServerSession).

    When a window closes, the companion recorders write what they found inside the process beside its profile, in
    `<host>.leakfinder.json` (`cap.sessions[i].recordings`; docs/recordings.md): by default the holder finder, which
    names the references that keep the window's never-freed buffers alive. `recorders=()` turns them off;
    `recorders=["holders"]` names the ones to run; a recorder object (`HolderFinder(..., time_limit_s=5)`) runs as given.

    PyTorch: each torch call of a captured step is marked with the line that makes it, so that a leak is named by
    the line that allocated it (with_stack alone names a function's first line). A mark costs about 44 µs a call;
    `mark_lines=False` leaves them out, and a leak is then named by with_stack's lines.
    """
    return Capture(logdir, start, count, framework, python_tracer, every, memory_profile_every, recorders, mark_lines)
