"""recompile_per_step on real JAX CPU captures: loops whose compiled programs multiply (a static argument that is
the step number; a new `jax.jit` kept each step) and their look-alikes (the same jitted function called with a
constant; a new `jax.jit` each step that is not kept, whose programs go with it), each saving a device memory
profile after every step and profiling 4 steps in one XSpace session (tests/support/recompile_programs.py, in a
process of its own). The history of the profiles sees the programs that are kept multiply; the XSpace session lists
every program compiled per step, kept or not."""

from __future__ import annotations

import json
import re

import pytest

import tb_leakfinder
from tb_leakfinder.views import cli
from tests.support import capture_programs, recompile_programs
from tests.support.capture_programs import ROOT


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Each mode's program run once (in a process of its own), its logdir kept for the module's tests."""
    made: dict[str, dict] = {}

    def run(mode: str) -> tuple[dict, str]:
        if mode not in made:
            capture_programs.need("jax")
            logdir = tmp_path_factory.mktemp(mode)
            script = ROOT / "tests" / "support" / "recompile_programs.py"
            made[mode] = {"written": capture_programs.run_script(script, [mode, str(logdir)]), "logdir": str(logdir)}
        return made[mode]["written"], made[mode]["logdir"]

    return run


def _history(mode: str, captured, capsys) -> tuple[dict, dict, dict]:
    """What the program wrote, the history of its device memory profiles and its XSpace session's host."""
    written, logdir = captured(mode)
    assert written["steps"] == list(range(1, recompile_programs.STEPS + 1))
    assert cli.main(["history", logdir, "--tb-run", "memory_profiles", "--no-cache", "--json"]) == cli.EXIT_OK
    (series,) = json.loads(capsys.readouterr().out)["series"]
    assert len(series["captures"]) == recompile_programs.STEPS
    (session,) = written["sessions"]
    (run,) = tb_leakfinder.analyze(session, cache=False)["runs"]
    (host,) = run["hosts"]
    assert host["num_steps"] == recompile_programs.CAPTURED
    return written, series, host


@pytest.mark.parametrize("mode", ["static_step", "new_jit_kept"])
def test_a_program_compiled_every_step_is_the_likely_cause(mode, captured, capsys):
    written, series, _ = _history(mode, captured, capsys)
    cause = series["cause"]
    assert cause is not None and cause["id"] == "recompile_per_step"
    found = re.fullmatch(
        r"compiled programs grew from (\d+) to (\d+) over (\d+) device memory profiles of steps 1\.\.(\d+), one per"
        r" step: (\d+) more compiled from (.+)",
        cause["evidence"],
    )
    assert found is not None, cause["evidence"]
    first, last, profiles, last_step, more, where = found.groups()
    # One new program each step after the first profile's, all from the line that calls the step's function.
    steps = recompile_programs.STEPS
    assert int(last) - int(first) == int(more) == steps - 1
    assert (int(profiles), int(last_step), where) == (steps, steps, written["compiled_at"])
    assert "static_argnums" in cause["fix"] and "once, outside the loop" in cause["fix"]


@pytest.mark.parametrize("mode", ["static_constant", "new_jit_dropped"])
def test_a_program_compiled_once_or_dropped_with_its_function_gives_no_cause(mode, captured, capsys):
    _, series, _ = _history(mode, captured, capsys)
    assert series["cause"] is None


@pytest.mark.parametrize(
    ("mode", "per_step"), [("static_step", True), ("new_jit_kept", True), ("new_jit_dropped", True), ("static_constant", False)]
)
def test_one_xspace_capture_lists_a_program_compiled_per_step(mode, per_step, captured, tmp_path, capsys):
    written, _, host = _history(mode, captured, capsys)
    named = sorted(m["program_id"] for m in host["modules"] if m["module"] == written["program"])
    if not per_step:
        assert len(named) == 1 and host["cause"] is None
        return
    # The program of every step the session profiled, and of those before it whose programs JAX still holds.
    assert len(named) >= recompile_programs.CAPTURED
    cause = host["cause"]
    assert cause["id"] == "recompile_per_step"
    steps = recompile_programs.CAPTURED
    listed = ", ".join(map(str, named))
    assert cause["evidence"] == (
        f"{len(named)} compiled programs named {written['program']} in a capture of {steps} steps, one or more per"
        f" step: program ids {listed}"
    )
    (session,) = written["sessions"]
    page = tmp_path / "report.md"
    assert cli.main(["report", session, "--no-cache", "--markdown", str(page)]) == cli.EXIT_OK
    said = f"likely cause: a function compiled again every step ({cause['evidence']}) — fix: {cause['fix']}"
    assert f"  {said}, see docs/causes.md#recompile_per_step" in capsys.readouterr().out
    assert f"**likely cause: a function compiled again every step** ({cause['evidence']})" in page.read_text()
