"""tb_leakfinder.capture's helper without a framework: which CPU allocator TensorFlow shows, argument checks, and
the Python tracer's session of TensorFlow's profiler server against a fake server and client.

The captures with real TensorFlow and JAX are tests/integration/test_capture.py.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import subprocess
import sys
import threading
import time
import types

import pytest

import tb_leakfinder
from tb_leakfinder.capture import server_session
from tb_leakfinder.capture.framework_profiler import detect_framework, tensorflow_cpu_allocator
from tb_leakfinder.capture.leak_capture import Capture, CaptureError, CaptureWarning
from tb_leakfinder.capture.server_session import XPROF_CLIENT
from tb_leakfinder.capture.sessions import new_session_id
from tests.support.demo import ROOT


class FakeTensorFlow(types.ModuleType):
    """What tensorflow_cpu_allocator asks of TensorFlow: a CPU device, its stats, and whether oneDNN is on."""

    def __init__(self, stats: bool) -> None:
        super().__init__("fake_tf")
        self.stats = stats
        self.config = types.SimpleNamespace(
            list_logical_devices=lambda kind: ["CPU:0"],
            experimental=types.SimpleNamespace(get_memory_info=self.get_memory_info),
        )

    def get_memory_info(self, device: str) -> dict:
        if not self.stats:
            raise ValueError(f"Allocator stats not available for device '{device}'")
        return {"current": 0, "peak": 0}


@pytest.mark.parametrize(
    ("stats", "onednn", "bfc_set", "expected"),
    [
        (False, False, False, "default"),
        (False, True, True, "default"),  # no stats: TF's plain allocator, whatever oneDNN and the variable say
        (True, False, True, "bfc"),
        (True, True, False, "mklcpu"),
        (True, None, False, "mklcpu"),  # a TF that hides oneDNN: stats without the variable are mklcpu's
        (True, True, True, "unknown"),  # BFC, or mklcpu if the variable came late: the profile will tell
    ],
)
def test_tensorflow_cpu_allocator_from_what_tensorflow_shows(monkeypatch, stats, onednn, bfc_set, expected):
    tf = FakeTensorFlow(stats)
    if onednn is not None:
        port = types.SimpleNamespace(IsMklEnabled=lambda: onednn)
        monkeypatch.setitem(sys.modules, "fake_tf.python.util._pywrap_util_port", port)
    if bfc_set:
        monkeypatch.setenv("TF_CPU_ALLOCATOR_USE_BFC", "true")
    else:
        monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
    assert tensorflow_cpu_allocator(tf) == expected


def test_capture_arguments_are_checked():
    with pytest.raises(CaptureError, match="count must be at least 1"):
        Capture("logs", 0, 0)
    with pytest.raises(CaptureError, match="framework must be one of"):
        detect_framework("mxnet")
    if "jax" not in sys.modules:
        with pytest.raises(CaptureError, match="jax is not imported"):
            detect_framework("jax")
    assert tb_leakfinder.capture is not sys.modules["tb_leakfinder.capture"]
    assert callable(tb_leakfinder.capture)


_PACKAGE_AFTER = """
import json, sys
import tb_leakfinder
loaded = "tb_leakfinder.capture" in sys.modules
if sys.argv[1] == "watch-first":
    from tb_leakfinder.capture import watch  # the subpackage loaded by another import than the package's attribute
