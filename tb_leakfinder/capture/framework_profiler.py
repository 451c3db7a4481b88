"""The framework a capture profiles: which one the program imported, TensorFlow's CPU allocator (whose choice decides
what a profile records), and TensorFlow's and JAX's profilers as recorders (recorders.Profiler: start, stop, a step
marker, the files written); PyTorch's is torch_profiler.py's."""

from __future__ import annotations

import contextlib
import importlib
import os
import pathlib
import sys
from types import ModuleType
from typing import Any

from tb_leakfinder.capture.server_session import HOST_TRACER_LEVEL, PYTHON_TRACER_LEVEL, PYTHON_TRACER_MAX_MS, ServerSession
from tb_leakfinder.capture.sessions import Staging, profile_dir
from tb_leakfinder.capture.torch_profiler import TORCH
from tb_leakfinder.errors import CaptureError, LeakfinderError
from tb_leakfinder.read.formats.xplane.names import MKLCPU_ID, XPLANE_SUFFIX

TENSORFLOW = "tensorflow"
JAX = "jax"
FRAMEWORKS = (TENSORFLOW, JAX, TORCH)
BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
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
ALLOCATOR_WARNINGS = {DEFAULT: NO_BFC_WARNING, MKLCPU: MKLCPU_WARNING}


def detect_framework(framework: str | None = None) -> str:
    """The framework to profile: `framework` if given, else the one in sys.modules.

    TensorFlow wins when both are loaded: Keras imports JAX whenever it is installed, so a
    TensorFlow program has JAX in sys.modules too, while a JAX program rarely loads TensorFlow.
    PyTorch comes last: JAX and TensorFlow programs load it for their data (torch.utils.data) more
    often than PyTorch programs load either.
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
        "none of tensorflow, jax or torch is imported: import the framework you train with before"
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


def late_note() -> str:
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


class _XSpaceProfiler:
    """What TensorFlow's and JAX's profilers share: a session folder `plugins/profile/<session>/` of XSpace files."""

    name: str
    module: ModuleType

    def available(self) -> bool:
        return self.name in sys.modules

    def cpu_allocator(self) -> str | None:
        return None

    def written(self, staging: pathlib.Path) -> list[pathlib.Path]:
        return sorted(profile_dir(staging).glob(f"*/*{XPLANE_SUFFIX}"))

    def notes(self) -> list[str]:
        return []

    def publish(self, staging: Staging) -> pathlib.Path | None:
        return staging.publish()

    def destination(self, logdir: pathlib.Path) -> pathlib.Path:
        return profile_dir(logdir)


class TensorflowProfiler(_XSpaceProfiler):
    """TensorFlow's profiler, started in this process: memory events, no Python events."""

    name = TENSORFLOW

    def __init__(self, tf: ModuleType) -> None:
        self.module = tf

    def cpu_allocator(self) -> str | None:
        """The TensorFlow CPU allocator a profile records (see tensorflow_cpu_allocator); None on a GPU."""
        tf = self.module
        if tf.config.list_physical_devices("GPU"):
            return None  # TF's GPU allocator is BFC whatever the variable says
        return tensorflow_cpu_allocator(tf)

    def start(self, directory: pathlib.Path) -> None:
        options = self.module.profiler.experimental.ProfilerOptions(
            host_tracer_level=HOST_TRACER_LEVEL, python_tracer_level=0, device_tracer_level=1
        )
        self.module.profiler.experimental.start(str(directory), options=options)

    def stop(self) -> None:
        self.module.profiler.experimental.stop()

    def step(self, step_num: int) -> contextlib.AbstractContextManager[Any]:
        # `step_num` and `_r=1` on a `train` event: XProf's step marker and group root.
        trace: contextlib.AbstractContextManager[Any] = self.module.profiler.experimental.Trace(
            STEP_NAME, step_num=step_num, _r=1
        )
        return trace


class TensorflowServerProfiler(TensorflowProfiler):
    """TensorFlow with the Python tracer: Python events are recorded only through its profiler server."""

    def __init__(self, tf: ModuleType) -> None:
        super().__init__(tf)
        self.server = ServerSession(tf)

    def start(self, directory: pathlib.Path) -> None:
        self.server.start(directory)

    def stop(self) -> None:
        self.server.stop()

    def notes(self) -> list[str]:
        if not self.server.ended_early:
            return []
        return [
            f"the profiler server ended its session by itself after {PYTHON_TRACER_MAX_MS // 60000} min, before"
            " the last captured step: the steps after that are not in the profile; capture fewer steps (count)"
            " with python_tracer=True"
        ]


class JaxProfiler(_XSpaceProfiler):
    """JAX's profiler: memory events and HLO, Python events when asked for."""

    name = JAX

    def __init__(self, jax: ModuleType, python_tracer: bool = False) -> None:
        self.module = jax
        self.python_tracer = python_tracer
        if python_tracer and not _jax_has_python_tracer(jax):
            version = getattr(jax, "__version__", "?")
            raise CaptureError(
                f"python_tracer=True needs jax.profiler.ProfileOptions.python_tracer_level, which JAX {version}"
                " lacks: upgrade jax, or capture without python_tracer"
            )

    def start(self, directory: pathlib.Path) -> None:
        profiler = jax_profiler(self.module)
        options = profiler.ProfileOptions()
        options.host_tracer_level = HOST_TRACER_LEVEL
        # Off unless asked for, which keeps the file small: the memory events and HLO are what count.
        options.python_tracer_level = PYTHON_TRACER_LEVEL if self.python_tracer else 0
        profiler.start_trace(str(directory), profiler_options=options)

    def stop(self) -> None:
        jax_profiler(self.module).stop_trace()

    def step(self, step_num: int) -> contextlib.AbstractContextManager[Any]:
        # As TensorFlow's: `step_num` on a `train` event.
        annotation: contextlib.AbstractContextManager[Any] = jax_profiler(self.module).StepTraceAnnotation(
            STEP_NAME, step_num=step_num
        )
        return annotation


def _jax_has_python_tracer(jax: ModuleType) -> bool:
    options = getattr(jax_profiler(jax), "ProfileOptions", None)
    return callable(options) and hasattr(options(), "python_tracer_level")


def jax_profiler(jax: ModuleType) -> Any:
    # `jax.profiler` is a submodule: the program imported jax, so loading it imports no framework.
    return importlib.import_module(f"{jax.__name__}.profiler")
