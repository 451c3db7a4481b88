"""recompile_per_step on real JAX CPU captures: loops whose compiled programs multiply (a static argument that is
the step number; a new `jax.jit` kept each step) and their look-alikes (the same jitted function called with a
constant; a new `jax.jit` each step that is not kept, whose programs go with it), each saving a device memory
profile after every step (tests/support/recompile_programs.py, in a process of its own)."""

from __future__ import annotations

import json
import re

import pytest

from tb_leakfinder.views import cli
from tests.support import capture_programs, recompile_programs
from tests.support.capture_programs import ROOT


def _history(mode: str, logdir, capsys) -> tuple[dict, dict]:
    capture_programs.need("jax")
    script = ROOT / "tests" / "support" / "recompile_programs.py"
    written = capture_programs.run_script(script, [mode, str(logdir)])
    assert written["steps"] == list(range(1, recompile_programs.STEPS + 1))
    assert cli.main(["history", str(logdir), "--tb-run", "memory_profiles", "--no-cache", "--json"]) == cli.EXIT_OK
    (series,) = json.loads(capsys.readouterr().out)["series"]
    assert len(series["captures"]) == recompile_programs.STEPS
    return written, series


@pytest.mark.parametrize("mode", ["static_step", "new_jit_kept"])
def test_a_program_compiled_every_step_is_the_likely_cause(mode, tmp_path, capsys):
    written, series = _history(mode, tmp_path, capsys)
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
def test_a_program_compiled_once_or_dropped_with_its_function_gives_no_cause(mode, tmp_path, capsys):
    _, series = _history(mode, tmp_path, capsys)
    assert series["cause"] is None
