"""What a recorder is (recorders.py lists them): the Protocols a capture drives, the window a companion recorder
reports on and the section it gives. See recorders.py's docstring for the seam as a whole."""

from __future__ import annotations

import dataclasses
import pathlib
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from tb_leakfinder.capture.sessions import Staging


class Recorder(Protocol):
    """One thing a capture records over each of its windows. The capture calls `start` as a window begins,
    `step` around each of its steps, and `stop` when it ends."""

    name: str  # the companion file's key for what it records; the profiler's: its framework

    def available(self) -> bool:
        """Whether it can record in this process (its framework, platform or package is there)."""
        ...

    def start(self, directory: pathlib.Path) -> None:
        """A window begins; `directory` is the staging folder its profile is written to."""
        ...

    def step(self, step_num: int) -> AbstractContextManager[object]:
        """Around one step of the window (a step marker, a reading when it ends)."""
        ...

    def stop(self) -> None:
        """The window ends (its last step ran, or the capture ended)."""
        ...


@runtime_checkable
class Profiler(Recorder, Protocol):
    """A framework's profiler: the recorder that writes the window's profile, one per capture."""

    module: ModuleType  # the framework, as the program imported it

    def cpu_allocator(self) -> str | None:
        """TensorFlow's CPU allocator (framework_profiler.tensorflow_cpu_allocator); None for the others."""
        ...

    def written(self, staging: pathlib.Path) -> list[pathlib.Path]:
        """The profile files the window wrote into its staging folder (one per host: this process's)."""
        ...

    def notes(self) -> list[str]:
        """Warnings about the window just stopped (e.g. a profiler that ended it early)."""
        ...

    def publish(self, staging: Staging) -> pathlib.Path | None:
        """Moves the window's profile (and the companion files beside it) from staging into the logdir, each with
        one rename; the session's path (a folder, or a PyTorch trace), None when nothing was written."""
        ...

    def destination(self, logdir: pathlib.Path) -> pathlib.Path:
        """Where its sessions go in a logdir, for the error of a window that wrote none."""
        ...


@dataclasses.dataclass(frozen=True)
class Window:
    """A capture window that has just closed: what a companion recorder's section is about."""

    framework: str  # "tensorflow", "jax" or "torch"
    steps: tuple[int, ...]
    profile: pathlib.Path  # the profile file the profiler wrote for it (still in its staging folder)
    host: str  # that file's host, as the readers name it


@dataclasses.dataclass(frozen=True)
class Section:
    """What one recorder found over a window: its key's value in the companion file."""

    value: dict[str, Any]  # JSON: names, types, counts, sizes and file:line only, never a value or a repr
    warning: str = ""  # a failure to report in Capture.warnings ("" for none); the value says it too
    lines: tuple[str, ...] = ()  # the "path:line"s it names, whose text goes into the file's `sources`


@runtime_checkable
class CompanionRecorder(Recorder, Protocol):
    """A recorder whose findings go into the companion file rather than the profile. Its methods never raise into
    the training loop: the capture turns what they raise into a warning."""

    def section(self, window: Window) -> Section | None:
        """Its section of the window's companion file, after the profile is written; None: nothing to write."""
        ...
