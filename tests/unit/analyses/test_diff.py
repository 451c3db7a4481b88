"""Comparing runs: statuses, regression gate, suffix matching, Markdown and the /compare route."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

from tb_leakfinder import wire
from tb_leakfinder.analyses.diff import compare
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.testing.pjrt_profile import jax_training
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session
from tb_leakfinder.wire import comparison_json
from tests.support.demo import DEMO_LOGS

KIB = 1024


def cli_diff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tb_leakfinder.views.cli", "diff", *args], capture_output=True, text=True, timeout=300
    )


def _families(result: dict) -> dict[tuple[str, str], dict]:
    (host,) = result["hosts"]
    (alloc,) = host["allocators"]
    return {(g["op"], g["shape"]): g for g in alloc["families"]}


def test_leak_vs_fixed_shows_the_leak_fixed():
    out = cli_diff(str(DEMO_LOGS), str(DEMO_LOGS), "--run-a", "tf_leak", "--run-b", "tf_fixed", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert _families(result)[("Mul", "[128,1024]")]["status"] == "fixed"
    assert result["regression"] is False
    assert (result["verdict_a"], result["verdict_b"]) == ("leak", "no_leak")


def test_fixed_vs_leak_is_a_regression(tmp_path):
    md = tmp_path / "comment.md"
    out = cli_diff(str(DEMO_LOGS), str(DEMO_LOGS), "--run-a", "tf_fixed", "--run-b", "tf_leak", "--markdown", str(md))
    assert out.returncode == 1
    text = md.read_text()
    assert "regression" in text and "| new | `Mul [128,1024] output`" in text
    assert text in out.stdout


def test_run_against_itself_is_unchanged():
    out = cli_diff(str(DEMO_LOGS), str(DEMO_LOGS), "--run-a", "tf_leak", "--run-b", "tf_leak", "--json")
    assert out.returncode == 0
    groups = _families(json.loads(out.stdout))
    assert groups and all(g["status"] == "unchanged" for g in groups.values())


def test_bad_sides_exit_2(tmp_path):
    out = cli_diff(str(DEMO_LOGS), str(tmp_path / "missing"))
    assert out.returncode == 2 and "holds" in out.stderr  # A names no run among several
    out = cli_diff(str(DEMO_LOGS), str(tmp_path / "missing"), "--run-a", "tf_leak")
    assert out.returncode == 2 and "missing" in out.stderr


def _loop_profile(tmp_path, name: str, kept: dict[str, int], steps: int = 12) -> str:
    """A run whose steps each keep `kept[op]` bytes made by `op` ([8,8] outputs)."""
    b = ProfileBuilder()
    addr = itertools.count(0x1000, 0x1000)
    for step in range(steps):
        t0 = step * 1000
        b.step(step, t0, t0 + 999)
        for op, nbytes in kept.items():
            b.alloc(t0 + 10, next(addr), nbytes, op=op, shape="[8,8]")
    write_session(tmp_path, name, "s", {"h": b})
    return str(tmp_path / name / "plugins" / "profile" / "s")


def test_grown_shrunk_and_suffixes(tmp_path):
    a = _loop_profile(tmp_path, "a", {"Grow_1": 4 * KIB, "Shrink": 8 * KIB, "Same_3": 2 * KIB})
    b = _loop_profile(tmp_path, "b", {"Grow_7": 16 * KIB, "Shrink": 2 * KIB, "Same_12": 2 * KIB, "Brand": KIB})
    engine_a, engine_b = Engine.for_path(a), Engine.for_path(b)
    result = comparison_json(compare(engine_a.run_side(engine_a.runs()[0]), engine_b.run_side(engine_b.runs()[0])))
    groups = _families(result)
    assert groups[("Grow", "[8,8]")]["status"] == "grown"
    assert groups[("Grow", "[8,8]")]["bytes_per_step_b"] == 16 * KIB
    assert groups[("Shrink", "[8,8]")]["status"] == "shrunk"
    assert groups[("Same", "[8,8]")]["status"] == "unchanged"
    assert groups[("Brand", "[8,8]")]["status"] == "new" and groups[("Brand", "[8,8]")]["new_leak"]
    assert result["regression"]  # Brand is a growing family that A does not have
    order = [g["status"] for g in _families(result).values()]
    assert order == sorted(order, key=["new", "grown", "shrunk", "fixed", "unchanged"].index)


def test_compare_route_matches_the_cli():
    client = make_client(str(DEMO_LOGS))[0]
    response = client.get(f"{PREFIX}/compare", query_string={"run_a": "tf_fixed", "run_b": "tf_leak"})
    assert response.status_code == 200
    body = json.loads(response.get_data(as_text=True))
    out = cli_diff(str(DEMO_LOGS), str(DEMO_LOGS), "--run-a", "tf_fixed", "--run-b", "tf_leak", "--json")
    assert json.loads(out.stdout) == body
    for args, code in (({"run_a": "tf_leak"}, 400), ({"run_a": "tf_leak", "run_b": "../x"}, 404)):
        response = client.get(f"{PREFIX}/compare", query_string=args)
        assert response.status_code == code and "error" in json.loads(response.get_data(as_text=True))


def test_a_renamed_report_key_does_not_change_the_diff(monkeypatch):
    """The diff compares the analyses: what the report JSON calls a figure has no say in it."""

    def diff() -> dict:
        engine = Engine.for_path(str(DEMO_LOGS))  # a fresh engine: no report JSON made before
        return comparison_json(compare(engine.run_side(engine.run("tf_fixed")), engine.run_side(engine.run("tf_leak"))))

    before = diff()
    allocator_json = wire.allocator_json
    monkeypatch.setattr(wire, "allocator_json", lambda a, f: {f"renamed_{k}": v for k, v in allocator_json(a, f).items()})
    assert diff() == before
    assert before["regression"] and any(
        g["status"] == "new" for h in before["hosts"] for a in h["allocators"] for g in a["families"]
    )


def test_a_pjrt_leak_keeps_its_name_when_the_programs_ids_differ(tmp_path):
    before, _ = jax_training(steps=12, leak=False, program_ids=(7, 9))
    after, _ = jax_training(steps=12, program_ids=(31, 40))
    write_session(tmp_path, "before", "s", {"gpu-host": before})
    write_session(tmp_path, "after", "s", {"gpu-host": after})
    out = cli_diff(str(tmp_path), str(tmp_path), "--run-a", "before", "--run-b", "after", "--json")
    assert out.returncode == 1, out.stderr  # a regression: the leak is new
    result = json.loads(out.stdout)
    gpu = next(a for a in result["hosts"][0]["allocators"] if a["allocator_b"] == "GPU_0_bfc")
    status = {g["op"]: g["status"] for g in gpu["families"]}
    # Without the leak, the last step's output 1 is still live at the end: the leak grew it.
    assert status == {f"output {k} of jit_train_step": "unchanged" for k in (0, 2, 3)} | {"output 1 of jit_train_step": "grown"}