from tb_leakfinder import Capture, capture
print(json.dumps([loaded, callable(tb_leakfinder.capture), tb_leakfinder.capture is capture, Capture.__name__]))
"""


@pytest.mark.parametrize("order", ["attribute-first", "watch-first"])
def test_capture_stays_the_function_whatever_is_imported_first(order):
    """The package loads the capture helper on first use (not on `import tb_leakfinder`, which every command and
    TensorBoard's plugin loader pay), and `tb_leakfinder.capture` is the function whichever comes first."""
    out = subprocess.run([sys.executable, "-c", _PACKAGE_AFTER, order], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == [False, True, True, "Capture"]


class FakeServerTensorFlow(types.ModuleType):
    """What a capture with python_tracer=True asks of TensorFlow: its profiler server, TraceMe's state, step markers."""

    def __init__(self, server: bool = True) -> None:
        super().__init__("fake_server_tf")
        self.recording = False
        self.ports: list[int] = []
        experimental = types.SimpleNamespace(Trace=lambda name, **stats: contextlib.nullcontext())
        if server:
            experimental.server = types.SimpleNamespace(start=self.ports.append)
        self.profiler = types.SimpleNamespace(experimental=experimental)
        self.config = types.SimpleNamespace(list_physical_devices=lambda kind: ["GPU:0"])  # no CPU allocator check
        self.trace_module = types.ModuleType(f"{self.__name__}.python.profiler.trace")
        self.trace_module.enabled = lambda: self.recording


def _tracer_hook(frame: types.FrameType, event: str, arg: object) -> None:
    """A profile hook with the signature threads started while the fake tracer records call it with."""


class FakeClient(types.ModuleType):
    """XProf's client against the fake server: a session from the call until Terminate (or `end_now`), then its file."""

    def __init__(self, tf: FakeServerTensorFlow, error: str | None = None) -> None:
        super().__init__(XPROF_CLIENT)
        self.tf, self.error = tf, error
        self.terminated, self.end_now, self.ended = threading.Event(), threading.Event(), threading.Event()
        self.terminate_requests: list[tuple[str, bytes]] = []
        self.calls: list[tuple] = []

    def trace(self, address, logdir, workers, dataset_ops, duration_ms, attempts, options) -> None:
        self.calls.append((address, duration_ms, options))
        if self.error is not None:
            raise RuntimeError(self.error)
        self.tf.recording = True
        threading.setprofile(_tracer_hook)  # the Python tracer's hook, as it installs one for threads started later
        while not (self.terminated.is_set() or self.end_now.is_set()):
            time.sleep(0.001)
        session = pathlib.Path(logdir, "plugins", "profile", options["session_id"])
        session.mkdir(parents=True)
        (session / f"{options['override_hostnames']}.xplane.pb").write_bytes(b"")
        self.tf.recording = False
        self.ended.set()

    def insecure_channel(self, address: str) -> contextlib.AbstractContextManager:
        def call(request: bytes, timeout: float) -> bytes:
            self.terminate_requests.append((method, request))
            self.terminated.set()
            return b""

        method = ""
        channel = types.SimpleNamespace()

        def unary_unary(name: str):
            nonlocal method
            method = name
            return call

        channel.unary_unary = unary_unary
        return contextlib.nullcontext(channel)


@pytest.fixture
def fake_server(monkeypatch):
    """A fake TensorFlow with its server, XProf's client and grpcio (the client plays both), in sys.modules."""

    def install(error: str | None = None, server: bool = True) -> FakeClient:
        tf = FakeServerTensorFlow(server)
        client = FakeClient(tf, error)
        monkeypatch.setitem(sys.modules, "tensorflow", tf)
        monkeypatch.setitem(sys.modules, tf.trace_module.__name__, tf.trace_module)
        monkeypatch.setitem(sys.modules, XPROF_CLIENT, client)
        monkeypatch.setitem(sys.modules, "grpc", client)
        return client

    hook = threading.getprofile()
    yield install
    threading.setprofile(hook)


def test_python_tracer_on_tensorflow_is_a_session_of_its_profiler_server(fake_server, tmp_path):
    client = fake_server()
    with tb_leakfinder.capture(tmp_path, start=1, count=2, framework="tensorflow", python_tracer=True) as cap:
        for i in range(4):
            with cap.step(i):
                # The step begins only once the session records.
                assert client.tf.recording == (i in (1, 2))
    assert cap.steps == [1, 2] and cap.warnings == []
    ((address, duration_ms, options),) = client.calls
    assert address == f"localhost:{client.tf.ports[0]}"
    assert duration_ms == server_session.PYTHON_TRACER_MAX_MS
    assert (options["python_tracer_level"], options["host_tracer_level"]) == (1, 2)
    # Terminate(TerminateRequest{session_id}) after the last step; the server wrote that session.
    session_id = options["session_id"].encode()
    assert client.terminate_requests == [
        ("/tensorflow.ProfilerService/Terminate", b"\x0a" + bytes([len(session_id)]) + session_id)
    ]
    assert cap.session_dir == tmp_path / "plugins" / "profile" / options["session_id"]


def test_python_tracer_session_ids_stay_unique(fake_server, tmp_path):
    fake_server()
    stamp = time.strftime("%Y_%m_%d_%H_%M_%S")
    for name in (stamp, f"{stamp}_2"):
        (tmp_path / "plugins" / "profile" / name).mkdir(parents=True)
    assert new_session_id(tmp_path) in (f"{stamp}_3", time.strftime("%Y_%m_%d_%H_%M_%S"))
    assert server_session._varint(300) == b"\xac\x02"


def test_python_tracer_session_that_ends_by_itself_warns(fake_server, tmp_path):
    client = fake_server()
    warns = pytest.warns(CaptureWarning, match="ended its session by itself after 60 min")
    with warns, tb_leakfinder.capture(tmp_path, count=2, framework="tensorflow", python_tracer=True) as cap:
        for i in range(2):
            with cap.step(i):
                client.end_now.set()
                client.ended.wait(10)
    assert client.terminate_requests == []
    assert cap.session_dir is not None and "capture fewer steps (count)" in cap.warnings[0]


def test_python_tracer_server_failure_is_a_capture_error(fake_server, tmp_path):
    fake_server(error="Another profiling session is running")
    cap = tb_leakfinder.capture(tmp_path, framework="tensorflow", python_tracer=True)
    with pytest.raises(CaptureError, match=r"could not start \(Another profiling session is running\)"), cap, cap.step(0):
        pass


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        (XPROF_CLIENT, "needs XProf's profiler client .*: pip install xprof, or capture without python_tracer"),
        ("grpc", "needs grpcio .*: pip install grpcio"),
        ("server", "needs TensorFlow's profiler server .*: upgrade TensorFlow"),
    ],
)
def test_python_tracer_on_tensorflow_says_what_it_lacks(fake_server, monkeypatch, tmp_path, missing, message):
    fake_server(server=missing != "server")
    if missing != "server":
        monkeypatch.setitem(sys.modules, missing, None)  # its import fails
    with pytest.raises(CaptureError, match=message):
        tb_leakfinder.capture(tmp_path, framework="tensorflow", python_tracer=True)
    tb_leakfinder.capture(tmp_path, framework="tensorflow")  # without the tracer, nothing of that is needed


@pytest.mark.parametrize("options", [types.SimpleNamespace, None], ids=["no_python_tracer_level", "no_profile_options"])
def test_python_tracer_on_a_jax_without_its_option_says_so(monkeypatch, tmp_path, options):
    jax = types.ModuleType("fake_jax")
    jax.__version__ = "0.3.0"
    profiler = types.ModuleType("fake_jax.profiler")
    if options is not None:
        profiler.ProfileOptions = options
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setitem(sys.modules, "fake_jax.profiler", profiler)
    with pytest.raises(CaptureError, match=r"needs jax.profiler.ProfileOptions.python_tracer_level, which JAX 0.3.0 lacks"):
        tb_leakfinder.capture(tmp_path, framework="jax", python_tracer=True)
