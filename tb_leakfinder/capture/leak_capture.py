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
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import pathlib
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from tb_leakfinder.capture.sessions import Staging, new_session_id
from tb_leakfinder.capture.torch_profiler import TORCH, TorchProfiler
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.xplane.names import MKLCPU_ID, XPLANE_SUFFIX

TENSORFLOW = "tensorflow"
JAX = "jax"
FRAMEWORKS = (TENSORFLOW, JAX, TORCH)
BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
# TraceMe level of the BFC allocator's MemoryAllocation/MemoryDeallocation events (kInfo).
HOST_TRACER_LEVEL = 2
STEP_NAME = "train"
PYTHON_TRACER_LEVEL = 1
# TensorFlow with the Python tracer: the profiler server's session ends by itself after this long, last step or not.
PYTHON_TRACER_MAX_MS = 60 * 60 * 1000
# How long the profiler server may take to begin a session, and to write it once told to end it.
SERVER_START_TIMEOUT_S = 60.0
SERVER_WRITE_TIMEOUT_S = 600.0
XPROF_CLIENT = "xprof.convert._pywrap_profiler_plugin"
# JAX's device memory profiles: <logdir>/MEMORY_PROFILES/step_<step>.prof
MEMORY_PROFILES = "memory_profiles"
MEMORY_PROFILE_SUFFIX = ".prof"

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


def _import(module: str, what: str, fix: str) -> Any:
    """A module the Python tracer needs, or a CaptureError that says what to install."""
    try:
        return importlib.import_module(module)
    except (ImportError, OSError) as exc:  # OSError: a native library the module loads
        raise CaptureError(f"python_tracer=True needs {what} ({exc}): {fix}, or capture without python_tracer") from None


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def server_options(session_id: str) -> dict[str, int | str]:
    """The options of a profiler server's session, as XProf's Capture button sends them, with memory events
    (HOST_TRACER_LEVEL) and Python function events (PYTHON_TRACER_LEVEL) on."""
    return {
        "host_tracer_level": HOST_TRACER_LEVEL,
        "device_tracer_level": 1,
        "python_tracer_level": PYTHON_TRACER_LEVEL,
        "delay_ms": 0,
        "session_id": session_id,
    }


