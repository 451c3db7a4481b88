"""tb_leakfinder.capture and the Keras callback, with real TensorFlow and JAX on CPU.

Each program of tests/support/capture_programs.py runs in a process of its own (TensorFlow reads
TF_CPU_ALLOCATOR_USE_BFC at import; the frameworks' native libraries stay out of this one).
Without a framework installed its tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from tb_leakfinder.read.formats.xplane.labels import MKLCPU_NOTE
from tests.support import capture_programs
from tests.support.demo import ROOT


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("TB_LEAKFINDER_REQUIRE_FRAMEWORKS") == "1":
            pytest.fail(f"{module} is not installed, and TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1")
        pytest.skip(f"{module} is not installed (pip install '.[test]')")


def run_program(
    name: str, logdir: pathlib.Path, bfc: bool = True, keras_backend: str = "tensorflow", onednn: bool | None = None
) -> dict:
    """Runs a program of tests/support/capture_programs.py; `onednn` sets TF_ENABLE_ONEDNN_OPTS (None: as this process has it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": keras_backend}
    env.pop("TF_CPU_ALLOCATOR_USE_BFC", None)
    if bfc:
        env["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    if onednn is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "capture_programs.py"), name, str(logdir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


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
    top = allocator["groups"][0]
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
        assert host["reason"].startswith(f"Inconclusive: {MKLCPU_NOTE}. Among the large blocks: No leak: ")
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
    host = only_host(out["report"])
    assert [s["step"] for s in host["steps"]] == [1, 2, 3, 4]
    # JAX on CPU has no BFC allocator: no memory events, but the compiled step is in the static view.
    assert host["allocators"] == []
    (step_module,) = [m for m in host["modules"] if m["name"].startswith("jit_train_step(")]
    (flag,) = step_module["actionable"]
    assert flag["reason"] == "live_out"
    assert flag["shape"] == f"f32[2048,{capture_programs.HIDDEN}]"
    assert "Static view: check" in host["reason"]


def test_keras_callback_captures_batches_across_epochs(tmp_path):
    _need("tensorflow")
    out = run_program("keras_fit", tmp_path)
    host = only_host(out["report"])
    # 4 batches per epoch: batches 2..7 are the last two of epoch 1 and all of epoch 2.
    assert out["steps"] == list(range(2, 8))
    assert [s["step"] for s in host["steps"]] == list(range(2, 8))
    assert host["verdict"] == "leak"
    top = host["allocators"][0]["groups"][0]
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


def test_capture_never_imports_a_framework(tmp_path):
    out = run_program("no_framework", tmp_path)
    assert out["loaded"] == []
    assert "neither tensorflow nor jax is imported" in out["error"]
