"""Likely causes on real captures: each cause of docs/causes.md beside a look-alike that does not leak, recorded
with tb_leakfinder.capture by PyTorch and TensorFlow on CPU (tests/support/cause_captures.py, in a process of its
own). The expected cause comes from each program's code (cause_captures.CASES). Without a framework installed its
tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import pytest

from tests.support import capture_programs, cause_captures
from tests.support.demo import ROOT

PROGRAM = ROOT / "tests" / "support" / "cause_captures.py"
MODULES = {"torch": "torch", "tf": "tensorflow", "jax": "jax"}


def _record(framework: str, tmp_path_factory) -> dict:
    capture_programs.need(MODULES[framework])
    logdir = tmp_path_factory.mktemp(f"{framework}_causes")
    # TensorFlow's CPU allocator records memory events with BFC on; oneDNN off, so that its ops are the same everywhere.
    return capture_programs.run_script(PROGRAM, [framework, str(logdir)], bfc=True, onednn=False)


@pytest.fixture(scope="module")
def torch_out(tmp_path_factory) -> dict:
    return _record("torch", tmp_path_factory)


@pytest.fixture(scope="module")
def tf_out(tmp_path_factory) -> dict:
    return _record("tf", tmp_path_factory)


@pytest.fixture(scope="module")
def jax_out(tmp_path_factory) -> dict:
    return _record("jax", tmp_path_factory)


def _allocators(out: dict, name: str) -> list[dict]:
    return [a for run in out[name]["report"]["runs"] for host in run["hosts"] for a in host["allocators"]]


def _cases(framework: str) -> list[str]:
    return [name for name, case in cause_captures.CASES.items() if case.framework == framework]


def _check(out: dict, name: str) -> None:
    case = cause_captures.CASES[name]
    allocators = _allocators(out, name)
    families = [f for a in allocators for f in a["families"]]
    if case.cause is None:
        # The look-alike: no leak, and so no cause on any family.
        assert {a["verdict"] for a in allocators} == {"no_leak"}, [a["reason"] for a in allocators]
        assert all(f["cause"] is None for f in families)
        return
    (leaking,) = [a for a in allocators if a["verdict"] == "leak"]
    growing = {f["op"]: f for f in leaking["families"] if f["kind"] == "growing"}
    assert set(case.ops) <= set(growing), sorted(growing)
    for op, family in growing.items():
        assert family["cause"] is not None, op
        assert family["cause"]["id"] == case.cause, (op, family["cause"])
        assert family["cause"]["evidence"] and family["cause"]["fix"]
    # Families that do not grow (a loss made in the last step) get none.
    assert all(f["cause"] is None for f in families if f["kind"] != "growing")


@pytest.mark.parametrize("name", _cases("torch"))
def test_pytorch_causes_and_their_look_alikes(torch_out, name):
    _check(torch_out, name)


@pytest.mark.parametrize("name", _cases("tf"))
def test_tensorflow_causes_and_their_look_alikes(tf_out, name):
    _check(tf_out, name)


def test_jax_device_memory_profiles_are_one_moment_each_and_get_no_cause(jax_out):
    report = jax_out["jax_regrown_recompiled"]["report"]
    profiles = [run for run in report["runs"] if "memory_profiles" in run["run"]]
    assert len(profiles) >= cause_captures.STEPS
    allocators = _allocators(jax_out, "jax_regrown_recompiled")
    assert allocators and {a["verdict"] for a in allocators} <= {"inconclusive", "no_leak"}
    assert all(f["cause"] is None for a in allocators for f in a["families"])


def test_the_evidence_names_what_the_program_did(torch_out, tf_out):
    def cause_of(out: dict, name: str, op: str) -> dict:
        (leaking,) = [a for a in _allocators(out, name) if a["verdict"] == "leak"]
        return next(f["cause"] for f in leaking["families"] if f["op"] == op)

    # Adam's lazy state: exp_avg and exp_avg_sq for each of the model's 4 parameters, every step.
    assert "8 per step, made in adam.py" in cause_of(torch_out, "optimizer_per_step", "aten::zeros_like")["evidence"]
    # nn.Linear's weight and bias, every step.
    assert "2 per step, made in linear.py" in cause_of(torch_out, "modules_per_step", "aten::empty")["evidence"]
    assert "in __getitem__" in cause_of(torch_out, "cache_per_step", "aten::clone")["evidence"]
    graph = cause_of(torch_out, "graph_kept", "aten::tanh")["evidence"]
    assert "aten::tanh in Tanh.forward" in graph and "Linear.forward" in graph
    regrown = cause_of(torch_out, "regrown", "aten::cat")["evidence"]
    rows = cause_captures.ROWS_PER_STEP * cause_captures.HIDDEN * 4
    assert regrown == f"one aten::cat buffer freed and made again {rows // 1024} KiB larger every step"
    handles = cause_of(tf_out, "variable_per_step", "VarHandleOp")["evidence"]
    assert handles.startswith(f"{cause_captures.STEPS} VarHandleOp buffers")
