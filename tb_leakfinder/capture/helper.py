"""Record a leak profile from TensorFlow or JAX: the profiler options that keep memory events, one step marker per step.

    with tb_leakfinder.capture("logs/run1", start=5, count=20) as cap:
        for i in range(100):
            with cap.step(i):
                train_step()
    print(cap.report()["runs"][0]["verdict"])

The framework is the one the program already imported; this module never imports one itself.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pathlib
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.xplane.names import MKLCPU_ID, XPLANE_SUFFIX

TENSORFLOW = "tensorflow"
JAX = "jax"
FRAMEWORKS = (TENSORFLOW, JAX)
BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
# TraceMe level of the BFC allocator's MemoryAllocation/MemoryDeallocation events (kInfo).
HOST_TRACER_LEVEL = 2
STEP_NAME = "train"

# TensorFlow's CPU allocators, by what a profile records of them.
BFC = "bfc"  # every allocation
MKLCPU = MKLCPU_ID  # oneDNN's: only large blocks
DEFAULT = "default"  # none
UNKNOWN = "unknown"  # BFC or mklcpu, which only the profile tells apart

_BFC_FIX = (
    f"Set {BFC_VARIABLE}=true in the environment before TensorFlow is imported (e.g. `{BFC_VARIABLE}=true python"
    f" train.py`, or os.environ[{BFC_VARIABLE!r}] = 'true' at the very top of the script)"
)
NO_BFC_WARNING = (
    "TensorFlow is running on CPU without its BFC allocator, so this profile will hold no memory events"
    f" and the report can only be inconclusive. {_BFC_FIX}."
)
MKLCPU_WARNING = (
    "TensorFlow is running on CPU with oneDNN's mklcpu allocator instead of its BFC allocator, so this profile"
    " will record only large blocks: small buffers are not seen, the profile is partial, and a report that finds"
    f" no leak can only be inconclusive. {_BFC_FIX}; oneDNN may stay on ({ONEDNN_VARIABLE}=0 without"
    f" {BFC_VARIABLE}=true records no memory events at all)."
)
_WARNINGS = {DEFAULT: NO_BFC_WARNING, MKLCPU: MKLCPU_WARNING}


class CaptureError(LeakfinderError):
    """A capture that cannot be made: no framework imported, a bad window, no step captured."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=400)


class CaptureWarning(UserWarning):
    """The capture works but its profile will lack what a leak verdict needs."""


def detect_framework(framework: str | None = None) -> str:
    """The framework to profile: `framework` if given, else the one in sys.modules.

    TensorFlow wins when both are loaded: Keras imports JAX whenever it is installed, so a
    TensorFlow program has JAX in sys.modules too, while a JAX program rarely loads TensorFlow.
    """
    if framework is not None:
        if framework not in FRAMEWORKS:
            raise CaptureError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {framework!r}")
        if framework not in sys.modules:
            raise CaptureError(f"framework={framework!r}, but {framework} is not imported; import it before capturing")
        return framework
    for name in FRAMEWORKS:
        if name in sys.modules:
            return name
    raise CaptureError(
        "neither tensorflow nor jax is imported: import the framework you train with before"
        " tb_leakfinder.capture (it never imports one itself)"
    )


def tensorflow_cpu_allocator(tf: ModuleType) -> str | None:
    """Which of TensorFlow's CPU allocators (BFC, MKLCPU, DEFAULT or UNKNOWN) its CPU device uses; None without one.

    Only BFC and mklcpu keep stats (get_memory_info raises for the default one), and BFC only when
    TF_CPU_ALLOCATOR_USE_BFC was true as TF made its CPU device. A variable set now may have come too late,
    which only matters when oneDNN could have made mklcpu the allocator instead.
    """
    if not tf.config.list_logical_devices("CPU"):
        return None
    try:
        tf.config.experimental.get_memory_info("CPU:0")
    except ValueError:
        return DEFAULT
    onednn = _onednn_enabled(tf)
    if onednn is False:
        return BFC
    if not _bfc_variable_set():
        return MKLCPU
    return UNKNOWN


def _onednn_enabled(tf: ModuleType) -> bool | None:
    """Whether TensorFlow runs with oneDNN (TF_ENABLE_ONEDNN_OPTS, or its default for this CPU); None if TF hides it."""
    # A private module TensorFlow loads with itself: looked up, never imported, so a TF without it is no error.
    port = sys.modules.get(f"{tf.__name__}.python.util._pywrap_util_port")
    enabled = getattr(port, "IsMklEnabled", None)
    return bool(enabled()) if callable(enabled) else None


def _bfc_variable_set() -> bool:
    return os.environ.get(BFC_VARIABLE, "").lower() == "true"


def _late_note() -> str:
    return f" ({BFC_VARIABLE} is set now, but only after TensorFlow was imported)" if _bfc_variable_set() else ""


def recorded_allocators(session_dir: pathlib.Path) -> set[str]:
    """The memory ids of the allocators whose events a session's profiles hold."""
    # Not at the top: `import tb_leakfinder` (which TensorBoard's entry point runs) stays free of numpy.
    from tb_leakfinder.read.formats.xplane.reader import read_host

    names: set[str] = set()
    for path in sorted(session_dir.glob(f"*{XPLANE_SUFFIX}")):
        try:
            names.update(read_host(str(path), path.name[: -len(XPLANE_SUFFIX)]).events.allocator_names)
        except LeakfinderError:
            continue  # the capture stands: its report says what is wrong with the file
    return names


