"""engine/history.py's TensorBoard run of a session against tests/cases/tensorboard_run.json, which the tab's
history panel answers too."""

from __future__ import annotations

from typing import Any

import pytest

from tb_leakfinder.engine.history import several_captures, tensorboard_run
from tests.support.cases import load_cases

CASES = load_cases("tensorboard_run")


@pytest.mark.parametrize(("session", "run"), CASES["run"])
def test_tensorboard_run(session: str, run: str) -> None:
    assert tensorboard_run(session) == run


@pytest.mark.parametrize("case", CASES["several"])
def test_several_captures(case: dict[str, Any]) -> None:
    assert several_captures(case["sessions"]) == case["runs"]