class _ServerSession:
    """TensorFlow's profiler with the Python tracer: a session of this process's own profiler server.

    TensorFlow 2.21's tf.profiler.experimental.start drops its options (its log says `python_tracer_level expects
    an i value`), while its profiler server honours those of a request. So the capture starts that server once per
    process, on a free port (it listens on every interface until the process ends), and asks it through XProf's
    client, on a thread of its own, for a session of PYTHON_TRACER_MAX_MS with the Python tracer on. The step waits
    until the session records (TraceMe on, the tracer's hook installed); the last step ends it early with the
    server's Terminate call, after which the server writes `<logdir>/plugins/profile/<session>/<host>.xplane.pb`.
    """

    def __init__(self, tf: ModuleType) -> None:
        self.tf = tf
        self.client = _import(XPROF_CLIENT, "XProf's profiler client", "pip install xprof")
        self.grpc = _import("grpc", "grpcio", "pip install grpcio")
        try:  # a submodule of the TensorFlow the program imported
            trace = importlib.import_module(f"{tf.__name__}.python.profiler.trace")
        except ImportError:
            trace = None
        recording = getattr(trace, "enabled", None)  # TraceMe is on: a session records
        server = getattr(getattr(tf.profiler, "experimental", None), "server", None)
        if not callable(recording) or not callable(getattr(server, "start", None)):
            raise CaptureError(
                f"python_tracer=True needs TensorFlow's profiler server and its trace module, which TensorFlow"
                f" {getattr(tf, '__version__', '?')} lacks: upgrade TensorFlow, or capture without python_tracer"
            )
        self.recording: Callable[[], bool] = recording
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.session_id = ""
        self.ended_early = False

    def _port(self) -> int:
        if self.tf.__name__ not in _SERVER_PORTS:
            with socket.socket() as probe:
                probe.bind(("", 0))
                port = int(probe.getsockname()[1])
            self.tf.profiler.experimental.server.start(port)
            _SERVER_PORTS[self.tf.__name__] = port
        return _SERVER_PORTS[self.tf.__name__]

    def start(self, logdir: pathlib.Path) -> None:
        if self.recording():
            raise RuntimeError("another profiling session is running")
        address = f"localhost:{self._port()}"
        self.session_id = new_session_id(logdir)
        self.error = None
        # <host>.xplane.pb, as a capture without the tracer writes
        options = {**server_options(self.session_id), "override_hostnames": socket.gethostname()}

        def trace() -> None:
            try:
                self.client.trace(address, str(logdir), "", False, PYTHON_TRACER_MAX_MS, 1, options)
            except Exception as exc:  # noqa: BLE001 - handed to the capture, which raises it as a CaptureError
                self.error = str(exc).strip() or type(exc).__name__

        hook = threading.getprofile()
        self.thread = threading.Thread(target=trace, name="tb_leakfinder-profile", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not (self.recording() and threading.getprofile() is not hook):
            if not self.thread.is_alive():
                raise RuntimeError(self.error or "the profiler server's session ended before it began")
            if time.monotonic() > deadline:
                self.thread = None
                self._terminate()
                raise RuntimeError(f"the profiler server began no session in {SERVER_START_TIMEOUT_S:.0f} s")
            time.sleep(0.001)

    def stop(self) -> None:
        thread = self.thread
        if thread is None:
            return
        self.thread = None
        self.ended_early = not thread.is_alive()
        if not self.ended_early:
            try:
                self._terminate()
            except Exception as exc:  # grpcio's RpcError, or the channel's own
                raise CaptureError(f"the profiler server's session could not be ended ({exc})") from exc
        thread.join(SERVER_WRITE_TIMEOUT_S)
        if thread.is_alive():
            raise CaptureError(f"the profiler server did not write its session in {SERVER_WRITE_TIMEOUT_S:.0f} s")
        if self.error is not None:
            raise CaptureError(f"the profiler server's session failed: {self.error}")

    def _terminate(self) -> None:
        # ProfilerService.Terminate(TerminateRequest{session_id = 1}): the server ends that session and writes it.
        request = self.session_id.encode()
        with self.grpc.insecure_channel(f"localhost:{self._port()}") as channel:
            call = channel.unary_unary("/tensorflow.ProfilerService/Terminate")
            call(b"\x0a" + _varint(len(request)) + request, timeout=SERVER_START_TIMEOUT_S)


_SERVER_PORTS: dict[str, int] = {}  # the port of each TensorFlow module's profiler server, by the module's name


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

    def __init__(self, framework: str, python_tracer: bool = False) -> None:
        self.framework = framework
        self.module = sys.modules[framework]
        self.python_tracer = python_tracer
        # TensorFlow records Python events only through its profiler server; JAX's own options take them.
        self.server = _ServerSession(self.module) if python_tracer and framework == TENSORFLOW else None
        self.torch = TorchProfiler(self.module) if framework == TORCH else None
        if python_tracer and framework == JAX and not _jax_has_python_tracer(self.module):
            version = getattr(self.module, "__version__", "?")
            raise CaptureError(
                f"python_tracer=True needs jax.profiler.ProfileOptions.python_tracer_level, which JAX {version}"
                " lacks: upgrade jax, or capture without python_tracer"
            )

    def cpu_allocator(self) -> str | None:
        """The TensorFlow CPU allocator a profile records (see tensorflow_cpu_allocator); None for JAX or a GPU."""
        if self.framework != TENSORFLOW:
            return None
        tf = self.module
        if tf.config.list_physical_devices("GPU"):
            return None  # TF's GPU allocator is BFC whatever the variable says
        return tensorflow_cpu_allocator(tf)

    def start(self, logdir: str) -> None:
        if self.torch is not None:
            self.torch.start(logdir)
        elif self.server is not None:
            self.server.start(pathlib.Path(logdir))
        elif self.framework == TENSORFLOW:
            tf = self.module
            options = tf.profiler.experimental.ProfilerOptions(
                host_tracer_level=HOST_TRACER_LEVEL, python_tracer_level=0, device_tracer_level=1
            )
            tf.profiler.experimental.start(logdir, options=options)
        else:
            profiler = _jax_profiler(self.module)
            options = profiler.ProfileOptions()
            options.host_tracer_level = HOST_TRACER_LEVEL
            # Off unless asked for, which keeps the file small: the memory events and HLO are what count.
            options.python_tracer_level = PYTHON_TRACER_LEVEL if self.python_tracer else 0
            profiler.start_trace(logdir, profiler_options=options)

    def stop(self) -> None:
        if self.torch is not None:
            self.torch.stop()
        elif self.server is not None:
            self.server.stop()
        elif self.framework == TENSORFLOW:
            self.module.profiler.experimental.stop()
        else:
            _jax_profiler(self.module).stop_trace()

    def step(self, step_num: int) -> contextlib.AbstractContextManager[Any]:
        if self.torch is not None:
            return self.torch.step(step_num)
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


def _jax_has_python_tracer(jax: ModuleType) -> bool:
    options = getattr(_jax_profiler(jax), "ProfileOptions", None)
    return callable(options) and hasattr(options(), "python_tracer_level")


def _jax_profiler(jax: ModuleType) -> Any:
    # `jax.profiler` is a submodule: the program imported jax, so loading it imports no framework.
    return importlib.import_module(f"{jax.__name__}.profiler")


@dataclasses.dataclass(frozen=True)
class Session:
    """One profile session a capture wrote: its folder (PyTorch: its trace file) and the steps it marks."""

    path: pathlib.Path
    steps: tuple[int, ...]


class Capture:
    """Profiles steps `start .. start+count-1` (all from `start` when `count` is None) of a training loop.

    The profiler starts when step `start` begins and stops when the last captured step ends
    (or when the `with` block ends), so warm-up steps (compilation, first allocations) stay out.
    With `every`, it does so every `every` steps, each window a session of its own: session k covers
    steps `start + k*every .. start + k*every + count - 1`. With `python_tracer`, Python function events
    are recorded too. With `memory_profile_every` (JAX), a device memory profile is saved after steps
    `start`, `start + memory_profile_every`, ... as `<logdir>/memory_profiles/step_<step>.prof`.
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
        self._profiler = _Profiler(self.framework, python_tracer)
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
            with self._profiler.step(step_num):
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
            self._profiler.start(str(staging.path))
        except Exception as exc:  # each framework raises its own kind
            staging.remove()
            if isinstance(exc, CaptureError):
                raise
            raise CaptureError(
                f"the {self.framework} profiler could not start ({str(exc).strip() or type(exc).__name__}); only one"
                " profile can be captured at a time: is another running (e.g. a TensorBoard callback's profile_batch)?"
            ) from exc
        self._staging, self._window, self._window_steps = staging, window, []

    def _stop(self) -> None:
        if self._window is None or self._staging is None:
            return
        staging = self._staging
        self._done.add(self._window)
        self._window = self._staging = None
        try:
            self._profiler.stop()
            if self._profiler.server is not None and self._profiler.server.ended_early:
                self._warn(
                    f"the profiler server ended its session by itself after {PYTHON_TRACER_MAX_MS // 60000} min, before"
                    " the last captured step: the steps after that are not in the profile; capture fewer steps (count)"
                    " with python_tracer=True",
                    stacklevel=4,
                )
            session_dir = staging.publish_file() if self._profiler.torch is not None else staging.publish()
        finally:
            staging.remove()
        if session_dir is None:
            where = self.logdir if self._profiler.torch is not None else self.logdir / "plugins" / "profile"
            raise CaptureError(f"the {self.framework} profiler wrote no session for {where}")
        self.sessions.append(Session(session_dir, tuple(self._window_steps)))
        if self._allocator == UNKNOWN and MKLCPU in recorded_allocators(session_dir):
            # oneDNN is on and the variable is set, but it came after TensorFlow made its CPU device.
            self._allocator = MKLCPU
            self._warn(MKLCPU_WARNING + _late_note(), stacklevel=4)

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
            _jax_profiler(self._profiler.module).save_device_memory_profile(str(partial))
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


def _analyze(session: Session) -> dict[str, Any]:
    from tb_leakfinder import analyze  # the package's API, which imports this module first

    return analyze(str(session.path))


def capture(
    logdir: str | os.PathLike[str],
    start: int = 0,
    count: int | None = None,
    framework: str | None = None,
    python_tracer: bool = False,
    every: int | None = None,
    memory_profile_every: int | None = None,
) -> Capture:
    """A `Capture` of steps `start .. start+count-1` into `logdir` (a TensorBoard logdir: the Leaks tab finds it).

    `every=N` captures those `count` steps again every N steps, each time as a session of its own (`cap.sessions`;
    `cap.report()` is the last one's report, `cap.reports()` every one's). `memory_profile_every=M` (JAX) saves a
    device memory profile every M steps from `start` on, as `<logdir>/memory_profiles/step_<step>.prof`.
    `python_tracer=True` records Python function events too (`$<file>.py:<line> <function>`, the function's first
    line, on the thread that ran it); on TensorFlow it takes XProf's client and grpcio (see _ServerSession).
    """
    return Capture(logdir, start, count, framework, python_tracer, every, memory_profile_every)