class _Profiler:
    """One framework's profiler: start, stop and a step marker."""

    def __init__(self, framework: str) -> None:
        self.framework = framework
        self.module = sys.modules[framework]

    def cpu_allocator(self) -> str | None:
        """The TensorFlow CPU allocator a profile records (see tensorflow_cpu_allocator); None for JAX or a GPU."""
        if self.framework != TENSORFLOW:
            return None
        tf = self.module
        if tf.config.list_physical_devices("GPU"):
            return None  # TF's GPU allocator is BFC whatever the variable says
        return tensorflow_cpu_allocator(tf)

    def start(self, logdir: str) -> None:
        if self.framework == TENSORFLOW:
            tf = self.module
            options = tf.profiler.experimental.ProfilerOptions(
                host_tracer_level=HOST_TRACER_LEVEL, python_tracer_level=0, device_tracer_level=1
            )
            tf.profiler.experimental.start(logdir, options=options)
        else:
            profiler = _jax_profiler(self.module)
            options = profiler.ProfileOptions()
            options.host_tracer_level = HOST_TRACER_LEVEL
            options.python_tracer_level = 0  # keeps the file small: the memory events and HLO are what count
            profiler.start_trace(logdir, profiler_options=options)

    def stop(self) -> None:
        if self.framework == TENSORFLOW:
            self.module.profiler.experimental.stop()
        else:
            _jax_profiler(self.module).stop_trace()

    def step(self, step_num: int) -> contextlib.AbstractContextManager[Any]:
        # Both put `step_num` and `_r=1` on a `train` event: XProf's step marker and group root.
        if self.framework == TENSORFLOW:
            trace: contextlib.AbstractContextManager[Any] = self.module.profiler.experimental.Trace(
                STEP_NAME, step_num=step_num, _r=1
            )
            return trace
        annotation: contextlib.AbstractContextManager[Any] = _jax_profiler(self.module).StepTraceAnnotation(
            STEP_NAME, step_num=step_num
        )
        return annotation


def _jax_profiler(jax: ModuleType) -> Any:
    # `jax.profiler` is a submodule: the program imported jax, so loading it imports no framework.
    return importlib.import_module(f"{jax.__name__}.profiler")


def _sessions(logdir: pathlib.Path) -> set[pathlib.Path]:
    root = logdir / "plugins" / "profile"
    return {p for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


class Capture:
    """Profiles steps `start .. start+count-1` (all from `start` when `count` is None) of a training loop.

    The profiler starts when step `start` begins and stops when the last captured step ends
    (or when the `with` block ends), so warm-up steps (compilation, first allocations) stay out.
    """

    def __init__(
        self, logdir: str | os.PathLike[str], start: int = 0, count: int | None = None, framework: str | None = None
    ) -> None:
        if count is not None and count < 1:
            raise CaptureError(f"count must be at least 1 (or None for every step from start), not {count}")
        self.logdir = pathlib.Path(logdir)
        self.start = start
        self.count = count
        self.framework = detect_framework(framework)
        self.warnings: list[str] = []
        self.steps: list[int] = []
        self.session_dir: pathlib.Path | None = None
        self._profiler = _Profiler(self.framework)
        self._allocator: str | None = None
        self._before: set[pathlib.Path] = set()
        self._running = False

    def __enter__(self) -> Capture:
        self.warnings = []
        self._allocator = self._profiler.cpu_allocator()
        if self._allocator in _WARNINGS:
            self._warn(_WARNINGS[self._allocator] + _late_note(), stacklevel=3)
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
        return f"steps {self.start}..{last}"

    def captures(self, step_num: int) -> bool:
        return step_num >= self.start and (self.count is None or step_num < self.start + self.count)

    @contextlib.contextmanager
    def step(self, step_num: int) -> Iterator[None]:
        """One training step: marked in the profile when it is in the window, run as is otherwise."""
        if not self.captures(step_num) or self.session_dir is not None:
            yield
            return
        if not self._running:
            self._start()
        with self._profiler.step(step_num):
            yield
        self.steps.append(step_num)
        if self.count is not None and step_num >= self.start + self.count - 1:
            self._stop()

    def _start(self) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._before = _sessions(self.logdir)
        try:
            self._profiler.start(str(self.logdir))
        except Exception as exc:  # each framework raises its own kind
            raise CaptureError(
                f"the {self.framework} profiler could not start ({str(exc).strip() or type(exc).__name__}); only one"
                " profile can be captured at a time: is another running (e.g. a TensorBoard callback's profile_batch)?"
            ) from exc
        self._running = True

    def _stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self._profiler.stop()
        new = sorted(_sessions(self.logdir) - self._before, key=lambda p: p.stat().st_mtime)
        if not new:
            raise CaptureError(f"the {self.framework} profiler wrote no session under {self.logdir / 'plugins' / 'profile'}")
        self.session_dir = new[-1]
        if self._allocator == UNKNOWN and MKLCPU in recorded_allocators(self.session_dir):
            # oneDNN is on and the variable is set, but it came after TensorFlow made its CPU device.
            self._allocator = MKLCPU
            self._warn(MKLCPU_WARNING + _late_note(), stacklevel=4)

    def report(self) -> dict[str, Any]:
        """The leak report of this capture's profile session (tb_leakfinder.analyze on it)."""
        from tb_leakfinder import analyze  # the package's API, which imports this module first

        if self._running:
            self._stop()
        if self.session_dir is None:
            raise CaptureError(f"nothing was captured into {self.logdir}: no step in {self.window()} was run")
        return analyze(str(self.session_dir))


def capture(logdir: str | os.PathLike[str], start: int = 0, count: int | None = None, framework: str | None = None) -> Capture:
    """A `Capture` of steps `start .. start+count-1` into `logdir` (a TensorBoard logdir: the Leaks tab finds it)."""
    return Capture(logdir, start, count, framework)
