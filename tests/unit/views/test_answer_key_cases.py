"""standalone_page.answer_key against tests/cases/answer_key.json, which the standalone page's inline.ts answers too."""

from __future__ import annotations

from typing import Any

import pytest

from tb_leakfinder.views.standalone_page import answer_key
from tests.support.cases import load_cases


@pytest.mark.parametrize("case", load_cases("answer_key")["cases"])
def test_answer_key(case: dict[str, Any]) -> None:
    assert answer_key(case["route"], case["args"]) == case["key"]
