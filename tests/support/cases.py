"""The case files of tests/cases/: logic that both the Python package and the frontend hold, with the inputs and
answers both must give. frontend/tests/cases.test.mjs reads the same files, so the two sides cannot drift apart
without one of the suites failing."""

from __future__ import annotations

import json
import pathlib
from typing import Any

CASES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "cases"


def load_cases(name: str) -> dict[str, Any]:
    """tests/cases/<name>.json."""
    with open(CASES / f"{name}.json", encoding="utf-8") as f:
        cases: dict[str, Any] = json.load(f)
    return cases
