"""A session of this process's own TensorFlow profiler server, asked through XProf's client: how a capture records
Python function events on TensorFlow, and the options every profiler-server session of a capture or a watch takes."""

from __future__ import annotations

import importlib
import pathlib
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tb_leakfinder.capture.sessions import new_session_id
from tb_leakfinder.errors import CaptureError

# TraceMe level of the BFC allocator's MemoryAllocation/MemoryDeallocation events (kInfo).
HOST_TRACER_LEVEL = 2
PYTHON_TRACER_LEVEL = 1
# TensorFlow with the Python tracer: the profiler server's session ends by itself after this long, last step or not.
PYTHON_TRACER_MAX_MS = 60 * 60 * 1000
# How long the profiler server may take to begin a session, and to write it once told to end it.
SERVER_START_TIMEOUT_S = 60.0
SERVER_WRITE_TIMEOUT_S = 600.0
XPROF_CLIENT = "xprof.convert._pywrap_profiler_plugin"


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


class ServerSession:
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
            import socket  # here, as below: the package's import (TensorBoard's, the CLI's) records nothing

            with socket.socket() as probe:
                probe.bind(("", 0))
                port = int(probe.getsockname()[1])
            self.tf.profiler.experimental.server.start(port)
            _SERVER_PORTS[self.tf.__name__] = port
        return _SERVER_PORTS[self.tf.__name__]

    def start(self, logdir: pathlib.Path) -> None:
        if self.recording():
            raise RuntimeError("another profiling session is running")
        import socket

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
