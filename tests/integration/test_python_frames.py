"""Real TensorFlow captures made with the Python tracer on: the leak is named by the user's function."""

from __future__ import annotations

import pytest

import tb_leakfinder
from tb_leakfinder.analyses.frames import parse_frame
from tests.support.python_tracer_captures import PythonTracerCaptures, Recorded, record


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> PythonTracerCaptures:
    return record(tmp_path_factory.mktemp("python_tracer"))


def _frame(recorded: Recorded) -> str:
    parsed = parse_frame(recorded.leak_function)
    assert parsed is not None
    file, line, function = parsed
    return f"{file}:{line} in {function}"


@pytest.mark.parametrize("which", ["tf_eager", "keras_fit"])
def test_the_leak_names_the_users_function_around_it(captures, which):
    recorded = getattr(captures, which)
    (run,) = tb_leakfinder.analyze(str(recorded.session_dir), cache=False)["runs"]
    (host,) = run["hosts"]
    (cpu,) = (a for a in host["allocators"] if a["verdict"] == "leak")
    top = cpu["families"][0]
    assert top["kind"] == "growing"
    frame = _frame(recorded)
    assert top["where"] == frame and top["site"]["stack"][0] == frame
    assert f"({frame})" in top["label"] and frame in cpu["reason"]
    assert cpu["stack_hint"] is None
    # No frame of the capture helper itself, nor of Keras' epoch iterator, is taken for the user's.
    stacks = [f for a in host["allocators"] for row in (*a["families"], *a["peak_breakdown"]) for f in row["site"]["stack"]]
    own = ("leak_capture.py", "framework_profiler.py", "server_session.py", "keras_callback.py", "trainer.py")
    assert stacks and not any(f.split(":")[0] in own for f in stacks)
