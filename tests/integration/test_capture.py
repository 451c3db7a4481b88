"""tb_leakfinder.capture and the Keras callback, with real TensorFlow and JAX on CPU.

Each program of tests/support/capture_programs.py runs in a process of its own (TensorFlow reads
TF_CPU_ALLOCATOR_USE_BFC at import; the frameworks' native libraries stay out of this one).
Without a framework installed its tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import gzip
import inspect
import pathlib
import socket

import pytest

from tb_leakfinder.read.formats.xplane.labels import MKLCPU_NOTE
from tests.support import capture_programs, python_tracer_captures
from tests.support.demo import ROOT
from tests.support.python_tracer_captures import python_events

_need = capture_programs.need


def run_program(
    name: str, logdir: pathlib.Path, bfc: bool = True, keras_backend: str = "tensorflow", onednn: bool | None = None
) -> dict:
    """Runs a program of tests/support/capture_programs.py (see capture_programs.run_script for the options)."""
    script = ROOT / "tests" / "support" / "capture_programs.py"
    return capture_programs.run_script(script, [name, str(logdir)], bfc, keras_backend, onednn)


def only_host(report: dict) -> dict:
    (run,) = report["runs"]
    (host,) = run["hosts"]
    return host


@pytest.fixture(scope="module")
def tf_leak(tmp_path_factory) -> dict:
    _need("tensorflow")
    return run_program("tf_leak", tmp_path_factory.mktemp("tf_leak"))


def test_tensorflow_finds_the_planted_leak(tf_leak):
    host = only_host(tf_leak["report"])
    assert tf_leak["framework"] == "tensorflow"
    assert tf_leak["warnings"] == []
    assert host["verdict"] == "leak"
    (allocator,) = host["allocators"]
    top = allocator["families"][0]
    assert (top["op"], top["shape"], top["dtype"], top["region"]) == ("Mul", capture_programs.LEAK_SHAPE, "float", "output")
    assert top["kind"] == "growing"
    assert top["count"] == 12
    # BFC rounds each chunk up a little: within 5% of the tensor's bytes.
    assert top["bytes_per_step"] == pytest.approx(capture_programs.LEAK_BYTES_PER_STEP, rel=0.05)


def test_tensorflow_capture_skips_warm_up_and_marks_each_step(tf_leak):
    host = only_host(tf_leak["report"])
    assert tf_leak["steps"] == list(range(3, 15))
    # The markers XProf reads: one `step_num` per captured step, nothing of steps 0..2 or 15..19.
    assert [s["step"] for s in host["steps"]] == list(range(3, 15))
    assert all(s["start_ps"] < s["end_ps"] for s in host["steps"])


def test_tensorflow_without_a_leak_is_clean(tmp_path):
    _need("tensorflow")
    out = run_program("tf_fixed", tmp_path)
    host = only_host(out["report"])
    assert host["verdict"] == "no_leak", host["reason"]
    # A second profiler cannot start while one runs: a clear error, not the framework's traceback.
    assert out["busy"].startswith("the tensorflow profiler could not start (")
    assert "only one profile can be captured at a time" in out["busy"]
    assert out["busy_tracer"].startswith("the tensorflow profiler could not start (another profiling session is running)")


def check_allocator_warning(out: dict, late: bool = False) -> dict:
    """The one CaptureWarning of a TensorFlow capture without BFC, checked against what the profile recorded:
    nothing (TF's default CPU allocator), or only oneDNN's mklcpu, whose no-leak report is inconclusive."""
    (caught,) = out["caught"]
    assert out["warnings"] == [caught.removeprefix("CaptureWarning: ")]
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in caught and "before TensorFlow is imported" in caught
    assert ("is set now, but only after TensorFlow was imported" in caught) == late
    host = only_host(out["report"])
    assert host["verdict"] == "inconclusive"
    assert host["num_steps"] == 3
    recorded = [a["memory_id"] for a in host["allocators"]]
    if recorded == []:
        assert caught.startswith("CaptureWarning: TensorFlow is running on CPU without its BFC allocator")
        assert "no memory events" in caught
    else:
        assert recorded == ["mklcpu"]
        assert caught.startswith("CaptureWarning: TensorFlow is running on CPU with oneDNN's mklcpu allocator")
        assert "only large blocks" in caught and "TF_ENABLE_ONEDNN_OPTS=0 without" in caught
        (allocator,) = host["allocators"]
        assert MKLCPU_NOTE in allocator["warnings"]
        # Every large block was freed, which says nothing of the small buffers mklcpu does not record.
        assert host["reason"] == allocator["reason"]
        assert host["reason"].startswith(
            f"Inconclusive: {MKLCPU_NOTE}. Among the large blocks: No leak in TensorFlow's CPU allocator (mklcpu): "
        )
    return host


@pytest.mark.parametrize("onednn", [False, True], ids=["onednn_off", "onednn_on"])
def test_tensorflow_without_bfc_says_so_when_the_capture_starts(tmp_path, onednn):
    _need("tensorflow")
    out = run_program("tf_warning", tmp_path, bfc=False, onednn=onednn)
    host = check_allocator_warning(out)
    if not onednn:
        assert host["allocators"] == []


def test_tensorflow_bfc_set_too_late_is_found_in_the_profile(tmp_path):
    # With oneDNN on, TensorFlow's stats look alike for BFC and mklcpu: only the written profile tells them apart.
    _need("tensorflow")
    out = run_program("tf_late_bfc", tmp_path, bfc=False, onednn=True)
    check_allocator_warning(out, late=True)


def test_jax_gives_its_static_view(tmp_path):
    _need("jax")
    out = run_program("jax_static", tmp_path)
    assert out["framework"] == "jax"
    assert out["tensorflow_loaded"] is False
    assert python_events(out["session_dir"]) == {}  # python_tracer=False
    host = only_host(out["report"])
    assert [s["step"] for s in host["steps"]] == [1, 2, 3, 4]
    # JAX on CPU has no BFC allocator: no memory events, but the compiled step is in the static view.
    assert host["allocators"] == []
    (step_module,) = [m for m in host["modules"] if m["name"].startswith("jit_train_step(")]
    (flag,) = step_module["actionable"]
    assert flag["reason"] == "live_out"
    assert flag["shape"] == f"f32[2048,{capture_programs.HIDDEN}]"
    # The finding first: the live-out buffer, its shape and its line lead the host's reason.
    assert host["reason"].startswith("Static view: ")
    assert f"{flag['shape']} at capture_programs.py:" in host["reason"] and "returned by jit_train_step(" in host["reason"]


def test_keras_callback_captures_batches_across_epochs(tmp_path):
    _need("tensorflow")
    out = run_program("keras_fit", tmp_path)
    host = only_host(out["report"])
    # 4 batches per epoch: batches 2..7 are the last two of epoch 1 and all of epoch 2.
    assert out["steps"] == list(range(2, 8))
    assert [s["step"] for s in host["steps"]] == list(range(2, 8))
    assert host["verdict"] == "leak"
    top = host["allocators"][0]["families"][0]
    assert top["shape"] == capture_programs.LEAK_SHAPE
    assert top["count"] == 6


def test_keras_callback_follows_the_jax_backend(tmp_path):
    _need("keras")
    _need("jax")
    out = run_program("keras_jax_fit", tmp_path, keras_backend="jax")
    assert (out["backend"], out["framework"]) == ("jax", "jax")
    host = only_host(out["report"])
    assert out["steps"] == [1, 2, 3]
    assert [s["step"] for s in host["steps"]] == [1, 2, 3]
    # JAX on CPU: no memory events; Keras's compiled train step is in the static view.
    assert host["allocators"] == []
    assert any(m["name"].startswith("jit_train_step(") for m in host["modules"])


def test_keras_callback_follows_the_torch_backend(tmp_path):
    _need("keras")
    _need("torch")
    out = run_program("keras_torch_fit", tmp_path, keras_backend="torch")
    assert (out["backend"], out["framework"]) == ("torch", "torch")
    host = only_host(out["report"])
    assert out["steps"] == [1, 2, 3, 4, 5, 6]
    assert [s["step"] for s in host["steps"]] == out["steps"]
    assert host["verdict"] == "leak"
    (allocator,) = host["allocators"]
    top = allocator["families"][0]
    assert top["kind"] == "growing"
    assert top["bytes_per_step"] == pytest.approx(capture_programs.LEAK_BYTES_PER_STEP, rel=0.05)
    # The line that allocates (the capture's line marks), not the function's first line.
    source, first = inspect.getsourcelines(capture_programs.hoard_torch)
    line = first + next(i for i, text in enumerate(source) if "torch.ones(" in text)
    assert top["where"] == f"capture_programs.py:{line} in hoard_torch"


def test_capture_never_imports_a_framework(tmp_path):
    out = run_program("no_framework", tmp_path)
    assert out["loaded"] == []
    assert "none of tensorflow, jax or torch is imported" in out["error"]


@pytest.fixture(scope="module")
def tracer_captures(tmp_path_factory) -> python_tracer_captures.PythonTracerCaptures:
    _need("tensorflow")
    return python_tracer_captures.record(tmp_path_factory.mktemp("python_tracer"))


def check_python_tracer_capture(recorded: python_tracer_captures.Recorded, steps: list[int]) -> None:
    """A capture with python_tracer=True: the step markers, the leak in the memory events and, once per step,
    the Python event of the program's own function around the leaking line (so the tracer ran from the first step)."""
    from tb_leakfinder import analyze

    assert recorded.steps == steps
    events = python_events(recorded.session_dir)
    assert events[recorded.leak_function] == len(steps)
    assert any(name.startswith("$builtins ") for name in events)  # C functions too
    (run,) = analyze(str(recorded.session_dir))["runs"]
    (host,) = run["hosts"]
    assert [s["step"] for s in host["steps"]] == steps
    assert host["verdict"] == "leak"
    top = host["allocators"][0]["families"][0]
    assert (top["shape"], top["count"]) == (python_tracer_captures.LEAK_SHAPE, len(steps))
    assert top["bytes_per_step"] == pytest.approx(python_tracer_captures.LEAK_BYTES_PER_STEP, rel=0.05)


def test_tensorflow_python_tracer_records_the_programs_functions(tracer_captures):
    assert tracer_captures.warnings == []
    recorded = tracer_captures.tf_eager
    line = python_tracer_captures.leaky_step.__code__.co_firstlineno
    assert recorded.leak_function == f"$python_tracer_captures.py:{line} leaky_step"
    assert recorded.leak_site == f"python_tracer_captures.py:{line + 3}"
    # <host>.xplane.pb, as a capture without the tracer names its file.
    assert [p.name for p in recorded.session_dir.glob("*.xplane.pb")] == [f"{socket.gethostname()}.xplane.pb"]
    check_python_tracer_capture(recorded, list(range(2, 8)))


def test_keras_callback_python_tracer_records_the_programs_callback(tracer_captures):
    recorded = tracer_captures.keras_fit
    line = python_tracer_captures.on_train_batch_begin.__code__.co_firstlineno
    assert recorded.leak_function == f"$python_tracer_captures.py:{line} on_train_batch_begin"
    check_python_tracer_capture(recorded, list(range(2, 8)))


def test_tensorflow_without_python_tracer_records_no_python_events(tf_leak):
    assert python_events(tf_leak["session_dir"]) == {}


def test_jax_python_tracer_records_the_programs_functions(tmp_path):
    _need("jax")
    out = run_program("jax_python_tracer", tmp_path)
    assert out["steps"] == [1, 2, 3]
    host = only_host(out["report"])
    assert [s["step"] for s in host["steps"]] == [1, 2, 3]
    line = capture_programs.host_step.__code__.co_firstlineno
    assert out["host_step"] == f"$capture_programs.py:{line} host_step"
    assert python_events(out["session_dir"])[out["host_step"]] == 3


def test_tensorflow_every_records_each_window_as_a_session(tmp_path):
    _need("tensorflow")
    out = run_program("tf_periodic", tmp_path)
    # capture(start=2, count=3, every=5) over steps 0..16: three sessions, each with its own step markers.
    windows = [[2, 3, 4], [7, 8, 9], [12, 13, 14]]
    assert out["session_steps"] == windows
    assert sorted(out["sessions"]) == out["sessions"] and len(set(out["sessions"])) == 3
    assert sorted(p.name for p in (tmp_path / "plugins" / "profile").iterdir()) == [pathlib.Path(s).name for s in out["sessions"]]
    assert [p.name for p in (tmp_path / "plugins").iterdir()] == ["profile"]  # no staging folder left
    hosts = [only_host(r) for r in out["reports"]]
    assert [[s["step"] for s in h["steps"]] for h in hosts] == windows
    assert all(h["allocators"] for h in hosts)  # memory events in each
    assert out["report"] == out["reports"][-1]


def test_keras_callback_every_batches_records_each_window_as_a_session(tmp_path):
    _need("tensorflow")
    out = run_program("keras_periodic", tmp_path)
    # 4 batches per epoch, numbered across epochs: batches 1..3, 5..7 and 9..11.
    windows = [[1, 2, 3], [5, 6, 7], [9, 10, 11]]
    assert out["session_steps"] == windows
    hosts = [only_host(r) for r in out["reports"]]
    assert [[s["step"] for s in h["steps"]] for h in hosts] == windows
    for host in hosts:
        top = host["allocators"][0]["families"][0]
        assert (top["shape"], top["count"]) == (capture_programs.LEAK_SHAPE, 3)


def test_jax_memory_profile_every_saves_device_memory_profiles(tmp_path):
    _need("jax")
    out = run_program("jax_memory_profiles", tmp_path)
    # From step 1 (start) on, every 3 steps of the 10, into <logdir>/memory_profiles/step_<step>.prof.
    expected = [tmp_path / "memory_profiles" / f"step_{n}.prof" for n in (1, 4, 7)]
    assert out["memory_profiles"] == [str(p) for p in expected]
    assert sorted((tmp_path / "memory_profiles").iterdir()) == sorted(expected)  # no partial file left
    for path in expected:
        assert path.read_bytes()[:2] == b"\x1f\x8b"  # gzip: a pprof Profile
        assert gzip.decompress(path.read_bytes())
    assert out["session_steps"] == [[1, 2, 3]]
